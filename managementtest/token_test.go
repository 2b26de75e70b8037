package managementtest_test

import (
	"context"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

func TestTokenEndpoint(t *testing.T) {
	c := mtStart(t, managementtest.WithCredentials("id-1", "secret-1"))
	good := mtBasic("id-1", "secret-1")
	const grant = `{"grant_type":"client_credentials"}`
	invalidClient := `{"error":"invalid_client","error_description":"Client authentication failed: invalid or missing Basic credentials"}`
	badGrant := `{"error":"unsupported_grant_type","error_description":"grant_type must be client_credentials, in a JSON body"}`
	tests := []struct {
		name   string
		auth   string
		body   string
		status int
		want   string
	}{
		{"no credentials", "", grant, 401, invalidClient},
		{"wrong secret", mtBasic("id-1", "nope"), grant, 401, invalidClient},
		{"wrong id", mtBasic("id-2", "secret-1"), grant, 401, invalidClient},
		{"not Basic", "Bearer id-1:secret-1", grant, 401, invalidClient},
		{"bad credentials before bad grant", mtBasic("id-1", "nope"), `{}`, 401, invalidClient},
		{"missing grant", good, `{}`, 400, badGrant},
		{"null grant", good, `{"grant_type":null}`, 400, badGrant},
		{"other grant", good, `{"grant_type":"password"}`, 400, badGrant},
		{"form body", good, "grant_type=client_credentials", 400, badGrant},
		{"no body", good, "", 400, badGrant},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := map[string]string{"Content-Type": "application/json"}
			if tt.auth != "" {
				h["Authorization"] = tt.auth
			}
			c.send("POST", mtPrefix+"/auth/token", h, tt.body).want(t, tt.status, tt.want)
		})
	}

	t.Run("issued", func(t *testing.T) {
		r := c.send("POST", mtPrefix+"/auth/token", map[string]string{"Authorization": good}, grant)
		v := r.json(t)
		if r.status != 200 || mtField(t, v, "token_type") != "Bearer" || mtField(t, v, "expires_in") != 600.0 {
			t.Fatalf("token answer %d %s", r.status, r.body)
		}
		tok, _ := mtField(t, v, "access_token").(string)
		if tok == "" {
			t.Fatalf("no access_token in %s", r.body)
		}
		got := c.send("GET", mtPrefix+"/users", map[string]string{"Authorization": "Bearer " + tok, "Content-Type": "application/json"}, "")
		got.want(t, 200, `{"users":[],"next_page":null}`)
	})
}

// The exported credentials are for reading: changing them changes neither
// what the token endpoint accepts nor Config.
func TestCredentialFieldsReadOnly(t *testing.T) {
	c := mtStart(t, managementtest.WithCredentials("id-1", "secret-1"))
	c.srv.ClientID, c.srv.ClientSecret = "id-2", "secret-2"
	token := func(id, secret string) mtResp {
		return c.send("POST", mtPrefix+"/auth/token", map[string]string{"Authorization": mtBasic(id, secret)}, `{"grant_type":"client_credentials"}`)
	}
	if r := token("id-1", "secret-1"); r.status != 200 {
		t.Errorf("the configured credentials: %d %s", r.status, r.body)
	}
	if r := token("id-2", "secret-2"); r.status != 401 {
		t.Errorf("the changed fields' credentials: %d %s, want 401", r.status, r.body)
	}
	if cfg := c.srv.Config(); cfg.ClientID != "id-1" || cfg.ClientSecret != "secret-1" {
		t.Errorf("Config credentials = %q, %q; want id-1, secret-1", cfg.ClientID, cfg.ClientSecret)
	}
}

func TestTokenLifetimeOption(t *testing.T) {
	c := mtStart(t, managementtest.WithTokenLifetime(90*time.Second+500*time.Millisecond))
	r := c.send("POST", mtPrefix+"/auth/token",
		map[string]string{"Authorization": mtBasic(c.srv.ClientID, c.srv.ClientSecret)}, `{"grant_type":"client_credentials"}`)
	if got := mtField(t, r.json(t), "expires_in"); got != 90.0 {
		t.Errorf("expires_in = %v, want 90 (whole seconds)", got)
	}
}

func TestEndpointsRequireManagementToken(t *testing.T) {
	c := mtStart(t)
	c.srv.AddUser(management.UserDetails{User: management.User{ID: "u-1"}})
	c.srv.AddThing(management.ThingDetails{Thing: management.Thing{PhysicalID: "t-1"}})
	requests := []struct{ method, path, body string }{
		{"GET", "/users", ""},
		{"GET", "/users/u-1", ""},
		{"POST", "/users/u-1/associated_things", `{"physical_id":"t-1","model":"m","firmware_version":"1"}`},
		{"DELETE", "/users/u-1/associated_things/t-1", ""},
		{"GET", "/things", ""},
		{"GET", "/things/t-1", ""},
		{"PATCH", "/things/t-1", `{"name":"x"}`},
		{"POST", "/authenticate", `{"access_token":"Bearer x"}`},
	}
	live := c.newToken()
	for _, rq := range requests {
		for _, auth := range []string{"", "Bearer", "Bearer ", "Bearer unknown-token", "Basic " + live, live, mtBasic(c.srv.ClientID, c.srv.ClientSecret)} {
			t.Run(rq.method+" "+rq.path+" "+auth, func(t *testing.T) {
				h := map[string]string{"Content-Type": "application/json"}
				if auth != "" {
					h["Authorization"] = auth
				}
				c.send(rq.method, mtPrefix+rq.path, h, rq.body).wantError(t, 401, "AUTH.UNAUTHORIZED", "")
			})
		}
	}
	// The scheme is case-insensitive (RFC 7235).
	r := c.send("GET", mtPrefix+"/users/u-1", map[string]string{"Authorization": "bearer " + live, "Content-Type": "application/json"}, "")
	if r.status != 200 {
		t.Errorf("lower-case bearer: status %d, want 200", r.status)
	}
}

// Every endpoint but the token one requires Content-Type application/json,
// as the spec says, bodiless GET and DELETE included; a refused request
// changes nothing.
func TestEndpointsRequireJSONContentType(t *testing.T) {
	c := mtStart(t)
	c.srv.AddUser(management.UserDetails{User: management.User{ID: "u-1"}})
	c.srv.AddThing(management.ThingDetails{
		Thing:           management.Thing{PhysicalID: "t-1", Name: "old"},
		AssociatedUsers: []management.AssociatedUser{{ID: "u-1"}},
	})
	c.token = c.newToken()
	requests := []struct{ method, path, body string }{
		{"GET", "/users", ""},
		{"GET", "/users/u-1", ""},
		{"POST", "/users/u-1/associated_things", `{"physical_id":"t-2","model":"m","firmware_version":"1"}`},
		{"DELETE", "/users/u-1/associated_things/t-1", ""},
		{"GET", "/things", ""},
		{"GET", "/things/t-1", ""},
		{"PATCH", "/things/t-1", `{"name":"x"}`},
		{"POST", "/authenticate", `{"access_token":"Bearer x"}`},
	}
	for _, rq := range requests {
		for _, ct := range []string{"", "text/plain", "application/jsonx"} {
			t.Run(rq.method+" "+rq.path+" "+ct, func(t *testing.T) {
				h := map[string]string{"Authorization": "Bearer " + c.token}
				if ct != "" {
					h["Content-Type"] = ct
				}
				c.send(rq.method, mtPrefix+rq.path, h, rq.body).
					wantError(t, 400, "COMMON.REQUEST_VALIDATION", "Content-Type must be application/json")
			})
		}
	}
	if _, ok := c.srv.Thing("t-2"); ok {
		t.Error("a refused associate created a Thing")
	}
	if th, _ := c.srv.Thing("t-1"); th.Name != "old" || len(th.AssociatedUsers) != 1 {
		t.Errorf("a refused update or disassociate changed the Thing: %+v", th)
	}
}

func TestTokenExpiresAfterLifetime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := mtMemory(t, managementtest.WithTokenLifetime(10*time.Second))
		tok := c.newToken()
		get := func() mtResp {
			return c.send("GET", mtPrefix+"/users", map[string]string{"Authorization": "Bearer " + tok, "Content-Type": "application/json"}, "")
		}
		time.Sleep(10*time.Second - time.Millisecond)
		if r := get(); r.status != 200 {
			t.Fatalf("just before expiry: status %d, want 200", r.status)
		}
		time.Sleep(time.Millisecond)
		get().wantError(t, 401, "AUTH.UNAUTHORIZED", "")
		// A new token works again.
		c.token = ""
		if r := c.api("GET", "/users", ""); r.status != 200 {
			t.Fatalf("new token: status %d", r.status)
		}
	})
}

func TestExpireTokens(t *testing.T) {
	c := mtStart(t)
	if r := c.api("GET", "/users", ""); r.status != 200 {
		t.Fatalf("status %d", r.status)
	}
	c.srv.ExpireTokens()
	c.api("GET", "/users", "").wantError(t, 401, "AUTH.UNAUTHORIZED", "")
	c.token = ""
	if r := c.api("GET", "/users", ""); r.status != 200 {
		t.Fatalf("after a new token: status %d", r.status)
	}
}

// The SDK's client recovers from ExpireTokens by fetching a new token.
func TestExpireTokensClientRecovers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := managementtest.NewInMemoryServer()
		srv.AddUser(management.UserDetails{User: management.User{ID: "u-1"}})
		ctx := context.Background()
		auth, err := srv.Client().Authenticate(ctx, "Bearer "+srv.IssueEndUserToken("u-1"))
		if err != nil || !auth.Valid {
			t.Fatalf("Authenticate = %+v, %v", auth, err)
		}
		srv.ExpireTokens()
		if _, err := srv.Client().Authenticate(ctx, "Bearer "+srv.IssueEndUserToken("u-1")); err != nil {
			t.Fatalf("after ExpireTokens: %v", err)
		}
		if got := srv.Requests(managementtest.RouteToken); got != 2 {
			t.Errorf("token requests = %d, want 2", got)
		}
		if got := srv.Requests(managementtest.RouteAuthenticate); got != 3 {
			t.Errorf("authenticate requests = %d, want 3 (one refused, replayed)", got)
		}
	})
}

func TestUnknownRoutes(t *testing.T) {
	c := mtStart(t)
	c.api("GET", "/nothing", "").wantError(t, http.StatusNotFound, "MANAGEMENTTEST.NO_SUCH_ENDPOINT", "no endpoint at "+mtPrefix+"/nothing")
	c.follow("GET", "/v1/users", "").wantError(t, http.StatusNotFound, "MANAGEMENTTEST.NO_SUCH_ENDPOINT", "no endpoint at /v1/users")
	c.api("DELETE", "/things/t-1", "").wantError(t, http.StatusMethodNotAllowed, "MANAGEMENTTEST.METHOD_NOT_ALLOWED",
		"method DELETE is not allowed at "+mtPrefix+"/things/t-1")
	c.api("GET", "/users//associated_things", "").wantError(t, http.StatusNotFound, "MANAGEMENTTEST.NO_SUCH_ENDPOINT",
		"no endpoint at "+mtPrefix+"/users//associated_things")
}
