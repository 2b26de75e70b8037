package managementtest_test

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

const mtInvalidVerdict = `{"is_token_valid":false,"user_id":null,"user_role":null,"to_client_response":{
	"http_code":401,"http_body":{"error_code":401,"reason":"auth.unauthorized","error_message":"The access token is invalid or has expired"}}}`

func TestAuthenticate(t *testing.T) {
	c := mtStart(t, managementtest.WithCredentials("client-7", "s"))
	c.srv.AddUser(management.UserDetails{User: management.User{ID: "u-1"}})
	eu := c.srv.IssueEndUserToken("u-1")
	other := c.srv.IssueEndUserToken("u-1")
	if eu == other || eu == "" {
		t.Fatalf("tokens %q and %q: want distinct, non-empty", eu, other)
	}
	authBody := func(v string) string { return `{"access_token":` + strconv.Quote(v) + `}` }

	c.api("POST", "/authenticate", authBody("Bearer "+eu)).
		want(t, 200, `{"is_token_valid":true,"user_id":"u-1","user_role":"APPUSER","to_client_response":null}`)
	c.api("POST", "/authenticate", authBody("bearer "+eu)).
		want(t, 200, `{"is_token_valid":true,"user_id":"u-1","user_role":"APPUSER","to_client_response":null}`)
	mgmt := c.newToken()
	c.api("POST", "/authenticate", authBody("Bearer "+mgmt)).
		want(t, 200, `{"is_token_valid":true,"user_id":"client-7","user_role":"SERVICE_ACCOUNT","to_client_response":null}`)

	for _, bad := range []string{eu, "Basic " + eu, "Bearer " + eu + "x", "Bearer", "Bearer ", "Bearer unknown", "Token " + eu, " Bearer " + eu} {
		t.Run(fmt.Sprintf("%q", bad), func(t *testing.T) {
			c.api("POST", "/authenticate", authBody(bad)).want(t, 200, mtInvalidVerdict)
		})
	}

	// Revoked End User tokens and expired management tokens are invalid.
	c.srv.RevokeEndUserToken(eu)
	c.api("POST", "/authenticate", authBody("Bearer "+eu)).want(t, 200, mtInvalidVerdict)
	c.api("POST", "/authenticate", authBody("Bearer "+other)).
		want(t, 200, `{"is_token_valid":true,"user_id":"u-1","user_role":"APPUSER","to_client_response":null}`)
	c.srv.ExpireTokens()
	c.token = ""
	c.api("POST", "/authenticate", authBody("Bearer "+mgmt)).want(t, 200, mtInvalidVerdict)
}

func TestAuthenticateWithoutAccessToken(t *testing.T) {
	c := mtStart(t)
	const msg = "An access token to authenticate must be provided in the body"
	for _, body := range []string{`{}`, `{"access_token":null}`, `{"access_token":""}`, `{"access_token":5}`, `{"token":"Bearer x"}`, `nope`, ``} {
		c.api("POST", "/authenticate", body).wantError(t, 400, "COMMON.REQUEST_VALIDATION", msg)
	}
}
