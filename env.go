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
	EnvMaxRetries        = "MANAGEMENT_MAX_RETRIES"         // Config.MaxRetries, an integer: the retries after the first attempt; 0 (or negative): none
	EnvRetryWaitMin      = "MANAGEMENT_RETRY_WAIT_MIN"      // Config.RetryWaitMin, a duration such as 250ms
	EnvRetryWaitMax      = "MANAGEMENT_RETRY_WAIT_MAX"      // Config.RetryWaitMax, a duration
	EnvRefreshMargin     = "MANAGEMENT_REFRESH_MARGIN"      // Config.RefreshMargin, a duration
	EnvMaxResponseBytes  = "MANAGEMENT_MAX_RESPONSE_BYTES"  // Config.MaxResponseBytes, an integer
	EnvAllowInsecureHTTP = "MANAGEMENT_ALLOW_INSECURE_HTTP" // Config.AllowInsecureHTTP, true or false
)

// ConfigFromEnv returns a Config read from the environment: the base URL,
// client id and secret (required), and optionally the other fields that a
// deployment sets, named by the Env constants. A variable that is unset or
// empty leaves its field zero, which selects the documented default. A
// count means what an operator reads: MANAGEMENT_MAX_RETRIES=0 is no
// retries (Config.MaxRetries -1), where Config.MaxRetries 0 selects the
// default. The error, an *EnvError, names every variable that is missing
// or malformed, never a value; the Config returned with it holds what
// could be read. The result is checked only as far as parsing goes:
// NewClient validates it.
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
	parse := func(name, want string, f func(string) error) {
		if v := get(name); v != "" && f(v) != nil {
			bad.Malformed = append(bad.Malformed, fmt.Sprintf("%s is not %s", name, want))
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
	parse(EnvUserAgent, "a value an HTTP header can carry", func(v string) error {
		if !headerValueSafe(v) {
			return ErrInvalidArgument
		}
		return nil
	})
	parse(EnvMaxRetries, "an integer", func(v string) (err error) {
		cfg.MaxRetries, err = strconv.Atoi(v)
		if cfg.MaxRetries == 0 {
			// An operator's 0 is "no retries"; Config's 0 is the default.
			cfg.MaxRetries = -1
		}
		return err
	})
	duration := func(name string, field *time.Duration) {
		parse(name, "a duration (such as 250ms or 2s)", func(v string) (err error) {
			*field, err = time.ParseDuration(v)
			return err
		})
	}
	duration(EnvRetryWaitMin, &cfg.RetryWaitMin)
	duration(EnvRetryWaitMax, &cfg.RetryWaitMax)
	duration(EnvRefreshMargin, &cfg.RefreshMargin)
	parse(EnvMaxResponseBytes, "a whole number of bytes", func(v string) (err error) {
		cfg.MaxResponseBytes, err = strconv.ParseInt(v, 10, 64)
		return err
	})
	parse(EnvAllowInsecureHTTP, "true or false", func(v string) (err error) {
		cfg.AllowInsecureHTTP, err = strconv.ParseBool(v)
		return err
	})
	if len(bad.Missing) > 0 || len(bad.Malformed) > 0 {
		return cfg, &bad
	}
	return cfg, nil
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
