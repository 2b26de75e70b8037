package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

// tokenRecorder is a transport that notes the management tokens the token
// endpoint issues, so that a test can look for them in the tool's output.
type tokenRecorder struct {
	next   http.RoundTripper
	mu     sync.Mutex
	tokens []string
}

func (r *tokenRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	if err != nil || !strings.HasSuffix(req.URL.Path, "/auth/token") {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if json.Unmarshal(body, &tok) == nil && tok.AccessToken != "" {
		r.mu.Lock()
		r.tokens = append(r.tokens, tok.AccessToken)
		r.mu.Unlock()
	}
	return resp, nil
}

// TestSecretsNeverPrinted runs every command, with --debug, in every
// format, valid and invalid End User tokens included, and looks for the
// client secret, the management token and the End User tokens in all
// that was printed.
func TestSecretsNeverPrinted(t *testing.T) {
	srv := managementtest.NewServer(managementtest.WithPageSize(2))
	defer srv.Close()
	seedUsers(srv, 3)
	srv.AddThing(management.ThingDetails{Thing: management.Thing{PhysicalID: "lamp-7"}})
	valid := srv.IssueEndUserToken(userID(0))
	revoked := srv.IssueEndUserToken(userID(1))
	srv.RevokeEndUserToken(revoked)

	e := useServer(t, srv)
	rec := &tokenRecorder{next: e.httpClient.Transport}
	e.httpClient = &http.Client{Transport: rec}
	dir := t.TempDir()
	var printed []string
	for _, f := range allFormats {
		for _, args := range [][]string{
			{"users", "list"},
			{"users", "get", userID(0)},
			{"users", "get", "u-missing"},
			{"things", "list", "--pages", "1"},
			{"things", "get", "lamp-7"},
			{"things", "update", "lamp-7", "--name", "x"},
			{"users", "associate", userID(2), "lamp-7", "--model", "L", "--firmware-version", "1"},
		} {
			r := e.run(t, append([]string{"--debug", "-o", string(f)}, args...)...)
			printed = append(printed, r.stdout, r.stderr)
		}
		for _, tok := range []string{valid, "Bearer " + valid, revoked} {
			t.Setenv(EnvEndUserToken, tok)
			r := e.run(t, "--debug", "token", "check", "-o", string(f))
			printed = append(printed, r.stdout, r.stderr)
		}
	}
	r := e.run(t, "--debug", "users", "export", "--out", dir+"/u.jsonl", "--checkpoint", dir+"/u.ckpt")
	printed = append(printed, r.stdout, r.stderr)
	r = e.run(t, "--debug", "users", "disassociate", userID(2), "lamp-7")
	printed = append(printed, r.stdout, r.stderr)

	if len(rec.tokens) == 0 {
		t.Fatal("no management token was issued: the test saw nothing")
	}
	if !strings.Contains(strings.Join(printed, ""), "level=DEBUG") {
		t.Fatal("--debug logged nothing: the test saw nothing")
	}
	noSecrets(t, append([]string{srv.ClientSecret, valid, revoked}, rec.tokens...), printed...)
}

// quotingService answers every authenticate request with an invalid
// verdict whose texts quote the token, as a careless service might.
type quotingService struct{ next http.RoundTripper }

func (q quotingService) RoundTrip(req *http.Request) (*http.Response, error) {
	if !strings.HasSuffix(req.URL.Path, "/authenticate") {
		return q.next.RoundTrip(req)
	}
	var body struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(req.Body).Decode(&body); err != nil {
		return nil, err
	}
	return jsonAnswer(req, map[string]any{
		"is_token_valid": false, "user_id": nil, "user_role": nil,
		"to_client_response": map[string]any{"http_code": 401, "http_body": map[string]any{
			"error_code": 401, "reason": "auth.unauthorized " + body.AccessToken, "error_message": "token " + body.AccessToken + " has expired",
		}},
	}), nil
}

// TestTokenCheckScrubsAnswer: a service answer quoting the End User token
// is printed with the token redacted, in every format.
func TestTokenCheckScrubsAnswer(t *testing.T) {
	srv := managementtest.NewInMemoryServer()
	e := useServer(t, srv)
	e.httpClient = &http.Client{Transport: quotingService{e.httpClient.Transport}}
	const token = "eu-secret-token-value"
	for _, given := range []string{token, "Bearer " + token} {
		t.Setenv(EnvEndUserToken, given)
		for _, f := range allFormats {
			r := e.run(t, "token", "check", "-o", string(f))
			if r.code != ExitFailure || !strings.Contains(r.stdout, "REDACTED") {
				t.Errorf("%s: exit %d, stdout %q", f, r.code, r.stdout)
			}
			noSecrets(t, []string{token}, r.stdout, r.stderr)
		}
	}
}
