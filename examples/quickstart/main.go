// Command quickstart tours the management API: it lists Users and Things,
// reads a User, updates a Thing, associates and disassociates a Thing, and
// validates an End User token.
//
// With MANAGEMENT_BASE_URL unset it starts managementtest's in-memory fake,
// seeded with demo data, so it runs offline:
//
//	go run ./examples/quickstart
//
// Against a real service, set MANAGEMENT_BASE_URL, MANAGEMENT_CLIENT_ID and
// MANAGEMENT_CLIENT_SECRET. The tour then only reads, unless
// MANAGEMENT_QUICKSTART_WRITES=1 lets it update, associate and disassociate
// too; MANAGEMENT_END_USER_TOKEN ("Bearer ...") is the End User token it
// validates.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

func main() {
	log.SetFlags(0)
	if err := run(context.Background()); err != nil {
		log.Fatalf("quickstart: %v", err)
	}
}

// tour holds what run found along the way.
type tour struct {
	client      *management.Client
	writes      bool   // the tour may change data
	endUserAuth string // "Bearer <token>" to validate, "" to skip
}

func run(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()

	t, cleanup, err := setUp()
	if err != nil {
		return err
	}
	defer cleanup()

	userID, err := t.listUsers(ctx)
	if err != nil {
		return err
	}
	physicalID, err := t.listThings(ctx)
	if err != nil {
		return err
	}
	if err := t.readUser(ctx, userID); err != nil {
		return err
	}
	if t.writes {
		if err := t.updateThing(ctx, physicalID); err != nil {
			return err
		}
		if err := t.associate(ctx, userID); err != nil {
			return err
		}
	} else {
		fmt.Println("\nSkipping updates and associations (set MANAGEMENT_QUICKSTART_WRITES=1 to run them).")
	}
	return t.validate(ctx)
}

// setUp connects to the service named by the environment, or starts the fake.
func setUp() (*tour, func(), error) {
	baseURL := os.Getenv(management.EnvBaseURL)
	if baseURL == "" {
		srv := managementtest.NewServer()
		token := seed(srv)
		fmt.Printf("MANAGEMENT_BASE_URL is not set: using managementtest's in-memory fake at %s, seeded with demo data.\n", srv.URL)
		return &tour{client: srv.Client(), writes: true, endUserAuth: "Bearer " + token}, srv.Close, nil
	}
	cfg, err := management.ConfigFromEnv() // names every variable missing or malformed
	if err != nil {
		return nil, nil, err
	}
	cfg.UserAgent = "quickstart"
	client, err := management.NewClient(cfg)
	if err != nil {
		return nil, nil, err
	}
	fmt.Printf("Using %s.\n", baseURL)
	t := &tour{
		client:      client,
		writes:      os.Getenv("MANAGEMENT_QUICKSTART_WRITES") == "1",
		endUserAuth: os.Getenv("MANAGEMENT_END_USER_TOKEN"),
	}
	return t, func() {}, nil
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

func (t *tour) listUsers(ctx context.Context) (string, error) {
	fmt.Println("\nUsers (newest first):")
	var first string
	for user, err := range t.client.Users.List(ctx, nil) {
		if err != nil {
			return "", fmt.Errorf("listing users: %w", err)
		}
		if first == "" {
			first = user.ID
		}
		fmt.Printf("  %-12s %s\n", user.ID, displayName(user))
	}
	if first == "" {
		return "", errors.New("the service has no Users to tour")
	}
	return first, nil
}

func displayName(u *management.User) string {
	if u.Email == nil {
		return "(anonymous)"
	}
	name := *u.Email
	if u.FirstName != nil && u.LastName != nil {
		name = *u.FirstName + " " + *u.LastName + " <" + name + ">"
	}
	return name
}

func (t *tour) listThings(ctx context.Context) (string, error) {
	fmt.Println("\nThings, least recently updated first:")
	var first string
	opts := &management.ListOptions{OrderBy: management.OrderByUpdatedAt, Direction: management.Ascending}
	for thing, err := range t.client.Things.List(ctx, opts) {
		if err != nil {
			return "", fmt.Errorf("listing things: %w", err)
		}
		if first == "" {
			first = thing.PhysicalID
		}
		fmt.Printf("  %-12s %-16s model %s, firmware %s\n", thing.PhysicalID, thing.Name, thing.Model, thing.FirmwareVersion)
	}
	if first == "" {
		return "", errors.New("the service has no Things to tour")
	}
	return first, nil
}

func (t *tour) readUser(ctx context.Context, id string) error {
	user, err := t.client.Users.Get(ctx, id)
	if err != nil {
		return fmt.Errorf("reading user %s: %w", id, err)
	}
	fmt.Printf("\nUser %s: email %s, %d consent(s), %d associated Thing(s)\n",
		user.ID, user.EmailVerificationStatus, len(user.Consents), len(user.AssociatedThings))
	for _, th := range user.AssociatedThings {
		fmt.Printf("  associated with %s (%s) since %s\n", th.PhysicalID, th.Name, th.AssociationData.AssociatedAt)
	}
	_, err = t.client.Users.Get(ctx, "no-such-user")
	if errors.Is(err, management.ErrNotFound) {
		fmt.Printf("Reading an unknown User: %v\n", err)
	}
	return nil
}

func (t *tour) updateThing(ctx context.Context, physicalID string) error {
	thing, err := t.client.Things.Update(ctx, physicalID, management.ThingUpdate{
		Name:     management.Ptr("Hall thermostat (renamed)"),
		LastSeen: management.Ptr(management.NewTimestamp(time.Now())),
		Statuses: []management.ThingStatus{{Name: "battery", StatusValue: "low", Date: management.NewTimestamp(time.Now())}},
		CustomSettings: map[string]any{
			"target_celsius": 19,               // replaced
			"eco":            management.Unset, // removed
		},
	})
	if err != nil {
		return fmt.Errorf("updating thing %s: %w", physicalID, err)
	}
	fmt.Printf("\nUpdated %s: name %q, statuses %d, custom settings %v\n",
		thing.PhysicalID, thing.Name, len(thing.Statuses), thing.CustomSettings)
	return nil
}

func (t *tour) associate(ctx context.Context, userID string) error {
	thing, created, err := t.client.Users.AssociateThing(ctx, userID, management.NewAssociation{
		PhysicalID: "lamp-demo-1", Model: "LM-3", FirmwareVersion: "2.0.1",
	})
	if err != nil {
		return fmt.Errorf("associating: %w", err)
	}
	fmt.Printf("\nAssociated %s with %s (new Thing: %t, %d associated User(s))\n",
		thing.PhysicalID, userID, created, len(thing.AssociatedUsers))
	if err := t.client.Users.DisassociateThing(ctx, userID, thing.PhysicalID); err != nil {
		return fmt.Errorf("disassociating: %w", err)
	}
	fmt.Printf("Disassociated %s from %s\n", thing.PhysicalID, userID)
	return nil
}

func (t *tour) validate(ctx context.Context) error {
	if t.endUserAuth == "" {
		fmt.Println("\nSkipping End User token validation (set MANAGEMENT_END_USER_TOKEN).")
		return nil
	}
	for _, token := range []string{t.endUserAuth, "Bearer not-a-real-token"} {
		auth, err := t.client.Authenticate(ctx, token)
		if err != nil {
			return fmt.Errorf("authenticating: %w", err)
		}
		if auth.Valid {
			fmt.Printf("\nEnd User token: valid, User %s, role %s\n", auth.UserID, auth.Role)
			continue
		}
		fmt.Printf("Made-up token: invalid; relay %d %s to the End User\n",
			auth.ClientResponse.HTTPCode, auth.ClientResponse.HTTPBody.Reason)
	}
	return nil
}
