package management_test

// The snippets of docs/testing.md's recipe for recording the service,
// exactly as the guide shows them (TestReadmeSnippetsAreExamples checks
// that). TestOwnsThing replays testdata/cassettes/owns-thing.json, which
// was recorded once, as the guide says, with the fake standing in for the
// sandbox; TestFakeAnswersAsTheSandbox checks the fake against it.

import (
	"context"
	"os"
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
