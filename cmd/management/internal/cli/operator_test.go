package cli

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

// TestForOperators: the SDK's own texts for configurations it refuses,
// and for an answer that shows the base URL or prefix wrong, name the
// environment variables and flags, and no Config field.
func TestForOperators(t *testing.T) {
	ok := management.Config{BaseURL: "https://management.example.com", ClientID: "id", ClientSecret: "secret"}
	with := func(f func(*management.Config)) management.Config { c := ok; f(&c); return c }
	cases := []struct {
		cfg  management.Config
		want []string
	}{
		{with(func(c *management.Config) { c.BaseURL = "http://management.example.com" }), []string{"MANAGEMENT_BASE_URL (or --base-url)", "MANAGEMENT_ALLOW_INSECURE_HTTP=true"}},
		{with(func(c *management.Config) { c.BaseURL = "https://u:p@management.example.com" }), []string{"MANAGEMENT_BASE_URL", "MANAGEMENT_CLIENT_ID (or --client-id) and MANAGEMENT_CLIENT_SECRET (or --client-secret-stdin)"}},
		{with(func(c *management.Config) {
			c.BaseURL = "https://management.example.com/v2/api/management/service_connect"
		}), []string{"MANAGEMENT_BASE_URL (or --base-url) \"https://management.example.com/v2/api/management/service_connect\" already ends", "write MANAGEMENT_BASE_URL (or --base-url) as"}},
		{with(func(c *management.Config) { c.RetryWaitMin, c.RetryWaitMax = 10*time.Second, time.Second }), []string{"MANAGEMENT_RETRY_WAIT_MIN (10s) is longer than MANAGEMENT_RETRY_WAIT_MAX (1s)"}},
		{with(func(c *management.Config) { c.PathPrefix = "api" }), []string{"MANAGEMENT_PATH_PREFIX must"}},
		{with(func(c *management.Config) { c.MaxResponseBytes = -1 }), []string{"MANAGEMENT_MAX_RESPONSE_BYTES must"}},
		{with(func(c *management.Config) { c.ClientID = "a:b" }), []string{"MANAGEMENT_CLIENT_ID (or --client-id) contains ':'"}},
		{with(func(c *management.Config) { c.ClientSecret = "" }), []string{"MANAGEMENT_CLIENT_ID (or --client-id) and MANAGEMENT_CLIENT_SECRET (or --client-secret-stdin) are required"}},
	}
	field := regexp.MustCompile(`Config\.|TokenSource|\b(BaseURL|ClientID|ClientSecret|PathPrefix|RetryWait\w+|MaxResponseBytes|AllowInsecureHTTP)\b`)
	for _, c := range cases {
		_, err := management.NewClient(c.cfg)
		if err == nil {
			t.Fatalf("NewClient(%+v) accepted it", c.cfg)
		}
		got := forOperators(err.Error(), nil)
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%q\n  became %q\n  want it to hold %q", err, got, w)
			}
		}
		if m := field.FindString(got); m != "" {
			t.Errorf("%q still names %q", got, m)
		}
	}
	for _, sdk := range []error{management.ErrMisconfigured, &management.TokenError{StatusCode: 404}} {
		got := forOperators(sdk.Error(), nil)
		if !strings.Contains(got, "check MANAGEMENT_BASE_URL (or --base-url) and MANAGEMENT_PATH_PREFIX") {
			t.Errorf("%q became %q", sdk, got)
		}
	}
}

// TestConfigNamedWhereSet: a configuration the SDK refuses is named where
// the operator set it: a value from the environment as its variable, one
// given as a flag as the flag, the 404 hint too.
func TestConfigNamedWhereSet(t *testing.T) {
	clearEnv(t)
	t.Setenv(management.EnvClientID, "acme-ops")
	t.Setenv(management.EnvClientSecret, "s3cret-value")
	const insecure = "uses http:// to a host that is not loopback; use https or set MANAGEMENT_ALLOW_INSECURE_HTTP=true\n"
	for _, c := range []struct {
		env  string
		args []string
		want string
	}{
		{"http://management.example.com", nil, "management: invalid argument: MANAGEMENT_BASE_URL " + insecure},
		{"https://management.example.com", []string{"--base-url", "http://management.example.com"}, "management: invalid argument: --base-url " + insecure},
		{"", []string{"--base-url", "http://management.example.com"}, "management: invalid argument: --base-url " + insecure},
		{"https://management.example.com", []string{"--client-id", "acme:ops"}, "management: invalid argument: --client-id contains ':', which HTTP Basic credentials cannot carry\n"},
	} {
		t.Setenv(management.EnvBaseURL, c.env)
		r := runCLI(t, append(c.args, "users", "list")...)
		if first, _, _ := strings.Cut(r.stderr, "Run '"); r.code != ExitUsage || first != c.want {
			t.Errorf("%s=%q %v: exit %d, stderr %q; want %d, %q", management.EnvBaseURL, c.env, c.args, r.code, r.stderr, ExitUsage, c.want)
		}
	}
	if got := forOperators(management.ErrMisconfigured.Error(), map[string]string{"BaseURL": "--base-url"}); !strings.HasSuffix(got, "check --base-url and MANAGEMENT_PATH_PREFIX") {
		t.Errorf("ErrMisconfigured with --base-url given: %q; want it to name the flag", got)
	}
}

// TestMisconfiguredExitsUsage: a well-formed MANAGEMENT_PATH_PREFIX that
// the service answers 404 to, and a redirect, are configuration errors:
// exit 2, as a malformed one is, with the hint and no pointer to --help;
// an outage (503) stays a failure, exit 1.
func TestMisconfiguredExitsUsage(t *testing.T) {
	srv := managementtest.NewInMemoryServer()
	defer srv.Close()
	e := useServer(t, srv)
	t.Setenv(management.EnvMaxRetries, "0")
	const hint = "check MANAGEMENT_BASE_URL (or --base-url) and MANAGEMENT_PATH_PREFIX"
	oneLine := func(r result) bool { return strings.Count(r.stderr, "\n") == 1 && strings.Contains(r.stderr, hint) }

	t.Setenv(management.EnvPathPrefix, "/v2/api/management/elsewhere")
	if r := e.run(t, "users", "list"); r.code != ExitUsage || !strings.HasPrefix(r.stderr, "management: POST /auth/token: 404") || !oneLine(r) {
		t.Errorf("a prefix answered 404: exit %d, stderr %q; want %d, the 404 and the hint, in one line", r.code, r.stderr, ExitUsage)
	}
	t.Setenv(management.EnvPathPrefix, "")
	srv.FailNextWith(managementtest.RouteListUsers, 1, managementtest.Response{Status: http.StatusFound, Header: http.Header{"Location": {"/login"}}})
	if r := e.run(t, "users", "list"); r.code != ExitUsage || !oneLine(r) {
		t.Errorf("a redirect: exit %d, stderr %q; want %d and the hint, in one line", r.code, r.stderr, ExitUsage)
	}
	srv.FailNext(managementtest.RouteListUsers, 1, http.StatusServiceUnavailable, 0)
	if r := e.run(t, "users", "list"); r.code != ExitFailure {
		t.Errorf("a 503: exit %d, stderr %q; want %d", r.code, r.stderr, ExitFailure)
	}
}
