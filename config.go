package management

import (
	"cmp"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Version is the SDK's version, sent in the User-Agent header.
const Version = "0.1.0"

// Defaults of the zero values of Config.
const (
	defaultPathPrefix       = "/v2/api/management/service_connect"
	defaultUnsetMarker      = "$ServiceUnset$"
	defaultMaxRetries       = 4
	defaultRetryWaitMin     = 250 * time.Millisecond
	defaultRetryWaitMax     = 15 * time.Second
	defaultMaxResponseBytes = 32 << 20
	maxErrorBodyRead        = 64 << 10 // error bodies are read this far, then dropped
)

// Config configures a Client. BaseURL and either ClientID and ClientSecret
// or TokenSource are required; the zero value of every other field selects a
// documented default.
//
// Config is safe to print and log: String, GoString and LogValue redact the
// client id and secret.
type Config struct {
	// BaseURL is the service's address, "https://host[:port][/path]",
	// without query or fragment. next_page links are appended to it as
	// they stand. http:// is accepted only for a loopback host unless
	// AllowInsecureHTTP is set.
	BaseURL string
	// ClientID identifies the client application. Required unless
	// TokenSource is set; it must not contain ':', which HTTP Basic
	// credentials cannot carry.
	ClientID string
	// ClientSecret is the client application's secret. Required unless
	// TokenSource is set. It is sent only to the token endpoint and never printed.
	ClientSecret string

	// TokenSource, when set, replaces the client-credentials flow: the
	// client asks it for a token before every request. If it has a method
	// Invalidate(*Token), the client calls it when the service refuses a
	// token with 401 and replays the request once with a fresh token.
	TokenSource TokenSource
	// HTTPClient is the client under the retry layer (proxy, TLS, tracing).
	// nil: a client with its own connection pool. Its Timeout, when set,
	// bounds each attempt; the caller's context bounds the whole call. The
	// client follows no redirect, whatever HTTPClient.CheckRedirect says: it
	// uses a copy of HTTPClient with its own CheckRedirect, and leaves
	// HTTPClient as it is.
	HTTPClient *http.Client
	// Logger receives a Debug record per attempt and an Info record per
	// retry decision: method, path without query, status, attempt, wait;
	// and the token refresh failures, stale passes and breakers' Warn and
	// Info records. Never headers, bodies, tokens or secrets. nil: off,
	// the SDK logs nothing (a library does not write to a program's
	// standard error unasked) and all of that goes unseen. Its handler
	// is called from the SDK's own goroutines too (token requests,
	// Authenticator checks, store calls), where a panic of it is recovered
	// and logged, or dropped when it panics again: it never takes the
	// process down, nor keeps a caller waiting past the call's deadline.
	Logger *slog.Logger
	// Observer, when set, is told of every operation, retry and
	// Authenticator check, for tracing and metrics (see Observer and
	// package github.com/serviceconnect/management/otel). nil: nothing is
	// observed.
	Observer *Observer
	// UserAgent is prepended to "management-go/<Version>".
	UserAgent string
	// MaxRetries bounds the retries after the first attempt. 0: 4; negative: never retry.
	MaxRetries int
	// RetryWaitMin is the shortest wait between attempts, Retry-After
	// included. 0: 250ms.
	RetryWaitMin time.Duration
	// RetryWaitMax is the longest wait between attempts, Retry-After
	// included. 0: 15s.
	RetryWaitMax time.Duration
	// RefreshMargin is how long before expiry the token is refreshed.
	// 0: a tenth of the token's lifetime (lifetime/10, as String prints
	// it); negative: no margin. Never more than half the lifetime.
	RefreshMargin time.Duration
	// PathPrefix precedes every path. "": "/v2/api/management/service_connect".
	// BaseURL must not end with it: the client adds it.
	PathPrefix string
	// UnsetMarker is the custom settings value that removes a key.
	// "": "$ServiceUnset$". ThingUpdate's Unset is sent as this value.
	UnsetMarker string
	// AllowInsecureHTTP permits http:// to a host that is not loopback.
	AllowInsecureHTTP bool
	// MaxResponseBytes bounds a response body. 0: 32 MiB. A larger
	// successful body fails with ErrResponseTooLarge.
	MaxResponseBytes int64

	// SharedStore, when set, is shared by the replicas of a service (see
	// package redisstore) so that the fleet fetches one management token
	// per token lifetime: the replica that needs a new one takes a lease,
	// fetches and stores it; the others read it. The token is stored
	// sealed (AES-256-GCM, key derived from ClientSecret or
	// SharedStoreKey). A failing or slow store never fails a call: the
	// Client fetches on its own, leaves the store alone for a cool-down
	// (see SharedStoreTimeout) and logs once when it does and once when it
	// goes back to it. Set Authenticator.SharedStore too to share verdicts
	// on End User tokens.
	SharedStore SharedStore
	// SharedStoreKey is the secret that seals what the SDK stores in a
	// SharedStore (at least 32 bytes); never printed. "": derived from
	// ClientSecret. Required for a shared store when TokenSource replaces
	// the client credentials. Every replica must have the same.
	SharedStoreKey []byte
	// SharedStoreTimeout bounds each operation on the SharedStore (and on
	// Authenticator.SharedStore): past it, the SDK abandons the operation,
	// whatever the store does with its context, and goes on without it.
	// A call or a check waits for the store at most this long in all (or
	// half its time left, if less), however many operations it makes. The
	// Client's breaker judges the store by what each operation did within
	// twice this long of its start, however long its caller waited: an
	// answer, however slow, is no failure; an error, or no answer in that
	// time, is. 3
	// failures in a row (8 answers take one failure off a run rather than
	// end it, so that a store failing on part of its keys counts too) open
	// the breaker: calls and checks go on as without a store for a
	// cool-down of about this long, doubling while the one probe at a time
	// (in the background) fails, up to 30 s (see BreakerSharedStore). A
	// timeout now and then on a loaded host, among answers, leaves the
	// store in use. 0: 200ms, above the 99th percentile of an operation on
	// a busy host (the CPU's delays included): a hung store costs a replica
	// about one SharedStoreTimeout (the operations started in it time out
	// together), not one per call.
	SharedStoreTimeout time.Duration

	// fromEnv is the Config as ConfigFromEnv returned it; nil for one
	// written in code. A refusal names the environment variable of a field
	// that still holds the value read (see Config.named).
	fromEnv *Config
}

// minSharedStoreKey is the shortest Config.SharedStoreKey accepted.
const minSharedStoreKey = 32

// withDefaults returns c as a Client built from it behaves: the zero fields
// that have a default set to it, and a negative MaxRetries (never retry) as 0.
// RefreshMargin is left as is: its default depends on each token's lifetime.
func (c Config) withDefaults() Config {
	switch {
	case c.MaxRetries == 0:
		c.MaxRetries = defaultMaxRetries
	case c.MaxRetries < 0:
		c.MaxRetries = 0
	}
	c.RetryWaitMin = cmp.Or(c.RetryWaitMin, defaultRetryWaitMin)
	c.RetryWaitMax = cmp.Or(c.RetryWaitMax, defaultRetryWaitMax)
	c.PathPrefix = cmp.Or(c.PathPrefix, defaultPathPrefix)
	c.UnsetMarker = cmp.Or(c.UnsetMarker, defaultUnsetMarker)
	c.MaxResponseBytes = cmp.Or(c.MaxResponseBytes, defaultMaxResponseBytes)
	c.SharedStoreTimeout = cmp.Or(c.SharedStoreTimeout, defaultSharedStoreTimeout)
	return c
}

// refreshMarginText describes the effective Config.RefreshMargin.
func refreshMarginText(m time.Duration) string {
	switch {
	case m == 0:
		return "lifetime/10"
	case m < 0:
		return "0s"
	}
	return m.String()
}

// configField is one field of Config as its printers show it, in the one
// list that String, LogValue and MarshalJSON are built from.
type configField struct {
	name  string // as String names it: "BaseURL"
	key   string // as LogValue and MarshalJSON name it: "base_url"
	value any    // a redacted secret, a string, a bool, an int, an int64 or a time.Duration
	quote bool   // String quotes it
}

// fields lists c's fields with the client id and secret redacted and the
// defaults filled in: the values a Client built from c uses.
func (c Config) fields() []configField {
	d := c.withDefaults()
	return []configField{
		{"BaseURL", "base_url", d.BaseURL, true},
		{"ClientID", "client_id", redact(d.ClientID), false},
		{"ClientSecret", "client_secret", redact(d.ClientSecret), false},
		{"TokenSource", "token_source", d.TokenSource != nil, false},
		{"MaxRetries", "max_retries", d.MaxRetries, false},
		{"RetryWaitMin", "retry_wait_min", d.RetryWaitMin, false},
		{"RetryWaitMax", "retry_wait_max", d.RetryWaitMax, false},
		{"RefreshMargin", "refresh_margin", refreshMarginText(d.RefreshMargin), false},
		{"PathPrefix", "path_prefix", d.PathPrefix, true},
		{"UnsetMarker", "unset_marker", d.UnsetMarker, true},
		{"AllowInsecureHTTP", "allow_insecure_http", d.AllowInsecureHTTP, false},
		{"MaxResponseBytes", "max_response_bytes", d.MaxResponseBytes, false},
		{"SharedStore", "shared_store", d.SharedStore != nil, false},
		{"SharedStoreTimeout", "shared_store_timeout", d.SharedStoreTimeout, false},
	}
}

// String describes c with the client id and secret redacted and the
// defaults filled in: the values a Client built from c uses. MaxRetries 0
// means never retry; a RefreshMargin of "lifetime/10" is the default, a
// tenth of each token's lifetime.
func (c Config) String() string {
	var b strings.Builder
	b.WriteString("management.Config{")
	for i, f := range c.fields() {
		if i > 0 {
			b.WriteString(", ")
		}
		verb := "%s:%v"
		if f.quote {
			verb = "%s:%q"
		}
		fmt.Fprintf(&b, verb, f.name, f.value)
	}
	b.WriteByte('}')
	return b.String()
}

// GoString is String, so that %#v redacts too.
func (c Config) GoString() string { return c.String() }

// Format writes String whatever the verb (quoted for %q), so that no verb,
// %d or %x included, prints the client id or secret. fmt itself prints a
// Config value (not a pointer) under %p field by field, calling no method:
// go vet reports that misuse, and nothing here can redact it.
func (c Config) Format(f fmt.State, verb rune) { formatRedacted(f, verb, c.String()) }

// LogValue describes c to log/slog as String does.
func (c Config) LogValue() slog.Value {
	fields := c.fields()
	attrs := make([]slog.Attr, len(fields))
	for i, f := range fields {
		attrs[i] = slog.Any(f.key, f.value)
	}
	return slog.GroupValue(attrs...)
}

// MarshalJSON encodes c as String describes it, so that a Config nested in
// a value logged by slog's JSON handler stays safe. Durations are strings
// ("250ms").
func (c Config) MarshalJSON() ([]byte, error) {
	fields := c.fields()
	m := make(map[string]any, len(fields))
	for _, f := range fields {
		if d, ok := f.value.(time.Duration); ok {
			m[f.key] = d.String()
			continue
		}
		m[f.key] = f.value
	}
	return json.Marshal(m)
}

// checkCredentials checks the client credentials when they are used. The
// id is never quoted: Config treats it as a secret.
func checkCredentials(cfg Config) error {
	switch {
	case cfg.TokenSource != nil:
		return nil
	case cfg.ClientID == "" || cfg.ClientSecret == "":
		return errorf("%w: %s and %s are required unless Config.TokenSource is set", ErrInvalidArgument, cfg.named("ClientID"), cfg.named("ClientSecret"))
	case strings.Contains(cfg.ClientID, ":"):
		return errorf("%w: %s contains ':', which HTTP Basic credentials cannot carry", ErrInvalidArgument, cfg.named("ClientID"))
	}
	return nil
}

// checkBaseWithoutPrefix refuses a base URL that already ends with the
// path prefix: the client adds the prefix to every path, so the service
// would see it twice and answer 404 to everything.
func (c *Client) checkBaseWithoutPrefix(cfg Config) error {
	if c.prefix == "" || !strings.HasSuffix(c.basePath, c.prefix) {
		return nil
	}
	return errorf("%w: %s %q already ends with the path prefix %q, which the client adds to every path; write %s as %q",
		ErrInvalidArgument, cfg.named("BaseURL"), c.baseURL, c.prefix, cfg.bare("BaseURL"), strings.TrimSuffix(c.baseURL, c.prefix))
}

// checkBaseURL parses and checks cfg.BaseURL.
func checkBaseURL(cfg Config) (*url.URL, error) {
	name := cfg.named("BaseURL")
	if cfg.BaseURL == "" {
		return nil, errorf("%w: %s is required", ErrInvalidArgument, name)
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil {
		return nil, errorf("%w: %s is not a URL", ErrInvalidArgument, name)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, errorf("%w: %s must be an absolute http or https URL", ErrInvalidArgument, name)
	case u.Host == "" || u.Opaque != "":
		return nil, errorf("%w: %s has no host", ErrInvalidArgument, name)
	case u.User != nil:
		return nil, errorf("%w: %s must not hold user info; use %s and %s", ErrInvalidArgument, name, cfg.bare("ClientID"), cfg.bare("ClientSecret"))
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.ContainsAny(cfg.BaseURL, "?#"):
		return nil, errorf("%w: %s must not have a query or fragment", ErrInvalidArgument, name)
	case u.Scheme == "http" && !cfg.AllowInsecureHTTP && !isLoopback(u.Hostname()):
		allow := "AllowInsecureHTTP"
		if v := cfg.variable("AllowInsecureHTTP"); v != "" {
			allow = v + "=true"
		}
		return nil, errorf("%w: %s uses http:// to a host that is not loopback; use https or set %s", ErrInvalidArgument, name, allow)
	}
	return u, nil
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
