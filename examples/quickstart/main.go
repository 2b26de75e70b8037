// Command quickstart tours the management API: it lists Users and Things,
// reads a User, associates a new Thing with a User, updates it,
// disassociates it, and validates an End User token.
//
// With MANAGEMENT_BASE_URL unset it starts managementtest's in-memory fake,
// seeded with demo data, so it runs offline:
//
//	go run ./examples/quickstart
//
// Against a real service, set MANAGEMENT_BASE_URL, MANAGEMENT_CLIENT_ID and
// MANAGEMENT_CLIENT_SECRET. The tour is then careful with real data:
//
//   - it reads the first 5 Users and Things only, and prints identifiers,
//     models and firmware versions, never names or email addresses, unless
//     MANAGEMENT_QUICKSTART_PERSONAL=1;
//   - it writes nothing unless MANAGEMENT_QUICKSTART_WRITES=1 and
//     MANAGEMENT_QUICKSTART_USER_ID names a test account. It then associates
//     a new Thing, quickstart-<random>, with that account, updates and
//     disassociates it. If the service answers that the Thing already
//     existed, the tour stops without updating it. The API cannot delete a
//     Thing: the new Thing stays on the service, associated with no one;
//   - MANAGEMENT_END_USER_TOKEN ("Bearer ...") is the End User token it
//     validates.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"time"

	"github.com/serviceconnect/management"
)

// The environment variables of the tour, besides the SDK's.
const (
	envWrites   = "MANAGEMENT_QUICKSTART_WRITES"   // "1" lets the tour write
	envUserID   = "MANAGEMENT_QUICKSTART_USER_ID"  // the test account writes may touch
	envPersonal = "MANAGEMENT_QUICKSTART_PERSONAL" // "1" prints names and email addresses
	envEndUser  = "MANAGEMENT_END_USER_TOKEN"      // the End User token to validate
)

// listCap is how many items of each list the tour reads: enough to show
// the shape of the data, not the whole of a real service's.
const listCap = 5

func main() {
	log.SetFlags(0)
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatalf("quickstart: %v", err)
	}
}

// tour holds what run found along the way.
type tour struct {
	client      *management.Client
	out         io.Writer
	personal    bool   // print names and email addresses
	writeUser   string // the test account writes may touch; "" for no writes
	endUserAuth string // "Bearer <token>" to validate, "" to skip
}

func run(ctx context.Context, out io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()

	t, cleanup, err := setUp(out)
	if err != nil {
		return err
	}
	defer cleanup()

	userID, err := t.listUsers(ctx)
	if err != nil {
		return err
	}
	if err := t.listThings(ctx); err != nil {
		return err
	}
	if err := t.readUser(ctx, userID); err != nil {
		return err
	}
	if t.writeUser != "" {
		if err := t.writeNewThing(ctx); err != nil {
			return err
		}
	} else {
		t.printf("\nSkipping writes (set %s=1 and %s to the id of a test account to run them).\n", envWrites, envUserID)
	}
	return t.validate(ctx)
}

// setUp connects to the service named by the environment, or starts the fake.
func setUp(out io.Writer) (*tour, func(), error) {
	baseURL := os.Getenv(management.EnvBaseURL)
	if baseURL == "" {
		return offline(out)
	}
	t := &tour{
		out:         out,
		personal:    os.Getenv(envPersonal) == "1",
		endUserAuth: os.Getenv(envEndUser),
	}
	// Checked before anything is sent: an operator who asked for writes
	// but named no test account gets none of the tour, not half of it.
	if os.Getenv(envWrites) == "1" {
		t.writeUser = os.Getenv(envUserID)
		if t.writeUser == "" {
			return nil, nil, fmt.Errorf("%s=1 needs %s, the id of a test account the tour may associate a new Thing with", envWrites, envUserID)
		}
	}
	cfg, err := management.ConfigFromEnv() // names every variable missing or malformed
	if err != nil {
		return nil, nil, err
	}
	cfg.UserAgent = "quickstart"
	if t.client, err = management.NewClient(cfg); err != nil {
		return nil, nil, err
	}
	t.printf("Using %s.\n", baseURL)
	return t, func() {}, nil
}

func (t *tour) printf(format string, args ...any) {
	fmt.Fprintf(t.out, format, args...)
}

func (t *tour) listUsers(ctx context.Context) (string, error) {
	t.printf("\nUsers, newest first (the first %d):\n", listCap)
	var first string
	n := 0
	for user, err := range t.client.Users.List(ctx, nil) {
		if err != nil {
			return "", fmt.Errorf("listing users: %w", err)
		}
		if first == "" {
			first = user.ID
		}
		t.printf("  %s\n", t.describeUser(user))
		if n++; n == listCap {
			break
		}
	}
	if first == "" {
		return "", errors.New("the service has no Users to tour")
	}
	return first, nil
}

// describeUser is a User's id, and with t.personal their name and email.
func (t *tour) describeUser(u *management.User) string {
	if !t.personal {
		return u.ID
	}
	name := "(anonymous)"
	if u.Email != nil {
		name = *u.Email
		if u.FirstName != nil && u.LastName != nil {
			name = *u.FirstName + " " + *u.LastName + " <" + name + ">"
		}
	}
	return fmt.Sprintf("%-12s %s", u.ID, name)
}

func (t *tour) listThings(ctx context.Context) error {
	t.printf("\nThings, least recently updated first (the first %d):\n", listCap)
	opts := &management.ListOptions{OrderBy: management.OrderByUpdatedAt, Direction: management.Ascending}
	n := 0
	for thing, err := range t.client.Things.List(ctx, opts) {
		if err != nil {
			return fmt.Errorf("listing things: %w", err)
		}
		// End Users name their Things ("Ada's bedroom"): a name is personal.
		name := ""
		if t.personal {
			name = fmt.Sprintf(" %q", thing.Name)
		}
		t.printf("  %-12s model %s, firmware %s%s\n", thing.PhysicalID, thing.Model, thing.FirmwareVersion, name)
		if n++; n == listCap {
			break
		}
	}
	if n == 0 {
		t.printf("  (none)\n")
	}
	return nil
}

func (t *tour) readUser(ctx context.Context, id string) error {
	user, err := t.client.Users.Get(ctx, id)
	if err != nil {
		return fmt.Errorf("reading user %s: %w", id, err)
	}
	t.printf("\nUser %s: %d associated Thing(s)\n", user.ID, len(user.AssociatedThings))
	if t.personal {
		t.printf("  email %s, %d consent(s)\n", user.EmailVerificationStatus, len(user.Consents))
	}
	for i, th := range user.AssociatedThings {
		if i == listCap {
			t.printf("  ...\n")
			break
		}
		t.printf("  associated with %s since %s\n", th.PhysicalID, th.AssociationData.AssociatedAt)
	}
	_, err = t.client.Users.Get(ctx, "no-such-user")
	if errors.Is(err, management.ErrNotFound) {
		t.printf("Reading an unknown User: %v\n", err)
	}
	return nil
}

// newThingID returns the physical id of the Thing the tour creates: random,
// so that it names no Thing of the service's, and prefixed, so that an
// operator who finds it later knows where it came from. A variable, for
// the test of an id that exists already.
var newThingID = func() string {
	b := make([]byte, 8)
	rand.Read(b) // never fails (crypto/rand)
	return "quickstart-" + hex.EncodeToString(b)
}

// writeNewThing associates a new Thing with the test account, updates it
// and disassociates it. It touches no other Thing, and stops when the
// service says the Thing already existed.
func (t *tour) writeNewThing(ctx context.Context) error {
	user := t.writeUser
	if _, err := t.client.Users.Get(ctx, user); err != nil {
		return fmt.Errorf("reading the test account %s (%s): %w", user, envUserID, err)
	}
	id := newThingID()
	thing, created, err := t.client.Users.AssociateThing(ctx, user, management.NewAssociation{
		PhysicalID: id, Model: "quickstart", FirmwareVersion: "1.0.0",
	})
	if err != nil {
		return fmt.Errorf("associating a new Thing %s with %s: %w", id, user, err)
	}
	if !created {
		return fmt.Errorf("the service answered that Thing %s already existed (200, not 201), and associated it with %s; "+
			"the tour stops without updating it: check that Thing, and disassociate it if %s should not have it", id, user, user)
	}
	t.printf("\nAssociated a new Thing %s with %s (%d associated User(s))\n", thing.PhysicalID, user, len(thing.AssociatedUsers))

	now := management.NewTimestamp(time.Now())
	thing, err = t.client.Things.Update(ctx, id, management.ThingUpdate{
		Name:     management.Ptr("Quickstart demo"),
		LastSeen: &now,
		Statuses: []management.ThingStatus{{Name: "battery", StatusValue: "low", Date: now}},
		CustomSettings: map[string]any{
			"target_celsius": 19,
			"eco":            management.Unset, // removes the key (it has none yet)
		},
	})
	if err != nil {
		return fmt.Errorf("updating thing %s: %w", id, err)
	}
	t.printf("Updated %s: name %q, statuses %d, custom settings %v\n",
		thing.PhysicalID, thing.Name, len(thing.Statuses), thing.CustomSettings)

	if err := t.client.Users.DisassociateThing(ctx, user, id); err != nil {
		return fmt.Errorf("disassociating thing %s from %s: %w", id, user, err)
	}
	t.printf("Disassociated %s from %s. The API cannot delete a Thing: %s stays on the service, associated with no one.\n", id, user, id)
	return nil
}

func (t *tour) validate(ctx context.Context) error {
	if t.endUserAuth == "" {
		t.printf("\nSkipping End User token validation (set %s).\n", envEndUser)
		return nil
	}
	t.printf("\n")
	for _, c := range []struct{ label, token string }{
		{"End User token", t.endUserAuth},
		{"Made-up token", "Bearer not-a-real-token"},
	} {
		auth, err := t.client.Authenticate(ctx, c.token)
		if err != nil {
			return fmt.Errorf("authenticating: %w", err)
		}
		if auth.Valid {
			t.printf("%s: valid, User %s, role %s\n", c.label, auth.UserID, auth.Role)
			continue
		}
		t.printf("%s: invalid; relay %d %s to the End User\n",
			c.label, auth.ClientResponse.HTTPCode, auth.ClientResponse.HTTPBody.Reason)
	}
	return nil
}
