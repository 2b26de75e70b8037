package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

// The data fake serve starts with, and POST /_fake/reset restores: the
// data of --fake, generated Users and Things, or JSON lines as users
// export and things export write them.

// maxGenerated bounds --users and --things. A generated item takes about
// 2.3 KB in the fake (measured: 100 000 Users and 100 000 Things, 470 MB
// resident; a million Users, 2.2 GB and most of a minute to seed on two
// shared cores): a zero typed too many should not take the machine's
// memory. Seed files are not bounded.
const maxGenerated = 100_000

// maxSeedLine bounds a line of a seed file: an exported User or Thing
// takes a few hundred bytes.
const maxSeedLine = 1 << 20

// fakeData is a fake's Users and Things, as given to AddUser and AddThing.
type fakeData struct {
	users  []management.UserDetails
	things []management.ThingDetails
}

// seed adds d to srv: the Things first, since a User's associations name
// Things added before. d was checked when it was made, so that nothing
// here panics.
func (d fakeData) seed(srv *managementtest.Server) {
	for _, t := range d.things {
		srv.AddThing(t)
	}
	for _, u := range d.users {
		srv.AddUser(u)
	}
}

// dataFlags are the flags of fake serve that choose its data. A count
// below zero was not given.
type dataFlags struct {
	users, things         int
	seedUsers, seedThings string
}

// startingData returns the data the flags choose: for each kind, a seed
// file, a generated count, or the data of --fake. A seed file's mistakes
// are usage errors that name its line.
func startingData(fl dataFlags) (fakeData, error) {
	var d fakeData
	var err error
	switch {
	case fl.seedThings != "":
		d.things, err = readSeed(fl.seedThings, "--seed-things", thingSeed)
	case fl.things >= 0:
		d.things = generatedThings(fl.things)
	default:
		d.things = fakeThings()
	}
	if err != nil {
		return d, err
	}
	switch {
	case fl.seedUsers != "":
		d.users, err = readSeed(fl.seedUsers, "--seed-users", userSeed)
	case fl.users >= 0:
		d.users = generatedUsers(fl.users, d.things)
	default:
		d.users = fakeUsersAmong(d.things)
	}
	return d, err
}

// genesis is when the first generated User and Thing were created; the
// others follow a millisecond apart. Fixed times give the same data at
// every run.
var genesis = at(0).Time

// generatedThings returns n Things, thing-1 to thing-n, every field filled.
func generatedThings(n int) []management.ThingDetails {
	things := make([]management.ThingDetails, n)
	for i := range things {
		num := strconv.Itoa(i + 1)
		created := genesis.Add(time.Duration(i) * time.Millisecond)
		seen := management.NewTimestamp(created.Add(2 * time.Hour))
		things[i] = management.ThingDetails{
			Thing: management.Thing{
				PhysicalID: "thing-" + num, Name: "Thing " + num, Model: "M-" + strconv.Itoa(i%3+1), FirmwareVersion: "1." + strconv.Itoa(i%10) + ".0",
				LastSeen: &seen, CreatedAt: management.NewTimestamp(created), UpdatedAt: management.NewTimestamp(created.Add(time.Hour)),
			},
			Statuses:       []management.ThingStatus{{Name: "battery", StatusValue: "ok", Date: seen}},
			CustomSettings: map[string]any{"index": json.Number(num), "eco": i%2 == 0},
		}
	}
	return things
}

// generatedUsers returns n Users, u-1 to u-n, every field filled. The
// User u-i is associated with the i-th Thing of things when there is one:
// each Thing then has at most one generated User, so that reading one
// stays small however many Users there are.
func generatedUsers(n int, things []management.ThingDetails) []management.UserDetails {
	users := make([]management.UserDetails, n)
	for i := range users {
		num := strconv.Itoa(i + 1)
		created := management.NewTimestamp(genesis.Add(time.Duration(i) * time.Millisecond))
		users[i] = management.UserDetails{
			User: management.User{
				ID: "u-" + num, Email: management.Ptr("user" + num + "@example.com"),
				FirstName: management.Ptr("User"), LastName: management.Ptr("Number " + num),
				CreatedAt: created, UpdatedAt: management.NewTimestamp(created.Add(time.Hour)),
			},
			TermsOfUseVersionApproved: management.Ptr("v1"),
			EmailVerificationStatus:   management.EmailVerified,
			Consents:                  []management.Consent{{Key: "marketing", Value: management.ConsentAccept, UpdatedAt: created}},
			CustomSettings:            map[string]any{"index": json.Number(num), "theme": "light"},
		}
		if i < len(things) {
			users[i].AssociatedThings = []management.AssociatedThing{{
				PhysicalID:      things[i].PhysicalID,
				AssociationData: management.AssociationData{AssociatedAt: management.NewTimestamp(created.Add(time.Minute))},
			}}
		}
	}
	return users
}

// fakeUsersAmong returns the Users of --fake, associated only with those
// of their Things that are among things: beside generated or seeded
// Things, the five Users keep no association with a Thing that is not
// there.
func fakeUsersAmong(things []management.ThingDetails) []management.UserDetails {
	present := make(map[string]bool, len(things))
	for _, t := range things {
		present[t.PhysicalID] = true
	}
	users := fakeUsers()
	for i := range users {
		users[i].AssociatedThings = slices.DeleteFunc(users[i].AssociatedThings, func(a management.AssociatedThing) bool {
			return !present[a.PhysicalID]
		})
	}
	return users
}

// seedKind is what readSeed needs to know of one kind of item.
type seedKind[T, D any] struct {
	noun    string // "User"
	command string // "users export"
	id      func(*T) string
	details func(T) D
}

var userSeed = seedKind[management.User, management.UserDetails]{
	noun: "User", command: "users export",
	id:      func(u *management.User) string { return u.ID },
	details: func(u management.User) management.UserDetails { return management.UserDetails{User: u} },
}

var thingSeed = seedKind[management.Thing, management.ThingDetails]{
	noun: "Thing", command: "things export",
	id:      func(t *management.Thing) string { return t.PhysicalID },
	details: func(t management.Thing) management.ThingDetails { return management.ThingDetails{Thing: t} },
}

// readSeed reads the file at path, named by flag in errors: JSON lines of
// items as kind's export command writes them, one object per line (blank
// lines are skipped). A line that is not one, an empty id and an id seen
// before are refused with the line's number, and nothing is returned.
func readSeed[T, D any](path, flag string, kind seedKind[T, D]) ([]D, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, refusef("%s: %w", flag, err)
	}
	defer f.Close()
	var items []D
	seen := make(map[string]int) // id -> line
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), maxSeedLine)
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		bad := func(format string, args ...any) error {
			return refusef("%s %s: line %d: %s", flag, path, n, fmt.Sprintf(format, args...))
		}
		item, err := decodeSeedLine[T](line)
		if err != nil {
			return nil, bad("not a %s as `management %s` writes it (one JSON object per line): %v", kind.noun, kind.command, err)
		}
		id := kind.id(&item)
		if id == "" {
			return nil, bad("the %s has no id", kind.noun)
		}
		if first, dup := seen[id]; dup {
			return nil, bad("%s %q is on line %d already", kind.noun, id, first)
		}
		seen[id] = n
		items = append(items, kind.details(item))
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, refusef("%s %s: line %d is longer than %d bytes: not a line of `management %s`", flag, path, n+1, maxSeedLine, kind.command)
		}
		return nil, refusef("%s: %w", flag, err)
	}
	return items, nil
}

// decodeSeedLine decodes one JSON object with no member the item lacks
// and nothing after it.
func decodeSeedLine[T any](line []byte) (T, error) {
	var item T
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&item); err != nil {
		return item, errors.New(strings.TrimPrefix(err.Error(), "json: "))
	}
	if line[0] != '{' {
		return item, errors.New("not a JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return item, errors.New("more than one JSON value")
	}
	return item, nil
}
