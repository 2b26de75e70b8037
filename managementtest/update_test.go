package managementtest_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

func mtSeedPatchable(srv *managementtest.Server) {
	srv.AddThing(management.ThingDetails{
		Thing: management.Thing{PhysicalID: "t-1", Name: "old", Model: "M", FirmwareVersion: "1.0",
			CreatedAt: mtTS(0), UpdatedAt: mtTS(time.Hour)},
		Statuses: []management.ThingStatus{
			{Name: "battery", StatusValue: "90", Date: mtTS(time.Minute)},
			{Name: "mode", StatusValue: "eco", Date: mtTS(time.Minute)},
		},
		CustomSettings: map[string]any{"keep": "k", "replace": 1, "remove": true},
	})
}

func TestUpdateThingMergeRules(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// synctest's clock starts at 2000-01-01; seeds are later, so
		// updated_at must move past them although the clock is behind.
		c := mtMemory(t)
		mtSeedPatchable(c.srv)
		r := c.api("PATCH", "/things/t-1", `{
			"name":"new","firmware_version":"2.0","last_seen":"2024-03-02T00:00:00.123Z",
			"statuses":[{"name":"battery","status_value":"50","date":"2024-03-02T00:00:00.000Z"},
			            {"name":"wifi","status_value":"ok","date":"2024-03-02T00:00:01.000Z"}],
			"custom_settings":{"replace":{"nested":[1,2]},"add":null,"remove":"$ServiceUnset$","big":98765432109876543}}`)
		r.want(t, 200, `{
			"physical_id":"t-1","name":"new","model":"M","firmware_version":"2.0","last_seen":"2024-03-02T00:00:00.123Z",
			"statuses":[{"name":"battery","status_value":"50","date":"2024-03-02T00:00:00.000Z"},
			            {"name":"mode","status_value":"eco","date":"2024-03-01T12:01:00.000Z"},
			            {"name":"wifi","status_value":"ok","date":"2024-03-02T00:00:01.000Z"}],
			"custom_settings":{"keep":"k","replace":{"nested":[1,2]},"add":null,"big":98765432109876543},
			"associated_users":[],
			"created_at":"2024-03-01T12:00:00.000Z","updated_at":"2024-03-01T13:00:00.001Z"}`)

		// Absent and null members change nothing; updated_at still moves.
		r = c.api("PATCH", "/things/t-1", `{"name":null,"firmware_version":null,"last_seen":null,"statuses":null,"custom_settings":null}`)
		if got := mtField(t, r.json(t), "updated_at"); got != "2024-03-01T13:00:00.002Z" {
			t.Errorf("updated_at = %v, want it moved by a millisecond", got)
		}
		if got := mtField(t, r.json(t), "name"); got != "new" {
			t.Errorf("name = %v after a null name", got)
		}
		r = c.api("PATCH", "/things/t-1", `{}`)
		if got := mtField(t, r.json(t), "updated_at"); got != "2024-03-01T13:00:00.003Z" {
			t.Errorf("updated_at = %v after an empty update", got)
		}

		// A status without a date is dated now.
		r = c.api("PATCH", "/things/t-1", `{"statuses":[{"name":"mode","status_value":"boost"}]}`)
		if got := mtField(t, r.json(t), "statuses", 1, "date"); got != "2000-01-01T00:00:00.000Z" {
			t.Errorf("status date = %v, want now", got)
		}

		// The server's view agrees with the answer.
		th, _ := c.srv.Thing("t-1")
		if th.Name != "new" || th.CustomSettings["big"] != any(json.Number("98765432109876543")) {
			t.Errorf("Thing = %+v", th)
		}
	})
}

func TestUpdateThingUpdatedAtFollowsClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := mtMemory(t)
		c.srv.AddThing(management.ThingDetails{Thing: management.Thing{PhysicalID: "t-1"}})
		time.Sleep(90 * time.Second)
		r := c.api("PATCH", "/things/t-1", `{"name":"x"}`)
		if got := mtField(t, r.json(t), "updated_at"); got != "2000-01-01T00:01:30.000Z" {
			t.Errorf("updated_at = %v, want the time of the update", got)
		}
	})
}

func TestUpdateThingUnsetMarkerOption(t *testing.T) {
	c := mtStart(t, managementtest.WithUnsetMarker("<gone>"))
	mtSeedPatchable(c.srv)
	r := c.api("PATCH", "/things/t-1", `{"custom_settings":{"remove":"<gone>","keep":"$ServiceUnset$"}}`)
	if diff := cmp.Diff(mtJSON(t, `{"keep":"$ServiceUnset$","replace":1}`), mtField(t, r.json(t), "custom_settings")); diff != "" {
		t.Errorf("custom_settings (-want +got):\n%s", diff)
	}
	if got := c.srv.Config().UnsetMarker; got != "<gone>" {
		t.Errorf("Config().UnsetMarker = %q", got)
	}
}

func TestUpdateThingCreatesCustomSettings(t *testing.T) {
	c := mtStart(t)
	c.srv.AddThing(management.ThingDetails{Thing: management.Thing{PhysicalID: "t-1"}})
	r := c.api("PATCH", "/things/t-1", `{"custom_settings":{"a":1,"b":"$ServiceUnset$"}}`)
	if diff := cmp.Diff(mtJSON(t, `{"a":1}`), mtField(t, r.json(t), "custom_settings")); diff != "" {
		t.Errorf("custom_settings (-want +got):\n%s", diff)
	}
	r = c.api("PATCH", "/things/t-1", `{"custom_settings":{"a":"$ServiceUnset$"}}`)
	if diff := cmp.Diff(mtJSON(t, `{}`), mtField(t, r.json(t), "custom_settings")); diff != "" {
		t.Errorf("custom_settings after removing the last key (-want +got):\n%s", diff)
	}
}

func TestUpdateThingValidation(t *testing.T) {
	c := mtStart(t)
	mtSeedPatchable(c.srv)
	const reason = "COMMON.REQUEST_VALIDATION"
	tests := []struct{ body, msg string }{
		{`not json`, "the request body must be a JSON object"},
		{`[1]`, "the request body must be a JSON object"},
		{`null`, "the request body must be a JSON object"},
		{``, "the request body must be a JSON object"},
		{`{"name":5}`, "name must be a string"},
		{`{"firmware_version":true}`, "firmware_version must be a string"},
		{`{"last_seen":"2024-03-02T00:00:00Z"}`, `last_seen "2024-03-02T00:00:00Z" is not a timestamp of the form yyyy-MM-ddTHH:mm:ss.SSSZ`},
		{`{"last_seen":"yesterday"}`, `last_seen "yesterday" is not a timestamp of the form yyyy-MM-ddTHH:mm:ss.SSSZ`},
		{`{"statuses":{"name":"x"}}`, "statuses must be an array of objects with name, status_value and date"},
		{`{"statuses":[{"status_value":"1"}]}`, "statuses[0] must have a name and a status_value"},
		{`{"statuses":[{"name":"a","status_value":"1"},{"name":"b"}]}`, "statuses[1] must have a name and a status_value"},
		{`{"statuses":[{"name":"a","status_value":"1","date":"now"}]}`, `statuses[0].date "now" is not a timestamp of the form yyyy-MM-ddTHH:mm:ss.SSSZ`},
		{`{"custom_settings":[1]}`, "custom_settings must be an object"},
		{`{"custom_settings":"x"}`, "custom_settings must be an object"},
	}
	for _, tt := range tests {
		c.api("PATCH", "/things/t-1", tt.body).wantError(t, 400, reason, tt.msg)
	}
	// Nothing changed.
	th, _ := c.srv.Thing("t-1")
	if th.Name != "old" || !th.UpdatedAt.Equal(mtTS(time.Hour)) {
		t.Errorf("a refused update changed the Thing: %+v", th)
	}
	// Bodies must be declared JSON.
	for _, ct := range []string{"", "text/plain", "application/x-www-form-urlencoded"} {
		h := map[string]string{"Authorization": "Bearer " + c.token}
		if ct != "" {
			h["Content-Type"] = ct
		}
		c.send("PATCH", mtPrefix+"/things/t-1", h, `{"name":"x"}`).wantError(t, 400, reason, "Content-Type must be application/json")
	}
	h := map[string]string{"Authorization": "Bearer " + c.token, "Content-Type": "application/json; charset=utf-8"}
	if r := c.send("PATCH", mtPrefix+"/things/t-1", h, `{"name":"x"}`); r.status != 200 {
		t.Errorf("charset parameter: %d %s", r.status, r.body)
	}
}

// Concurrent updates of one Thing lose nothing: every key and status sent
// is there at the end.
func TestUpdateThingConcurrent(t *testing.T) {
	c := mtStart(t)
	c.srv.AddThing(management.ThingDetails{Thing: management.Thing{PhysicalID: "t-1"}})
	c.token = c.newToken()
	const n = 40
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			body := fmt.Sprintf(`{"custom_settings":{"k%d":%d},"statuses":[{"name":"s%d","status_value":"v"}]}`, i, i, i)
			// trySend, not api: a test may not fail at once off its goroutine.
			if r, err := c.trySend("PATCH", mtPrefix+"/things/t-1", c.apiHeader(), body); err != nil || r.status != 200 {
				t.Errorf("PATCH %d: %v %d %s", i, err, r.status, r.body)
			}
			if r, err := c.trySend("GET", mtPrefix+"/things/t-1", c.apiHeader(), ""); err != nil || r.status != 200 {
				t.Errorf("GET: %v %d", err, r.status)
			}
		})
	}
	wg.Wait()
	th, _ := c.srv.Thing("t-1")
	if len(th.CustomSettings) != n || len(th.Statuses) != n {
		t.Fatalf("after %d updates: %d custom settings, %d statuses", n, len(th.CustomSettings), len(th.Statuses))
	}
	for i := range n {
		if got := th.CustomSettings[fmt.Sprintf("k%d", i)]; got != any(json.Number(fmt.Sprint(i))) {
			t.Errorf("k%d = %v", i, got)
		}
	}
	if got := c.srv.Requests(managementtest.RouteUpdateThing); got != n {
		t.Errorf("Requests(RouteUpdateThing) = %d, want %d", got, n)
	}
}
