package management

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jarcoal/httpmock"
)

// Reading 2xx bodies: the size limit, what a DecodeError shows, and the
// validation hook.

func TestMaxResponseBytesAtEveryValue(t *testing.T) {
	body := `{"id":"u-1","note":"` + strings.Repeat("x", 78) + `"}` // 100 bytes
	if len(body) != 100 {
		t.Fatalf("body is %d bytes", len(body))
	}
	tests := []struct {
		limit   int64
		body    string
		tooBig  bool
		comment string
	}{
		{math.MaxInt64, body, false, "the largest limit"},
		{math.MaxInt64 - 1, body, false, ""},
		{1 << 40, body, false, ""},
		{100, body, false, "exactly at the limit"},
		{99, body, true, "one byte over"},
		{100, body + " ", true, "trailing white space past the limit"},
		{101, body + " ", false, "trailing white space at the limit"},
		{1, body, true, ""},
	}
	for _, tt := range tests {
		// discard: DisassociateThing, whose answer must be empty (here {}
		// padded with white space to the same length); otherwise
		// Users.Get, whose answer is decoded.
		for _, discard := range []bool{false, true} {
			t.Run(fmt.Sprintf("limit %d body %d discard %t", tt.limit, len(tt.body), discard), func(t *testing.T) {
				c, mt := setup(t, Config{MaxResponseBytes: tt.limit})
				answer := func(r *http.Request) (*http.Response, error) {
					testAPIHeaders(t, r)
					testBody(t, r, "")
					if discard {
						return httpmock.NewStringResponse(200, "{"+strings.Repeat(" ", len(tt.body)-2)+"}"), nil
					}
					return httpmock.NewStringResponse(200, tt.body), nil
				}
				mt.RegisterResponder(http.MethodGet, mockPrefix+"/users/u-1", answer)
				mt.RegisterResponder(http.MethodDelete, mockPrefix+"/users/u-1/associated_things/t-1", answer)
				var u *UserDetails
				var err error
				if discard {
					err = c.Users.DisassociateThing(context.Background(), "u-1", "t-1")
				} else {
					u, err = c.Users.Get(context.Background(), "u-1")
				}
				if tt.tooBig {
					want := fmt.Sprintf("response body too large (limit %d bytes)", tt.limit)
					var de *DecodeError
					if !errors.Is(err, ErrResponseTooLarge) || !errors.As(err, &de) || !strings.Contains(err.Error(), want) {
						t.Fatalf("err = %v; want a *DecodeError wrapping ErrResponseTooLarge, %q", err, want)
					}
					return
				}
				if err != nil {
					t.Fatalf("err = %v; want success (%s)", err, tt.comment)
				}
				if !discard && u.ID != "u-1" {
					t.Errorf("decoded %+v", u)
				}
			})
		}
	}
}

func TestEmptySuccessWithoutOut(t *testing.T) {
	// DisassociateThing's empty 200 is a success, at any limit.
	for _, limit := range []int64{1, 100, math.MaxInt64} {
		c, mt := setup(t, Config{MaxResponseBytes: limit, TokenSource: staticSource(mockToken)})
		mt.RegisterResponder(http.MethodDelete, mockPrefix+"/users/u-1/associated_things/t-1", func(r *http.Request) (*http.Response, error) {
			testMethod(t, r, "DELETE")
			testAPIHeaders(t, r)
			testBody(t, r, "")
			return httpmock.NewStringResponse(200, ""), nil
		})
		if err := c.Users.DisassociateThing(context.Background(), "u-1", "t-1"); err != nil {
			t.Errorf("limit %d: DisassociateThing = %v, want nil", limit, err)
		}
	}
}

func TestDecodeErrorSaysWhatCameBack(t *testing.T) {
	long := `{"id":"` + strings.Repeat("y", 1000) + `"`
	tests := []struct {
		name, contentType, body string
		limit                   int64
		want                    DecodeError // Err compared by text, in wantErr
		wantErr                 string
		wantText                string
	}{
		{"HTML 200", "text/html; charset=utf-8", "<html>ok</html>", 0,
			DecodeError{ContentType: "text/html; charset=utf-8", Body: []byte("<html>ok</html>")},
			"invalid character '<' looking for beginning of value",
			`management: GET /users/u-1: 200 response (Content-Type "text/html; charset=utf-8"): invalid character '<' looking for beginning of value; body starts "<html>ok</html>"; check Config.BaseURL and Config.PathPrefix`},
		{"truncated", "application/json", `{"id":"u-1","email":`, 0,
			DecodeError{ContentType: "application/json", Body: []byte(`{"id":"u-1","email":`)},
			"unexpected EOF",
			`management: GET /users/u-1: 200 response (Content-Type "application/json"): unexpected EOF; body starts "{\"id\":\"u-1\",\"email\":"`},
		{"long and truncated", "application/json", long, 0,
			DecodeError{ContentType: "application/json", Body: []byte(long[:256])},
			"unexpected EOF", ""},
		{"no Content-Type, empty", "", "", 0,
			DecodeError{}, "empty body",
			`management: GET /users/u-1: 200 response: empty body`},
		{"too large", "application/json", long, 300,
			DecodeError{ContentType: "application/json", Body: []byte(long[:256])},
			"response body too large (limit 300 bytes)", ""},
		{"hostile Content-Type", strings.Repeat("\x01", 500), "nope", 0,
			DecodeError{ContentType: strings.Repeat("\x01", 128), Body: []byte("nope")},
			"invalid character 'o' in literal null (expecting 'u')", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, mt := setup(t, Config{MaxResponseBytes: tt.limit})
			mt.RegisterResponder(http.MethodGet, mockPrefix+"/users/u-1", func(r *http.Request) (*http.Response, error) {
				testMethod(t, r, "GET")
				testAPIHeaders(t, r)
				return rawResponder(200, tt.contentType, tt.body)(r)
			})
			_, err := c.Users.Get(context.Background(), "u-1")
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("err = %v (%T), want *DecodeError", err, err)
			}
			if de.Err == nil || strings.TrimPrefix(de.Err.Error(), "management: ") != tt.wantErr {
				t.Errorf("Err = %v, want %q", de.Err, tt.wantErr)
			}
			got := *de
			got.Err = nil
			want := tt.want
			want.Method, want.Path, want.StatusCode = "GET", "/users/u-1", 200
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("DecodeError (-want +got):\n%s", diff)
			}
			if tt.wantText != "" && err.Error() != tt.wantText {
				t.Errorf("Error() =\n%q, want\n%q", err, tt.wantText)
			}
			if n := len(err.Error()); n > 800 {
				t.Errorf("Error() is %d bytes long", n)
			}
		})
	}
}

// The token and authenticate routes' answers can carry tokens: their
// DecodeErrors name the content type only.
func TestDecodeErrorNeverQuotesCredentialBodies(t *testing.T) {
	const secretish = `<html>access_token=eu-secret-token-1</html>`
	t.Run("token", func(t *testing.T) {
		c, mt := setup(t)
		mt.RegisterResponder(http.MethodPost, tokenURL, func(r *http.Request) (*http.Response, error) {
			testMethod(t, r, "POST")
			testBody(t, r, grantBody)
			return rawResponder(200, "text/html", secretish)(r)
		})
		_, err := c.Users.Get(context.Background(), "u-1")
		checkNoBody(t, err, "POST", "/auth/token")
	})
	t.Run("token, truncated", func(t *testing.T) {
		c, mt := setup(t)
		mt.RegisterResponder(http.MethodPost, tokenURL, func(r *http.Request) (*http.Response, error) {
			testMethod(t, r, "POST")
			testBody(t, r, grantBody)
			return rawResponder(200, "application/json", `{"access_token":"eu-secret-token-1","expires_in":`)(r)
		})
		_, err := c.Users.Get(context.Background(), "u-1")
		checkNoBody(t, err, "POST", "/auth/token")
	})
	t.Run("authenticate", func(t *testing.T) {
		c, mt := setup(t)
		mt.RegisterResponder(http.MethodPost, mockPrefix+"/authenticate", func(r *http.Request) (*http.Response, error) {
			testMethod(t, r, "POST")
			testAPIHeaders(t, r)
			testJSONBody(t, r, `{"access_token": "Bearer eu-1"}`)
			return rawResponder(200, "text/html", secretish)(r)
		})
		_, err := c.Authenticate(context.Background(), "Bearer eu-1")
		checkNoBody(t, err, "POST", "/authenticate")
	})
}

func checkNoBody(t *testing.T, err error, method, path string) {
	t.Helper()
	var de *DecodeError
	if !errors.As(err, &de) {
		t.Fatalf("err = %v (%T), want *DecodeError", err, err)
	}
	if de.Method != method || de.Path != path || de.Body != nil || de.ContentType == "" {
		t.Errorf("DecodeError = %+v; want %s %s, a content type and no body", *de, method, path)
	}
	if s := err.Error(); strings.Contains(s, "eu-secret-token-1") || !strings.Contains(s, fmt.Sprintf("(Content-Type %q)", de.ContentType)) {
		t.Errorf("Error() = %q; want the content type and nothing of the body", s)
	}
}

// validated implements the hook that readResponse calls after a decode.
type validated struct {
	ID string `json:"id"`
}

var errNoID = errors.New("no id")

func (v *validated) validate() error {
	if v.ID == "" {
		return errNoID
	}
	return nil
}

// Internal: the subject is decode's contract with any out type, that it
// calls validate after a decode and wraps the very error validate returns.
// Users.Get shows it through its own hook (TestDecodeEmptySuccessIsDecodeError).
func TestValidateHookAfterDecode(t *testing.T) {
	c, mt := setup(t)
	mt.RegisterResponder(http.MethodGet, mockPrefix+"/users/u-1", rawResponder(200, "application/json", `{"id":"u-1"}`))
	mt.RegisterResponder(http.MethodGet, mockPrefix+"/users/u-2", rawResponder(200, "application/json", `{"id":""}`))

	var ok validated
	if _, err := c.do(context.Background(), c.newRequest(http.MethodGet, "/users/u-1", "", nil), &ok); err != nil || ok.ID != "u-1" {
		t.Fatalf("valid answer: %+v, %v", ok, err)
	}
	var bad validated
	_, err := c.do(context.Background(), c.newRequest(http.MethodGet, "/users/u-2", "", nil), &bad)
	want := DecodeError{Method: "GET", Path: "/users/u-2", StatusCode: 200, ContentType: "application/json", Body: []byte(`{"id":""}`), Err: errNoID}
	var de *DecodeError
	if !errors.As(err, &de) || !errors.Is(err, errNoID) {
		t.Fatalf("err = %v; want a *DecodeError wrapping the validation failure", err)
	}
	if diff := cmp.Diff(want, *de, cmp.Comparer(func(a, b error) bool { return a == b })); diff != "" {
		t.Errorf("DecodeError (-want +got):\n%s", diff)
	}
	if got, wantText := err.Error(), `management: GET /users/u-2: 200 response (Content-Type "application/json"): no id; body starts "{\"id\":\"\"}"`; got != wantText {
		t.Errorf("Error() = %q, want %q", got, wantText)
	}
}
