package cli

import (
	"crypto/rand"
	"encoding/json"
	"time"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

// fakePageSize is the --fake server's page size: small, so that a few
// seeded Users already take several pages, as a real listing does.
const fakePageSize = 2

// at returns the fake's timestamp d after its data was created. Fixed
// times keep the tool's output the same from run to run.
func at(d time.Duration) management.Timestamp {
	return management.NewTimestamp(time.Date(2026, time.January, 5, 9, 0, 0, 0, time.UTC).Add(d))
}

// fakeClientID is the --fake service's client id. It is the same at each
// run, as its address is (managementtest.InMemoryURL), so that an export's
// checkpoint names the same service from one run to the next: running the
// command again finds its export complete, or resumes it. The secret never
// leaves the process, and is random.
const fakeClientID = "management-cli-fake"

// fakeService is the --fake service as a checkpoint records it.
var fakeService = serviceID{BaseURL: managementtest.InMemoryURL, PathPrefix: managementtest.DefaultPathPrefix, ClientID: fakeClientID}

// newFake returns an in-memory managementtest server seeded with a few
// Things and Users, for --fake: the tool works offline, the same way it
// works against the service.
func newFake() *managementtest.Server {
	srv := managementtest.NewInMemoryServer(managementtest.WithPageSize(fakePageSize),
		managementtest.WithCredentials(fakeClientID, rand.Text()))
	for _, t := range fakeThings() {
		srv.AddThing(t)
	}
	for _, u := range fakeUsers() {
		srv.AddUser(u)
	}
	return srv
}

func fakeThings() []management.ThingDetails {
	const h = time.Hour
	return []management.ThingDetails{
		{
			Thing: management.Thing{
				PhysicalID: "thermo-42", Name: "Hall thermostat", Model: "T-1000", FirmwareVersion: "2.4.1",
				LastSeen: management.Ptr(at(50 * h)), CreatedAt: at(0), UpdatedAt: at(50 * h),
			},
			Statuses: []management.ThingStatus{
				{Name: "battery", StatusValue: "ok", Date: at(50 * h)},
				{Name: "mode", StatusValue: "heat", Date: at(48 * h)},
			},
			CustomSettings: map[string]any{"target_celsius": json.Number("21"), "eco": true},
		},
		{
			Thing: management.Thing{
				PhysicalID: "lamp-7", Name: "Desk lamp", Model: "L-7", FirmwareVersion: "1.0.3",
				CreatedAt: at(2 * h), UpdatedAt: at(2 * h),
			},
		},
		{
			Thing: management.Thing{
				PhysicalID: "plug-3", Name: "Kitchen plug", Model: "P-3", FirmwareVersion: "0.9.0",
				LastSeen: management.Ptr(at(30 * h)), CreatedAt: at(4 * h), UpdatedAt: at(30 * h),
			},
			Statuses: []management.ThingStatus{{Name: "power", StatusValue: "on", Date: at(30 * h)}},
		},
	}
}

func fakeUsers() []management.UserDetails {
	const h = time.Hour
	return []management.UserDetails{
		{
			User: management.User{
				ID: "u-ada", Email: management.Ptr("ada@example.com"), FirstName: management.Ptr("Ada"), LastName: management.Ptr("Lovelace"),
				CreatedAt: at(1 * h), UpdatedAt: at(40 * h),
			},
			TermsOfUseVersionApproved: management.Ptr("v3"),
			EmailVerificationStatus:   management.EmailVerified,
			Consents: []management.Consent{
				{Key: "marketing", Value: management.ConsentAccept, UpdatedAt: at(1 * h)},
				{Key: "analytics", Value: management.ConsentReject, UpdatedAt: at(40 * h)},
			},
			CustomSettings:   map[string]any{"theme": "dark", "units": "metric"},
			AssociatedThings: []management.AssociatedThing{{PhysicalID: "thermo-42", AssociationData: management.AssociationData{AssociatedAt: at(3 * h)}}},
		},
		{
			User: management.User{
				ID: "u-grace", Email: management.Ptr("grace@example.com"), FirstName: management.Ptr("Grace"), LastName: management.Ptr("Hopper"),
				CreatedAt: at(5 * h), UpdatedAt: at(5 * h),
			},
			EmailVerificationStatus: management.EmailPending,
			Consents:                []management.Consent{{Key: "marketing", Value: management.ConsentReject, UpdatedAt: at(5 * h)}},
			AssociatedThings:        []management.AssociatedThing{{PhysicalID: "lamp-7", AssociationData: management.AssociationData{AssociatedAt: at(6 * h)}}},
		},
		{
			User:        management.User{ID: "u-anon-1", CreatedAt: at(7 * h), UpdatedAt: at(7 * h)},
			IsAnonymous: true,
		},
		{
			User: management.User{
				ID: "u-alan", Email: management.Ptr("alan@example.com"), FirstName: management.Ptr("Alan"), LastName: management.Ptr("Turing"),
				CreatedAt: at(9 * h), UpdatedAt: at(20 * h),
			},
			TermsOfUseVersionApproved: management.Ptr("v2"),
			EmailVerificationStatus:   management.EmailVerified,
			CustomSettings:            map[string]any{"beta": true},
		},
		{
			User: management.User{
				ID: "u-katherine", Email: management.Ptr("katherine@example.com"), FirstName: management.Ptr("Katherine"), LastName: management.Ptr("Johnson"),
				CreatedAt: at(11 * h), UpdatedAt: at(11 * h),
			},
			EmailVerificationStatus: management.EmailUnset,
		},
	}
}
