package managementtest_test

import (
	"strings"
	"testing"
	"time"

	"github.com/serviceconnect/management"
)

// mtSeedFull adds a fully described User and Thing, associated, plus an
// anonymous User.
func mtSeedFull(c *mtConn) {
	c.srv.AddThing(management.ThingDetails{
		Thing: management.Thing{
			PhysicalID: "t/1 x", Name: "Kitchen sensor", Model: "KS-2", FirmwareVersion: "1.4.2",
			LastSeen: management.Ptr(mtTS(3 * time.Hour)), CreatedAt: mtTS(time.Hour), UpdatedAt: mtTS(2 * time.Hour),
		},
		Statuses:       []management.ThingStatus{{Name: "battery", StatusValue: "87", Date: mtTS(3 * time.Hour)}},
		CustomSettings: map[string]any{"room": "kitchen", "threshold": 12345678901234567, "tags": []any{"a", 1.5}},
	})
	c.srv.AddUser(management.UserDetails{
		User: management.User{
			ID: "u-1", Email: management.Ptr("ada@example.com"), FirstName: management.Ptr("Ada"), LastName: management.Ptr("Lovelace"),
			CreatedAt: mtTS(0), UpdatedAt: mtTS(time.Minute),
		},
		TermsOfUseVersionApproved: management.Ptr("v3"),
		EmailVerificationStatus:   management.EmailVerified,
		Consents:                  []management.Consent{{Key: "marketing", Value: management.ConsentAccept, UpdatedAt: mtTS(time.Second)}},
		CustomSettings:            map[string]any{"lang": "en"},
		AssociatedThings: []management.AssociatedThing{{PhysicalID: "t/1 x", Name: "ignored",
			AssociationData: management.AssociationData{AssociatedAt: mtTS(4 * time.Hour)}}},
	})
	c.srv.AddUser(management.UserDetails{User: management.User{ID: "anon", CreatedAt: mtTS(time.Hour)}, IsAnonymous: true})
}

func TestGetUser(t *testing.T) {
	c := mtStart(t)
	mtSeedFull(c)
	c.api("GET", "/users/u-1", "").want(t, 200, `{
		"id":"u-1","email":"ada@example.com","first_name":"Ada","last_name":"Lovelace",
		"is_anonymous":false,"terms_of_use_version_approved":"v3","email_verification_status":"Verified",
		"consents":[{"key":"marketing","value":"Accept","updated_at":"2024-03-01T12:00:01.000Z"}],
		"custom_settings":{"lang":"en"},
		"associated_things":[{"physical_id":"t/1 x","name":"Kitchen sensor","model":"KS-2","firmware_version":"1.4.2",
			"last_seen_at":"2024-03-01T15:00:00.000Z","association_data":{"associated_at":"2024-03-01T16:00:00.000Z"}}],
		"created_at":"2024-03-01T12:00:00.000Z","updated_at":"2024-03-01T12:01:00.000Z"}`)
	c.api("GET", "/users/anon", "").want(t, 200, `{
		"id":"anon","email":null,"first_name":null,"last_name":null,
		"is_anonymous":true,"terms_of_use_version_approved":null,"email_verification_status":"Unset",
		"consents":[],"custom_settings":null,"associated_things":[],
		"created_at":"2024-03-01T13:00:00.000Z","updated_at":"2024-03-01T13:00:00.000Z"}`)
}

func TestGetThing(t *testing.T) {
	c := mtStart(t)
	mtSeedFull(c)
	r := c.api("GET", "/things/t%2F1%20x", "")
	r.want(t, 200, `{
		"physical_id":"t/1 x","name":"Kitchen sensor","model":"KS-2","firmware_version":"1.4.2",
		"last_seen":"2024-03-01T15:00:00.000Z",
		"statuses":[{"name":"battery","status_value":"87","date":"2024-03-01T15:00:00.000Z"}],
		"custom_settings":{"room":"kitchen","threshold":12345678901234567,"tags":["a",1.5]},
		"associated_users":[{"id":"u-1","association_data":{"associated_at":"2024-03-01T16:00:00.000Z"}}],
		"created_at":"2024-03-01T13:00:00.000Z","updated_at":"2024-03-01T14:00:00.000Z"}`)
	// Large integers keep every digit on the wire.
	if want := `"threshold":12345678901234567`; !strings.Contains(string(r.body), want) {
		t.Errorf("body %s does not hold %s", r.body, want)
	}
}

func TestGetNotFound(t *testing.T) {
	c := mtStart(t)
	c.api("GET", "/users/u-1", "").wantError(t, 404, "COMMON.ENTITY_NOT_FOUND", "User u-1 was not found")
	c.api("GET", "/things/t-1", "").wantError(t, 404, "COMMON.ENTITY_NOT_FOUND", "Thing t-1 was not found")
	c.api("GET", "/users/a%2Fb", "").wantError(t, 404, "COMMON.ENTITY_NOT_FOUND", "User a/b was not found")
	c.api("PATCH", "/things/t-1", `{"name":"x"}`).wantError(t, 404, "COMMON.ENTITY_NOT_FOUND", "Thing t-1 was not found")
}
