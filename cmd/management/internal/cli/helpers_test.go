package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/")

// result is what one run of the tool did.
type result struct {
	code           int
	stdout, stderr string
}

// env is how a test runs the tool: the streams' terminals, standard
// input, and the HTTP client under the SDK.
type env struct {
	stdoutTTY, stderrTTY bool
	stdin                string
	httpClient           *http.Client
	ctx                  context.Context
}

// run runs the tool in-process with args.
func (e env) run(t testing.TB, args ...string) result {
	t.Helper()
	streams, in, out, errOut := Test()
	in.WriteString(e.stdin)
	streams.SetStdoutTTY(e.stdoutTTY)
	streams.SetStderrTTY(e.stderrTTY)
	f := NewFactory(streams)
	f.HTTPClient = e.httpClient
	ctx := e.ctx
	if ctx == nil {
		ctx = t.Context()
	}
	code := Run(ctx, args, f)
	return result{code, out.String(), errOut.String()}
}

// runCLI runs the tool in-process with args, no terminal, no input.
func runCLI(t *testing.T, args ...string) result {
	t.Helper()
	return env{}.run(t, args...)
}

// clearEnv unsets every variable the tool reads, for the test.
func clearEnv(t testing.TB) {
	t.Helper()
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "MANAGEMENT_") {
			t.Setenv(name, "")
		}
	}
}

// useServer points the tool at srv through the environment, as an
// operator configures it, and returns the env to run it with: its HTTP
// client reaches srv (in memory for an in-memory server).
func useServer(t testing.TB, srv *managementtest.Server) env {
	t.Helper()
	clearEnv(t)
	cfg := srv.Config()
	t.Setenv(management.EnvBaseURL, srv.URL)
	t.Setenv(management.EnvClientID, srv.ClientID)
	t.Setenv(management.EnvClientSecret, srv.ClientSecret)
	t.Setenv(management.EnvRetryWaitMin, "1ms")
	t.Setenv(management.EnvRetryWaitMax, "5ms")
	return env{httpClient: cfg.HTTPClient}
}

// golden compares got with testdata/name.golden, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s differs from the golden file (-want +got):\n%s", name, diff)
	}
}

// lines splits output into its lines, without the final newline's empty one.
func lines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// seedUsers adds n Users u-00000, u-00001, ... to srv.
func seedUsers(srv *managementtest.Server, n int) {
	for i := range n {
		srv.AddUser(management.UserDetails{User: management.User{
			ID:    userID(i),
			Email: management.Ptr(userID(i) + "@example.com"),
		}})
	}
}

func userID(i int) string {
	b := []byte("u-00000")
	for j := len(b) - 1; i > 0 && j >= 2; j-- {
		b[j] = byte('0' + i%10)
		i /= 10
	}
	return string(b)
}

// noSecrets fails the test if any of secrets appears in any of outputs.
func noSecrets(t *testing.T, secrets []string, outputs ...string) {
	t.Helper()
	for _, s := range secrets {
		if s == "" {
			t.Fatal("an empty secret cannot be looked for")
		}
		for _, o := range outputs {
			if strings.Contains(o, s) {
				t.Errorf("a secret appears in the output:\n%s", o)
			}
		}
	}
}

// jsonAnswer is a 200 answer to req with v as its JSON body, from a
// transport that stands in for the service.
func jsonAnswer(req *http.Request, v any) *http.Response {
	body, err := json.Marshal(v)
	if err != nil {
		panic(err) // the tests' own maps and strings
	}
	return &http.Response{
		StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(bytes.NewReader(body)), Request: req,
	}
}
