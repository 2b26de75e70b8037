package management

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/serviceconnect/management/internal/errtext"
)

// Reasons the service sends in the reason field of its error bodies.
const (
	ReasonUnauthorized      = "AUTH.UNAUTHORIZED"
	ReasonRequestValidation = "COMMON.REQUEST_VALIDATION"
	ReasonEntityNotFound    = "COMMON.ENTITY_NOT_FOUND"
)

// Sentinel errors. Test for them with errors.Is; the typed errors below
// answer for the sentinel their status, reason or code stands for.
var (
	// ErrUnauthorized: the service refused the management token (401
	// AUTH.UNAUTHORIZED), even after one fresh token.
	ErrUnauthorized = errors.New("management: unauthorized")
	// ErrNotFound: the User or Thing does not exist (404 COMMON.ENTITY_NOT_FOUND).
	ErrNotFound = errors.New("management: not found")
	// ErrValidation: the service refused the request's parameters (400
	// COMMON.REQUEST_VALIDATION).
	ErrValidation = errors.New("management: request validation failed")
	// ErrInvalidClient: the token endpoint refused the client id or secret.
	ErrInvalidClient = errors.New("management: invalid client credentials")
	// ErrUnsupportedGrantType: the token endpoint refused the grant type.
	ErrUnsupportedGrantType = errors.New("management: unsupported grant type")
	// ErrRateLimited: the service (or its token endpoint) still answered
	// 429 after the retries.
	ErrRateLimited = errors.New("management: rate limited")
	// ErrInvalidArgument: an argument was refused before any request was sent.
	ErrInvalidArgument = errors.New("management: invalid argument")
	// ErrInvalidPageLink: a next_page link was not a path on the base URL,
	// or was seen twice in one run; it was not followed.
	ErrInvalidPageLink = errors.New("management: invalid next_page link")
	// ErrResponseTooLarge: a response body was larger than Config.MaxResponseBytes.
	ErrResponseTooLarge = errors.New("management: response body too large")
	// ErrMisconfigured: the answer says the client is not talking to the
	// API where Config says it is: a redirect (an *APIError with a 3xx
	// status; redirects are never followed), or an answer of the token
	// endpoint without the OAuth 2.0 error shape, such as a 404 or an HTML
	// page (a *TokenError with an empty Code). Check Config.BaseURL and
	// Config.PathPrefix.
	ErrMisconfigured = errors.New("management: misconfigured: check Config.BaseURL and Config.PathPrefix")
)

// maxErrorBody bounds the raw body kept in APIError.Body.
const maxErrorBody = 1024

// APIError is a non-2xx answer of the service: the {reason, error_message}
// shape of the management endpoints, or any answer without a recognised shape
// (an HTML page from a proxy, an empty body), in which case Reason is empty
// and Body holds the start of the raw body.
//
// A redirect (3xx) is never followed: it is an APIError whose Message names
// where it pointed, by path only (never the host or query), saying when
// that is another origin; its Body is empty. It matches ErrMisconfigured.
type APIError struct {
	StatusCode int
	Reason     string // "AUTH.UNAUTHORIZED", ...; "" when the body had no recognised shape
	Message    string
	Method     string
	Path       string // below the path prefix, escaped, without the query string; a next_page link's path redacted
	// Body is the start of the raw body when it was not the documented
	// shape: its first 1 KiB (the body up to 4 KiB redacted whole, then
	// cut; a body that ended early is redacted as cut).
	Body []byte
	// BodyLength is the length of a body that was not kept because the
	// route's answers can carry credentials (the token and authenticate
	// routes), as far as it was read; 0 otherwise.
	BodyLength int64

	// Header holds the answer's headers, without Set-Cookie and any other
	// that can carry a credential by name, each value redacted of the
	// credentials the request carried, URLs without their query; in the
	// order of their names, 16 KiB of values in all, each at most 4 KiB.
	Header http.Header
	// RequestID is the answer's request id: the first value of
	// X-Request-Id, Request-Id, X-Correlation-Id, X-Amzn-Requestid,
	// X-Amz-Request-Id and X-Trace-Id, in that order, of at most 128 bytes
	// of [A-Za-z0-9._:/+=-] (one of another shape is passed over); "" for
	// none. Quote it to support.
	RequestID string
	// RetryAfter is the wait the answer's Retry-After asked for, 0 when
	// none.
	RetryAfter time.Duration
}

// Error names the operation, the status and the service's reason and message,
// for example "management: GET /users/u-1: 404 COMMON.ENTITY_NOT_FOUND: User u-1 was not found".
// Control characters of the service's texts are escaped, so that the text
// is one line whatever the service sent.
func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString("management: ")
	b.WriteString(e.Method)
	b.WriteByte(' ')
	b.WriteString(e.Path)
	b.WriteString(": ")
	b.WriteString(strconv.Itoa(e.StatusCode))
	switch {
	case e.Reason != "":
		b.WriteByte(' ')
		b.WriteString(escape(e.Reason))
	case http.StatusText(e.StatusCode) != "":
		b.WriteByte(' ')
		b.WriteString(http.StatusText(e.StatusCode))
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(escape(e.Message))
	}
	writeWithheld(&b, e.Body, e.BodyLength, e.Header.Get("Content-Type"))
	writeRequestID(&b, e.RequestID)
	return b.String()
}

// Is reports whether e stands for target: ErrUnauthorized, ErrNotFound and
// ErrValidation by reason (or by status when the body had no reason),
// ErrRateLimited by status 429, and ErrMisconfigured by a 3xx status.
func (e *APIError) Is(target error) bool {
	switch target {
	case ErrMisconfigured:
		return isRedirect(e.StatusCode)
	case ErrUnauthorized:
		return e.hasReason(ReasonUnauthorized, http.StatusUnauthorized)
	case ErrNotFound:
		return e.hasReason(ReasonEntityNotFound, http.StatusNotFound)
	case ErrValidation:
		return e.hasReason(ReasonRequestValidation, http.StatusBadRequest)
	case ErrRateLimited:
		return e.StatusCode == http.StatusTooManyRequests
	}
	return false
}

func (e *APIError) hasReason(reason string, status int) bool {
	if e.Reason == "" {
		return e.StatusCode == status
	}
	return strings.EqualFold(e.Reason, reason)
}

// TokenError is a failure of the token endpoint in its OAuth 2.0 shape,
// {error, error_description}, with its status, code ("invalid_client",
// "temporarily_unavailable", ...) and Retry-After as sent; a 429 matches
// ErrRateLimited, as an *APIError does. With an empty Code, it is an
// answer of the token request without that shape (a 404, an HTML page,
// ...; but a 429 or 5xx without it, more likely an outage, is an
// *APIError, and a redirect too). Such an answer is not the token
// endpoint's: the request went to the wrong place, so it matches
// ErrMisconfigured, never ErrNotFound or ErrUnauthorized. Its body is
// never kept: token answers can carry credentials. A 5xx or 429, in
// either shape, is an outage for Authenticator.StaleIfError and its
// breaker, not an answer.
type TokenError struct {
	StatusCode  int
	Code        string // "invalid_client", "unsupported_grant_type", ...; "" without the OAuth 2.0 shape
	Description string
	// BodyLength is the length of the body, which is never kept, as far
	// as it was read, when the answer had no OAuth 2.0 shape; 0 otherwise.
	BodyLength int64

	// Header, RequestID and RetryAfter describe the answer as on APIError.
	Header     http.Header
	RequestID  string
	RetryAfter time.Duration
}

// Error names the token request, the status, the code and the description,
// or, without a code, what to check.
func (e *TokenError) Error() string {
	var b strings.Builder
	b.WriteString("management: POST /auth/token: ")
	b.WriteString(strconv.Itoa(e.StatusCode))
	switch {
	case e.Code != "":
		b.WriteString(" " + escape(e.Code))
	case http.StatusText(e.StatusCode) != "":
		b.WriteString(" " + http.StatusText(e.StatusCode))
	}
	switch {
	case e.Description != "":
		b.WriteString(": " + escape(e.Description))
	case e.Code == "":
		b.WriteString(": not an answer of the token endpoint; check Config.BaseURL and Config.PathPrefix")
	}
	writeWithheld(&b, nil, e.BodyLength, e.Header.Get("Content-Type"))
	writeRequestID(&b, e.RequestID)
	return b.String()
}

// writeRequestID ends an error's text with the answer's request id, if any.
func writeRequestID(b *strings.Builder, id string) {
	if id != "" {
		b.WriteString(" (request id ")
		b.WriteString(escape(id))
		b.WriteByte(')')
	}
}

// writeWithheld says that a body of n bytes and the given Content-Type was
// not kept, when body is nil and n is not 0.
func writeWithheld(b *strings.Builder, body []byte, n int64, contentType string) {
	if body != nil || n <= 0 {
		return
	}
	media, _, _ := strings.Cut(contentType, ";")
	media = strings.TrimSpace(media)
	if media == "" {
		media = "no Content-Type"
	}
	fmt.Fprintf(b, "; body withheld (%s, %d bytes)", escape(truncate(media, maxContentType)), n)
}

// Is reports whether e stands for target: ErrInvalidClient or
// ErrUnsupportedGrantType by code, ErrRateLimited by status 429,
// ErrMisconfigured without a code.
func (e *TokenError) Is(target error) bool {
	switch target {
	case ErrInvalidClient:
		return e.Code == "invalid_client"
	case ErrUnsupportedGrantType:
		return e.Code == "unsupported_grant_type"
	case ErrRateLimited:
		return e.StatusCode == http.StatusTooManyRequests
	case ErrMisconfigured:
		return e.Code == ""
	}
	return false
}

// DecodeError reports a 2xx answer whose body could not be read or decoded:
// not JSON, truncated, of the wrong shape or with values the API does not
// allow, or larger than Config.MaxResponseBytes (then it wraps
// ErrResponseTooLarge). A body the network cut short (its read failed, as
// with io.ErrUnexpectedEOF or a reset connection) wraps the read's error,
// and is no answer for Authenticator.StaleIfError and its breaker: an
// outage, as a transport error is; a complete body that is not the
// documented JSON is an answer.
type DecodeError struct {
	Method     string
	Path       string // below the path prefix, escaped, without the query string; a next_page link's path redacted
	StatusCode int
	// ContentType is the answer's Content-Type header, redacted, its first
	// 128 bytes.
	ContentType string
	// Body is the start of the body, at most 256 bytes, as far as the
	// decoder read it: its first 512 bytes redacted whole (as a cut text
	// unless they are the whole body), then cut, a credential the cut
	// splits redacted, not cut (the mark that stands for it is kept
	// whole). It is nil for the token and authenticate endpoints, whose
	// answers can carry tokens: BodyLength then says how long it was.
	Body       []byte
	BodyLength int64
	Err        error
}

// Error names the operation, the status, the content type and the cause,
// then quotes the start of the body, for example
// `management: GET /users/u-1: 200 response (Content-Type "text/html"): invalid character '<' looking for beginning of value; body starts "<html>"; check Config.BaseURL and Config.PathPrefix`,
// or says that it was withheld, for example `body withheld (text/html, 1234 bytes)`.
func (e *DecodeError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "management: %s %s: %d response", e.Method, e.Path, e.StatusCode)
	if e.ContentType != "" {
		fmt.Fprintf(&b, " (Content-Type %q)", truncate(e.ContentType, maxContentType))
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ": %s", escape(errtext.Unprefixed(e.Err).Error()))
	}
	if len(e.Body) > 0 {
		fmt.Fprintf(&b, "; body starts %q", cutKeepingMark(string(e.Body), maxDecodeErrorBody))
	}
	writeWithheld(&b, e.Body, e.BodyLength, e.ContentType)
	if e.elsewhere() {
		b.WriteString("; check Config.BaseURL and Config.PathPrefix")
	}
	return b.String()
}

// Unwrap returns the decoding or reading error.
func (e *DecodeError) Unwrap() error { return e.Err }

// Is reports whether e stands for ErrMisconfigured: an answer that no
// route of the API gives, as a website or a proxy answers at a wrong
// Config.BaseURL (see elsewhere).
func (e *DecodeError) Is(target error) bool { return target == ErrMisconfigured && e.elsewhere() }

// elsewhere reports whether the answer came from something other than the
// API: an HTML page, by its Content-Type or, whatever the label, by the
// start of its body; or, on the routes whose bodies are withheld (the
// token and authenticate endpoints), a body that was not JSON at all.
func (e *DecodeError) elsewhere() bool {
	media, _, _ := strings.Cut(e.ContentType, ";")
	switch strings.ToLower(strings.TrimSpace(media)) {
	case "text/html", "application/xhtml+xml":
		return true
	}
	body := strings.ToLower(strings.TrimSpace(string(e.Body)))
	return strings.HasPrefix(body, "<!") || strings.HasPrefix(body, "<html") || errors.Is(e.Err, errNotJSON)
}

// TransportError reports a request that got no usable HTTP answer: the
// connection failed on every attempt, or the context ended. Err never holds
// the request URL, so no query string reaches a log through it: net/http's
// *url.Error, which prints it, is unwrapped, and so is every *url.Error
// that a Config.HTTPClient's RoundTripper wrapped in errors of its own
// (their texts say the same without the URL; errors.Is and errors.As reach
// their causes, never a *url.Error).
type TransportError struct {
	Method   string
	Path     string // below the path prefix, escaped, without the query string; a next_page link's path redacted
	Attempts int
	Err      error
}

// Error names the operation, the number of attempts and the cause.
func (e *TransportError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "management: %s %s: ", e.Method, e.Path)
	if e.Attempts == 0 {
		b.WriteString("not sent")
	} else {
		fmt.Fprintf(&b, "no answer after %d attempt(s)", e.Attempts)
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ": %s", escape(errtext.Unprefixed(e.Err).Error()))
	}
	return b.String()
}

// Unwrap returns the cause, for errors.Is(err, context.DeadlineExceeded) and the like.
func (e *TransportError) Unwrap() error { return e.Err }

// Refusals of Authenticator, the error passed to Authenticator.ErrorHandler
// and returned by Authenticator.Check; when each is returned, and the answer
// written for it, is the table on Authenticator. Test for them with
// errors.Is, and for *InvalidTokenError with errors.As.
var (
	// ErrMissingToken: no Authorization header, or a blank one.
	ErrMissingToken = errors.New("management: missing End User access token")
	// ErrInvalidToken: the token is invalid; *InvalidTokenError matches it.
	ErrInvalidToken = errors.New("management: invalid End User access token")
	// ErrForbiddenRole: the token is valid, of a role other than RoleAppUser.
	ErrForbiddenRole = errors.New("management: End User access token of a role that is not allowed")
	// ErrAuthenticationUnavailable: no verdict could be had on the token.
	ErrAuthenticationUnavailable = errors.New("management: End User token check unavailable")
	// ErrTooManyChecks: Authenticator.MaxConcurrentChecks calls were in
	// flight. It matches ErrAuthenticationUnavailable.
	ErrTooManyChecks = errorf("%w: too many checks in flight", ErrAuthenticationUnavailable)
	// ErrOverMissBudget: Authenticator.MissBudget was spent. It matches
	// ErrAuthenticationUnavailable.
	ErrOverMissBudget = errorf("%w: over the budget of checks that reach the service", ErrAuthenticationUnavailable)
)

// InvalidTokenError is the refusal of an End User token the service said is
// invalid. It matches ErrInvalidToken.
type InvalidTokenError struct {
	// Response is the answer to relay: the service's to_client_response,
	// with HTTPCode 401 when the service's was not a 4xx, or a default 401
	// answer when the service sent none. Never nil when made by Authenticator.
	Response *ClientResponse
}

// Error names the status and reason to relay; never the token, nor the
// service's message (which could quote it).
func (e *InvalidTokenError) Error() string {
	if e.Response == nil {
		return ErrInvalidToken.Error()
	}
	return fmt.Sprintf("%s: %d %s", ErrInvalidToken.Error(), e.Response.HTTPCode, escape(e.Response.HTTPBody.Reason))
}

// Is reports whether target is ErrInvalidToken.
func (e *InvalidTokenError) Is(target error) bool { return target == ErrInvalidToken }

// AuthenticationUnavailableError is the refusal of a check that got no
// verdict while the Authenticator does not call the service: after 3
// calls in a row got no answer, its breaker holds the calls for a
// cool-down (see BreakerAuthenticate). It matches
// ErrAuthenticationUnavailable. The default ErrorHandler answers 503 with
// RetryAfter as Retry-After, in seconds rounded up; package grpcauth
// relays it as a RetryInfo. Not every refusal matching
// ErrAuthenticationUnavailable is one: a check whose own call failed
// while the breaker was closed gets the call's error, with no time to
// retry after, as before the breaker.
type AuthenticationUnavailableError struct {
	// RetryAfter is when the Authenticator asks the service again: the
	// rest of the cool-down, at least 1s (while the probe of a cool-down
	// that is over runs).
	RetryAfter time.Duration
	// Err is why the check got no verdict: the failure of its own call,
	// or, for a check that made none, that the calls are held.
	Err error
}

// Error says that no verdict could be had, why, and when to try again;
// never the token.
func (e *AuthenticationUnavailableError) Error() string {
	var b strings.Builder
	b.WriteString(ErrAuthenticationUnavailable.Error())
	if e.Err != nil {
		cause := errtext.Unprefixed(e.Err).Error()
		cause = strings.TrimPrefix(cause, strings.TrimPrefix(ErrAuthenticationUnavailable.Error(), errtext.Prefix)+": ")
		b.WriteString(": ")
		b.WriteString(escape(cause))
	}
	fmt.Fprintf(&b, "; retry after %v", e.RetryAfter.Round(time.Millisecond))
	return b.String()
}

// Is reports whether target is ErrAuthenticationUnavailable.
func (e *AuthenticationUnavailableError) Is(target error) bool {
	return target == ErrAuthenticationUnavailable
}

// Unwrap returns Err.
func (e *AuthenticationUnavailableError) Unwrap() error { return e.Err }

// errorf is fmt.Errorf for the errors of this package: its text starts
// with "management: " said once, and the errors among args lose theirs
// (errtext.Errorf, which the command-line tool shares).
func errorf(format string, args ...any) error { return errtext.Errorf(format, args...) }
