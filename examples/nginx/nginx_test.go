package nginx_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

// mount is where nginx.conf puts the service on the proxy.
const mount = "/mgmt"

// upstream is the service behind the proxy: the managementtest fake served
// over TCP by a server that counts the connections nginx opens to it.
type upstream struct {
	fake  *managementtest.Server
	srv   *httptest.Server
	conns atomic.Int64 // connections accepted
}

func startUpstream(t *testing.T, opts ...managementtest.Option) *upstream {
	t.Helper()
	u := &upstream{fake: managementtest.NewInMemoryServer(opts...)}
	u.srv = httptest.NewUnstartedServer(u.fake.Handler())
	u.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			u.conns.Add(1)
		}
	}
	u.srv.Start()
	t.Cleanup(u.srv.Close)
	return u
}

// proxy is a running nginx with nginx.conf.
type proxy struct {
	baseURL string // the mount, as Config.BaseURL
	dir     string // pid file, logs, temporary files
}

// startProxy runs nginx.conf in front of upstreamAddr. Its listening socket
// is opened here and handed to nginx (the NGINX environment variable, as
// nginx's binary upgrade does), so no port can be taken in between and
// connections wait in the backlog until nginx accepts them: no polling.
func startProxy(t *testing.T, upstreamAddr string, edits []string) *proxy {
	t.Helper()
	bin, err := exec.LookPath("nginx")
	if err != nil {
		bin, err = exec.LookPath("/usr/sbin/nginx")
	}
	if err != nil {
		if os.Getenv("MANAGEMENT_REQUIRE_SERVERS") != "" {
			t.Fatalf("nginx is not installed (MANAGEMENT_REQUIRE_SERVERS is set): %v", err)
		}
		t.Skipf("nginx is not installed: %v", err)
	}
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	lnFile, err := ln.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	defer lnFile.Close()

	conf := filepath.Join(dir, "nginx.conf")
	writeConf(t, conf, ln.Addr().String(), upstreamAddr, dir, edits)
	cmd := exec.Command(bin, "-c", conf, "-p", dir+"/", "-e", filepath.Join(dir, "error.log"))
	cmd.ExtraFiles = []*os.File{lnFile} // fd 3
	cmd.Env = append(os.Environ(), "NGINX=3;")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopProxy(t, cmd, &out, dir) })
	return &proxy{baseURL: "http://" + ln.Addr().String() + mount, dir: dir}
}

// stopProxy asks nginx to stop (SIGTERM: the master stops its workers)
// and waits for it, killing the whole process group if it lingers.
func stopProxy(t *testing.T, cmd *exec.Cmd, out *bytes.Buffer, dir string) {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
	if t.Failed() {
		errLog, _ := os.ReadFile(filepath.Join(dir, "error.log"))
		accessLog, _ := os.ReadFile(filepath.Join(dir, "access.log"))
		t.Logf("nginx output:\n%s\nerror.log:\n%s\naccess.log:\n%s", out.Bytes(), errLog, accessLog)
	}
}

// writeConf fills the placeholders of nginx.conf, then makes the edits
// (old, new pairs) a test needs.
func writeConf(t *testing.T, path, listen, upstreamAddr, dir string, edits []string) {
	t.Helper()
	tmpl, err := os.ReadFile("nginx.conf")
	if err != nil {
		t.Fatal(err)
	}
	conf := strings.NewReplacer("{{LISTEN}}", listen, "{{UPSTREAM}}", upstreamAddr, "{{DIR}}", dir).Replace(string(tmpl))
	for i := 0; i+1 < len(edits); i += 2 {
		if !strings.Contains(conf, edits[i]) {
			t.Fatalf("nginx.conf has no %q to edit", edits[i])
		}
		conf = strings.ReplaceAll(conf, edits[i], edits[i+1])
	}
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
}

// exchange is what recorder saw of one attempt.
type exchange struct {
	method, path string // path as sent, escaped
	status       int
	gzipped      bool // the answer came compressed and the transport decompressed it
}

// recorder is an http.RoundTripper that records every attempt the SDK
// makes. It wraps the http.Transport, which asks for gzip and decompresses
// on its own: resp.Uncompressed says the body came compressed.
type recorder struct {
	next http.RoundTripper

	mu  sync.Mutex
	log []exchange
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.log = append(r.log, exchange{req.Method, req.URL.EscapedPath(), resp.StatusCode, resp.Uncompressed})
	r.mu.Unlock()
	return resp, nil
}

func (r *recorder) exchanges() []exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]exchange(nil), r.log...)
}

// env is a client talking to the fake through nginx.
type env struct {
	up     *upstream
	proxy  *proxy
	rec    *recorder
	client *management.Client
}

func setUp(t *testing.T, cfg management.Config, opts ...managementtest.Option) *env {
	t.Helper()
	return setUpEdited(t, cfg, nil, opts...)
}

// setUpEdited is setUp with nginx.conf edited (old, new pairs).
func setUpEdited(t *testing.T, cfg management.Config, edits []string, opts ...managementtest.Option) *env {
	t.Helper()
	up := startUpstream(t, opts...)
	p := startProxy(t, up.srv.Listener.Addr().String(), edits)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	rec := &recorder{next: tr}
	cfg.BaseURL = p.baseURL // the mount; PathPrefix stays the service's
	cfg.ClientID, cfg.ClientSecret = up.fake.ClientID, up.fake.ClientSecret
	cfg.HTTPClient = &http.Client{Transport: rec}
	cfg.RetryWaitMin = cmpOr(cfg.RetryWaitMin, time.Millisecond)
	cfg.RetryWaitMax = cmpOr(cfg.RetryWaitMax, 5*time.Millisecond)
	c, err := management.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &env{up: up, proxy: p, rec: rec, client: c}
}

func cmpOr(a, b time.Duration) time.Duration {
	if a != 0 {
		return a
	}
	return b
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// An id with "/" and "%" must cross the proxy undecoded.
const oddID = "a/b%c"

// TestOperationsThroughProxy runs every operation through the mount.
func TestOperationsThroughProxy(t *testing.T) {
	e := setUp(t, management.Config{})
	ctx := ctxFor(t)
	fake := e.up.fake
	fake.AddUser(management.UserDetails{User: management.User{ID: "u-1", Email: management.Ptr("ada@example.com")}})
	fake.AddThing(management.ThingDetails{Thing: management.Thing{PhysicalID: oddID, Name: "Odd"}})

	user, err := e.client.Users.Get(ctx, "u-1")
	if err != nil {
		t.Fatalf("Users.Get: %v", err)
	}
	if user.ID != "u-1" || user.Email == nil || *user.Email != "ada@example.com" {
		t.Errorf("Users.Get = %+v, want u-1 ada@example.com", user.User)
	}
	if ids := userIDs(t, e.client.Users.List(ctx, nil)); !cmp.Equal(ids, []string{"u-1"}) {
		t.Errorf("Users.List = %q, want [u-1]", ids)
	}

	thing, err := e.client.Things.Get(ctx, oddID)
	if err != nil {
		t.Fatalf("Things.Get(%q): %v", oddID, err)
	}
	if thing.PhysicalID != oddID || thing.Name != "Odd" {
		t.Errorf("Things.Get = %q %q, want %q Odd", thing.PhysicalID, thing.Name, oddID)
	}
	updated, err := e.client.Things.Update(ctx, oddID, management.ThingUpdate{Name: management.Ptr("Renamed")})
	if err != nil {
		t.Fatalf("Things.Update(%q): %v", oddID, err)
	}
	if stored, _ := fake.Thing(oddID); updated.Name != "Renamed" || stored.Name != "Renamed" {
		t.Errorf("after Update: answered %q, stored %q, want Renamed", updated.Name, stored.Name)
	}

	assoc := management.NewAssociation{PhysicalID: "t/2", Model: "m-1", FirmwareVersion: "1.0"}
	got, created, err := e.client.Users.AssociateThing(ctx, "u-1", assoc)
	if err != nil {
		t.Fatalf("AssociateThing: %v", err)
	}
	if !created || got.PhysicalID != "t/2" {
		t.Errorf("AssociateThing = %q created %v, want t/2 created", got.PhysicalID, created)
	}
	if ids := thingIDs(t, e.client.Things.List(ctx, nil)); !cmp.Equal(ids, []string{"t/2", oddID}) {
		t.Errorf("Things.List = %q, want [t/2 %s]", ids, oddID)
	}
	if err := e.client.Users.DisassociateThing(ctx, "u-1", "t/2"); err != nil {
		t.Fatalf("DisassociateThing: %v", err)
	}
	if u, _ := fake.User("u-1"); len(u.AssociatedThings) != 0 {
		t.Errorf("after DisassociateThing the User still has %d Things", len(u.AssociatedThings))
	}

	verdict, err := e.client.Authenticate(ctx, "Bearer "+fake.IssueEndUserToken("u-1"))
	if err != nil {
		t.Fatalf("Authenticate: %v", err)
	}
	want := &management.EndUserAuthentication{Valid: true, UserID: "u-1", Role: management.RoleAppUser}
	if diff := cmp.Diff(want, verdict); diff != "" {
		t.Errorf("Authenticate (-want +got):\n%s", diff)
	}

	// The proxy forwarded the escaped ids as they were sent.
	wantPath := mount + managementtest.DefaultPathPrefix + "/things/a%2Fb%25c"
	if n := countPath(e.rec.exchanges(), wantPath); n != 2 {
		t.Errorf("%d requests to %s, want 2 (Get, Update)", n, wantPath)
	}
}

// TestPagingThroughProxy follows next_page links through the mount: they
// are relative to the service root and the SDK appends them to BaseURL.
func TestPagingThroughProxy(t *testing.T) {
	e := setUp(t, management.Config{}, managementtest.WithPageSize(2))
	ctx := ctxFor(t)
	var want []string
	for i := range 5 {
		id := fmt.Sprintf("u-%d", i)
		e.up.fake.AddUser(management.UserDetails{User: management.User{ID: id}})
		want = append([]string{id}, want...) // newest first
	}

	page, err := e.client.Users.ListPage(ctx, &management.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	prefix := managementtest.DefaultPathPrefix + "/users?page="
	if !strings.HasPrefix(page.NextPage, prefix) {
		t.Fatalf("NextPage = %q, want a link relative to the service root, %s...", page.NextPage, prefix)
	}
	if got := userIDs(t, e.client.Users.List(ctx, nil)); !cmp.Equal(got, want) {
		t.Errorf("Users.List = %q, want %q", got, want)
	}
	if n := e.up.fake.Requests(managementtest.RouteListUsers); n != 1+3 {
		t.Errorf("%d list requests reached the service, want 4 (ListPage, then 3 pages)", n)
	}
	for _, x := range e.rec.exchanges() {
		if x.status != http.StatusOK {
			t.Errorf("%s %s: status %d", x.method, x.path, x.status)
		}
	}
}

// TestGzipThroughProxy checks that the proxy compresses JSON, that the SDK
// reads it, and that MaxResponseBytes bounds the decompressed body.
func TestGzipThroughProxy(t *testing.T) {
	e := setUp(t, management.Config{})
	ctx := ctxFor(t)
	e.up.fake.AddThing(management.ThingDetails{Thing: management.Thing{
		PhysicalID: "t-1", Name: strings.Repeat("long name ", 100),
	}})
	thing, err := e.client.Things.Get(ctx, "t-1")
	if err != nil {
		t.Fatal(err)
	}
	if thing.Name != strings.Repeat("long name ", 100) {
		t.Errorf("Name = %q, want the seeded one", thing.Name)
	}
	xs := e.rec.exchanges()
	last := xs[len(xs)-1]
	if last.path != mount+managementtest.DefaultPathPrefix+"/things/t-1" || !last.gzipped {
		t.Errorf("last exchange %+v, want GET of t-1 answered gzipped", last)
	}

	// The compressed answer is far below the bound, the JSON above it.
	small := setUp(t, management.Config{MaxResponseBytes: 800})
	small.up.fake.AddThing(management.ThingDetails{Thing: management.Thing{
		PhysicalID: "t-1", Name: strings.Repeat("long name ", 100),
	}})
	_, err = small.client.Things.Get(ctx, "t-1")
	if !errors.Is(err, management.ErrResponseTooLarge) {
		t.Fatalf("Get with MaxResponseBytes 800 = %v, want ErrResponseTooLarge", err)
	}
	xs = small.rec.exchanges()
	if last := xs[len(xs)-1]; !last.gzipped {
		t.Errorf("last exchange %+v was not gzipped: the test proves nothing", last)
	}
}

// TestKeepAliveToUpstream checks that nginx reuses its connection to the
// service rather than opening one per request.
func TestKeepAliveToUpstream(t *testing.T) {
	e := setUp(t, management.Config{})
	ctx := ctxFor(t)
	e.up.fake.AddUser(management.UserDetails{User: management.User{ID: "u-1"}})
	for range 10 {
		if _, err := e.client.Users.Get(ctx, "u-1"); err != nil {
			t.Fatal(err)
		}
	}
	// 11 requests (token, 10 reads), one after the other, one worker.
	if n := e.up.conns.Load(); n != 1 {
		t.Errorf("nginx opened %d connections to the service for 11 sequential requests, want 1", n)
	}
}

// TestUpstreamDown: nginx answers 502 with its HTML page, which the SDK
// retries and then reports as *APIError with the page in Body.
func TestUpstreamDown(t *testing.T) {
	const maxRetries = 2
	e := setUp(t, management.Config{MaxRetries: maxRetries})
	ctx := ctxFor(t)
	e.up.fake.AddUser(management.UserDetails{User: management.User{ID: "u-1"}})
	if _, err := e.client.Users.Get(ctx, "u-1"); err != nil { // fetches the token
		t.Fatal(err)
	}
	e.up.srv.Close()
	before := len(e.rec.exchanges())

	_, err := e.client.Users.Get(ctx, "u-1")
	var apiErr *management.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("Users.Get with the service down = %v, want *APIError", err)
	}
	if apiErr.StatusCode != http.StatusBadGateway || apiErr.Reason != "" {
		t.Errorf("StatusCode %d Reason %q, want 502 and no reason", apiErr.StatusCode, apiErr.Reason)
	}
	if !bytes.HasPrefix(apiErr.Body, []byte("<html>")) || !bytes.Contains(apiErr.Body, []byte("502 Bad Gateway")) {
		t.Errorf("Body = %q, want nginx's 502 page", apiErr.Body)
	}
	attempts := e.rec.exchanges()[before:]
	if len(attempts) != 1+maxRetries {
		t.Errorf("%d attempts, want %d: %+v", len(attempts), 1+maxRetries, attempts)
	}
	for _, x := range attempts {
		if x.status != http.StatusBadGateway {
			t.Errorf("attempt %+v, want 502", x)
		}
	}
}

// TestGatewayTimeout: a service slower than proxy_read_timeout is answered
// 504 by nginx, which the SDK retries. The timeout is cut to 200ms here.
func TestGatewayTimeout(t *testing.T) {
	e := setUpEdited(t, management.Config{MaxRetries: 1}, []string{"proxy_read_timeout 60s;", "proxy_read_timeout 200ms;"})
	ctx := ctxFor(t)
	e.up.fake.AddUser(management.UserDetails{User: management.User{ID: "u-1"}})
	e.up.fake.DelayNext(managementtest.RouteGetUser, 1, time.Minute) // the first attempt only

	user, err := e.client.Users.Get(ctx, "u-1")
	if err != nil {
		t.Fatalf("Users.Get after one 504 = %v, want the retry to succeed", err)
	}
	if user.ID != "u-1" {
		t.Errorf("Users.Get = %q, want u-1", user.ID)
	}
	var statuses []int
	for _, x := range e.rec.exchanges() {
		if x.path == mount+managementtest.DefaultPathPrefix+"/users/u-1" {
			statuses = append(statuses, x.status)
		}
	}
	if want := []int{http.StatusGatewayTimeout, http.StatusOK}; !cmp.Equal(statuses, want) {
		t.Errorf("attempts answered %v, want %v", statuses, want)
	}
}

// TestBodyTooLarge: nginx refuses a body over client_max_body_size with
// 413, which the SDK does not retry.
func TestBodyTooLarge(t *testing.T) {
	e := setUp(t, management.Config{MaxRetries: 2})
	ctx := ctxFor(t)
	e.up.fake.AddThing(management.ThingDetails{Thing: management.Thing{PhysicalID: "t-1"}})
	big := management.ThingUpdate{CustomSettings: map[string]any{"blob": strings.Repeat("x", 2<<20)}}
	_, err := e.client.Things.Update(ctx, "t-1", big)
	var apiErr *management.APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("Update with a 2 MiB body = %v, want *APIError 413", err)
	}
	if n := countPath(e.rec.exchanges(), mount+managementtest.DefaultPathPrefix+"/things/t-1"); n != 1 {
		t.Errorf("%d attempts, want 1 (413 is not retried)", n)
	}
	if n := e.up.fake.Requests(managementtest.RouteUpdateThing); n != 0 {
		t.Errorf("%d updates reached the service, want 0", n)
	}
}

// TestMountEdges checks the edges of the mount with a plain HTTP client:
// no redirect to a trailing slash, and a target whose raw form does not
// start with the mount (nginx would decode it into the mount) refused
// rather than forwarded with the prefix it cannot strip.
func TestMountEdges(t *testing.T) {
	e := setUp(t, management.Config{})
	base := strings.TrimSuffix(e.proxy.baseURL, mount)
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	tests := []struct {
		path   string
		status int
	}{
		{mount, http.StatusNotFound},
		{"/%6Dgmt" + managementtest.DefaultPathPrefix + "/users", http.StatusBadRequest},
		{"/elsewhere", http.StatusNotFound},
	}
	for _, tt := range tests {
		resp, err := hc.Get(base + tt.path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.status || resp.Header.Get("Location") != "" {
			t.Errorf("GET %s: %d Location %q, want %d and no Location", tt.path, resp.StatusCode, resp.Header.Get("Location"), tt.status)
		}
	}
	if n := len(e.up.fake.Log()); n != 0 {
		t.Errorf("%d requests reached the service, want 0", n)
	}
}

func countPath(xs []exchange, path string) int {
	n := 0
	for _, x := range xs {
		if x.path == path {
			n++
		}
	}
	return n
}

func userIDs(t *testing.T, seq func(func(*management.User, error) bool)) []string {
	t.Helper()
	var ids []string
	for u, err := range seq {
		if err != nil {
			t.Fatalf("listing Users: %v", err)
		}
		ids = append(ids, u.ID)
	}
	return ids
}

func thingIDs(t *testing.T, seq func(func(*management.Thing, error) bool)) []string {
	t.Helper()
	var ids []string
	for th, err := range seq {
		if err != nil {
			t.Fatalf("listing Things: %v", err)
		}
		ids = append(ids, th.PhysicalID)
	}
	return ids
}
