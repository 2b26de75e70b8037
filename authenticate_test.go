package management

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jarcoal/httpmock"
)

const authnEndpoint = mockPrefix + "/authenticate"

// authnValid is the service's answer for a valid token of user and role.
func authnValid(user string, role Role) map[string]any {
	return map[string]any{"is_token_valid": true, "user_id": user, "user_role": string(role), "to_client_response": nil}
}

// authnInvalid is the service's answer for an invalid token, as the spec shows it.
func authnInvalid() map[string]any {
	return map[string]any{
		"is_token_valid": false, "user_id": nil, "user_role": nil,
		"to_client_response": map[string]any{
			"http_code": 401,
			"http_body": map[string]any{"error_code": 401, "reason": "auth.unauthorized", "error_message": "Invalid access token"},
		},
	}
}

func TestAuthenticateRequest(t *testing.T) {
	c, mt := setup(t)
	mt.RegisterResponder(http.MethodPost, authnEndpoint, func(r *http.Request) (*http.Response, error) {
		testMethod(t, r, "POST")
		testQuery(t, r, "")
		testAPIHeaders(t, r) // the management token, not the End User's
		testJSONBody(t, r, `{"access_token": "Bearer eu-123456"}`)
		return jsonResponder(http.StatusOK, authnValid("u-1", RoleAppUser))(r)
	})

	got, err := c.Authenticate(context.Background(), "Bearer eu-123456")
	if err != nil {
		t.Fatalf("Authenticate: %v", err)
	}
	want := &EndUserAuthentication{Valid: true, UserID: "u-1", Role: RoleAppUser}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Authenticate (-want +got):\n%s", diff)
	}
	testCalls(t, mt, map[string]int{"POST " + tokenURL: 1, "POST " + authnEndpoint: 1})
}

func TestAuthenticateAnswers(t *testing.T) {
	clientResponse := &ClientResponse{HTTPCode: 401, HTTPBody: ClientErrorBody{
		ErrorCode: 401, Reason: "auth.unauthorized", ErrorMessage: "Invalid access token",
	}}
	tests := []struct {
		name   string
		answer any
		want   *EndUserAuthentication
	}{
		{"valid APPUSER", authnValid("u-1", RoleAppUser),
			&EndUserAuthentication{Valid: true, UserID: "u-1", Role: RoleAppUser}},
		{"valid SERVICE_ACCOUNT", authnValid("sa-1", RoleServiceAccount),
			&EndUserAuthentication{Valid: true, UserID: "sa-1", Role: RoleServiceAccount}},
		{"valid SERVICE_ACCOUNT without user_id",
			map[string]any{"is_token_valid": true, "user_id": nil, "user_role": "SERVICE_ACCOUNT"},
			&EndUserAuthentication{Valid: true, Role: RoleServiceAccount}},
		{"invalid", authnInvalid(),
			&EndUserAuthentication{ClientResponse: clientResponse}},
		{"invalid without to_client_response", map[string]any{"is_token_valid": false},
			&EndUserAuthentication{}},
		{"invalid never names a user",
			map[string]any{"is_token_valid": false, "user_id": "u-1", "user_role": "APPUSER"},
			&EndUserAuthentication{}},
		{"valid without role", map[string]any{"is_token_valid": true, "user_id": "u-1"},
			&EndUserAuthentication{Valid: true, UserID: "u-1"}},
		{"valid drops to_client_response",
			map[string]any{"is_token_valid": true, "user_id": "u-1", "user_role": "APPUSER", "to_client_response": authnInvalid()["to_client_response"]},
			&EndUserAuthentication{Valid: true, UserID: "u-1", Role: RoleAppUser}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, mt := setup(t)
			mt.RegisterResponder(http.MethodPost, authnEndpoint, func(r *http.Request) (*http.Response, error) {
				testMethod(t, r, "POST")
				testAPIHeaders(t, r)
				testJSONBody(t, r, `{"access_token": "Bearer eu-123456"}`)
				return jsonResponder(http.StatusOK, tt.answer)(r)
			})
			got, err := c.Authenticate(context.Background(), "Bearer eu-123456")
			if err != nil {
				t.Fatalf("Authenticate: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Authenticate (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAuthenticateUntrustedAnswers(t *testing.T) {
	for name, body := range map[string]string{
		"no is_token_valid":       `{"user_id":"u-1","user_role":"APPUSER"}`,
		"null":                    `null`,
		"valid without user_id":   `{"is_token_valid":true,"user_id":null,"user_role":"APPUSER"}`,
		"valid with empty userid": `{"is_token_valid":true,"user_id":"","user_role":"APPUSER"}`,
		"valid without any name":  `{"is_token_valid":true,"user_id":null,"user_role":null}`,
		"not JSON":                `<html>`,
		"wrong type":              `{"is_token_valid":"yes"}`,
	} {
		t.Run(name, func(t *testing.T) {
			c, mt := setup(t)
			mt.RegisterResponder(http.MethodPost, authnEndpoint, func(r *http.Request) (*http.Response, error) {
				testMethod(t, r, "POST")
				testAPIHeaders(t, r)
				testJSONBody(t, r, `{"access_token": "Bearer eu-123456"}`)
				return rawResponder(http.StatusOK, "application/json", body)(r)
			})
			got, err := c.Authenticate(context.Background(), "Bearer eu-123456")
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("Authenticate = %+v, %v; want a *DecodeError", got, err)
			}
			if de.Method != http.MethodPost || de.Path != "/authenticate" || de.StatusCode != http.StatusOK {
				t.Errorf("DecodeError = %s %s %d, want POST /authenticate 200", de.Method, de.Path, de.StatusCode)
			}
		})
	}
}

func TestAuthenticateBadTokenSendsNothing(t *testing.T) {
	for _, tok := range []string{"", "   ", "\t\n", "Bearer eu-\xff"} {
		c, mt := setup(t)
		got, err := c.Authenticate(context.Background(), tok)
		if !errors.Is(err, ErrInvalidArgument) || got != nil {
			t.Errorf("Authenticate(%q) = %v, %v; want ErrInvalidArgument", tok, got, err)
		}
		testCalls(t, mt, nil)
	}
}

// TestAuthenticateMalformedSendsNothing: a value that is not "<type>
// <token>", as the spec has the authenticate endpoint take it, is refused
// before anything is sent, with what the value must look like; the error
// never quotes the value.
func TestAuthenticateMalformedSendsNothing(t *testing.T) {
	const want = `management: invalid argument: the End User access token must be "<type> <token>", such as "Bearer eu-123": `
	for tok, why := range map[string]string{
		"eu-token-1234":      "it has no space between a type and a token",
		"Bearer":             "it has no space between a type and a token",
		"Bearer\teu-token-1": "it has no space between a type and a token",
		"Bearer ":            "nothing follows its type",
		"Bearer   \t":        "nothing follows its type",
		" eu-token-1234":     "its type is empty",
	} {
		c, mt := setup(t)
		got, err := c.Authenticate(context.Background(), tok)
		if !errors.Is(err, ErrInvalidArgument) || got != nil {
			t.Errorf("Authenticate(%q) = %v, %v; want ErrInvalidArgument", tok, got, err)
		} else if err.Error() != want+why {
			t.Errorf("Authenticate(%q): error\n%s\nwant\n%s", tok, err, want+why)
		}
		testCalls(t, mt, nil)
	}
}

func TestAuthenticateServiceErrors(t *testing.T) {
	tests := []struct {
		name      string
		status    int
		body      map[string]any
		sentinel  error
		wantCalls int // a 401 is replayed once, with a fresh management token
	}{
		{"400 no access token", http.StatusBadRequest,
			map[string]any{"reason": ReasonRequestValidation, "error_message": "An access token to authenticate must be provided in the body"},
			ErrValidation, 1},
		{"401 management token refused", http.StatusUnauthorized,
			map[string]any{"reason": ReasonUnauthorized, "error_message": ""},
			ErrUnauthorized, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, mt := setup(t)
			mt.RegisterResponder(http.MethodPost, authnEndpoint, func(r *http.Request) (*http.Response, error) {
				testMethod(t, r, "POST")
				testAPIHeaders(t, r)
				testJSONBody(t, r, `{"access_token": "Bearer eu-123456"}`)
				return jsonResponder(tt.status, tt.body)(r)
			})
			_, err := c.Authenticate(context.Background(), "Bearer eu-123456")
			var ae *APIError
			if !errors.As(err, &ae) || !errors.Is(err, tt.sentinel) {
				t.Fatalf("Authenticate error = %v, want an *APIError matching %v", err, tt.sentinel)
			}
			want := &APIError{StatusCode: tt.status, Reason: tt.body["reason"].(string), Message: tt.body["error_message"].(string),
				Method: http.MethodPost, Path: "/authenticate"}
			if diff := cmp.Diff(want, ae, ignoreAnswerMeta); diff != "" {
				t.Errorf("APIError (-want +got):\n%s", diff)
			}
			testCalls(t, mt, map[string]int{"POST " + tokenURL: tt.wantCalls, "POST " + authnEndpoint: tt.wantCalls})
		})
	}
}

func TestAuthenticateRedactsToken(t *testing.T) {
	const (
		token  = "eu-9f8e/7d6c+5b4a-secret"
		header = "Bearer " + token
	)
	html := rawResponder(http.StatusBadRequest, "text/html", "<p>bad token: "+header+"</p>")
	tests := []struct {
		name   string
		answer httpmock.Responder
		want   *APIError
	}{
		{"message quotes the header", jsonResponder(400, map[string]any{"reason": ReasonRequestValidation, "error_message": header + " is malformed"}),
			&APIError{StatusCode: 400, Reason: ReasonRequestValidation, Message: "REDACTED is malformed"}},
		{"message quotes the token", jsonResponder(401, map[string]any{"reason": ReasonUnauthorized, "error_message": "token " + token + " expired; " + token}),
			&APIError{StatusCode: 401, Reason: ReasonUnauthorized, Message: "token REDACTED expired; REDACTED"}},
		{"reason quotes the token", jsonResponder(400, map[string]any{"reason": token, "error_message": ""}),
			&APIError{StatusCode: 400, Reason: "REDACTED"}},
		// Bodies of the authenticate route are withheld: the text says how
		// long they were, never what they held.
		{"body not JSON", html,
			&APIError{StatusCode: 400, BodyLength: int64(len("<p>bad token: " + header + "</p>"))}},
		{"body JSON-escaped", rawResponder(400, "application/json", `{"detail":"token \"eu-9f8e\/7d6c+5b4a-secret\""}`),
			&APIError{StatusCode: 400, BodyLength: int64(len(`{"detail":"token \"eu-9f8e\/7d6c+5b4a-secret\""}`))}},
		{"body cut inside the token", rawResponder(400, "application/json", strings.Repeat("x", maxErrorBody-14)+header+" is bad"),
			&APIError{StatusCode: 400, BodyLength: int64(maxErrorBody - 14 + len(header) + len(" is bad"))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, mt := setup(t, Config{MaxRetries: -1})
			mt.RegisterResponder(http.MethodPost, authnEndpoint, func(r *http.Request) (*http.Response, error) {
				testMethod(t, r, http.MethodPost)
				testHeader(t, r, "Authorization", "Bearer "+mockToken)
				testBody(t, r, `{"access_token":"`+header+`"}`)
				return tt.answer(r)
			})
			_, err := c.Authenticate(context.Background(), header)
			var ae *APIError
			if !errors.As(err, &ae) {
				t.Fatalf("Authenticate = %v, want an *APIError", err)
			}
			tt.want.Method, tt.want.Path = http.MethodPost, "/authenticate"
			if diff := cmp.Diff(tt.want, ae, ignoreAnswerMeta); diff != "" {
				t.Errorf("APIError (-want +got):\n%s", diff)
			}
			for _, text := range []string{err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err), string(ae.Body)} {
				if strings.Contains(text, token) || strings.Contains(text, "9f8e") {
					t.Errorf("%q holds (part of) the token", text)
				}
			}
		})
	}
}

// The texts of an invalid verdict, relayed to the End User, pass the
// redactor of the attempt that got them: the management token it carried
// is removed as well as the End User's.
func TestAuthenticateVerdictRedactsManagementToken(t *testing.T) {
	c, mt := setup(t, Config{MaxRetries: -1})
	mt.RegisterResponder(http.MethodPost, authnEndpoint, jsonResponder(200, map[string]any{
		"is_token_valid": false,
		"to_client_response": map[string]any{"http_code": 401, "http_body": map[string]any{
			"error_code": 401, "reason": "auth.unauthorized", "error_message": "checked by Bearer " + mockToken,
		}},
	}))
	auth, err := c.Authenticate(context.Background(), "Bearer eu-end-user-token")
	if err != nil {
		t.Fatal(err)
	}
	if got := auth.ClientResponse.HTTPBody.ErrorMessage; strings.Contains(got, mockToken) {
		t.Errorf("the relayed message %q holds the management token", got)
	}
}
