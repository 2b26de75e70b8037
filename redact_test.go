package management

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"html"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/serviceconnect/management/internal/redact/echotest"
)

// Echoes of credentials by a real HTTP server: every text that came from
// outside passes the one redactor before the caller, a log record or an
// Observer hook sees it.

const (
	xechoID     = "echo-client"
	xechoSecret = "echo-secret-value-1"
	xechoToken  = "mgmt-echo-token-1"
	xechoEU     = "eu-echo-token-1"
)

var xechoBasic = base64.StdEncoding.EncodeToString([]byte(xechoID + ":" + xechoSecret))

// xechoCredentials are the credentials no output may hold, in the forms an
// echo takes that the redactor must catch.
func xechoCredentials() []string {
	var out []string
	for _, c := range []string{xechoSecret, xechoID + ":" + xechoSecret, xechoBasic, xechoToken, xechoEU} {
		out = append(out, c, base64.StdEncoding.EncodeToString([]byte(c)), base64.RawURLEncoding.EncodeToString([]byte(c)))
	}
	return out
}

// xechoRun is what one call left where anyone could read it.
type xechoRun struct {
	err   error
	logs  *logBuffer
	hooks []string // the texts the Observer's hooks received
}

// texts are the run's outputs: the error's text under several verbs, its
// fields and headers, the log records and the hooks' arguments.
func (r *xechoRun) texts() []string {
	out := []string{r.logs.String()}
	out = append(out, r.hooks...)
	if r.err == nil {
		return out
	}
	out = append(out, r.err.Error(), fmt.Sprintf("%+v", r.err), fmt.Sprintf("%#v", r.err))
	var ae *APIError
	if errors.As(r.err, &ae) {
		out = append(out, ae.Reason, ae.Message, string(ae.Body), ae.RequestID, fmt.Sprint(ae.Header))
	}
	var te *TokenError
	if errors.As(r.err, &te) {
		out = append(out, te.Code, te.Description, te.RequestID, fmt.Sprint(te.Header))
	}
	var de *DecodeError
	if errors.As(r.err, &de) {
		out = append(out, de.ContentType, string(de.Body), fmt.Sprint(de.Err))
	}
	var xe *TransportError
	if errors.As(r.err, &xe) {
		out = append(out, fmt.Sprint(xe.Err))
	}
	return out
}

// xechoSetup starts a server whose token endpoint issues xechoToken (unless
// handler answers it) and whose other routes handler answers, and a Client
// of it that logs everything and records its hooks' arguments.
func xechoSetup(t *testing.T, handler http.HandlerFunc, answersToken bool, transport http.RoundTripper) (*Client, *xechoRun) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/auth/token") && !answersToken {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"access_token":%q,"token_type":"Bearer","expires_in":600}`, xechoToken)
			return
		}
		handler(w, r)
	}))
	t.Cleanup(srv.Close)
	run := &xechoRun{logs: &logBuffer{}}
	var mu sync.Mutex
	hook := func(s string) {
		mu.Lock()
		run.hooks = append(run.hooks, s)
		mu.Unlock()
	}
	hc := srv.Client()
	if transport != nil {
		hc = &http.Client{Transport: transport}
	}
	c, err := NewClient(Config{BaseURL: srv.URL, ClientID: xechoID, ClientSecret: xechoSecret, HTTPClient: hc,
		MaxRetries: 1, RetryWaitMin: time.Millisecond, RetryWaitMax: time.Millisecond,
		Logger: slog.New(slog.NewJSONHandler(run.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Observer: &Observer{OperationDone: func(_ context.Context, op Operation, r OperationResult) {
			if r.Err != nil {
				hook(op.Name() + ": " + r.Err.Error())
			}
		}}})
	if err != nil {
		t.Fatal(err)
	}
	return c, run
}

// xechoes is every spelling of s that the redactor knows.
func xechoes(s string) string {
	js := strings.ReplaceAll(s, "-", `\u002d`)
	return strings.Join([]string{s, base64.StdEncoding.EncodeToString([]byte(s)), base64.RawURLEncoding.EncodeToString([]byte(s)),
		js, url.QueryEscape(s), strings.ToLower(percentAll(s)), htmlAll(s), html.EscapeString(`"` + s + `"`)}, " | ")
}

var percentAll = echotest.PercentAll

// htmlAll writes every character of s as a hexadecimal character reference.
func htmlAll(s string) string { return echotest.References(s, "&#x%x;") }

func TestEchoesOfCredentialsAreRedacted(t *testing.T) {
	get := func(c *Client) error { _, err := c.Users.Get(context.Background(), "u-1"); return err }
	tests := []struct {
		name      string
		handler   http.HandlerFunc
		transport func(next http.RoundTripper) http.RoundTripper
		act       func(*Client) error
		is        error // the sentinel the redacted error still matches
		token     bool  // handler answers the token endpoint too
	}{
		{name: "the token endpoint quotes the client secret", act: get, is: ErrInvalidClient, token: true,
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("X-Echo", xechoSecret)
				w.Header().Set("Warning", `199 - "`+r.Header.Get("Authorization")+`"`)
				w.Header().Set("X-Request-Id", xechoBasic)
				w.WriteHeader(http.StatusUnauthorized)
				fmt.Fprintf(w, `{"error":"invalid_client","error_description":"bad secret %s in %s"}`, xechoes(xechoSecret), xechoes(r.Header.Get("Authorization")))
			}},
		{name: "a 401 quotes the management token", act: get, is: ErrUnauthorized,
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("X-Echo", r.Header.Get("Authorization"))
				w.WriteHeader(http.StatusUnauthorized)
				fmt.Fprintf(w, `{"reason":"AUTH.UNAUTHORIZED","error_message":"token %s refused"}`, strings.ReplaceAll(xechoes(r.Header.Get("Authorization")), `\`, `\\`))
			}},
		{name: "a Content-Type echoes the Basic credentials", act: get, is: ErrMisconfigured, token: true,
			handler: func(w http.ResponseWriter, r *http.Request) {
				if !strings.HasSuffix(r.URL.Path, "/auth/token") {
					return
				}
				w.Header().Set("Content-Type", "text/html; x="+r.Header.Get("Authorization"))
				fmt.Fprintf(w, "<html>%s</html>", xechoSecret)
			}},
		{name: "Deprecation and Sunset echo the token", act: get,
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Deprecation", r.Header.Get("Authorization"))
				w.Header().Set("Sunset", base64.StdEncoding.EncodeToString([]byte(xechoToken)))
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, `{"id":"u-1"}`)
			}},
		{name: "a redirect's Location carries a query", act: get, is: ErrMisconfigured,
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Location", "/elsewhere?cursor="+xechoToken+"&x=1")
				w.WriteHeader(http.StatusFound)
			}},
		{name: "a 503 body quotes the token in every encoding", act: get,
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/plain")
				w.WriteHeader(http.StatusServiceUnavailable)
				fmt.Fprint(w, "down: "+xechoes(xechoToken)+" "+xechoes(r.Header.Get("Authorization")))
			}},
		{name: "the authenticate answer quotes the End User token", is: ErrValidation,
			act: func(c *Client) error { _, err := c.Authenticate(context.Background(), "Bearer "+xechoEU); return err },
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("X-Echo", xechoEU)
				w.WriteHeader(http.StatusBadRequest)
				fmt.Fprintf(w, `{"reason":"COMMON.REQUEST_VALIDATION","error_message":"token %s malformed"}`, strings.ReplaceAll(xechoes("Bearer "+xechoEU), `\`, `\\`))
			}},
		{name: "a transport error quotes the request's Authorization", act: get,
			handler: func(w http.ResponseWriter, r *http.Request) {},
			transport: func(next http.RoundTripper) http.RoundTripper {
				return roundTripFunc(func(r *http.Request) (*http.Response, error) {
					if strings.HasSuffix(r.URL.Path, "/auth/token") {
						return next.RoundTrip(r)
					}
					return nil, fmt.Errorf("proxy refused %s", xechoes(r.Header.Get("Authorization")))
				})
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var transport http.RoundTripper
			if tt.transport != nil {
				transport = tt.transport(http.DefaultTransport)
			}
			c, run := xechoSetup(t, tt.handler, tt.token, transport)
			run.err = tt.act(c)
			if tt.is != nil && !errors.Is(run.err, tt.is) {
				t.Errorf("err = %v; want it to match %v still", run.err, tt.is)
			}
			for _, text := range run.texts() {
				for _, cred := range xechoCredentials() {
					if strings.Contains(text, cred) {
						t.Errorf("%q is in an output:\n%s", cred, text)
					}
				}
			}
			if strings.Contains(fmt.Sprint(run.texts()), "cursor") {
				t.Errorf("a Location's query is in an output: %q", run.texts())
			}
		})
	}
}

// The error handed to OperationDone is the redacted one, and the same value
// the caller gets: errors are not changed once made.
func TestObserverGetsTheRedactedError(t *testing.T) {
	var got error
	c, mt := setup(t, Config{MaxRetries: -1, Observer: &Observer{OperationDone: func(_ context.Context, op Operation, r OperationResult) {
		if op.Route == "/authenticate" {
			got = r.Err
		}
	}}})
	mt.RegisterResponder(http.MethodPost, mockPrefix+"/authenticate",
		jsonResponder(400, map[string]any{"reason": ReasonRequestValidation, "error_message": "token eu-observed-1 malformed"}))
	_, err := c.Authenticate(context.Background(), "Bearer eu-observed-1")
	if got != err || strings.Contains(got.Error(), "eu-observed-1") {
		t.Errorf("OperationDone got %v; want the returned error (%v), without the token", got, err)
	}
}

// Texts from outside cannot forge log lines: the fields keep the text,
// Error() and the log records escape control characters.
func TestOutsideTextsCannotForgeLogLines(t *testing.T) {
	const forged = "bad\r\nlevel=ERROR msg=\"forged\"\u2028\x1b[2J"
	c, mt := setup(t, Config{MaxRetries: -1})
	mt.RegisterResponder(http.MethodGet, mockPrefix+"/users/u-1", func(r *http.Request) (*http.Response, error) {
		resp, _ := jsonResponder(400, map[string]any{"reason": "COMMON.REQUEST_VALIDATION\n", "error_message": forged})(r)
		resp.Header.Set("X-Request-Id", "id\nforged")
		return resp, nil
	})
	_, err := c.Users.Get(context.Background(), "u-1")
	var ae *APIError
	if !errors.As(err, &ae) || ae.Message != forged {
		t.Fatalf("err = %#v; want an *APIError whose Message keeps the text", err)
	}
	if text := err.Error(); strings.ContainsAny(text, "\r\n\x1b\u2028") || !strings.Contains(text, `bad\r\nlevel=ERROR`) {
		t.Errorf("Error() = %q; want the control characters escaped", text)
	}
	if ae.RequestID != "" {
		t.Errorf("RequestID = %q; want none (not of the request id's shape)", ae.RequestID)
	}
}

func TestRequestIDShape(t *testing.T) {
	r := newRedactor(xechoToken)
	for id, want := range map[string]string{
		"req-42":                        "req-42",
		"Root=1-5759e988;Parent=x":      "",
		"a b":                           "",
		strings.Repeat("a", 128):        strings.Repeat("a", 128),
		strings.Repeat("a", 129):        "",
		"trace:" + xechoToken + "/span": "trace:REDACTED/span",
	} {
		_, raw, _ := answerMeta(http.Header{"X-Request-Id": {id}}, time.Now())
		if got := r.text(raw); got != want {
			t.Errorf("request id %q kept as %q; want %q", id, got, want)
		}
	}
}

// A credential shorter than 8 bytes is redacted where neither neighbour
// is an ASCII letter or digit; the texts are kept, and the reasons too, so
// that errors still match their sentinels.
func TestShortCredentialIsRedactedBetweenWords(t *testing.T) {
	r := newRedactor("Bearer abc", "abc")
	e := r.error(&APIError{StatusCode: 400, Reason: ReasonRequestValidation, Message: "token abc is bad, not abcd", Body: []byte("abc"),
		Header: http.Header{"X-Echo": {"abc"}, "X-Kept": {"fabc"}}, RequestID: "id-abc"}).(*APIError)
	want := &APIError{StatusCode: 400, Reason: ReasonRequestValidation, Message: "token REDACTED is bad, not abcd", Body: []byte("abc"),
		Header: http.Header{"X-Echo": {"REDACTED"}, "X-Kept": {"fabc"}}, RequestID: "id-REDACTED"}
	if diff := cmp.Diff(want, e); diff != "" || !errors.Is(e, ErrValidation) {
		t.Errorf("redacted (-want +got):\n%s", diff)
	}
}

// A body cut at its limit may end with the start of a credential, raw or
// escaped: that start is redacted too. One longer than the limit is
// redacted whole, then cut.
func TestCutBodyEndsWithoutACredentialStart(t *testing.T) {
	r := newRedactor(xechoToken)
	for _, tail := range []string{xechoToken[:5], percentAll(xechoToken)[:11], htmlAll(xechoToken)[:14], `mgmt\u002d`, `mgmt\u00`} {
		body := strings.Repeat("x", maxErrorBody-len(tail)) + tail
		got := string(r.body([]byte(body), maxErrorBody, true))
		if want := strings.Repeat("x", maxErrorBody-len(tail)) + redacted; got != want {
			t.Errorf("body ending %q kept as ...%q; want ...%q", tail, got[max(0, len(got)-20):], want[len(want)-20:])
		}
	}
	body := strings.Repeat("x", maxErrorBody-5) + xechoToken + " and more"
	if got, want := string(r.body([]byte(body), maxErrorBody, false)), strings.Repeat("x", maxErrorBody-5)+redacted; got != want {
		t.Errorf("body kept as ...%q; want ...%q", got[len(got)-20:], want[len(want)-20:])
	}
}

// Every text is bounded before it is redacted: a longer one is cut at
// maxText, and is a cut text; the headers kept are bounded in all.
func TestTextsAreBoundedBeforeRedaction(t *testing.T) {
	r := newRedactor(xechoToken)
	long := strings.Repeat("y", maxText-4) + xechoToken + strings.Repeat("z", 100)
	if got, want := r.text(long), strings.Repeat("y", maxText-4)+redacted; got != want {
		t.Errorf("text of %d bytes kept as ...%q; want ...%q", len(long), got[len(got)-20:], want[len(want)-20:])
	}
	h := http.Header{}
	for i := range 40 {
		h.Set(fmt.Sprintf("X-Big-%02d", i), strings.Repeat("v", 1000))
	}
	h.Set("X-Huge", strings.Repeat("w", 1<<20))
	kept := r.header(h)
	n := 0
	for _, vs := range kept {
		for _, v := range vs {
			n += len(v)
		}
	}
	if n > maxKeptHeaders+len(redacted) || len(kept["X-Big-00"]) != 1 || len(kept["X-Huge"]) != 0 {
		t.Errorf("kept %d bytes of headers in %d names; want at most %d, the first names in order", n, len(kept), maxKeptHeaders)
	}
}

// Bodies stay withheld on the token and authenticate routes: the text says
// what came back, never `body starts ""`.
func TestWithheldBodiesAreDescribed(t *testing.T) {
	page := "<html><body>Bad Gateway</body></html>"
	c, mt := setup(t, Config{MaxRetries: -1})
	mt.RegisterResponder(http.MethodPost, mockPrefix+"/authenticate", rawResponder(502, "text/html", page))
	_, err := c.Authenticate(context.Background(), "Bearer eu-12345678")
	want := fmt.Sprintf("management: POST /authenticate: 502 Bad Gateway; body withheld (text/html, %d bytes)", len(page))
	if err == nil || err.Error() != want {
		t.Errorf("Error() = %v; want %q", err, want)
	}

	c, mt = setup(t, Config{MaxRetries: -1})
	mt.RegisterResponder(http.MethodPost, tokenURL, rawResponder(200, "text/html; charset=utf-8", page))
	_, err = c.Users.Get(context.Background(), "u-1")
	var de *DecodeError
	if !errors.As(err, &de) || de.Body != nil || !errors.Is(err, ErrMisconfigured) {
		t.Fatalf("err = %v; want a *DecodeError without body matching ErrMisconfigured", err)
	}
	for _, part := range []string{fmt.Sprintf("body withheld (text/html, %d bytes)", len(page)), "check Config.BaseURL"} {
		if !strings.Contains(err.Error(), part) || strings.Contains(err.Error(), "body starts") {
			t.Errorf("Error() = %q; want it to say %q", err, part)
		}
	}
}

// A foreign error whose text held a credential is replaced by one of the
// redacted text that still matches what the original matched.
func TestRedactedCauseStillMatches(t *testing.T) {
	r := newRedactor(xechoToken)
	err := r.error(&TransportError{Method: "GET", Path: "/users", Err: fmt.Errorf("dial %s: %w", xechoToken, context.DeadlineExceeded)})
	if !errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), xechoToken) {
		t.Errorf("err = %v; want context.DeadlineExceeded matched, the token gone", err)
	}
}

// A documented reason, code or role is kept as it is, even where a short
// credential is one of its words: errors still match their sentinels.
func TestDocumentedWordsAreKept(t *testing.T) {
	r := newRedactor("Bearer COMMON", "COMMON", "invalid")
	e := r.error(&APIError{StatusCode: 404, Reason: ReasonEntityNotFound, Message: "COMMON thing not found"}).(*APIError)
	if e.Reason != ReasonEntityNotFound || e.Message != "REDACTED thing not found" || !errors.Is(e, ErrNotFound) {
		t.Errorf("redacted = %+v; want the reason kept, the message redacted", e)
	}
	te := r.error(&TokenError{StatusCode: 401, Code: "invalid_client", Description: "invalid secret"}).(*TokenError)
	if te.Code != "invalid_client" || te.Description != "REDACTED secret" || !errors.Is(te, ErrInvalidClient) {
		t.Errorf("redacted = %+v; want the code kept", te)
	}
	auth := &EndUserAuthentication{Role: "SERVICE_ACCOUNT", ClientResponse: &ClientResponse{HTTPBody: ClientErrorBody{Reason: "auth.unauthorized", ErrorMessage: "invalid token"}}}
	newRedactor("SERVICE", "unauthorized").verdict(auth)
	if auth.Role != RoleServiceAccount || auth.ClientResponse.HTTPBody.Reason != "auth.unauthorized" {
		t.Errorf("verdict = %+v, %+v; want the role and reason kept", auth, auth.ClientResponse)
	}
}
