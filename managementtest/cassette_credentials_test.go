package managementtest_test

import (
	"encoding/base64"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/internal/redact"
	"github.com/serviceconnect/management/internal/redact/echotest"
	"github.com/serviceconnect/management/managementtest"
)

// Every shape a credential takes in an exchange is kept out of the
// cassette: each test below records one shape while the service echoes
// the credential, and replays with other credentials.

// noCredential fails t if text holds any of creds in any spelling an echo
// takes.
func noCredential(t *testing.T, text string, creds ...string) {
	t.Helper()
	encodings := append(append([]echotest.Encoding(nil), echotest.Encodings...), echotest.Twice...)
	for _, cred := range creds {
		for _, enc := range encodings {
			if echo := enc.Encode(cred); strings.Contains(text, echo) {
				t.Errorf("the cassette holds %q (%s of %q)", echo, enc.Name, cred)
			}
		}
	}
	if clean := redact.New(creds...).Text(text); clean != text {
		t.Error("the redactor still finds a credential in the cassette")
	}
}

// rawRecorder returns a Recorder of srv writing to a temporary cassette,
// an http.Client that sends through it, and the cassette's path.
func rawRecorder(t *testing.T, srv *managementtest.Server) (*managementtest.Recorder, *http.Client, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "c.json")
	rec, err := managementtest.NewRecorder(path, srv.URL, managementtest.RecordOptions{AllowedBaseURLs: []string{srv.URL}, Transport: srv.Transport()})
	if err != nil {
		t.Fatal(err)
	}
	return rec, &http.Client{Transport: rec}, path
}

// send sends a request through hc and returns its status.
func send(t *testing.T, hc *http.Client, method, url string, header http.Header, body string) int {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v // as given: a name in any case
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// closeAndRead closes rec and returns the cassette's text and the cassette.
func closeAndRead(t *testing.T, rec *managementtest.Recorder, path string) (string, *managementtest.Cassette) {
	t.Helper()
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := managementtest.LoadCassette(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data), c
}

// A token answer's refresh_token and id_token are learnt beside its
// access_token: replaced in the answer, and wherever an answer echoes them.
func TestCassetteTokenAnswerTokens(t *testing.T) {
	const (
		access  = "mgmt-Aq7Wz81Lp+x/"
		refresh = "refresh-Rk3Vx92Ty&r"
		idToken = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ1LTEifQ.sig-Jm4Qs"
	)
	srv := managementtest.NewInMemoryServer(managementtest.WithManagementToken(access))
	srv.AddUser(management.UserDetails{User: management.User{ID: "u-1"}})
	srv.FailNextWith(managementtest.RouteToken, 1, managementtest.Response{
		Status: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: `{"access_token":"` + access + `","refresh_token":"` + refresh + `","id_token":"` + idToken + `","token_type":"Bearer","expires_in":600}`,
	})
	srv.FailNextWith(managementtest.RouteGetUser, 1, managementtest.Response{
		Status: http.StatusBadRequest,
		Header: http.Header{"Content-Type": {"application/json"}, "X-Echo": {base64.StdEncoding.EncodeToString([]byte(refresh))}},
		Body:   `{"reason":"COMMON.REQUEST_VALIDATION","error_message":"refresh ` + url.QueryEscape(refresh) + ` id ` + idToken + `"}`,
	})
	path := filepath.Join(t.TempDir(), "c.json")
	client, rec := recorderFor(t, srv, path, managementtest.RecordOptions{})
	if _, err := client.Users.Get(t.Context(), "u-1"); err == nil {
		t.Fatal("the echo was not served")
	}
	text, c := closeAndRead(t, rec, path)
	noCredential(t, text, access, refresh, idToken)
	want := `{"access_token":"{{management_token_1}}","refresh_token":"{{refresh_token_1}}","id_token":"{{id_token_1}}","token_type":"Bearer","expires_in":600}`
	if got := c.Interactions[0].Response.Body; got != want {
		t.Errorf("the token answer is recorded as %s, want %s", got, want)
	}
}

// A token answer cut inside its access_token is learnt as far as it
// goes: the start of the token is not written either.
func TestCassetteCutTokenAnswer(t *testing.T) {
	const access = "mgmt-Cut7Hq2Lw9Zp4Xr"
	srv := managementtest.NewInMemoryServer()
	body := `{"access_token":"` + access + `","token_type":"Bearer","expires_in":600}`
	srv.FailNextWith(managementtest.RouteToken, 1, managementtest.Response{
		Status: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: body, Cut: true, CutAfter: strings.Index(body, access) + 12,
	})
	rec, hc, path := rawRecorder(t, srv)
	req, _ := http.NewRequest(http.MethodPost, srv.URL+managementtest.DefaultPathPrefix+"/auth/token", strings.NewReader(`{"grant_type":"client_credentials"}`))
	req.SetBasicAuth(srv.ClientID, srv.ClientSecret)
	if resp, err := hc.Do(req); err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	text, c := closeAndRead(t, rec, path)
	noCredential(t, text, access[:12])
	if got := c.Interactions[0].Response; !got.Cut || !strings.Contains(got.Body, "{{management_token_1}}") {
		t.Errorf("the cut token answer is recorded as %+v", got)
	}
}

// A token request that sends the client's credentials in its body, as a
// form (OAuth 2.0's client_secret_post) or as JSON, keeps them out of the
// cassette, and replays with other credentials.
func TestCassetteClientSecretInBody(t *testing.T) {
	const (
		id     = "form-client-7"
		secret = "s3cr3t+Form/Zq8=&x"
	)
	for _, tc := range []struct {
		name, contentType string
		body              func(id, secret string) string
		want              string
	}{
		{"form", "application/x-www-form-urlencoded", func(id, secret string) string {
			return "grant_type=client_credentials&client_id=" + url.QueryEscape(id) + "&client_secret=" + url.QueryEscape(secret)
		}, "grant_type=client_credentials&client_id={{client_id_1}}&client_secret={{client_secret_1}}"},
		{"JSON", "application/json", func(id, secret string) string {
			return `{"grant_type":"client_credentials","client_id":"` + id + `","client_secret":"` + strings.ReplaceAll(secret, "&", `\u0026`) + `"}`
		}, `{"grant_type":"client_credentials","client_id":"{{client_id_1}}","client_secret":"{{client_secret_1}}"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := managementtest.NewInMemoryServer()
			srv.FailNextWith(managementtest.RouteToken, 1, managementtest.Response{
				Status: http.StatusBadRequest, Header: http.Header{"Content-Type": {"application/json"}},
				Body: `{"error":"invalid_request","error_description":"` + secret + ` is sent in the body"}`,
			})
			tokenURL := srv.URL + managementtest.DefaultPathPrefix + "/auth/token"
			header := http.Header{"Content-Type": {tc.contentType}}
			rec, hc, path := rawRecorder(t, srv)
			if got := send(t, hc, http.MethodPost, tokenURL, header, tc.body(id, secret)); got != http.StatusBadRequest {
				t.Fatalf("the recording got %d", got)
			}
			text, c := closeAndRead(t, rec, path)
			noCredential(t, text, secret)
			if got := c.Interactions[0].Request.Body; got != tc.want {
				t.Errorf("the request body is recorded as %s, want %s", got, tc.want)
			}
			// Other credentials replay the same answer.
			replay := &http.Client{Transport: managementtest.NewReplayer(c)}
			if got := send(t, replay, http.MethodPost, tokenURL, header, tc.body("other-client", "other-secret")); got != http.StatusBadRequest {
				t.Errorf("the replay with other credentials got %d, want the recorded 400", got)
			}
		})
	}
}

// An Authorization header is learnt whatever the case of its name and of
// its scheme, and so is an End User token in an authenticate body; other
// tokens replay the same answers.
func TestCassetteAuthorizationAnyCase(t *testing.T) {
	const (
		inHeader = "eu-Hd4Rk8Wq+Zx/"
		inBody   = "eu-Bd7Lm2Pq&Yw="
	)
	srv := managementtest.NewInMemoryServer()
	srv.FailNextWith(managementtest.RouteGetUser, 1, managementtest.Response{
		Status: http.StatusUnauthorized, Header: http.Header{"Content-Type": {"application/json"}},
		Body: `{"reason":"AUTH.UNAUTHORIZED","error_message":"` + inHeader + ` is not a management token"}`,
	})
	srv.FailNextWith(managementtest.RouteAuthenticate, 1, managementtest.Response{
		Status: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}, "X-Seen": {url.QueryEscape(inBody)}},
		Body: `{"is_token_valid":false,"user_id":null,"user_role":null,"to_client_response":{"http_code":401,"http_body":{"error_code":401,"reason":"auth.unauthorized","error_message":"` + inBody + `"}}}`,
	})
	prefix := srv.URL + managementtest.DefaultPathPrefix
	requests := func(hc *http.Client, header, body string) []int {
		return []int{
			send(t, hc, http.MethodGet, prefix+"/users/u-1", http.Header{"authorization": {"bEaReR " + header}, "content-type": {"application/json"}}, ""),
			send(t, hc, http.MethodPost, prefix+"/authenticate", http.Header{"AUTHORIZATION": {"BEARER " + header}, "Content-Type": {"application/json"}},
				`{"access_token":"BEARER `+strings.ReplaceAll(body, "&", `\u0026`)+`"}`),
		}
	}
	rec, hc, path := rawRecorder(t, srv)
	recorded := requests(hc, inHeader, inBody)
	text, c := closeAndRead(t, rec, path)
	noCredential(t, text, inHeader, inBody)
	if got := c.Interactions[0].Request.Header.Get("Authorization"); got != "bEaReR {{management_token_1}}" {
		t.Errorf("the Authorization is recorded as %q", got)
	}
	if got, want := c.Interactions[1].Request.Body, `{"access_token":"BEARER {{end_user_token_1}}"}`; got != want {
		t.Errorf("the authenticate body is recorded as %s, want %s", got, want)
	}
	replay := &http.Client{Transport: managementtest.NewReplayer(c)}
	if got := requests(replay, "eu-other-1", "eu-other-2"); got[0] != recorded[0] || got[1] != recorded[1] {
		t.Errorf("the replay with other tokens got %v, the recording %v", got, recorded)
	}
}
