package management

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"unicode/utf8"
)

// Role is the role of an authenticated token's owner.
type Role string

// The roles the authenticate endpoint reports.
const (
	// RoleAppUser is the role of an End User.
	RoleAppUser Role = "APPUSER"
	// RoleServiceAccount is reported when a management token was presented
	// instead of an End User token.
	RoleServiceAccount Role = "SERVICE_ACCOUNT"
)

// EndUserAuthentication is the service's verdict on an End User access token.
type EndUserAuthentication struct {
	Valid          bool            `json:"is_token_valid"`
	UserID         string          `json:"user_id"`            // "" when invalid
	Role           Role            `json:"user_role"`          // RoleAppUser, RoleServiceAccount; "" when invalid
	ClientResponse *ClientResponse `json:"to_client_response"` // nil when valid
}

// ClientResponse is the answer the service suggests a backend relays to its
// client when an End User token is invalid.
type ClientResponse struct {
	HTTPCode int             `json:"http_code"`
	HTTPBody ClientErrorBody `json:"http_body"`
}

// ClientErrorBody is the body of a ClientResponse.
type ClientErrorBody struct {
	ErrorCode    int    `json:"error_code"`
	Reason       string `json:"reason"` // lower case: "auth.unauthorized"
	ErrorMessage string `json:"error_message"`
}

// authenticateRequest is the authenticate endpoint's request body.
type authenticateRequest struct {
	AccessToken string `json:"access_token"`
}

// authenticateResponse is the authenticate endpoint's answer as sent, with
// pointers so that a missing is_token_valid can be told from false.
type authenticateResponse struct {
	Valid          *bool           `json:"is_token_valid"`
	UserID         *string         `json:"user_id"`
	Role           *string         `json:"user_role"`
	ClientResponse *ClientResponse `json:"to_client_response"`
}

// Authenticate asks the service whether an End User access token is valid,
// and for which User. accessToken is the End User's credential in its wire
// form "<type> <token>" (for example "Bearer eu-123"), exactly what the End
// User sent in its Authorization header; it is sent unchanged. The request
// itself is authorised by the management token.
//
// An invalid token is not an error: the answer has Valid false and, when the
// service sent one, the ClientResponse to relay. An invalid answer never
// names a User (UserID and Role are ""), and a valid one carries no
// ClientResponse. An answer without is_token_valid, or a valid End User one
// without a user_id, is not trusted: it fails with a *DecodeError. A valid
// RoleServiceAccount answer may have an empty UserID. A blank accessToken,
// one that is not valid UTF-8 (JSON cannot carry it unchanged), or one that
// is not "<type> <token>" (a bare token, a type alone, an empty type) fails
// with ErrInvalidArgument before anything is sent, saying what it must look
// like and never quoting it; a 400 or 401 of the service is an *APIError. The service's answers may quote the token: every error
// returned here, and the ClientResponse's texts, have it (the whole value,
// and the token after its type, in the forms an echo takes) replaced by
// "REDACTED", as every error of the Client has the Client's credentials.
func (c *Client) Authenticate(ctx context.Context, accessToken string) (*EndUserAuthentication, error) {
	if c == nil || c.tokens == nil {
		return nil, errNotNewClient
	}
	if strings.TrimSpace(accessToken) == "" {
		return nil, errorf("%w: the End User access token is empty", ErrInvalidArgument)
	}
	if !utf8.ValidString(accessToken) {
		// encoding/json would replace the bad bytes: another token would be checked.
		return nil, errorf("%w: the End User access token is not valid UTF-8", ErrInvalidArgument)
	}
	if why := credentialShape(accessToken); why != "" {
		return nil, errorf("%w: the End User access token must be %q, such as %q: %s", ErrInvalidArgument, "<type> <token>", "Bearer eu-123", why)
	}
	body, err := json.Marshal(authenticateRequest{AccessToken: accessToken})
	if err != nil {
		return nil, errorf("%w: the End User access token cannot be encoded", ErrInvalidArgument)
	}
	req := c.newRequest(http.MethodPost, "/authenticate", "", body).named("/authenticate")
	req.secret = true
	req.credential = accessToken
	var ar authenticateResponse
	status, err := c.do(ctx, req, &ar)
	if err != nil {
		return nil, err
	}
	auth, err := ar.verdict(req, status)
	if err != nil {
		return nil, err
	}
	// The texts of an invalid verdict, and a role that is not one of the
	// service's, come from outside too.
	if auth.ClientResponse != nil || (auth.Role != RoleAppUser && auth.Role != RoleServiceAccount && auth.Role != "") {
		c.redactor(req, req.carried).verdict(auth)
	}
	return auth, nil
}

// credentialShape says why v, a credential as an Authorization header
// carries it, is not "<type> <token>" (the spec's form of the value the
// authenticate endpoint takes), or "" when it is. A space separates the
// two, as in HTTP's credentials; the type and the token are otherwise the
// service's business.
func credentialShape(v string) string {
	scheme, token, ok := strings.Cut(v, " ")
	switch {
	case !ok:
		return "it has no space between a type and a token"
	case scheme == "":
		return "its type is empty"
	case strings.TrimSpace(token) == "":
		return "nothing follows its type"
	}
	return ""
}

// verdict checks the answer's shape and normalises it.
func (ar *authenticateResponse) verdict(req *request, status int) (*EndUserAuthentication, error) {
	bad := func(msg string) error {
		return &DecodeError{Method: req.method, Path: req.path, StatusCode: status, Err: errors.New(msg)}
	}
	if ar.Valid == nil {
		return nil, bad("authenticate response without is_token_valid")
	}
	if !*ar.Valid {
		return &EndUserAuthentication{ClientResponse: ar.ClientResponse}, nil
	}
	auth := &EndUserAuthentication{Valid: true}
	if ar.Role != nil {
		auth.Role = Role(*ar.Role)
	}
	if ar.UserID != nil {
		auth.UserID = *ar.UserID
	}
	// An End User (or an answer without a role) must be named; a
	// SERVICE_ACCOUNT answer may carry no user_id, and is refused by role.
	if auth.UserID == "" && (auth.Role == "" || auth.Role == RoleAppUser) {
		return nil, bad("valid authenticate response without user_id")
	}
	return auth, nil
}
