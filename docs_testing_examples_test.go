package management_test

// The snippets of docs/testing.md's recipe for recording the service,
// exactly as the guide shows them (TestReadmeSnippetsAreExamples checks
// that). TestOwnsThing replays testdata/cassettes/owns-thing.json, which
// was recorded once, as the guide says, with the fake standing in for the
// sandbox; TestFakeAnswersAsTheSandbox checks the fake against it.
// TestThingName replays testdata/cassettes/thing-name.json, recorded as
// the guide's "A first cassette, with no sandbox" says; TestScrubbed
// records with the guide's Scrub.

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

// sandbox is the base URL of a sandbox that holds synthetic data only.
const sandbox = "https://sandbox.example.com"

// ownsThing reports whether the End User of accessToken owns the Thing.
func ownsThing(ctx context.Context, client *management.Client, accessToken, physicalID string) (bool, error) {
	auth, err := client.Authenticate(ctx, accessToken)
	if err != nil || !auth.Valid {
		return false, err
	}
	user, err := client.Users.Get(ctx, auth.UserID)
	if err != nil {
		return false, err
	}
	for _, thing := range user.AssociatedThings {
		if thing.PhysicalID == physicalID {
			return true, nil
		}
	}
	return false, nil
}

func TestOwnsThing(t *testing.T) {
	cfg := managementtest.UseCassette(t, "testdata/cassettes/owns-thing.json", managementtest.RecordOptions{
		AllowedBaseURLs: []string{sandbox},
	})
	client, err := management.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// A sandbox account's End User token, to record; any value replays.
	token := os.Getenv("SANDBOX_END_USER_TOKEN")
	if token == "" {
		token = "replayed"
	}
	owns, err := ownsThing(t.Context(), client, "Bearer "+token, "thermo-42")
	if err != nil || !owns {
		t.Fatalf("ownsThing = %t, %v; want true", owns, err)
	}
}

func TestFakeAnswersAsTheSandbox(t *testing.T) {
	managementtest.VerifyFidelity(t, "testdata/cassettes/owns-thing.json")
}

// liveFake is the Config to record with while there is no sandbox: an
// in-memory fake, seeded as the sandbox will be.
func liveFake() (management.Config, error) {
	srv := managementtest.NewInMemoryServer()
	srv.AddThing(management.ThingDetails{Thing: management.Thing{PhysicalID: "thermo-42", Name: "Hall thermostat"}})
	return srv.Config(), nil
}

func TestThingName(t *testing.T) {
	cfg := managementtest.UseCassette(t, "testdata/cassettes/thing-name.json", managementtest.RecordOptions{
		AllowedBaseURLs: []string{managementtest.InMemoryURL},
		Live:            liveFake,
	})
	client, err := management.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	thing, err := client.Things.Get(t.Context(), "thermo-42")
	if err != nil || thing.Name != "Hall thermostat" {
		t.Fatalf("Things.Get = %+v, %v; want the Hall thermostat", thing, err)
	}
}

// emailMember is an email member of a JSON answer.
var emailMember = regexp.MustCompile(`"email":\s*"[^"]*"`)

// scrubbed are the options of a recording that keeps no email.
func scrubbed() managementtest.RecordOptions {
	return managementtest.RecordOptions{
		AllowedBaseURLs: []string{"https://sandbox.example.com"},
		Scrub: func(in *managementtest.Interaction) {
			in.Response.Body = emailMember.ReplaceAllString(in.Response.Body, `"email":"someone@example.invalid"`)
		},
	}
}

// The guide's Scrub, recording a read of a User against the fake: the
// cassette keeps no email, and replays.
func TestScrubbed(t *testing.T) {
	t.Setenv(managementtest.EnvRecord, "all")
	srv := managementtest.NewInMemoryServer()
	srv.AddUser(management.UserDetails{User: management.User{ID: "u-ada", Email: management.Ptr("ada@example.com")}})
	opts := scrubbed()
	opts.AllowedBaseURLs = []string{managementtest.InMemoryURL}
	opts.Live = func() (management.Config, error) { return srv.Config(), nil }
	path := filepath.Join(t.TempDir(), "scrubbed.json")
	t.Run("record", func(t *testing.T) {
		client, err := management.NewClient(managementtest.UseCassette(t, path, opts))
		if err != nil {
			t.Fatal(err)
		}
		if u, err := client.Users.Get(t.Context(), "u-ada"); err != nil || *u.Email != "ada@example.com" {
			t.Fatalf("Users.Get = %+v, %v", u, err)
		}
	})
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "ada@") || !strings.Contains(string(data), "someone@example.invalid") {
		t.Errorf("the cassette was not scrubbed:\n%s", data)
	}
	t.Setenv(managementtest.EnvRecord, "replay")
	client, err := management.NewClient(managementtest.UseCassette(t, path, scrubbed()))
	if err != nil {
		t.Fatal(err)
	}
	if u, err := client.Users.Get(t.Context(), "u-ada"); err != nil || *u.Email != "someone@example.invalid" {
		t.Errorf("the replay's User = %+v, %v; want the scrubbed email", u, err)
	}
}
