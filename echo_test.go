package management

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jarcoal/httpmock"
)

// Echoes of credentials in the places and forms the first redactor missed
// (issue 32): paths that came from outside (next_page links, refused links,
// a redirect's Location), texts cut by a read rather than by a limit,
// escapes applied twice, and short credentials, whose texts are kept.

// echoRun is a Client that records what it leaves where anyone could read
// it: its Debug log and the errors its OperationDone hook gets.
type echoRun struct {
	logs  logBuffer
	mu    sync.Mutex
	hooks []string
}

func (r *echoRun) config(cfg Config) Config {
	cfg.Logger = slog.New(slog.NewJSONHandler(&r.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg.Observer = &Observer{OperationDone: func(_ context.Context, _ Operation, res OperationResult) {
		if res.Err != nil {
			r.mu.Lock()
			r.hooks = append(r.hooks, res.Err.Error())
			r.mu.Unlock()
		}
	}}
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = -1
	}
	return cfg
}

// outputs are err's texts and fields, the logs and the hooks' texts.
func (r *echoRun) outputs(err error) []string {
	x := &xechoRun{err: err, logs: &r.logs}
	out := x.texts()
	for _, p := range []any{new(*APIError), new(*DecodeError), new(*TransportError)} {
		if errors.As(err, p) {
			out = append(out, fmt.Sprintf("%+v", p))
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return append(out, r.hooks...)
}

// tokenForms are the spellings of the management token a path may carry.
var tokenForms = map[string]string{
	"raw":             mockToken,
	"percent-encoded": percentAll(mockToken),
	"base64":          base64.RawURLEncoding.EncodeToString([]byte(mockToken)),
	"base64 padded":   base64.URLEncoding.EncodeToString([]byte("Bearer " + mockToken)),
}

// A next_page link the SDK follows, whose path holds the management token,
// then fails: the path is named in the error, the logs and the hooks, with
// the token redacted.
func TestFollowedLinkPathsAreRedacted(t *testing.T) {
	failures := map[string]httpmock.Responder{
		"404":               jsonResponder(404, map[string]any{"reason": ReasonEntityNotFound, "error_message": "no such page"}),
		"500":               rawResponder(500, "text/plain", "boom"),
		"non-JSON 200":      rawResponder(200, "text/plain", "not json"),
		"closed connection": httpmock.NewErrorResponder(io.ErrUnexpectedEOF),
	}
	for formName, form := range tokenForms {
		for failure, answer := range failures {
			t.Run(formName+"/"+failure, func(t *testing.T) {
				link := usersPath + "/" + form + "/more?page=2"
				var run echoRun
				c, mt := setup(t, run.config(Config{}))
				registerPages(t, mt, map[string]httpmock.Responder{usersPath: pageOfUsers(link, "u-1"), link: answer})
				ids, errs := collect(c.Users.List(t.Context(), nil), idOfUser)
				if len(ids) != 1 || len(errs) != 1 {
					t.Fatalf("ids %v, errors %v; want u-1 then an error", ids, errs)
				}
				_, err := c.Users.ListPage(t.Context(), &ListOptions{NextPage: link})
				if err == nil {
					t.Fatal("ListPage of the failing link succeeded")
				}
				for _, out := range append(run.outputs(errs[0]), run.outputs(err)...) {
					if strings.Contains(out, form) || strings.Contains(out, mockToken) {
						t.Errorf("the token (%s) is in an output:\n%s", formName, out)
					}
				}
				if !strings.Contains(errs[0].Error(), "/users/REDACTED/more") {
					t.Errorf("Error() = %q; want the path named, the token redacted", errs[0])
				}
			})
		}
	}
}

// A next_page link that is refused is named in the error with the token
// redacted, by List, by ListPage and by ListPage resuming from it.
func TestRefusedLinkTextsAreRedacted(t *testing.T) {
	for formName, form := range tokenForms {
		for _, link := range []string{
			"https://evil.test" + usersPath + "/" + form,
			"//evil.test/" + form,
			usersPath + "/../" + form,
			usersPath + `\` + form,
			"users/" + form,
			"http:" + usersPath + "/" + form,
		} {
			t.Run(formName+"/"+link, func(t *testing.T) {
				var run echoRun
				c, mt := setup(t, run.config(Config{}))
				registerPages(t, mt, map[string]httpmock.Responder{usersPath: pageOfUsers(link, "u-1")})
				_, errs := collect(c.Users.List(t.Context(), nil), idOfUser)
				_, pageErr := c.Users.ListPage(t.Context(), nil)
				_, resumeErr := c.Users.ListPage(t.Context(), &ListOptions{NextPage: link})
				for _, err := range append(errs, pageErr, resumeErr) {
					if !errors.Is(err, ErrInvalidPageLink) {
						t.Fatalf("err = %v; want ErrInvalidPageLink", err)
					}
					for _, out := range run.outputs(err) {
						if strings.Contains(out, form) {
							t.Errorf("the token (%s) is in an output:\n%s", formName, out)
						}
					}
				}
			})
		}
	}
}

// A redirect's Location whose path holds a credential across the cut of
// the path named in the error: the credential is redacted whole, then the
// path cut.
func TestRedirectPathIsRedactedThenCut(t *testing.T) {
	for formName, form := range tokenForms {
		for _, at := range []int{maxRedirectPath - 12, maxRedirectPath - 4, maxRedirectPath - 1, maxRedirectPath - len(form), 20} {
			t.Run(fmt.Sprintf("%s at %d", formName, at), func(t *testing.T) {
				path := "/" + strings.Repeat("a", at-2) + "/" + form + "/next"
				var run echoRun
				c, mt := setup(t, run.config(Config{}))
				mt.RegisterResponder(http.MethodGet, mockPrefix+"/users/u-1", func(r *http.Request) (*http.Response, error) {
					resp := httpmock.NewStringResponse(http.StatusFound, "")
					resp.Header.Set("Location", "https://elsewhere.test"+path+"?q=1")
					return resp, nil
				})
				_, err := c.Users.Get(t.Context(), "u-1")
				if !errors.Is(err, ErrMisconfigured) {
					t.Fatalf("err = %v; want ErrMisconfigured", err)
				}
				var ae *APIError
				errors.As(err, &ae)
				named := strings.TrimPrefix(ae.Message, "redirect to another origin, path ")
				named, _, _ = strings.Cut(named, ", not followed")
				// Cut at maxRedirectPath, but never inside the mark.
				full := "/" + strings.Repeat("a", at-2) + "/REDACTED/next"
				n := maxRedirectPath
				if at < n && at+len(redacted) > n {
					n = at + len(redacted)
				}
				if want := full[:min(len(full), n)]; named != want {
					t.Errorf("path named %q, want %q", named, want)
				}
				for _, out := range run.outputs(err) {
					for n := 4; n <= len(form); n++ {
						if strings.Contains(out, "/"+form[:n]) {
							t.Errorf("%d bytes of the token (%s) are in an output:\n%s", n, formName, out)
							break
						}
					}
				}
			})
		}
	}
}

// chunkedBody is a body that arrives in the given reads, then fails with
// err (a dropped connection) or ends.
type chunkedBody struct {
	chunks []string
	err    error
}

func (b *chunkedBody) Read(p []byte) (int, error) {
	if len(b.chunks) == 0 {
		if b.err != nil {
			return 0, b.err
		}
		return 0, io.EOF
	}
	n := copy(p, b.chunks[0])
	b.chunks[0] = b.chunks[0][n:]
	if b.chunks[0] == "" {
		b.chunks = b.chunks[1:]
	}
	return n, nil
}

func (b *chunkedBody) Close() error { return nil }

// A body cut by the read, not by a limit (a connection that drops in the
// middle of a token, a first packet that ends in the middle of one, and the
// decoder stopped there), is a cut text: the start of the token at its end
// is redacted.
func TestBodiesCutByTheReadAreCut(t *testing.T) {
	// Each tail is the start of an echo of the token: whole, the echo
	// is its tail and rest.
	for _, echo := range []struct{ tail, rest string }{
		{mockToken[:8], mockToken[8:]},
		{percentAll(mockToken)[:14], percentAll(mockToken)[14:]},
		{`mgmt\u002dto`, "ken-1"},
		{`mgmt\u00`, "2dtoken-1"},
	} {
		tail := echo.tail
		answer := func(status int, contentType string, chunks []string, err error) httpmock.Responder {
			return func(r *http.Request) (*http.Response, error) {
				resp := httpmock.NewStringResponse(status, "")
				resp.Header.Set("Content-Type", contentType)
				resp.Body = &chunkedBody{chunks: chunks, err: err}
				return resp, nil
			}
		}
		tests := map[string]httpmock.Responder{
			"a connection dropped in an error body": answer(400, "text/plain", []string{"refused: " + tail}, io.ErrUnexpectedEOF),
			// The body is read on past what the decoder read (a
			// DecodeError shows the same whatever the Go release's
			// decoder buffers), so the echo is seen whole.
			"a 2xx body whose first packet ends mid-token": answer(200, "text/html", []string{"<html>token " + tail, echo.rest + " more</html>"}, nil),
			"a 2xx body that drops mid-token":              answer(200, "text/plain", []string{"token " + tail}, io.ErrUnexpectedEOF),
		}
		for name, responder := range tests {
			t.Run(name+"/"+tail, func(t *testing.T) {
				var run echoRun
				c, mt := setup(t, run.config(Config{}))
				mt.RegisterResponder(http.MethodGet, mockPrefix+"/users/u-1", responder)
				_, err := c.Users.Get(t.Context(), "u-1")
				if err == nil {
					t.Fatal("Users.Get succeeded")
				}
				var body []byte
				var ae *APIError
				var de *DecodeError
				switch {
				case errors.As(err, &ae):
					body = ae.Body
				case errors.As(err, &de):
					body = de.Body
				}
				if whole := strings.HasPrefix(name, "a 2xx body whose first packet"); whole && string(body) != "<html>token REDACTED more</html>" {
					t.Errorf("body kept as %q; want the echo redacted whole", body)
				} else if !whole && !strings.HasSuffix(string(body), "REDACTED") {
					t.Errorf("body kept as %q; want its end redacted", body)
				}
				for _, out := range run.outputs(err) {
					if strings.Contains(out, tail) {
						t.Errorf("the start of the token %q is in an output:\n%s", tail, out)
					}
				}
			})
		}
	}
}

// A DecodeError keeps the first 256 bytes of a body redacted whole: a
// management token the bound cuts is redacted, not cut, whether the body
// ends soon after it, goes on long after it, or the token itself goes on
// past what was kept; and no start of it stays.
func TestDecodeErrorBodyCutInsideACredential(t *testing.T) {
	const token = "mgmt-token-of-27-bytes-long"
	long := "mgmt-" + strings.Repeat("jwt-like-", 70)
	for _, c := range []struct {
		name, token string
		at          int // where the token starts
		after       string
	}{
		{"the body ends soon after", token, maxDecodeErrorBody - 14, " trailing"},
		{"the body goes on", token, maxDecodeErrorBody - 20, strings.Repeat(" more", 200)},
		{"the token starts at the bound's last byte", token, maxDecodeErrorBody - 1, ""},
		{"the token goes on past what was kept", long, 200, " end"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var run echoRun
			c2, mt := setup(t, run.config(Config{}))
			mt.RegisterResponder(http.MethodPost, tokenURL, jsonResponder(200, map[string]any{"access_token": c.token, "token_type": "Bearer", "expires_in": 600}))
			body := strings.Repeat("x", c.at) + c.token + c.after
			mt.RegisterResponder(http.MethodGet, mockPrefix+"/users/u-1", rawResponder(200, "text/plain", body))
			_, err := c2.Users.Get(t.Context(), "u-1")
			de := asDecodeError(t, err)
			want := strings.Repeat("x", c.at) + "REDACTED"
			if c.token == token {
				want += c.after
			}
			if want = want[:min(len(want), max(maxDecodeErrorBody, c.at+len("REDACTED")))]; string(de.Body) != want {
				t.Errorf("Body = %q, want %q", de.Body, want)
			}
			if !strings.Contains(err.Error(), strings.Repeat("x", c.at)+"REDACTED") {
				t.Errorf("Error() = %q; want the body's mark whole", err)
			}
			for _, out := range run.outputs(err) {
				if strings.Contains(out, c.token[:4]) {
					t.Errorf("the start of the token is in an output:\n%s", out)
				}
			}
		})
	}
}

// Escapes applied twice, or one kind inside another, are read too.
func TestTwiceEscapedEchoesAreRedacted(t *testing.T) {
	for name, echo := range map[string]string{
		"percent of percent":  strings.ReplaceAll(percentAll(mockToken), "%", "%25"),
		"HTML in JSON":        strings.ReplaceAll(htmlAll(mockToken), "&", `\u0026`),
		"HTML of HTML":        strings.ReplaceAll(htmlAll(mockToken), "&", "&amp;"),
		"percent in HTML":     strings.ReplaceAll(percentAll(mockToken), "%", "&#37;"),
		"JSON of JSON":        strings.ReplaceAll(strings.ReplaceAll(mockToken, "-", `\u002d`), `\`, `\\`),
		"base64 in percent":   url.QueryEscape(url.QueryEscape(base64.StdEncoding.EncodeToString([]byte("Bearer " + mockToken)))),
		"percent three times": strings.ReplaceAll(strings.ReplaceAll(percentAll(mockToken), "%", "%25"), "%", "%25"),
	} {
		t.Run(name, func(t *testing.T) {
			var run echoRun
			c, mt := setup(t, run.config(Config{}))
			mt.RegisterResponder(http.MethodGet, mockPrefix+"/users/u-1", rawResponder(503, "text/plain", "down: "+echo+" (sorry)"))
			_, err := c.Users.Get(t.Context(), "u-1")
			var ae *APIError
			if !errors.As(err, &ae) || string(ae.Body) != "down: REDACTED (sorry)" {
				t.Errorf("err = %v; want the body kept with the echo redacted", err)
			}
			for _, out := range run.outputs(err) {
				if strings.Contains(out, echo) {
					t.Errorf("the echo is in an output:\n%s", out)
				}
			}
		})
	}
}

// shortToken and shortEndUser are credentials shorter than the redactor's
// minimum, as tests use (5 bytes, not English words).
const (
	shortToken   = "qzx7k"
	shortEndUser = "vbn4w"
)

// setupShort is setup with a management token of 5 bytes.
func setupShort(t *testing.T, cfg Config) (*Client, *httpmock.MockTransport) {
	t.Helper()
	c, mt := setup(t, cfg)
	mt.RegisterResponder(http.MethodPost, tokenURL,
		jsonResponder(http.StatusOK, map[string]any{"access_token": shortToken, "token_type": "Bearer", "expires_in": 600}))
	return c, mt
}

// A credential shorter than 8 bytes never costs the service's message:
// each text is kept, with the credential redacted where neither neighbour
// is an ASCII letter or digit.
func TestShortCredentialsKeepTheServicesTexts(t *testing.T) {
	get := func(c *Client) error { _, err := c.Users.Get(context.Background(), "u-9"); return err }
	tests := []struct {
		name   string
		answer httpmock.Responder
		act    func(*Client) error
		want   []string // in Error()
		not    []string // in no output
	}{
		{name: "a 404's message", act: get,
			answer: jsonResponder(404, map[string]any{"reason": ReasonEntityNotFound, "error_message": "User u-9 was not found"}),
			want:   []string{"404 COMMON.ENTITY_NOT_FOUND: User u-9 was not found"}},
		{name: "a 502's body", act: get,
			answer: rawResponder(502, "text/html", "<html>Bad Gateway: upstream qzx7kz timed out</html>"),
			want:   []string{`Bad Gateway: upstream qzx7kz timed out`}},
		{name: "an echo of the token", act: get,
			answer: jsonResponder(400, map[string]any{"reason": ReasonRequestValidation, "error_message": "token qzx7k (Bearer qzx7k) refused for u-9"}),
			want:   []string{"token REDACTED (REDACTED) refused for u-9"}, not: []string{shortToken}},
		{name: "a failed name lookup", act: get,
			answer: httpmock.NewErrorResponder(errors.New("dial tcp: lookup api.example.test: no such host")),
			want:   []string{"dial tcp: lookup api.example.test: no such host"}},
		{name: "a redirect's hint", act: get,
			answer: func(r *http.Request) (*http.Response, error) {
				resp := httpmock.NewStringResponse(http.StatusMovedPermanently, "")
				resp.Header.Set("Location", "/login")
				return resp, nil
			},
			want: []string{"redirect to /login not followed; check Config.BaseURL and Config.PathPrefix"}},
		{name: "an HTML page's hint", act: get,
			answer: rawResponder(200, "text/html", "<html>Welcome</html>"),
			want:   []string{`(Content-Type "text/html")`, `body starts "<html>Welcome</html>"`, "check Config.BaseURL"}},
		{name: "a verdict's texts", act: func(c *Client) error {
			auth, err := c.Authenticate(context.Background(), "Bearer "+shortEndUser)
			if err == nil {
				err = fmt.Errorf("%d %s: %s", auth.ClientResponse.HTTPCode, auth.ClientResponse.HTTPBody.Reason, auth.ClientResponse.HTTPBody.ErrorMessage)
			}
			return err
		},
			answer: jsonResponder(200, authnInvalidWith(401, map[string]any{"error_code": 401, "reason": "auth.expired", "error_message": "Token vbn4w expired; sign in again"})),
			want:   []string{"401 auth.expired: Token REDACTED expired; sign in again"}, not: []string{shortEndUser}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var run echoRun
			c, mt := setupShort(t, run.config(Config{}))
			mt.RegisterResponder(http.MethodGet, mockPrefix+"/users/u-9", tt.answer)
			mt.RegisterResponder(http.MethodPost, mockPrefix+"/authenticate", tt.answer)
			err := tt.act(c)
			if err == nil {
				t.Fatal("the call succeeded")
			}
			all := strings.Join(run.outputs(err), "\n")
			for _, w := range tt.want {
				if !strings.Contains(all, w) {
					t.Errorf("err = %v; want it or its fields to hold %q", err, w)
				}
			}
			for _, out := range run.outputs(err) {
				if strings.Contains(out, "withheld: a credential") {
					t.Errorf("a text is withheld:\n%s", out)
				}
				for _, n := range tt.not {
					if strings.Contains(out, n) {
						t.Errorf("%q is in an output:\n%s", n, out)
					}
				}
			}
		})
	}
}

// The middleware relays the service's to_client_response when the End
// User's token is short, with the token redacted.
func TestShortEndUserTokenGetsTheServicesRelay(t *testing.T) {
	header := "Bearer " + shortEndUser
	c, _ := authnSetup(t, Config{}, map[string]httpmock.Responder{
		header: jsonResponder(200, authnInvalidWith(401, map[string]any{"error_code": 401, "reason": "auth.expired", "error_message": "Session of vbn4w expired"})),
	})
	got := authnServe(t, context.Background(), &Authenticator{Client: c}, header)
	if want := authnBody(401, "auth.expired", "Session of REDACTED expired"); got.status != 401 || fmt.Sprint(got.body) != fmt.Sprint(want) {
		t.Errorf("answer %d %v; want 401 %v", got.status, got.body, want)
	}
}

// An End User token made of escape characters, quoted by the service, gets
// the service's verdict at once: redaction takes time linear in the text
// (it was exponential in the run of backslashes, and held the check's slot
// past Timeout).
func TestEscapeRunTokensGetTheVerdict(t *testing.T) {
	for _, tok := range []string{strings.Repeat(`\`, 64), strings.Repeat(`%25`, 32), strings.Repeat("&amp;", 24), strings.Repeat(`\%&+`, 24)} {
		t.Run(tok[:8], func(t *testing.T) {
			header := "Bearer " + tok
			quoted := authnInvalidWith(401, map[string]any{"error_code": 401, "reason": "auth.unauthorized", "error_message": "token " + header + " is invalid"})
			c, _ := authnSetup(t, Config{}, map[string]httpmock.Responder{header: jsonResponder(200, quoted)})
			a := &Authenticator{Client: c, Timeout: 2 * time.Second}
			got := authnServe(t, context.Background(), a, header)
			if want := authnBody(401, "auth.unauthorized", "token REDACTED is invalid"); got.status != 401 || fmt.Sprint(got.body) != fmt.Sprint(want) {
				t.Errorf("answer %d %v; want 401 %v", got.status, got.body, want)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			auth, err := c.Authenticate(ctx, header)
			if err != nil || auth.ClientResponse == nil || auth.ClientResponse.HTTPBody.ErrorMessage != "token REDACTED is invalid" {
				t.Errorf("Authenticate = %+v, %v; want the verdict with the token redacted", auth, err)
			}
		})
	}
}
