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
