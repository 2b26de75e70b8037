package cli

import (
	"encoding/json"
	"io"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/serviceconnect/management"
)

// parseUpdate runs things update's flag parsing on args and returns the
// update it would send.
func parseUpdate(t *testing.T, stdin string, args ...string) management.ThingUpdate {
	t.Helper()
	streams, in, _, _ := Test()
	in.WriteString(stdin)
	var got *UpdateOptions
	cmd := NewCmdUpdate(NewFactory(streams), func(o *UpdateOptions) error { got = o; return nil })
	cmd.SetArgs(args)
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	if err := cmd.Execute(); err != nil {
		t.Fatalf("things update %v: %v", args, err)
	}
	return got.Update
}

// TestUpdateFromFlags: each flag sets its field of the update; statuses
// are dated now; --set values are JSON (numbers kept as written);
// --unset removes a key with management.Unset.
func TestUpdateFromFlags(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		now := management.NewTimestamp(time.Now())
		got := parseUpdate(t, "", "thermo-42",
			"--name", "", "--firmware-version", "2.5.0", "--last-seen", "2026-01-05T09:00:00.123456Z",
			"--status", "battery=low", "--status", "note=a=b",
			"--set", "big=12345678901234567890", "--set", `label="hall"`, "--set", "list=[1,true,null]", "--set", "nothing=null",
			"--unset", "eco")
		want := management.ThingUpdate{
			Name:            management.Ptr(""),
			FirmwareVersion: management.Ptr("2.5.0"),
			LastSeen:        management.Ptr(management.NewTimestamp(time.Date(2026, 1, 5, 9, 0, 0, 123000000, time.UTC))),
			Statuses: []management.ThingStatus{
				{Name: "battery", StatusValue: "low", Date: now},
				{Name: "note", StatusValue: "a=b", Date: now},
			},
			CustomSettings: map[string]any{
				"big":     json.Number("12345678901234567890"),
				"label":   "hall",
				"list":    []any{json.Number("1"), true, nil},
				"nothing": nil,
				"eco":     management.Unset,
			},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("update (-want +got):\n%s", diff)
		}
	})
}

// TestUpdateOnlyWhatIsGiven: an absent flag leaves its field unset, so
// that the service keeps the Thing's value.
func TestUpdateOnlyWhatIsGiven(t *testing.T) {
	got := parseUpdate(t, "", "thermo-42", "--firmware-version", "3")
	if diff := cmp.Diff(management.ThingUpdate{FirmwareVersion: management.Ptr("3")}, got); diff != "" {
		t.Errorf("update (-want +got):\n%s", diff)
	}
}

// TestUpdateFromDocument: --json reads the PATCH shape; a status without
// a date is dated now; the unset marker passes as written.
func TestUpdateFromDocument(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		doc := `{"firmware_version": "2.6.0", "last_seen": "2026-01-05T09:00:00.000Z",
			"statuses": [{"name": "battery", "status_value": "low"}, {"name": "mode", "status_value": "off", "date": "2026-01-06T00:00:00.000Z"}],
			"custom_settings": {"n": 1.50, "eco": "$ServiceUnset$"}}`
		got := parseUpdate(t, doc, "thermo-42", "--json", "-")
		want := management.ThingUpdate{
			FirmwareVersion: management.Ptr("2.6.0"),
			LastSeen:        management.Ptr(management.NewTimestamp(time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC))),
			Statuses: []management.ThingStatus{
				{Name: "battery", StatusValue: "low", Date: management.NewTimestamp(time.Now())},
				{Name: "mode", StatusValue: "off", Date: management.NewTimestamp(time.Date(2026, 1, 6, 0, 0, 0, 0, time.UTC))},
			},
			CustomSettings: map[string]any{"n": json.Number("1.50"), "eco": management.Unset},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("update (-want +got):\n%s", diff)
		}
	})
}
