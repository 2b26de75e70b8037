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
	// The wire format is RFC 3339, which time.Time parses from the bytes
	// without allocating: this runs for every timestamp of every page.
	var parsed time.Time
	if err := parsed.UnmarshalJSON(data); err != nil {
		return fmt.Errorf("management: invalid timestamp %.40s: want a JSON string yyyy-MM-ddTHH:mm:ss.SSSZ", data)
	}
	t.Time = parsed.UTC()
	return nil
}
