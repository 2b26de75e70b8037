package cli

import (
	"net/http"
	"strings"
	"testing"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

// TestShortTokensKeepTheHints: with tokens and a secret of 5 bytes, as a
// newcomer's test service may issue, the service's messages and the hints
// that name the tool's settings still reach the operator.
func TestShortTokensKeepTheHints(t *testing.T) {
	newServer := func() *managementtest.Server {
		srv := managementtest.NewInMemoryServer(managementtest.WithManagementToken("qzx7k"),
			managementtest.WithEndUserTokens("vbn4w"), managementtest.WithCredentials("ci-1", "s3kq9"))
		srv.AddThing(management.ThingDetails{Thing: management.Thing{PhysicalID: "lamp-7"}})
		srv.AddUser(management.UserDetails{User: management.User{ID: "u-1"}})
		return srv
	}
	const hint = "check MANAGEMENT_BASE_URL (or --base-url) and MANAGEMENT_PATH_PREFIX"
	cases := []struct {
		name   string
		fault  func(*managementtest.Server)
		args   []string
		stream func(result) string
		want   string
	}{
		{name: "the service's message", args: []string{"users", "disassociate", "u-1", "lamp-7"},
			want: "Association of Thing lamp-7 with User u-1 was not found"},
		{name: "a redirect's hint", args: []string{"users", "get", "u-1"}, want: hint,
			fault: func(srv *managementtest.Server) {
				srv.FailNextWith(managementtest.RouteGetUser, 1, managementtest.Response{Status: http.StatusFound,
					Header: http.Header{"Location": {"/login"}}})
			}},
		{name: "an HTML page from the token endpoint", args: []string{"users", "get", "u-1"}, want: hint,
			fault: func(srv *managementtest.Server) {
				srv.FailNextWith(managementtest.RouteToken, 1, managementtest.Response{Status: http.StatusOK, Body: "<html>Sign in</html>"})
			}},
		{name: "an End User token's relayed answer", args: []string{"token", "check"}, want: "The access token is invalid or has expired",
			stream: func(r result) string { return r.stdout }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := newServer()
			if c.fault != nil {
				c.fault(srv)
			}
			e := useServer(t, srv)
			t.Setenv(EnvEndUserToken, "Bearer vbn4w")
			e.stdoutTTY = true
			r := e.run(t, c.args...)
			got := r.stderr
			if c.stream != nil {
				got = c.stream(r)
			}
			if r.code == ExitOK || !strings.Contains(got, c.want) || strings.Contains(r.stdout+r.stderr, "too short to search") {
				t.Errorf("exit %d, stdout %q, stderr %q; want %q", r.code, r.stdout, r.stderr, c.want)
			}
		})
	}
}
