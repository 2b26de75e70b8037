package management

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/jarcoal/httpmock"
)

// Answers that are not what the spec documents, and arguments that cannot
// travel.

// Disassociate's success is a 200 with an empty body (or {}): anything else
// is a *DecodeError, never "done".
func TestDisassociateRefusesOtherBodies(t *testing.T) {
	const route = mockPrefix + "/users/u-1/associated_things/p-1"
	for name, answer := range map[string]httpmock.Responder{
		"null":            rawResponder(200, "application/json", "null"),
		"an HTML page":    rawResponder(200, "text/html", "<html><form>Sign in</form></html>"),
		"the error shape": rawResponder(200, "application/json", `{"reason":"COMMON.ENTITY_NOT_FOUND","error_message":"no such Thing"}`),
		"an object":       rawResponder(200, "application/json", `{"done":true}`),
		"an array":        rawResponder(200, "application/json", `[]`),
	} {
		t.Run(name, func(t *testing.T) {
			c, mt := setup(t)
			mt.RegisterResponder(http.MethodDelete, route, answer)
			err := c.Users.DisassociateThing(context.Background(), "u-1", "p-1")
			var de *DecodeError
			if !errors.As(err, &de) || de.StatusCode != 200 {
				t.Errorf("err = %v; want a *DecodeError of the 200", err)
			}
		})
	}
}

// An identifier of white space only is refused like an empty one, before
// anything is sent.
func TestWhitespaceIDsRefused(t *testing.T) {
	c, _ := setup(t) // any request would fail the test
	ctx := context.Background()
	for _, id := range []string{" ", "\t", " \n "} {
		_, err1 := c.Users.Get(ctx, id)
		_, err2 := c.Things.Get(ctx, id)
		_, err3 := c.Things.Update(ctx, id, ThingUpdate{Name: new("x")})
		err4 := c.Users.DisassociateThing(ctx, "u-1", id)
		err5 := c.Users.DisassociateThing(ctx, id, "p-1")
		_, _, err6 := c.Users.AssociateThing(ctx, id, NewAssociation{PhysicalID: "p-1", Model: "m", FirmwareVersion: "1"})
		_, _, err7 := c.Users.AssociateThing(ctx, "u-1", NewAssociation{PhysicalID: id, Model: "m", FirmwareVersion: "1"})
		_, _, err8 := c.Users.AssociateThing(ctx, "u-1", NewAssociation{PhysicalID: "p-1", Model: id, FirmwareVersion: "1"})
		for i, err := range []error{err1, err2, err3, err4, err5, err6, err7, err8} {
			if !errors.Is(err, ErrInvalidArgument) {
				t.Errorf("id %q, call %d: %v; want ErrInvalidArgument", id, i+1, err)
			}
		}
	}
}

// A User-Agent that cannot travel in a header is refused by NewClient and
// ConfigFromEnv, not on every request.
func TestUserAgentMustTravel(t *testing.T) {
	for _, ua := range []string{"app\r\nX-Injected: 1", "app\x00", "app\x7f"} {
		if _, err := NewClient(Config{BaseURL: mockBaseURL, ClientID: mockID, ClientSecret: mockSecret, UserAgent: ua}); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("NewClient with UserAgent %q: %v; want ErrInvalidArgument", ua, err)
		}
		env := map[string]string{EnvBaseURL: mockBaseURL, EnvClientID: mockID, EnvClientSecret: mockSecret, EnvUserAgent: ua}
		_, err := configFrom(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
		var ee *EnvError
		if !errors.As(err, &ee) || len(ee.Malformed) != 1 || !strings.Contains(ee.Malformed[0], EnvUserAgent) {
			t.Errorf("ConfigFromEnv with %s %q: %v; want it named malformed", EnvUserAgent, ua, err)
		}
	}
	if _, err := NewClient(Config{BaseURL: mockBaseURL, ClientID: mockID, ClientSecret: mockSecret, UserAgent: "app/1.0 (tab\there)"}); err != nil {
		t.Errorf("a User-Agent with a tab: %v; want it accepted (net/http sends it)", err)
	}
}

// A request that net/http refuses to send is not retried as a connection
// failure: the same request would be refused again.
func TestRequestNetHTTPRefusesIsNotRetried(t *testing.T) {
	c, err := NewClient(Config{BaseURL: "http://127.0.0.1:1", ClientID: mockID, ClientSecret: mockSecret,
		RetryWaitMin: 1, RetryWaitMax: 1})
	if err != nil {
		t.Fatal(err)
	}
	c.userAgent = "bad\nagent" // as a Client before the check would have sent it
	_, err = c.Users.Get(context.Background(), "u-1")
	var te *TransportError
	if !errors.As(err, &te) || te.Attempts != 1 {
		t.Errorf("err = %v; want a *TransportError after 1 attempt", err)
	}
}

// The query of a next_page link the service wrote is never shown in an
// error's text: it may hold a cursor worth a credential.
func TestNextPageQueryNotInErrors(t *testing.T) {
	c, _ := setup(t)
	for _, link := range []string{"//evil.example/users?cursor=secret-cursor-1", "/users/../admin?cursor=secret-cursor-1", "/users?cursor=secret-cursor-1#x"} {
		_, err := c.Users.ListPage(context.Background(), &ListOptions{NextPage: link})
		if err == nil || strings.Contains(err.Error(), "secret-cursor-1") {
			t.Errorf("link %q: err = %v; want an error without the query", link, err)
		}
	}
}
