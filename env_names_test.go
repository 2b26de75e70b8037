package management

import (
	"context"
	"errors"
	"maps"
	"regexp"
	"strings"
	"testing"
	"time"
)

// envRefusal is a configuration read from the environment that the SDK
// refuses, and what the refusal must say.
type envRefusal struct {
	name string
	env  map[string]string // over a valid base URL, client id and secret
	// fromEnv is what ConfigFromEnv's error says, newClient what
	// NewClient's says of the Config it returned; "" when it refuses
	// nothing.
	fromEnv, newClient string
}

// envRefusals covers every variable ConfigFromEnv reads.
var envRefusals = []envRefusal{
	{name: "http to a remote host", env: map[string]string{EnvBaseURL: "http://api.example.com"},
		newClient: "MANAGEMENT_BASE_URL uses http:// to a host that is not loopback; use https or set MANAGEMENT_ALLOW_INSECURE_HTTP=true"},
	{name: "a base URL with user info", env: map[string]string{EnvBaseURL: "https://u:p@api.example.com"},
		newClient: "MANAGEMENT_BASE_URL must not hold user info; use MANAGEMENT_CLIENT_ID and MANAGEMENT_CLIENT_SECRET"},
	{name: "a base URL ending with the prefix", env: map[string]string{EnvBaseURL: "https://api.example.com/v2/api/acme", EnvPathPrefix: "/v2/api/acme"},
		newClient: `MANAGEMENT_BASE_URL "https://api.example.com/v2/api/acme" already ends with the path prefix "/v2/api/acme", which the client adds to every path; write MANAGEMENT_BASE_URL as "https://api.example.com"`},
	{name: "a base URL that is not one", env: map[string]string{EnvBaseURL: "api.example.com"},
		newClient: "MANAGEMENT_BASE_URL must be an absolute http or https URL"},
	{name: "no base URL", env: map[string]string{EnvBaseURL: ""},
		fromEnv: "MANAGEMENT_BASE_URL is not set", newClient: "MANAGEMENT_BASE_URL is required"},
	{name: "a client id with a colon", env: map[string]string{EnvClientID: "acme:ops"},
		newClient: "MANAGEMENT_CLIENT_ID contains ':', which HTTP Basic credentials cannot carry"},
	{name: "no secret", env: map[string]string{EnvClientSecret: ""},
		fromEnv: "MANAGEMENT_CLIENT_SECRET is not set", newClient: "MANAGEMENT_CLIENT_ID and MANAGEMENT_CLIENT_SECRET are required unless Config.TokenSource is set"},
	{name: "a prefix without a slash", env: map[string]string{EnvPathPrefix: "api"},
		newClient: "MANAGEMENT_PATH_PREFIX must be a path starting with /"},
	{name: "a user agent with a control character", env: map[string]string{EnvUserAgent: "ops\x01tool"},
		fromEnv: "MANAGEMENT_USER_AGENT is not a value an HTTP header can carry", newClient: "MANAGEMENT_USER_AGENT holds a control character, which an HTTP header cannot carry"},
	{name: "retries that are not a number", env: map[string]string{EnvMaxRetries: "four"},
		fromEnv: "MANAGEMENT_MAX_RETRIES is not an integer"},
	{name: "a shortest wait longer than the default longest", env: map[string]string{EnvRetryWaitMin: "20s"},
		newClient: "MANAGEMENT_RETRY_WAIT_MIN (20s) is longer than MANAGEMENT_RETRY_WAIT_MAX (15s)"},
	{name: "a longest wait shorter than the default shortest", env: map[string]string{EnvRetryWaitMax: "100ms"},
		newClient: "MANAGEMENT_RETRY_WAIT_MIN (250ms) is longer than MANAGEMENT_RETRY_WAIT_MAX (100ms)"},
	{name: "a zero wait", env: map[string]string{EnvRetryWaitMin: "0s"},
		fromEnv: "MANAGEMENT_RETRY_WAIT_MIN is not a positive duration (unset, it is 250ms)"},
	{name: "a margin that is not a duration", env: map[string]string{EnvRefreshMargin: "soon"},
		fromEnv: "MANAGEMENT_REFRESH_MARGIN is not a duration (such as 250ms or 2s)"},
	{name: "a zero response size", env: map[string]string{EnvMaxResponseBytes: "0"},
		fromEnv: "MANAGEMENT_MAX_RESPONSE_BYTES is not a positive number of bytes (unset, it is 32 MiB)"},
	{name: "insecure HTTP neither true nor false", env: map[string]string{EnvAllowInsecureHTTP: "maybe"},
		fromEnv: "MANAGEMENT_ALLOW_INSECURE_HTTP is not true or false"},
}

// TestEnvRefusalsNameVariables: a configuration read from the
// environment is refused in the words of its variables, by ConfigFromEnv
// when a value cannot be parsed, and by NewClient when the Config cannot
// work; neither names a Config field the operator never saw (but
// TokenSource, which only code sets).
func TestEnvRefusalsNameVariables(t *testing.T) {
	for _, c := range envRefusals {
		env := map[string]string{EnvBaseURL: "https://api.example.com", EnvClientID: "acme-ops", EnvClientSecret: "s3cret-value"}
		maps.Copy(env, c.env)
		cfg, envErr := configFrom(lookupIn(env))
		_, newErr := NewClient(cfg)
		for _, got := range []struct {
			what string
			err  error
			want string
		}{{"ConfigFromEnv", envErr, c.fromEnv}, {"NewClient", newErr, c.newClient}} {
			switch {
			case got.want == "" && got.err != nil:
				t.Errorf("%s: %s refused it: %v", c.name, got.what, got.err)
			case got.want == "":
			case !errors.Is(got.err, ErrInvalidArgument) || !strings.Contains(got.err.Error(), got.want):
				t.Errorf("%s: %s = %v; want ErrInvalidArgument saying %q", c.name, got.what, got.err, got.want)
			case strings.Contains(strings.ReplaceAll(got.err.Error(), "Config.TokenSource", ""), "Config."):
				t.Errorf("%s: %s names a Config field: %v", c.name, got.what, got.err)
			}
		}
	}
}

// TestEnvRefusalsCoverEveryVariable keeps envRefusals complete: a variable
// ConfigFromEnv learns to read needs a refusal that names it.
func TestEnvRefusalsCoverEveryVariable(t *testing.T) {
	said := "(MANAGEMENT_UNSET_MARKER) " // TestUnsetMarkerNamedAsSet: the only refusal of that variable comes from Things.Update
	for _, c := range envRefusals {
		said += c.fromEnv + " " + c.newClient + " "
	}
	for _, f := range envFields {
		if !regexp.MustCompile(f.env + `\b`).MatchString(said) {
			t.Errorf("no case of envRefusals names %s", f.env)
		}
	}
	if len(envFields) != 12 {
		t.Errorf("envFields lists %d variables; ConfigFromEnv reads 12: add the new one to envFields and envRefusals", len(envFields))
	}
}

// TestEnvRefusalFromProcessEnv: the case, as a program meets it:
// ConfigFromEnv accepts MANAGEMENT_BASE_URL=http://api.example.com, which
// parses, and NewClient refuses it naming the two variables.
func TestEnvRefusalFromProcessEnv(t *testing.T) {
	t.Setenv(EnvBaseURL, "http://api.example.com")
	t.Setenv(EnvClientID, "acme-ops")
	t.Setenv(EnvClientSecret, "s3cret-value")
	t.Setenv(EnvAllowInsecureHTTP, "")
	cfg, err := ConfigFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	_, err = NewClient(cfg)
	const want = "management: invalid argument: MANAGEMENT_BASE_URL uses http:// to a host that is not loopback; use https or set MANAGEMENT_ALLOW_INSECURE_HTTP=true"
	if err == nil || err.Error() != want {
		t.Errorf("NewClient = %v; want %q", err, want)
	}
}

// TestCodeRefusalsNameFields: a Config written in code is refused naming
// its fields, and so is a field the program set on a Config from the
// environment; the fields it left as read keep their variables.
func TestCodeRefusalsNameFields(t *testing.T) {
	code := Config{BaseURL: "http://api.example.com", ClientID: "acme-ops", ClientSecret: "s3cret-value"}
	_, err := NewClient(code)
	if want := "Config.BaseURL uses http:// to a host that is not loopback; use https or set AllowInsecureHTTP"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("NewClient of a Config written in code = %v; want %q", err, want)
	}
	code.BaseURL, code.RetryWaitMin, code.RetryWaitMax = "https://api.example.com", 3*time.Second, time.Second
	_, err = NewClient(code)
	if want := "Config.RetryWaitMin (3s) is longer than Config.RetryWaitMax (1s)"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("NewClient of a Config written in code = %v; want %q", err, want)
	}

	cfg, err := configFrom(lookupIn(map[string]string{EnvBaseURL: "https://api.example.com", EnvClientID: "acme-ops", EnvClientSecret: "s3cret-value", EnvRetryWaitMax: "1s"}))
	if err != nil {
		t.Fatal(err)
	}
	cfg.BaseURL = "http://api.example.com"
	cfg.RetryWaitMin = 3 * time.Second
	for _, want := range []string{
		"Config.BaseURL uses http:// to a host that is not loopback; use https or set MANAGEMENT_ALLOW_INSECURE_HTTP=true",
		"Config.RetryWaitMin (3s) is longer than MANAGEMENT_RETRY_WAIT_MAX (1s)",
	} {
		_, err := NewClient(cfg)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("NewClient of a Config from the environment that the program changed = %v; want %q", err, want)
		}
		cfg.BaseURL = "https://api.example.com"
	}
}

// TestUnsetMarkerNamedAsSet: an update refused for holding the unset
// marker string names where the marker was set.
func TestUnsetMarkerNamedAsSet(t *testing.T) {
	fromEnv, err := configFrom(lookupIn(map[string]string{EnvBaseURL: "https://api.example.com", EnvClientID: "acme-ops", EnvClientSecret: "s3cret-value", EnvUnsetMarker: "$AcmeUnset$"}))
	if err != nil {
		t.Fatal(err)
	}
	inCode := Config{BaseURL: "https://api.example.com", ClientID: "acme-ops", ClientSecret: "s3cret-value", UnsetMarker: "$AcmeUnset$"}
	for cfg, want := range map[*Config]string{&fromEnv: "(MANAGEMENT_UNSET_MARKER)", &inCode: "(Config.UnsetMarker)"} {
		client, err := NewClient(*cfg)
		if err != nil {
			t.Fatal(err)
		}
		_, err = client.Things.Update(context.Background(), "thermo-42", ThingUpdate{CustomSettings: map[string]any{"mode": "$AcmeUnset$"}})
		if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), `CustomSettings["mode"] is the unset marker string `+want) {
			t.Errorf("Update with the marker string = %v; want ErrInvalidArgument naming %s", err, want)
		}
	}
}
