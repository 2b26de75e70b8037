package main

import (
	"fmt"
	"io"
	"time"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

// offline starts managementtest's fake, seeded with demo data. Its data is
// made up, so the tour prints all of it and writes, with u-ada as the
// test account.
func offline(out io.Writer) (*tour, func(), error) {
	srv := managementtest.NewServer()
	token := seed(srv)
	fmt.Fprintf(out, "%s is not set: using managementtest's in-memory fake at %s, seeded with demo data.\n", management.EnvBaseURL, srv.URL)
	t := &tour{
		client:      srv.Client(),
		out:         out,
		personal:    true,
		writeUser:   "u-ada",
		endUserAuth: "Bearer " + token,
	}
	return t, srv.Close, nil
}

// seed fills the fake with a few Users and Things and returns an End User
// token of the first User.
func seed(srv *managementtest.Server) string {
	base := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	at := func(h int) management.Timestamp {
		return management.NewTimestamp(base.Add(time.Duration(h) * time.Hour))
	}
	srv.AddThing(management.ThingDetails{
		Thing: management.Thing{PhysicalID: "thermo-0042", Name: "Hall thermostat", Model: "TH-2", FirmwareVersion: "1.4.0",
			LastSeen: management.Ptr(at(30)), CreatedAt: at(1)},
		Statuses:       []management.ThingStatus{{Name: "battery", StatusValue: "ok", Date: at(30)}},
		CustomSettings: map[string]any{"target_celsius": 20.5, "eco": true},
	})
	srv.AddThing(management.ThingDetails{
		Thing: management.Thing{PhysicalID: "plug-7", Name: "Desk plug", Model: "PL-1", FirmwareVersion: "0.9.2", CreatedAt: at(2)},
	})
	srv.AddUser(management.UserDetails{
		User: management.User{ID: "u-ada", Email: management.Ptr("ada@example.com"),
			FirstName: management.Ptr("Ada"), LastName: management.Ptr("Lovelace"), CreatedAt: at(4)},
		EmailVerificationStatus: management.EmailVerified,
		Consents:                []management.Consent{{Key: "marketing", Value: management.ConsentReject, UpdatedAt: at(3)}},
		AssociatedThings:        []management.AssociatedThing{{PhysicalID: "thermo-0042"}},
	})
	srv.AddUser(management.UserDetails{
		User:        management.User{ID: "u-anon-19", CreatedAt: at(3)},
		IsAnonymous: true,
	})
	return srv.IssueEndUserToken("u-ada")
}
