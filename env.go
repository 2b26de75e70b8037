package management

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// The environment variables ConfigFromEnv reads.
const (
	EnvBaseURL      = "MANAGEMENT_BASE_URL"      // Config.BaseURL; required
	EnvClientID     = "MANAGEMENT_CLIENT_ID"     // Config.ClientID; required
	EnvClientSecret = "MANAGEMENT_CLIENT_SECRET" // Config.ClientSecret; required

	EnvPathPrefix        = "MANAGEMENT_PATH_PREFIX"         // Config.PathPrefix
	EnvUserAgent         = "MANAGEMENT_USER_AGENT"          // Config.UserAgent
	EnvUnsetMarker       = "MANAGEMENT_UNSET_MARKER"        // Config.UnsetMarker
	EnvMaxRetries        = "MANAGEMENT_MAX_RETRIES"         // Config.MaxRetries, an integer: the retries after the first attempt; 0: none
	EnvRetryWaitMin      = "MANAGEMENT_RETRY_WAIT_MIN"      // Config.RetryWaitMin, a positive duration such as 250ms
	EnvRetryWaitMax      = "MANAGEMENT_RETRY_WAIT_MAX"      // Config.RetryWaitMax, a positive duration
	EnvRefreshMargin     = "MANAGEMENT_REFRESH_MARGIN"      // Config.RefreshMargin, a duration; 0s: none
	EnvMaxResponseBytes  = "MANAGEMENT_MAX_RESPONSE_BYTES"  // Config.MaxResponseBytes, a positive integer
	EnvAllowInsecureHTTP = "MANAGEMENT_ALLOW_INSECURE_HTTP" // Config.AllowInsecureHTTP, true or false
)

// ConfigFromEnv returns a Config read from the environment: the base URL,
// client id and secret (required), and optionally the other fields that a
// deployment sets, named by the Env constants. A variable that is unset or
// empty leaves its field zero, which selects the documented default. A 0
// means what an operator reads, not Config's default:
// MANAGEMENT_MAX_RETRIES=0 is no retries (Config.MaxRetries -1), and
// MANAGEMENT_REFRESH_MARGIN=0s no margin (a negative RefreshMargin); a zero
// or negative MANAGEMENT_RETRY_WAIT_MIN, MANAGEMENT_RETRY_WAIT_MAX or
// MANAGEMENT_MAX_RESPONSE_BYTES, which a Config cannot hold, is malformed.
// The error, an *EnvError, names every variable that is missing
// or malformed, never a value; the Config returned with it holds what
// could be read. The result is checked only as far as parsing goes:
// NewClient validates it, and names in its refusals the variables the
// Config was read from, not its fields (a field the program sets after
// ConfigFromEnv is named as the field).
func ConfigFromEnv() (Config, error) {
	return configFrom(os.LookupEnv)
}

// configFrom reads a Config through lookup, so that tests need not touch
// the process's environment.
func configFrom(lookup func(string) (string, bool)) (Config, error) {
	get := func(name string) string {
		v, _ := lookup(name)
		return strings.TrimSpace(v)
	}
	var bad EnvError
	required := func(name string) string {
		v := get(name)
		if v == "" {
			bad.Missing = append(bad.Missing, name)
		}
		return v
	}
	// parse reads the variable name, when set, with f, which returns what
	// the value must be when it is not.
	parse := func(name string, f func(string) string) {
		if v := get(name); v != "" {
			if want := f(v); want != "" {
				bad.Malformed = append(bad.Malformed, fmt.Sprintf("%s is not %s", name, want))
			}
		}
	}

	cfg := Config{
		BaseURL:      required(EnvBaseURL),
		ClientID:     required(EnvClientID),
		ClientSecret: required(EnvClientSecret),
		PathPrefix:   get(EnvPathPrefix),
		UserAgent:    get(EnvUserAgent),
		UnsetMarker:  get(EnvUnsetMarker),
	}
	parse(EnvUserAgent, func(v string) string {
		if !headerValueSafe(v) {
			return "a value an HTTP header can carry"
		}
		return ""
	})
	// A 0 is what an operator reads it as, where Config's 0 is the default:
	// no retries and no margin are Config's negatives; a zero wait or size,
	// which a Config cannot hold, is refused rather than silently the default.
	parse(EnvMaxRetries, func(v string) string {
		n, err := strconv.Atoi(v)
		if err != nil {
			return "an integer"
		}
		cfg.MaxRetries = n
		if n == 0 {
			cfg.MaxRetries = -1
		}
		return ""
	})
	duration := func(name string, f func(time.Duration) string) {
		parse(name, func(v string) string {
			d, err := time.ParseDuration(v)
			if err != nil {
				return "a duration (such as 250ms or 2s)"
			}
			return f(d)
		})
	}
	wait := func(field *time.Duration, def time.Duration) func(time.Duration) string {
		return func(d time.Duration) string {
			if d <= 0 {
				return "a positive duration (unset, it is " + def.String() + ")"
			}
			*field = d
			return ""
		}
	}
	duration(EnvRetryWaitMin, wait(&cfg.RetryWaitMin, defaultRetryWaitMin))
	duration(EnvRetryWaitMax, wait(&cfg.RetryWaitMax, defaultRetryWaitMax))
	duration(EnvRefreshMargin, func(d time.Duration) string {
		cfg.RefreshMargin = d
		if d == 0 {
			cfg.RefreshMargin = -1
		}
		return ""
	})
	parse(EnvMaxResponseBytes, func(v string) string {
		n, err := strconv.ParseInt(v, 10, 64)
		switch {
		case err != nil:
			return "a whole number of bytes"
		case n <= 0:
			return fmt.Sprintf("a positive number of bytes (unset, it is %d MiB)", defaultMaxResponseBytes>>20)
		}
		cfg.MaxResponseBytes = n
		return ""
	})
	parse(EnvAllowInsecureHTTP, func(v string) string {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return "true or false"
		}
		cfg.AllowInsecureHTTP = b
		return ""
	})
	read := cfg
	cfg.fromEnv = &read
	if len(bad.Missing) > 0 || len(bad.Malformed) > 0 {
		return cfg, &bad
	}
	return cfg, nil
}

// envFields are the fields ConfigFromEnv sets, each with its variable, in
// the order of the Env constants.
var envFields = []struct {
	field string
	env   string
	value func(Config) any
}{
	{"BaseURL", EnvBaseURL, func(c Config) any { return c.BaseURL }},
	{"ClientID", EnvClientID, func(c Config) any { return c.ClientID }},
	{"ClientSecret", EnvClientSecret, func(c Config) any { return c.ClientSecret }},
	{"PathPrefix", EnvPathPrefix, func(c Config) any { return c.PathPrefix }},
	{"UserAgent", EnvUserAgent, func(c Config) any { return c.UserAgent }},
	{"UnsetMarker", EnvUnsetMarker, func(c Config) any { return c.UnsetMarker }},
	{"MaxRetries", EnvMaxRetries, func(c Config) any { return c.MaxRetries }},
	{"RetryWaitMin", EnvRetryWaitMin, func(c Config) any { return c.RetryWaitMin }},
	{"RetryWaitMax", EnvRetryWaitMax, func(c Config) any { return c.RetryWaitMax }},
	{"RefreshMargin", EnvRefreshMargin, func(c Config) any { return c.RefreshMargin }},
	{"MaxResponseBytes", EnvMaxResponseBytes, func(c Config) any { return c.MaxResponseBytes }},
	{"AllowInsecureHTTP", EnvAllowInsecureHTTP, func(c Config) any { return c.AllowInsecureHTTP }},
}

// variable returns the environment variable field of c was read from, if
// c came from ConfigFromEnv and the field still holds the value read
// (unset included: the operator left it at its default); "" otherwise.
// An operator who set the variables reads their names, not the fields of
// a Config they never saw.
func (c Config) variable(field string) string {
	if c.fromEnv == nil {
		return ""
	}
	for _, f := range envFields {
		if f.field == field && f.value(c) == f.value(*c.fromEnv) {
			return f.env
		}
	}
	return ""
}

// named is how a refusal names field: its variable, else "Config.Field".
func (c Config) named(field string) string {
	if v := c.variable(field); v != "" {
		return v
	}
	return "Config." + field
}

// bare is named without "Config.", for a second mention of a field.
func (c Config) bare(field string) string {
	if v := c.variable(field); v != "" {
		return v
	}
	return field
}

// EnvError is the error of ConfigFromEnv: every variable it could not use,
// named, never with its value. It matches ErrInvalidArgument. A program
// that takes some settings from elsewhere too (flags, a file) can tell
// what is missing from what is malformed.
type EnvError struct {
	// Missing lists the required variables that are not set, in the order
	// of the Env constants.
	Missing []string
	// Malformed describes each variable that is set but cannot be parsed,
	// as "NAME is not <what it must be>".
	Malformed []string
}

// Error names every problem, separated by "; ".
func (e *EnvError) Error() string {
	problems := make([]string, 0, len(e.Missing)+len(e.Malformed))
	for _, name := range e.Missing {
		problems = append(problems, name+" is not set")
	}
	problems = append(problems, e.Malformed...)
	return ErrInvalidArgument.Error() + ": " + strings.Join(problems, "; ")
}

// Unwrap returns ErrInvalidArgument, so that errors.Is matches it.
func (e *EnvError) Unwrap() error { return ErrInvalidArgument }
