package management

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/jarcoal/httpmock"
)

func lookupIn(env map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := env[name]
		return v, ok
	}
}

func TestConfigFromEnv(t *testing.T) {
	t.Setenv(EnvBaseURL, "https://api.example.test")
	t.Setenv(EnvClientID, "id-1")
	t.Setenv(EnvClientSecret, "secret-1")
	t.Setenv(EnvMaxRetries, "-1")
	t.Setenv(EnvRetryWaitMin, "100ms")
	t.Setenv(EnvRetryWaitMax, " 2s ")
	t.Setenv(EnvRefreshMargin, "30s")
	t.Setenv(EnvMaxResponseBytes, "1048576")
	t.Setenv(EnvAllowInsecureHTTP, "true")
	t.Setenv(EnvPathPrefix, "/v2/api/management/acme")
	t.Setenv(EnvUserAgent, "ops-tool/1.0")
	t.Setenv(EnvUnsetMarker, "$AcmeUnset$")
	got, err := ConfigFromEnv()
	if err != nil {
		t.Fatalf("ConfigFromEnv: %v", err)
	}
	want := Config{
		BaseURL: "https://api.example.test", ClientID: "id-1", ClientSecret: "secret-1",
		MaxRetries: -1, RetryWaitMin: 100 * time.Millisecond, RetryWaitMax: 2 * time.Second,
		RefreshMargin: 30 * time.Second, MaxResponseBytes: 1 << 20, AllowInsecureHTTP: true,
		PathPrefix: "/v2/api/management/acme", UserAgent: "ops-tool/1.0", UnsetMarker: "$AcmeUnset$",
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreUnexported(Config{})); diff != "" {
		t.Errorf("Config (-want +got):\n%s", diff)
	}
	if _, err := NewClient(got); err != nil {
		t.Errorf("NewClient of the Config read: %v", err)
	}
}

func TestConfigFromEnvOnlyRequired(t *testing.T) {
	got, err := configFrom(lookupIn(map[string]string{
		EnvBaseURL: "https://api.example.test", EnvClientID: "id-1", EnvClientSecret: "secret-1",
		EnvMaxRetries: "", // empty is unset
	}))
	if err != nil {
		t.Fatalf("configFrom: %v", err)
	}
	want := Config{BaseURL: "https://api.example.test", ClientID: "id-1", ClientSecret: "secret-1"}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreUnexported(Config{})); diff != "" {
		t.Errorf("Config (-want +got):\n%s", diff)
	}
}

func TestConfigFromEnvNamesEveryProblem(t *testing.T) {
	_, err := configFrom(lookupIn(map[string]string{
		EnvClientSecret:      "secret-value-1",
		EnvMaxRetries:        "four",
		EnvRetryWaitMax:      "15",
		EnvMaxResponseBytes:  "1e6",
		EnvAllowInsecureHTTP: "secret-value-1",
	}))
	if !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("err = %v; want ErrInvalidArgument", err)
	}
	want := "management: invalid argument: " +
		"MANAGEMENT_BASE_URL is not set; MANAGEMENT_CLIENT_ID is not set; " +
		"MANAGEMENT_MAX_RETRIES is not an integer; " +
		"MANAGEMENT_RETRY_WAIT_MAX is not a duration (such as 250ms or 2s); " +
		"MANAGEMENT_MAX_RESPONSE_BYTES is not a whole number of bytes; " +
		"MANAGEMENT_ALLOW_INSECURE_HTTP is not true or false"
	if err.Error() != want {
		t.Errorf("err =\n%s\nwant\n%s", err, want)
	}
	if strings.Contains(err.Error(), "secret-value-1") {
		t.Error("the error quotes a value")
	}
	var envErr *EnvError
	if !errors.As(err, &envErr) {
		t.Fatalf("err is a %T; want an *EnvError", err)
	}
	wantErr := &EnvError{
		Missing: []string{EnvBaseURL, EnvClientID},
		Malformed: []string{
			"MANAGEMENT_MAX_RETRIES is not an integer",
			"MANAGEMENT_RETRY_WAIT_MAX is not a duration (such as 250ms or 2s)",
			"MANAGEMENT_MAX_RESPONSE_BYTES is not a whole number of bytes",
			"MANAGEMENT_ALLOW_INSECURE_HTTP is not true or false",
		},
	}
	if diff := cmp.Diff(wantErr, envErr); diff != "" {
		t.Errorf("EnvError (-want +got):\n%s", diff)
	}
}

// TestEnvMaxRetriesSaysRetries: MANAGEMENT_MAX_RETRIES counts retries as
// an operator reads it: 0 is none (one attempt; Config.MaxRetries 0 would
// be the default, 4), 2 is two, and unset is the default.
func TestEnvMaxRetriesSaysRetries(t *testing.T) {
	for _, c := range []struct {
		value    string
		attempts int
	}{{"0", 1}, {"-1", 1}, {"2", 3}, {"", 5}} {
		cfg, err := configFrom(lookupIn(map[string]string{
			EnvBaseURL: mockBaseURL, EnvClientID: mockID, EnvClientSecret: mockSecret,
			EnvMaxRetries: c.value, EnvRetryWaitMin: "1ms", EnvRetryWaitMax: "2ms",
		}))
		if err != nil {
			t.Fatalf("%s=%q: %v", EnvMaxRetries, c.value, err)
		}
		client, mt := setup(t, cfg)
		mt.RegisterResponder(http.MethodGet, mockPrefix+"/users", func(r *http.Request) (*http.Response, error) {
			testMethod(t, r, http.MethodGet)
			testAPIHeaders(t, r)
			return httpmock.NewStringResponse(http.StatusServiceUnavailable, ""), nil
		})
		_, err = client.Users.ListPage(t.Context(), nil)
		var ae *APIError
		if !errors.As(err, &ae) || ae.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("%s=%q: err = %v; want an *APIError 503", EnvMaxRetries, c.value, err)
		}
		if got := mt.GetCallCountInfo()["GET "+mockPrefix+"/users"]; got != c.attempts {
			t.Errorf("%s=%q: %d attempt(s), want %d", EnvMaxRetries, c.value, got, c.attempts)
		}
	}
}

// TestEnvZeroSaysWhatItMeans: a 0 in a variable is what an operator reads
// it as, or refused: MANAGEMENT_REFRESH_MARGIN=0s is no margin (Config's
// negative), while a zero wait between retries or response size, which a
// Config cannot hold (its 0 is the default), is malformed, not silently the
// default; so are negative ones.
func TestEnvZeroSaysWhatItMeans(t *testing.T) {
	required := map[string]string{EnvBaseURL: mockBaseURL, EnvClientID: mockID, EnvClientSecret: mockSecret}
	with := func(name, value string) map[string]string {
		env := map[string]string{name: value}
		for k, v := range required {
			env[k] = v
		}
		return env
	}
	for _, v := range []string{"0", "0s", "-1s"} {
		cfg, err := configFrom(lookupIn(with(EnvRefreshMargin, v)))
		if err != nil || cfg.RefreshMargin >= 0 {
			t.Errorf("%s=%s: RefreshMargin %v, %v; want a negative margin (none)", EnvRefreshMargin, v, cfg.RefreshMargin, err)
		}
	}
	for _, c := range []struct{ name, value, want string }{
		{EnvRetryWaitMin, "0s", "MANAGEMENT_RETRY_WAIT_MIN is not a positive duration (unset, it is 250ms)"},
		{EnvRetryWaitMin, "-1s", "MANAGEMENT_RETRY_WAIT_MIN is not a positive duration (unset, it is 250ms)"},
		{EnvRetryWaitMax, "0", "MANAGEMENT_RETRY_WAIT_MAX is not a positive duration (unset, it is 15s)"},
		{EnvMaxResponseBytes, "0", "MANAGEMENT_MAX_RESPONSE_BYTES is not a positive number of bytes (unset, it is 32 MiB)"},
		{EnvMaxResponseBytes, "-5", "MANAGEMENT_MAX_RESPONSE_BYTES is not a positive number of bytes (unset, it is 32 MiB)"},
	} {
		_, err := configFrom(lookupIn(with(c.name, c.value)))
		var envErr *EnvError
		if !errors.As(err, &envErr) || !cmp.Equal(envErr.Malformed, []string{c.want}) {
			t.Errorf("%s=%s: %v; want the one problem %q", c.name, c.value, err, c.want)
		}
	}
}
