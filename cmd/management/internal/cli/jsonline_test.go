package cli

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/serviceconnect/management"
)

var trickyStrings = []string{
	"", "plain", `quote " and backslash \`, "<script>&amp;</script>", "tab\tnew\nline\rcr\bbs\fff",
	"\x00\x01\x1f\x7f", "ünïcödé ✓ 🙂", "line\u2028para\u2029", "bad \xff utf-8 \xc3", "end \xe2\x80",
}

// TestFlatJSONMatchesMarshal: a list item's JSON line, appended from its
// columns, is byte for byte what json.Marshal writes, nulls, escapes and
// timestamps included; and the list columns are all flat.
func TestFlatJSONMatchesMarshal(t *testing.T) {
	if !flat(usersResource.cols) || !flat(thingsResource.cols) {
		t.Fatal("the list columns are not flat: exports would fall back to json.Marshal")
	}
	if flat(userDetailsColumns) || flat(thingDetailsColumns) || flat(authColumns) {
		t.Fatal("columns holding JSON values are taken as flat")
	}
	ts := management.NewTimestamp(time.Date(2026, 1, 5, 9, 0, 0, 123456789, time.UTC))
	for _, s := range trickyStrings {
		users := []management.User{
			{ID: s, Email: &s, FirstName: &s, LastName: &s, CreatedAt: ts, UpdatedAt: ts},
			{ID: s},
		}
		for _, u := range users {
			want, _ := json.Marshal(u)
			if got := appendFlat(nil, userColumns, &u); string(got) != string(want) {
				t.Errorf("User %q:\n got %s\nwant %s", s, got, want)
			}
		}
		things := []management.Thing{
			{PhysicalID: s, Name: s, Model: s, FirmwareVersion: s, LastSeen: &ts, CreatedAt: ts, UpdatedAt: ts},
			{PhysicalID: s},
		}
		for _, th := range things {
			want, _ := json.Marshal(th)
			if got := appendFlat(nil, thingColumns, &th); string(got) != string(want) {
				t.Errorf("Thing %q:\n got %s\nwant %s", s, got, want)
			}
		}
	}
}

// FuzzAppendString: appendString escapes as encoding/json does.
func FuzzAppendString(f *testing.F) {
	for _, s := range trickyStrings {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := appendString(nil, s); string(got) != string(want) {
			t.Errorf("appendString(%q) = %s, want %s", s, got, want)
		}
	})
}
