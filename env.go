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
	EnvMaxRetries        = "MANAGEMENT_MAX_RETRIES"         // Config.MaxRetries, an integer
	EnvRetryWaitMin      = "MANAGEMENT_RETRY_WAIT_MIN"      // Config.RetryWaitMin, a duration such as 250ms
	EnvRetryWaitMax      = "MANAGEMENT_RETRY_WAIT_MAX"      // Config.RetryWaitMax, a duration
	EnvRefreshMargin     = "MANAGEMENT_REFRESH_MARGIN"      // Config.RefreshMargin, a duration
	EnvMaxResponseBytes  = "MANAGEMENT_MAX_RESPONSE_BYTES"  // Config.MaxResponseBytes, an integer
	EnvAllowInsecureHTTP = "MANAGEMENT_ALLOW_INSECURE_HTTP" // Config.AllowInsecureHTTP, true or false
)

// ConfigFromEnv returns a Config read from the environment: the base URL,
// client id and secret (required), and optionally the other fields that a
// deployment sets, named by the Env constants. A variable that is unset or
// empty leaves its field zero, which selects the documented default. The
// error names every variable that is missing or malformed, never a value.
// The result is checked only as far as parsing goes: NewClient validates it.
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
	var problems []string
	required := func(name string) string {
		v := get(name)
		if v == "" {
			problems = append(problems, name+" is not set")
		}
		return v
	}
	parse := func(name, want string, f func(string) error) {
		if v := get(name); v != "" && f(v) != nil {
			problems = append(problems, fmt.Sprintf("%s is not %s", name, want))
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
	parse(EnvMaxRetries, "an integer", func(v string) (err error) {
		cfg.MaxRetries, err = strconv.Atoi(v)
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
	if len(problems) > 0 {
		return cfg, errorf("%w: %s", ErrInvalidArgument, strings.Join(problems, "; "))
	}
	return cfg, nil
}
