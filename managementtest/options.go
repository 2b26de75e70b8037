package managementtest

import (
	"fmt"
	"strings"
	"time"

	"golang.org/x/time/rate"
)

// Defaults of a new Server.
const (
	// DefaultPageSize is the number of items per page of a list.
	DefaultPageSize = 100
	// DefaultTokenLifetime is the lifetime of a management token, as the
	// service's example token carries (expires_in 600).
	DefaultTokenLifetime = 600 * time.Second
	// DefaultPathPrefix precedes every path, as in the spec.
	DefaultPathPrefix = "/v2/api/management/service_connect"
	// DefaultUnsetMarker is the custom settings value that removes a key.
	DefaultUnsetMarker = "$ServiceUnset$"
)

// options is what the Options of NewServer set.
type options struct {
	pageSize      int
	tokenLifetime time.Duration
	clientID      string
	clientSecret  string
	pathPrefix    string
	unsetMarker   string
	rateLimit     rate.Limit // 0: none
	rateBurst     int
	mgmtToken     string   // "": random ones
	endUserTokens []string // nil: random ones
}

func defaultOptions() options {
	return options{
		pageSize:      DefaultPageSize,
		tokenLifetime: DefaultTokenLifetime,
		pathPrefix:    DefaultPathPrefix,
		unsetMarker:   DefaultUnsetMarker,
	}
}

// An Option configures a Server. Options panic on values that make no
// sense, as test helpers do.
type Option func(*options)

// WithPageSize sets the number of items per page of the Users and Things
// lists (default DefaultPageSize). It panics if n < 1.
func WithPageSize(n int) Option {
	if n < 1 {
		panic(fmt.Sprintf("managementtest: WithPageSize(%d): the page size must be at least 1", n))
	}
	return func(o *options) { o.pageSize = n }
}

// WithTokenLifetime sets the lifetime of the management tokens the server
// issues (default DefaultTokenLifetime). The lifetime is sent in whole
// seconds in expires_in, so d is rounded down to the second; it panics if d
// is shorter than a second.
func WithTokenLifetime(d time.Duration) Option {
	if d < time.Second {
		panic(fmt.Sprintf("managementtest: WithTokenLifetime(%v): the lifetime must be at least a second (expires_in is in seconds)", d))
	}
	return func(o *options) { o.tokenLifetime = d.Truncate(time.Second) }
}

// WithCredentials sets the client id and secret the token endpoint accepts
// (default: generated at random, see Server.ClientID and Server.ClientSecret).
// It panics if either is empty or the id holds a colon, which Basic
// credentials cannot carry.
func WithCredentials(id, secret string) Option {
	if id == "" || secret == "" {
		panic("managementtest: WithCredentials: the client id and secret must not be empty")
	}
	if strings.Contains(id, ":") {
		panic("managementtest: WithCredentials: the client id must not contain a colon")
	}
	return func(o *options) { o.clientID, o.clientSecret = id, secret }
}

// WithPathPrefix sets the path prefix of every endpoint (default
// DefaultPathPrefix), for a service whose brand-specific segment differs.
// Server.Config sets the same management.Config.PathPrefix. It panics
// unless p starts with "/" and contains no "?" or "#".
func WithPathPrefix(p string) Option {
	if !strings.HasPrefix(p, "/") || strings.ContainsAny(p, "?#") {
		panic(fmt.Sprintf("managementtest: WithPathPrefix(%q): the prefix must be a path starting with /", p))
	}
	return func(o *options) { o.pathPrefix = strings.TrimSuffix(p, "/") }
}

// WithRateLimit makes the server rate-limited, as the service may be: it
// answers perSecond requests a second on average (bursts of up to burst,
// at least 1), across all routes and clients, and any request beyond with
// 429 and a Retry-After of the whole seconds until one more is allowed.
// RateLimited counts those answers. It panics if perSecond is not positive.
func WithRateLimit(perSecond float64, burst int) Option {
	if perSecond <= 0 {
		panic("managementtest: WithRateLimit: perSecond must be positive")
	}
	return func(o *options) { o.rateLimit, o.rateBurst = rate.Limit(perSecond), max(burst, 1) }
}

// WithUnsetMarker sets the custom settings value that removes a key in an
// update (default DefaultUnsetMarker). Server.Config sets the same
// management.Config.UnsetMarker. It panics if m is empty.
func WithUnsetMarker(m string) Option {
	if m == "" {
		panic("managementtest: WithUnsetMarker: the marker must not be empty")
	}
	return func(o *options) { o.unsetMarker = m }
}

// WithManagementToken makes the token endpoint issue tok as every
// management token, instead of a random one ("mgmt-" and 26 random
// characters), so that a test can choose the token the service's answers
// may echo: a short one, as tests of messages and redaction use (the SDK
// redacts a token under 8 bytes only where neither neighbour is a letter or
// a digit, and keeps the rest of the text). tok is live from each token
// request until the token lifetime passes, as a random token is;
// ExpireTokens ends it until the next token request. It panics if tok is
// empty or holds a space or a control character, which an Authorization
// header cannot carry as a token.
func WithManagementToken(tok string) Option {
	if why := tokenProblem(tok); why != "" {
		panic(fmt.Sprintf("managementtest: WithManagementToken(%q): the token %s", tok, why))
	}
	return func(o *options) { o.mgmtToken = tok }
}

// WithEndUserTokens makes IssueEndUserToken return toks, in order, instead
// of random tokens ("eu-" and 26 random characters); once all are issued,
// IssueEndUserToken panics, and Reset starts again from the first. It
// panics if a token is empty, holds a space or a control character, or is
// given twice; NewServer panics if one is also the management token of
// WithManagementToken.
func WithEndUserTokens(toks ...string) Option {
	seen := make(map[string]bool, len(toks))
	for _, tok := range toks {
		if why := tokenProblem(tok); why != "" {
			panic(fmt.Sprintf("managementtest: WithEndUserTokens: the token %q %s", tok, why))
		}
		if seen[tok] {
			panic(fmt.Sprintf("managementtest: WithEndUserTokens: the token %q is given twice", tok))
		}
		seen[tok] = true
	}
	toks = append([]string(nil), toks...)
	return func(o *options) { o.endUserTokens = toks }
}

// tokenProblem says why tok cannot be a token of the fake, "" when it can.
func tokenProblem(tok string) string {
	if tok == "" {
		return "is empty"
	}
	for i := range len(tok) {
		if c := tok[i]; c <= ' ' || c == 0x7f {
			return "holds a space or a control character"
		}
	}
	return ""
}
