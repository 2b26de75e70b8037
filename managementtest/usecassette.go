package managementtest

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/serviceconnect/management"
)

// EnvRecord is the environment variable that tells UseCassette whether to
// record:
//
//   - unset, empty or "replay": replay only, the default, for CI. A missing
//     cassette fails the test; nothing is sent anywhere.
//   - "once": record the cassettes that are missing, replay the others,
//     for a local run against a sandbox.
//   - "all": record every cassette again.
const EnvRecord = "MANAGEMENTTEST_RECORD"

// UseCassette returns a management.Config whose requests the cassette at
// path answers, or that records them into it, as EnvRecord says, for
// the test t.
//
// To replay, the Config has the cassette's base URL, credentials of no
// use elsewhere, a Replayer as its HTTPClient's Transport and retry waits
// of 1 to 50 milliseconds (as Server.Config); the test fails, when it
// ends, for every request the cassette had no answer for.
//
// To record, the Config is opts.Live's (management.ConfigFromEnv when
// nil): the sandbox's base URL and credentials, which must be one of
// opts.AllowedBaseURLs, with a Recorder wrapped around its HTTPClient's
// transport. When the test ends, the cassette is written (see
// Recorder.Close) and the test fails if that fails or if a request was
// refused.
//
// Change the Config as the code under test needs (a Logger, an Observer),
// and keep its BaseURL, credentials and HTTPClient.
func UseCassette(t testing.TB, path string, opts RecordOptions) management.Config {
	t.Helper()
	record, err := recordMode(path)
	if err != nil {
		t.Fatal(err)
	}
	if record {
		return recordWith(t, path, opts)
	}
	c, err := loadForTest(path)
	if err != nil {
		t.Fatal(err)
	}
	rp := NewReplayer(c)
	t.Cleanup(func() {
		for _, miss := range rp.unanswered() {
			t.Error(miss)
		}
		if n := rp.unused(); n > 0 {
			t.Logf("managementtest: %d of the %d interactions of %s were not replayed: the test asks for less than when it was recorded (record it again to drop them)", n, len(c.Interactions), path)
		}
	})
	return management.Config{
		BaseURL:      c.BaseURL,
		ClientID:     "managementtest-replay",
		ClientSecret: "managementtest-replay",
		PathPrefix:   c.pathPrefix(),
		HTTPClient:   &http.Client{Transport: rp},
		RetryWaitMin: clientRetryWaitMin,
		RetryWaitMax: clientRetryWaitMax,
	}
}

// loadForTest loads the cassette at path for UseCassette or
// VerifyFidelity; a missing one is an error that says how to record it.
func loadForTest(path string) (*Cassette, error) {
	c, err := LoadCassette(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("managementtest: no cassette at %s: record it with the test that uses it through UseCassette and %s=once, against a sandbox (or, for a first cassette, against the fake: see the testing guide)", path, EnvRecord)
	}
	return c, err
}

// recordMode reads EnvRecord: whether the cassette at path is to be
// recorded.
func recordMode(path string) (bool, error) {
	switch mode := strings.TrimSpace(os.Getenv(EnvRecord)); mode {
	case "", "replay":
		return false, nil
	case "all":
		return true, nil
	case "once":
		_, err := os.Stat(path)
		return errors.Is(err, fs.ErrNotExist), nil
	default:
		return false, errors.New("managementtest: " + EnvRecord + "=" + mode + ": want replay, once or all")
	}
}

// recordWith returns the live Config of opts with a Recorder of path
// around its transport, closed when t ends.
func recordWith(t testing.TB, path string, opts RecordOptions) management.Config {
	t.Helper()
	live := opts.Live
	if live == nil {
		live = management.ConfigFromEnv
	}
	cfg, err := live()
	if err != nil {
		t.Fatalf("managementtest: recording %s needs the sandbox's Config: %v", path, err)
	}
	hc := &http.Client{}
	if cfg.HTTPClient != nil {
		*hc = *cfg.HTTPClient
	}
	if opts.Transport == nil {
		opts.Transport = hc.Transport
	}
	rec, err := NewRecorder(path, cfg.BaseURL, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := rec.Close(); err != nil {
			t.Error(err)
		}
	})
	hc.Transport = rec
	cfg.HTTPClient = hc
	return cfg
}
