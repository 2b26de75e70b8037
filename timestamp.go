package management

import (
	"bytes"
	"fmt"
	"time"
)

// wireTimeLayout is the service's timestamp format: yyyy-MM-dd'T'HH:mm:ss.SSS'Z'.
const wireTimeLayout = "2006-01-02T15:04:05.000Z"

// Timestamp is a point in time in the service's wire format,
// yyyy-MM-dd'T'HH:mm:ss.SSS'Z' (UTC, millisecond precision).
//
// It embeds time.Time, so every time.Time method is available. Compare
// Timestamps with Equal, which compares instants (go-cmp uses it too).
type Timestamp struct {
	time.Time
}

// NewTimestamp returns t as a Timestamp, in UTC and truncated to the
// millisecond precision the service keeps.
func NewTimestamp(t time.Time) Timestamp {
	return Timestamp{t.UTC().Truncate(time.Millisecond)}
}

// Equal reports whether t and u are the same instant.
func (t Timestamp) Equal(u Timestamp) bool {
	return t.Time.Equal(u.Time)
}

// String returns t in the wire format.
func (t Timestamp) String() string {
	return t.UTC().Truncate(time.Millisecond).Format(wireTimeLayout)
}

// MarshalJSON encodes t in the wire format, in UTC, truncated to milliseconds.
func (t Timestamp) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, len(wireTimeLayout)+2)
	b = append(b, '"')
	b = t.UTC().Truncate(time.Millisecond).AppendFormat(b, wireTimeLayout)
	return append(b, '"'), nil
}

// UnmarshalJSON decodes the wire format and, leniently, any RFC 3339 time.
// JSON null leaves t unchanged (a *Timestamp field becomes nil).
func (t *Timestamp) UnmarshalJSON(data []byte) error {
	if bytes.Equal(data, []byte("null")) {
		return nil
	}
	if len(data) < 2 || data[0] != '"' || data[len(data)-1] != '"' {
		return fmt.Errorf("management: timestamp %.40q is not a JSON string", data)
	}
	s := string(data[1 : len(data)-1])
	parsed, err := time.Parse(wireTimeLayout, s)
	if err != nil {
		parsed, err = time.Parse(time.RFC3339Nano, s)
	}
	if err != nil {
		return fmt.Errorf("management: invalid timestamp %.40q: want yyyy-MM-ddTHH:mm:ss.SSSZ", s)
	}
	t.Time = parsed.UTC()
	return nil
}
