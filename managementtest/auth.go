package managementtest

import (
	"crypto/rand"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/serviceconnect/management"
)

// Messages of the token and authenticate endpoints.
const (
	msgInvalidClient   = "Client authentication failed: invalid or missing Basic credentials"
	msgUnsupportedType = "grant_type must be client_credentials, in a JSON body"
	msgNoAccessToken   = "An access token to authenticate must be provided in the body"
	msgInvalidEndUser  = "The access token is invalid or has expired"
)

// tokenResponse is the token endpoint's AccessTokenResponse.
type tokenResponse struct {
	AccessToken string `json:"access_token"`
	TokenType   string `json:"token_type"`
	ExpiresIn   int64  `json:"expires_in"`
}

// issueToken answers POST /auth/token: Basic credentials first (401
// invalid_client), then the JSON grant (400 unsupported_grant_type).
func (s *service) issueToken(w http.ResponseWriter, r *http.Request) {
	id, secret, ok := r.BasicAuth()
	if !ok || id != s.opts.clientID || secret != s.opts.clientSecret {
		writeJSON(w, http.StatusUnauthorized, tokenError{Error: "invalid_client", ErrorDescription: msgInvalidClient})
		return
	}
	obj, err := readObject(w, r)
	var grant *string
	if err == nil {
		grant, err = optionalString(obj, "grant_type")
	}
	if err != nil || grant == nil || *grant != "client_credentials" {
		writeJSON(w, http.StatusBadRequest, tokenError{Error: "unsupported_grant_type", ErrorDescription: msgUnsupportedType})
		return
	}
	tok := s.opts.mgmtToken
	if tok == "" {
		tok = "mgmt-" + rand.Text()
	}
	now := time.Now()
	s.mu.Lock()
	for t, exp := range s.tokens { // forget expired tokens; they are refused the same way as unknown ones
		if !now.Before(exp) {
			delete(s.tokens, t)
		}
	}
	s.tokens[tok] = now.Add(s.opts.tokenLifetime)
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, tokenResponse{
		AccessToken: tok,
		TokenType:   "Bearer",
		ExpiresIn:   int64(s.opts.tokenLifetime / time.Second),
	})
}

// validManagementToken reports whether an Authorization header carries a
// management token that is issued and not expired.
func (s *service) validManagementToken(header string) bool {
	scheme, tok, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.liveToken(tok)
}

// liveToken reports whether tok is an unexpired management token. s.mu must be held.
func (s *service) liveToken(tok string) bool {
	exp, ok := s.tokens[tok]
	return ok && time.Now().Before(exp)
}

// ExpireTokens makes every management token issued so far expire now: the
// next request carrying one is answered 401 AUTH.UNAUTHORIZED, as the
// service answers an expired token, and a management.Client fetches a new
// token and replays the request.
func (s *service) ExpireTokens() {
	s.mu.Lock()
	clear(s.tokens)
	s.mu.Unlock()
}

// IssueEndUserToken returns a new End User access token of the User with
// the given id, as the application SDK would hold after the User signed
// in: a random one, or the next of WithEndUserTokens. It is the bare
// token: an End User sends it as "Bearer " + token, and that whole string
// is what the authenticate endpoint validates. The token stays valid until
// RevokeEndUserToken. It panics if the User was not added, or when every
// token of WithEndUserTokens was issued.
func (s *service) IssueEndUserToken(userID string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.store.users[userID] == nil {
		panic(fmt.Sprintf("managementtest: IssueEndUserToken(%q): no such User; add it with AddUser first", userID))
	}
	tok := "eu-" + rand.Text()
	if chosen := s.opts.endUserTokens; chosen != nil {
		if s.endUsersIssued == len(chosen) {
			panic(fmt.Sprintf("managementtest: IssueEndUserToken(%q): the %d tokens of WithEndUserTokens were all issued", userID, len(chosen)))
		}
		tok = chosen[s.endUsersIssued]
		s.endUsersIssued++
	}
	s.endUsers[tok] = userID
	return tok
}

// RevokeEndUserToken makes an End User token invalid, as a sign-out or an
// expiry would. It panics if the token was not issued by IssueEndUserToken.
func (s *service) RevokeEndUserToken(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.endUsers[token]; !ok {
		panic("managementtest: RevokeEndUserToken: the token was not issued by IssueEndUserToken")
	}
	delete(s.endUsers, token)
}

// authResponse is the EndUserAuthenticationResponse, with the nulls of the spec.
type authResponse struct {
	IsTokenValid     bool                       `json:"is_token_valid"`
	UserID           *string                    `json:"user_id"`
	UserRole         *management.Role           `json:"user_role"`
	ToClientResponse *management.ClientResponse `json:"to_client_response"`
}

// authenticate answers POST /authenticate. access_token is
// "<type> <token>": "Bearer" and a token from IssueEndUserToken is a valid
// APPUSER; "Bearer" and a live management token is a valid SERVICE_ACCOUNT
// whose user_id is the client id (the spec gives every valid answer a
// user_id, and the client id is whom the token was issued to); anything
// else is invalid, answered 200 with the to_client_response to relay.
func (s *service) authenticate(w http.ResponseWriter, r *http.Request) {
	obj, err := readObject(w, r)
	var at *string
	if err == nil {
		at, err = optionalString(obj, "access_token")
	}
	if err != nil || at == nil || *at == "" {
		validationError(w, msgNoAccessToken)
		return
	}
	s.locked(w, func() answer {
		return answer{status: http.StatusOK, body: s.verdict(*at)}
	})
}

// verdict judges an End User credential. s.mu must be held.
func (s *service) verdict(credential string) authResponse {
	scheme, tok, ok := strings.Cut(credential, " ")
	if ok && strings.EqualFold(scheme, "Bearer") {
		if uid, ok := s.endUsers[tok]; ok {
			role := management.RoleAppUser
			return authResponse{IsTokenValid: true, UserID: &uid, UserRole: &role}
		}
		if s.liveToken(tok) {
			id := s.opts.clientID
			role := management.RoleServiceAccount
			return authResponse{IsTokenValid: true, UserID: &id, UserRole: &role}
		}
	}
	return authResponse{ToClientResponse: &management.ClientResponse{
		HTTPCode: http.StatusUnauthorized,
		HTTPBody: management.ClientErrorBody{
			ErrorCode:    http.StatusUnauthorized,
			Reason:       "auth.unauthorized",
			ErrorMessage: msgInvalidEndUser,
		},
	}}
}
