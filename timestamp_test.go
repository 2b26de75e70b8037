package management

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestTimestampMarshal(t *testing.T) {
	paris := time.FixedZone("CET", 3600)
	tests := []struct {
		in   time.Time
		want string
	}{
		{time.Date(2026, 11, 21, 8, 30, 5, 123456789, time.UTC), `"2026-11-21T08:30:05.123Z"`},
		{time.Date(2026, 11, 21, 9, 30, 5, 999999999, paris), `"2026-11-21T08:30:05.999Z"`}, // truncated, never rounded
		{time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), `"2026-01-02T03:04:05.000Z"`},
	}
	for _, tt := range tests {
		got, err := json.Marshal(Timestamp{tt.in})
		if err != nil || string(got) != tt.want {
			t.Errorf("Marshal(%v) = %s, %v; want %s", tt.in, got, err, tt.want)
		}
	}
}

func TestTimestampUnmarshal(t *testing.T) {
	tests := []struct {
		in   string
		want time.Time
	}{
		{`"2026-11-21T08:30:05.123Z"`, time.Date(2026, 11, 21, 8, 30, 5, 123e6, time.UTC)},
		{`"2026-11-21T08:30:05Z"`, time.Date(2026, 11, 21, 8, 30, 5, 0, time.UTC)},
		{`"2026-11-21T09:30:05.5+01:00"`, time.Date(2026, 11, 21, 8, 30, 5, 5e8, time.UTC)},
	}
	for _, tt := range tests {
		var ts Timestamp
		if err := json.Unmarshal([]byte(tt.in), &ts); err != nil || !ts.Time.Equal(tt.want) || ts.Location() != time.UTC {
			t.Errorf("Unmarshal(%s) = %v, %v; want %v UTC", tt.in, ts, err, tt.want)
		}
	}
}

func TestTimestampNull(t *testing.T) {
	var v struct {
		At *Timestamp `json:"at"`
	}
	v.At = &Timestamp{time.Now()}
	if err := json.Unmarshal([]byte(`{"at":null}`), &v); err != nil || v.At != nil {
		t.Errorf("null into *Timestamp = %v, %v; want nil", v.At, err)
	}
}

func TestTimestampInvalid(t *testing.T) {
	for _, in := range []string{`"yesterday"`, `"2026-13-01T00:00:00.000Z"`, `12`, `"`, `""`, `true`} {
		var ts Timestamp
		err := json.Unmarshal([]byte(in), &ts)
		if err == nil {
			t.Errorf("Unmarshal(%s) succeeded", in)
			continue
		}
		if want := strings.Trim(in, `"`); want != "" && !strings.Contains(err.Error(), want) {
			t.Errorf("Unmarshal(%s) error %q does not name the value", in, err)
		}
	}
}

func TestTimestampEqualWithCmp(t *testing.T) {
	a := Timestamp{time.Date(2026, 11, 21, 8, 0, 0, 0, time.UTC)}
	b := Timestamp{a.In(time.FixedZone("X", 7200))}
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("same instant in two zones differs:\n%s", diff)
	}
	if a.String() != "2026-11-21T08:00:00.000Z" || NewTimestamp(b.Time).Location() != time.UTC {
		t.Errorf("String = %s", a)
	}
}

func FuzzTimestampUnmarshal(f *testing.F) {
	for _, seed := range []string{`"2026-11-21T08:30:05.123Z"`, `"2026-11-21T08:30:05Z"`, `null`, `""`, `"x"`, `"2026-11-21T08:30:05.123+14:00"`, `1`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var ts Timestamp
		if err := ts.UnmarshalJSON(data); err != nil {
			return
		}
		if string(data) == "null" {
			return
		}
		// Whatever parsed must survive a round trip at millisecond precision.
		out, err := ts.MarshalJSON()
		if err != nil {
			t.Fatalf("MarshalJSON after parsing %q: %v", data, err)
		}
		var back Timestamp
		if err := back.UnmarshalJSON(out); err != nil {
			if ts.Year() < 0 || ts.Year() > 9999 {
				return // outside the wire format's four-digit years
			}
			t.Fatalf("round trip of %q via %s: %v", data, out, err)
		}
		if !back.Equal(NewTimestamp(ts.Time)) {
			t.Fatalf("round trip of %q: %v != %v", data, back, ts)
		}
	})
}
