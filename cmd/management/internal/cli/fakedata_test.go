package cli

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

// TestGeneratedData: --users N and --things N generate u-1... and
// thing-1..., every field filled, created a millisecond apart; u-i is
// associated with the i-th Thing while there is one.
func TestGeneratedData(t *testing.T) {
	d, err := startingData(dataFlags{users: 3, things: 2})
	if err != nil {
		t.Fatal(err)
	}
	srv := managementtest.NewInMemoryServer()
	d.seed(srv)
	for i, id := range []string{"u-1", "u-2", "u-3"} {
		u, ok := srv.User(id)
		if !ok {
			t.Fatalf("no User %s", id)
		}
		if want := genesis.Add(time.Duration(i) * time.Millisecond); !u.CreatedAt.Time.Equal(want) {
			t.Errorf("%s created at %v, want %v", id, u.CreatedAt, want)
		}
		if u.Email == nil || u.FirstName == nil || u.LastName == nil || u.TermsOfUseVersionApproved == nil ||
			len(u.Consents) == 0 || len(u.CustomSettings) == 0 || u.EmailVerificationStatus != management.EmailVerified || !u.UpdatedAt.After(u.CreatedAt.Time) {
			t.Errorf("%s has a field left empty: %+v", id, u)
		}
		wantThings := 0
		if i < 2 {
			wantThings = 1
		}
		if len(u.AssociatedThings) != wantThings {
			t.Errorf("%s is associated with %d Things, want %d", id, len(u.AssociatedThings), wantThings)
		}
	}
	for i, id := range []string{"thing-1", "thing-2"} {
		th, ok := srv.Thing(id)
		if !ok {
			t.Fatalf("no Thing %s", id)
		}
		if want := genesis.Add(time.Duration(i) * time.Millisecond); !th.CreatedAt.Time.Equal(want) {
			t.Errorf("%s created at %v, want %v", id, th.CreatedAt, want)
		}
		if th.Name == "" || th.Model == "" || th.FirmwareVersion == "" || th.LastSeen == nil || len(th.Statuses) == 0 || len(th.CustomSettings) == 0 {
			t.Errorf("%s has a field left empty: %+v", id, th)
		}
		if len(th.AssociatedUsers) != 1 || th.AssociatedUsers[0].ID != "u-"+id[len("thing-"):] {
			t.Errorf("%s is associated with %+v, want its User of the same number", id, th.AssociatedUsers)
		}
	}
}

// TestDefaultData: without flags, the data of --fake; the five Users
// beside generated Things keep no association with a Thing not there.
func TestDefaultData(t *testing.T) {
	d, err := startingData(dataFlags{users: -1, things: -1})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(fakeData{users: fakeUsers(), things: fakeThings()}, d, cmp.AllowUnexported(fakeData{})); diff != "" {
		t.Errorf("the default data are not --fake's (-want +got):\n%s", diff)
	}

	d, err = startingData(dataFlags{users: -1, things: 1})
	if err != nil {
		t.Fatal(err)
	}
	srv := managementtest.NewInMemoryServer() // AddUser panics on an association with a Thing not there
	d.seed(srv)
	if ada, _ := srv.User("u-ada"); len(d.users) != 5 || len(ada.AssociatedThings) != 0 {
		t.Errorf("beside generated Things: %d Users, Ada associated with %+v; want 5 and none", len(d.users), ada.AssociatedThings)
	}
}

// writeSeed writes lines to a file of the test's and returns its path.
func writeSeed(t *testing.T, lines ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "seed.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSeedFiles: the lines export writes are served as they are, a blank
// line skipped, a CRLF ending taken.
func TestSeedFiles(t *testing.T) {
	users := []management.User{
		{ID: "u-7", Email: management.Ptr("ada@example.com"), FirstName: management.Ptr("Ada"), CreatedAt: at(time.Hour), UpdatedAt: at(2 * time.Hour)},
		{ID: "u-anon", CreatedAt: at(3 * time.Hour), UpdatedAt: at(3 * time.Hour)},
	}
	things := []management.Thing{{PhysicalID: "t/1", Name: "Hall", Model: "M", FirmwareVersion: "1", LastSeen: management.Ptr(at(time.Hour)), CreatedAt: at(0), UpdatedAt: at(time.Minute)}}
	var userLines []string
	for _, u := range users {
		b, _ := json.Marshal(u)
		userLines = append(userLines, string(b))
	}
	thingLine, _ := json.Marshal(things[0])
	d, err := startingData(dataFlags{users: -1, things: -1,
		seedUsers:  writeSeed(t, userLines[0]+"\r", "", userLines[1], ""),
		seedThings: writeSeed(t, string(thingLine)),
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := managementtest.NewInMemoryServer()
	d.seed(srv)
	for _, want := range users {
		got, ok := srv.User(want.ID)
		if !ok || !cmp.Equal(want, got.User) {
			t.Errorf("User %s served as %+v, want %+v", want.ID, got.User, want)
		}
	}
	if got, _ := srv.Thing("t/1"); !cmp.Equal(things[0], got.Thing) || len(d.users) != 2 || len(d.things) != 1 {
		t.Errorf("Thing served as %+v, want %+v; %d Users and %d Things", got.Thing, things[0], len(d.users), len(d.things))
	}
}

// TestSeedFileRefused: a line that is not an exported item is refused
// with its number, as a usage error, and nothing is returned.
func TestSeedFileRefused(t *testing.T) {
	good := `{"id":"u-1","email":null,"first_name":null,"last_name":null,"created_at":"2026-01-05T09:00:00.000Z","updated_at":"2026-01-05T09:00:00.000Z"}`
	for _, c := range []struct {
		name  string
		lines []string
		want  string
	}{
		{"not JSON", []string{good, "{oops"}, "line 2: not a User as `management users export` writes it"},
		{"a Thing", []string{`{"physical_id":"t-1"}`}, `line 1: not a User as ` + "`management users export`" + ` writes it (one JSON object per line): unknown field "physical_id"`},
		{"an array", []string{`[` + good + `]`}, "line 1: not a User"},
		{"null", []string{good, "", "null"}, "line 3: not a User"},
		{"two values", []string{good + " {}"}, "line 1: not a User as `management users export` writes it (one JSON object per line): more than one JSON value"},
		{"no id", []string{`{"email":"a@example.com"}`}, "line 1: the User has no id"},
		{"a bad timestamp", []string{`{"id":"u-1","created_at":"yesterday"}`}, "line 1: not a User"},
		{"twice", []string{good, good}, `line 2: User "u-1" is on line 1 already`},
		{"too long", []string{good, `{"id":"` + strings.Repeat("x", maxSeedLine) + `"}`}, "line 2 is longer than 1048576 bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := writeSeed(t, c.lines...)
			d, err := startingData(dataFlags{users: -1, things: -1, seedUsers: path})
			var u usageError
			if !errors.As(err, &u) || !strings.Contains(err.Error(), "--seed-users "+path+": "+c.want) || d.users != nil {
				t.Errorf("error %v (usage error: %t), %d Users; want a usage error with %q", err, errors.As(err, &u), len(d.users), c.want)
			}
		})
	}
	_, err := startingData(dataFlags{users: -1, things: -1, seedThings: filepath.Join(t.TempDir(), "none.jsonl")})
	var u usageError
	if !errors.As(err, &u) || !strings.Contains(err.Error(), "--seed-things: open ") {
		t.Errorf("a seed file not there: %v; want a usage error naming it", err)
	}
}
