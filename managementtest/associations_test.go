package managementtest_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/serviceconnect/management"
)

func TestAssociate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := mtMemory(t)
		c.srv.AddUser(management.UserDetails{User: management.User{ID: "u-1"}})
		c.srv.AddUser(management.UserDetails{User: management.User{ID: "u-2"}})
		time.Sleep(time.Second)

		// A new Thing: 201.
		c.api("POST", "/users/u-1/associated_things", `{"physical_id":"t-1","model":"KS-2","firmware_version":"1.0"}`).want(t, 201, `{
			"physical_id":"t-1","name":"","model":"KS-2","firmware_version":"1.0","last_seen":null,
			"statuses":[],"custom_settings":null,
			"associated_users":[{"id":"u-1","association_data":{"associated_at":"2000-01-01T00:00:01.000Z"}}],
			"created_at":"2000-01-01T00:00:01.000Z","updated_at":"2000-01-01T00:00:01.000Z"}`)

		// Visible on the User's side.
		r := c.api("GET", "/users/u-1", "")
		want := mtJSON(t, `[{"physical_id":"t-1","name":"","model":"KS-2","firmware_version":"1.0","last_seen_at":null,
			"association_data":{"associated_at":"2000-01-01T00:00:01.000Z"}}]`)
		if got := mtField(t, r.json(t), "associated_things"); !cmp.Equal(want, got) {
			t.Errorf("associated_things = %v", got)
		}

		// Again, with a new firmware: 200, the association unchanged, the firmware taken.
		time.Sleep(time.Second)
		c.api("POST", "/users/u-1/associated_things", `{"physical_id":"t-1","model":"KS-2","firmware_version":"1.1"}`).want(t, 200, `{
			"physical_id":"t-1","name":"","model":"KS-2","firmware_version":"1.1","last_seen":null,
			"statuses":[],"custom_settings":null,
			"associated_users":[{"id":"u-1","association_data":{"associated_at":"2000-01-01T00:00:01.000Z"}}],
			"created_at":"2000-01-01T00:00:01.000Z","updated_at":"2000-01-01T00:00:02.000Z"}`)

		// An existing Thing with a second User: 200, both Users listed.
		time.Sleep(time.Second)
		r = c.api("POST", "/users/u-2/associated_things", `{"physical_id":"t-1","model":"KS-2","firmware_version":"1.1"}`)
		if r.status != 200 {
			t.Fatalf("status %d", r.status)
		}
		want = mtJSON(t, `[{"id":"u-1","association_data":{"associated_at":"2000-01-01T00:00:01.000Z"}},
			{"id":"u-2","association_data":{"associated_at":"2000-01-01T00:00:03.000Z"}}]`)
		if got := mtField(t, r.json(t), "associated_users"); !cmp.Equal(want, got) {
			t.Errorf("associated_users = %v", got)
		}
	})
}

func TestAssociateValidation(t *testing.T) {
	c := mtStart(t)
	c.srv.AddUser(management.UserDetails{User: management.User{ID: "u-1"}})
	const reason = "COMMON.REQUEST_VALIDATION"
	const req = "physical_id, model and firmware_version are required; missing: "
	tests := []struct{ body, msg string }{
		{`{}`, req + "physical_id, model, firmware_version"},
		{`{"model":"m","firmware_version":"1"}`, req + "physical_id"},
		{`{"physical_id":"t","firmware_version":"1"}`, req + "model"},
		{`{"physical_id":"t","model":"m"}`, req + "firmware_version"},
		{`{"physical_id":"","model":"m","firmware_version":"1"}`, req + "physical_id"},
		{`{"physical_id":null,"model":"m","firmware_version":"1"}`, req + "physical_id"},
		{`{"physical_id":7,"model":"m","firmware_version":"1"}`, "physical_id must be a string"},
		{`"t-1"`, "the request body must be a JSON object"},
	}
	for _, tt := range tests {
		c.api("POST", "/users/u-1/associated_things", tt.body).wantError(t, 400, reason, tt.msg)
	}
	if _, ok := c.srv.Thing("t"); ok {
		t.Error("a refused associate created a Thing")
	}
	c.api("POST", "/users/nobody/associated_things", `{"physical_id":"t","model":"m","firmware_version":"1"}`).
		wantError(t, 404, "COMMON.ENTITY_NOT_FOUND", "User nobody was not found")
	if _, ok := c.srv.Thing("t"); ok {
		t.Error("an associate with an unknown User created a Thing")
	}
}

func TestDisassociate(t *testing.T) {
	c := mtStart(t)
	c.srv.AddUser(management.UserDetails{User: management.User{ID: "u-1"}})
	c.srv.AddUser(management.UserDetails{User: management.User{ID: "u-2"}})
	c.srv.AddThing(management.ThingDetails{Thing: management.Thing{PhysicalID: "t-1", UpdatedAt: mtTS(0)}, AssociatedUsers: []management.AssociatedUser{{ID: "u-1"}, {ID: "u-2"}}})

	r := c.api("DELETE", "/users/u-1/associated_things/t-1", "")
	if r.status != 200 || len(r.body) != 0 {
		t.Fatalf("disassociate: %d %q, want 200 and an empty body", r.status, r.body)
	}
	u, _ := c.srv.User("u-1")
	th, ok := c.srv.Thing("t-1")
	if len(u.AssociatedThings) != 0 || !ok || len(th.AssociatedUsers) != 1 || th.AssociatedUsers[0].ID != "u-2" {
		t.Errorf("after disassociate: user %+v, thing %+v", u.AssociatedThings, th.AssociatedUsers)
	}
	if !th.UpdatedAt.After(mtTS(0).Time) {
		t.Errorf("updated_at did not move: %v", th.UpdatedAt)
	}

	const nf = "COMMON.ENTITY_NOT_FOUND"
	c.api("DELETE", "/users/u-1/associated_things/t-1", "").wantError(t, 404, nf, "Association of Thing t-1 with User u-1 was not found")
	c.api("DELETE", "/users/nobody/associated_things/t-1", "").wantError(t, 404, nf, "User nobody was not found")
	c.api("DELETE", "/users/u-2/associated_things/nothing", "").wantError(t, 404, nf, "Thing nothing was not found")
}
