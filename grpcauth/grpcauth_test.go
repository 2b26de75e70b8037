package grpcauth_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/grpcauth"
	"github.com/serviceconnect/management/managementtest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthgrpc "google.golang.org/grpc/health/grpc_health_v1"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// The messages the tests expect: the fake relays its own for an invalid
// token.
const (
	wantMissing     = "An access token must be provided in the authorization metadata."
	wantInvalid     = "The access token is invalid."
	wantRelayed     = "The access token is invalid or has expired" // managementtest's to_client_response
	wantForbidden   = "This access token is not allowed here."
	wantUnavailable = "The access token could not be checked; try again later."
)

const (
	unaryCall  = "/grpc.testing.TestService/UnaryCall"
	emptyCall  = "/grpc.testing.TestService/EmptyCall"
	fullDuplex = "/grpc.testing.TestService/FullDuplexCall"
	outputCall = "/grpc.testing.TestService/StreamingOutputCall"
	inputCall  = "/grpc.testing.TestService/StreamingInputCall"
)

// wantStatus fails the test unless err is a status of code and msg.
func (r *rig) wantStatus(what string, err error, code codes.Code, msg string) {
	r.t.Helper()
	if err == nil {
		r.t.Errorf("%s: no error; want %v %q", what, code, msg)
		return
	}
	if st := r.status(err); st.Code() != code || st.Message() != msg {
		r.t.Errorf("%s: %v %q; want %v %q", what, st.Code(), st.Message(), code, msg)
	}
}

func TestUnaryLetsThrough(t *testing.T) {
	r := newRig(t, rigConfig{})
	ctx := with(r.ctx, r.token())
	for range 3 {
		res, err := r.client().UnaryCall(ctx, &testgrpc.SimpleRequest{})
		if err != nil || res.GetUsername() != "u-ada" {
			t.Fatalf("UnaryCall = %v, %v; want the End User u-ada in the handler's context", res, err)
		}
	}
	if n := r.authCalls(); n != 1 {
		t.Errorf("%d authenticate calls; want 1, then the cache", n)
	}
}

// Every refusal's code and message, for a unary RPC, with no call to the
// handler.
func TestUnaryCodes(t *testing.T) {
	r := newRig(t, rigConfig{})
	revoked := r.token()
	r.fake.RevokeEndUserToken(strings.TrimPrefix(revoked, "Bearer "))
	valid := r.token()
	for _, tc := range []struct {
		name          string
		authorization []string
		down          bool // the service answers 503
		code          codes.Code
		msg           string
		calls         int
	}{
		{name: "no token", code: codes.Unauthenticated, msg: wantMissing},
		{name: "a blank one", authorization: []string{" "}, code: codes.Unauthenticated, msg: wantMissing},
		{name: "no type", authorization: []string{strings.TrimPrefix(valid, "Bearer ")}, code: codes.Unauthenticated, msg: wantInvalid},
		{name: "a type alone", authorization: []string{"Bearer"}, code: codes.Unauthenticated, msg: wantInvalid},
		{name: "two", authorization: []string{valid, valid}, code: codes.Unauthenticated, msg: wantInvalid},
		{name: "unknown", authorization: []string{"Bearer eu-0123456789abcdefghij"}, code: codes.Unauthenticated, msg: wantRelayed, calls: 1},
		{name: "revoked", authorization: []string{revoked}, code: codes.Unauthenticated, msg: wantRelayed, calls: 1},
		{name: "a management token", authorization: []string{r.managementToken()}, code: codes.PermissionDenied, msg: wantForbidden, calls: 1},
		{name: "the service cannot answer", authorization: []string{r.token()}, down: true, code: codes.Unavailable, msg: wantUnavailable, calls: 5},
	} {
		if tc.down {
			r.fake.FailNext(managementtest.RouteAuthenticate, 100, http.StatusServiceUnavailable, 0)
		}
		before, handled := r.authCalls(), r.svc.handled.Load()
		_, err := r.client().UnaryCall(with(r.ctx, tc.authorization...), &testgrpc.SimpleRequest{})
		r.wantStatus(tc.name, err, tc.code, tc.msg)
		if n := r.authCalls() - before; n != tc.calls {
			t.Errorf("%s: %d authenticate calls; want %d", tc.name, n, tc.calls)
		}
		if r.svc.handled.Load() != handled {
			t.Errorf("%s: the handler ran", tc.name)
		}
		r.fake.ClearFaults()
	}
	if _, err := r.client().UnaryCall(with(r.ctx, valid), &testgrpc.SimpleRequest{}); err != nil {
		t.Errorf("UnaryCall with a valid token after the refusals = %v", err)
	}
}

// A check that would start one call too many, or one over the miss budget,
// is ResourceExhausted; a caller that gives up while its check waits ends
// its RPC with Canceled or DeadlineExceeded, as the server says it.
func TestUnaryBounds(t *testing.T) {
	t.Run("too many checks, canceled, deadline", func(t *testing.T) {
		r := newRig(t, rigConfig{auth: func(a *management.Authenticator) { a.MaxConcurrentChecks = 1 }})
		r.fake.DelayNext(managementtest.RouteAuthenticate, 1, time.Minute)
		held, cancel := context.WithCancel(r.ctx)
		heldDone := make(chan error, 1)
		go func() {
			_, err := r.client().UnaryCall(with(held, r.token()), &testgrpc.SimpleRequest{})
			heldDone <- err
		}()
		waitFor(t, "the first check's call", func() bool { return r.authCalls() == 1 })

		_, err := r.client().UnaryCall(with(r.ctx, r.token()), &testgrpc.SimpleRequest{})
		r.wantStatus("a second token while one call is in flight", err, codes.ResourceExhausted, wantUnavailable)

		// The token whose call is in flight: this check joins it, and waits
		// past the deadline the server set.
		ctx := metadata.AppendToOutgoingContext(with(r.ctx, r.heldToken()), serverDeadline, "50ms")
		_, err = r.client().UnaryCall(ctx, &testgrpc.SimpleRequest{})
		r.wantStatus("past the server's deadline", err, codes.DeadlineExceeded, context.DeadlineExceeded.Error())

		cancel()
		if st := r.status(receive(r, "the held RPC's end", heldDone)); st.Code() != codes.Canceled {
			t.Errorf("canceled: %v; want Canceled", st)
		}
		waitFor(t, "the server's answer to the canceled RPC", func() bool { return r.served.count(unaryCall) == 3 })
		if st := r.status(r.served.last(unaryCall)); st.Code() != codes.Canceled {
			t.Errorf("the server ended the canceled RPC with %v; want Canceled", st)
		}
	})
	t.Run("over the miss budget", func(t *testing.T) {
		r := newRig(t, rigConfig{auth: func(a *management.Authenticator) {
			a.MissBudget = management.MissBudget{PerSecond: 0.001, Burst: 1}
		}})
		first := r.token()
		if _, err := r.client().UnaryCall(with(r.ctx, first), &testgrpc.SimpleRequest{}); err != nil {
			t.Fatal(err)
		}
		_, err := r.client().UnaryCall(with(r.ctx, r.token()), &testgrpc.SimpleRequest{})
		r.wantStatus("a second token over the budget", err, codes.ResourceExhausted, wantUnavailable)
		if _, err := r.client().UnaryCall(with(r.ctx, first), &testgrpc.SimpleRequest{}); err != nil {
			t.Errorf("the first token, cached, over the budget: %v; want it served", err)
		}
	})
}

// heldToken is the token of the RPC whose check is held (the rig's first).
func (r *rig) heldToken() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return "Bearer " + r.tokens[0]
}

// count is the number of RPCs of method served so far.
func (s *served) count(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.errs[method])
}

// waitFor waits until cond holds, failing the test after 10 s: for what
// happens in another goroutine or process, never to let time pass.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10 s for %s", what)
		}
	}
}

// Concurrent RPCs of one token make one authenticate call: each joins the
// call the first started.
func TestOneCallForConcurrentRPCs(t *testing.T) {
	var joined atomic.Int64
	gate := make(chan struct{})
	r := newRig(t, rigConfig{config: func(cfg *management.Config) {
		cfg.Observer = &management.Observer{FlightJoined: func(context.Context, context.Context) { joined.Add(1) }}
		cfg.HTTPClient = &http.Client{Transport: gated{next: cfg.HTTPClient.Transport, gate: gate}}
	}})
	const n = 20
	ctx := with(r.ctx, r.token())
	var wg sync.WaitGroup
	errs := make([]error, n)
	users := make([]string, n)
	for i := range n {
		wg.Go(func() {
			res, err := r.client().UnaryCall(ctx, &testgrpc.SimpleRequest{})
			errs[i], users[i] = err, res.GetUsername()
		})
	}
	waitFor(t, "every RPC to wait for the first one's call", func() bool { return joined.Load() == n-1 })
	close(gate)
	wg.Wait()
	for i := range n {
		if errs[i] != nil || users[i] != "u-ada" {
			t.Errorf("RPC %d = %q, %v", i, users[i], errs[i])
		}
	}
	if c := r.authCalls(); c != 1 {
		t.Errorf("%d authenticate calls for %d concurrent RPCs of one token; want 1", c, n)
	}
}

// gated holds the authenticate calls until gate is closed.
type gated struct {
	next http.RoundTripper
	gate chan struct{}
}

func (g gated) RoundTrip(req *http.Request) (*http.Response, error) {
	if strings.HasSuffix(req.URL.Path, "/authenticate") {
		select {
		case <-g.gate:
		case <-req.Context().Done():
			return nil, req.Context().Err()
		}
	}
	return g.next.RoundTrip(req)
}

// WithSkip serves the methods it names without a check, and their handlers
// find no End User; the health service's Check and Watch are always served,
// its List only when skipped.
func TestSkip(t *testing.T) {
	for _, skipList := range []bool{false, true} {
		var opts []grpcauth.Option
		if skipList {
			opts = append(opts, grpcauth.WithSkip(emptyCall, "/grpc.health.v1.Health/List"))
		}
		r := newRig(t, rigConfig{opts: opts})
		ctx := r.ctx
		health := healthgrpc.NewHealthClient(r.conn)
		if res, err := health.Check(ctx, &healthgrpc.HealthCheckRequest{}); err != nil || res.GetStatus() != healthgrpc.HealthCheckResponse_SERVING {
			t.Errorf("skip list %t: Health/Check without a token = %v, %v; want SERVING", skipList, res, err)
		}
		watch, err := health.Watch(ctx, &healthgrpc.HealthCheckRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if res, err := watch.Recv(); err != nil || res.GetStatus() != healthgrpc.HealthCheckResponse_SERVING {
			t.Errorf("skip list %t: Health/Watch without a token = %v, %v; want SERVING", skipList, res, err)
		}
		_, err = health.List(ctx, &healthgrpc.HealthListRequest{})
		var header metadata.MD
		_, emptyErr := r.client().EmptyCall(ctx, &testgrpc.Empty{}, grpc.Header(&header))
		if skipList {
			if err != nil || emptyErr != nil {
				t.Errorf("skipped Health/List = %v, EmptyCall = %v; want both served", err, emptyErr)
			}
			if got := header.Get("end-user"); !slices.Equal(got, []string{""}) {
				t.Errorf("skipped EmptyCall found End User %q in its context; want none", got)
			}
		} else {
			r.wantStatus("Health/List without a token", err, codes.Unauthenticated, wantMissing)
			r.wantStatus("EmptyCall without a token", emptyErr, codes.Unauthenticated, wantMissing)
		}
		_, err = r.client().UnaryCall(ctx, &testgrpc.SimpleRequest{})
		r.wantStatus("UnaryCall without a token", err, codes.Unauthenticated, wantMissing)
		if n := r.authCalls(); n != 0 {
			t.Errorf("%d authenticate calls; want 0", n)
		}
	}
}

// Misuse panics when the interceptor is built, naming what is wrong.
func TestMisusePanics(t *testing.T) {
	fake := managementtest.NewServer()
	defer fake.Close()
	valid := &management.Authenticator{Client: fake.Client()}
	for _, tc := range []struct {
		name string
		a    *management.Authenticator
		opts []grpcauth.Option
		want string
	}{
		{"nil Authenticator", nil, nil, "the Authenticator is nil"},
		{"no Client", &management.Authenticator{}, nil, "invalid argument: Authenticator.Client is nil"},
		{"a zero Client", &management.Authenticator{Client: &management.Client{}}, nil,
			"invalid argument: Authenticator.Client was not made by NewClient; use NewClient"},
		{"a method without its slash", valid, []grpcauth.Option{grpcauth.WithSkip("grpc.health.v1.Health/List")},
			`WithSkip("grpc.health.v1.Health/List"): want a full method name, such as "/grpc.health.v1.Health/Check"`},
		{"a service alone", valid, []grpcauth.Option{grpcauth.WithSkip("/grpc.health.v1.Health")},
			`WithSkip("/grpc.health.v1.Health"): want a full method name`},
	} {
		for fn, build := range map[string]func(){
			"UnaryServerInterceptor":  func() { grpcauth.UnaryServerInterceptor(tc.a, tc.opts...) },
			"StreamServerInterceptor": func() { grpcauth.StreamServerInterceptor(tc.a, tc.opts...) },
		} {
			got := func() (p any) {
				defer func() { p = recover() }()
				build()
				return nil
			}()
			msg, _ := got.(string)
			if want := "grpcauth: " + fn + ": " + tc.want; !strings.HasPrefix(msg, want) {
				t.Errorf("%s: %s panicked with %v; want %q", tc.name, fn, got, want)
			}
		}
	}
	// A nil Option is no misuse: options are often built conditionally.
	grpcauth.UnaryServerInterceptor(valid, nil)
	grpcauth.StreamServerInterceptor(valid, nil, grpcauth.WithSkip())
}

// A stream is checked when it opens, whichever its kind.
func TestStreamOpens(t *testing.T) {
	r := newRig(t, rigConfig{})
	valid, mgmt := r.token(), r.managementToken()
	for _, tc := range []struct {
		name string
		auth []string
		code codes.Code
		msg  string
	}{
		{"no token", nil, codes.Unauthenticated, wantMissing},
		{"a management token", []string{mgmt}, codes.PermissionDenied, wantForbidden},
		{"valid", []string{valid}, codes.OK, ""},
	} {
		ctx := with(r.ctx, tc.auth...)
		out, err := r.client().StreamingOutputCall(ctx, &testgrpc.StreamingOutputCallRequest{ResponseParameters: []*testgrpc.ResponseParameters{{}}})
		if err != nil {
			t.Fatal(err)
		}
		res, err := out.Recv()
		duplex, err2 := r.client().FullDuplexCall(ctx)
		if err2 != nil {
			t.Fatal(err2)
		}
		_ = duplex.Send(&testgrpc.StreamingOutputCallRequest{})
		dres, derr := duplex.Recv()
		_ = duplex.CloseSend()
		in, err3 := r.client().StreamingInputCall(ctx)
		if err3 != nil {
			t.Fatal(err3)
		}
		_ = in.Send(&testgrpc.StreamingInputCallRequest{Payload: &testgrpc.Payload{Body: []byte("abc")}})
		ires, ierr := in.CloseAndRecv()
		if tc.code == codes.OK {
			if err != nil || string(res.GetPayload().GetBody()) != "u-ada" || derr != nil || string(dres.GetPayload().GetBody()) != "u-ada" ||
				ierr != nil || ires.GetAggregatedPayloadSize() != 3 {
				t.Errorf("%s: server streaming %v, %v; bidi %v, %v; client streaming %v, %v", tc.name, res, err, dres, derr, ires, ierr)
			}
			continue
		}
		r.wantStatus(tc.name+", server streaming", err, tc.code, tc.msg)
		r.wantStatus(tc.name+", bidi", derr, tc.code, tc.msg)
		r.wantStatus(tc.name+", client streaming", ierr, tc.code, tc.msg)
	}
	if n := r.authCalls(); n != 2 {
		t.Errorf("%d authenticate calls; want 2 (one per token)", n)
	}
}

// A busy stream reads the cache on every message and makes no call while
// its verdict holds.
func TestStreamWithinCacheTTL(t *testing.T) {
	r := newRig(t, rigConfig{auth: func(a *management.Authenticator) { a.CacheTTL = time.Hour }})
	duplex := r.duplex(with(r.ctx, r.token()))
	for i := range 99 {
		if user, err := exchange(duplex); err != nil || user != "u-ada" {
			t.Fatalf("message %d: %q, %v", i, user, err)
		}
	}
	_ = duplex.CloseSend()
	if _, err := duplex.Recv(); !errors.Is(err, io.EOF) {
		t.Errorf("end of the stream: %v; want io.EOF", err)
	}
	if n := r.authCalls(); n != 1 {
		t.Errorf("%d authenticate calls for 100 messages each way; want 1", n)
	}
}

// signOut revokes the token at the service and forgets its verdict, as a
// sign-out handler does.
func (r *rig) signOut(authorization string) {
	r.t.Helper()
	_, tok, _ := strings.Cut(authorization, " ")
	r.fake.RevokeEndUserToken(tok)
	if err := r.auth.Forget(context.Background(), authorization); err != nil {
		r.t.Fatal(err)
	}
}

// After Forget, the next message of an open stream checks the token again,
// and the refusal ends the stream with its code: received messages are not
// delivered, sent ones not sent, and the refusal is the RPC's status even
// when the handler returns nil.
func TestStreamRefusedAfterForget(t *testing.T) {
	t.Run("bidi", func(t *testing.T) {
		r := newRig(t, rigConfig{})
		tok := r.token()
		duplex := r.duplex(with(r.ctx, tok))
		r.signOut(tok)
		_, err := exchange(duplex)
		r.wantStatus("the message after Forget", err, codes.Unauthenticated, wantRelayed)
		if n := r.authCalls(); n != 2 {
			t.Errorf("%d authenticate calls; want 2 (when it opened, and after Forget)", n)
		}
	})
	// A scheme is case-insensitive: a stream opened as "bearer T" is
	// refused after Forget("Bearer T"), and the other way round.
	for _, spell := range []struct{ opened, forgotten string }{{"bearer ", "Bearer "}, {"Bearer ", "BEARER "}} {
		t.Run("bidi, opened as "+spell.opened+"forgotten as "+spell.forgotten, func(t *testing.T) {
			r := newRig(t, rigConfig{})
			tok := strings.TrimPrefix(r.token(), "Bearer ")
			duplex := r.duplex(with(r.ctx, spell.opened+tok))
			r.signOut(spell.forgotten + tok)
			_, err := exchange(duplex)
			r.wantStatus("the message after Forget of another spelling", err, codes.Unauthenticated, wantRelayed)
		})
	}
	t.Run("server streaming, the handler returning nil", func(t *testing.T) {
		r := newRig(t, rigConfig{})
		tok := r.token()
		out, err := r.client().StreamingOutputCall(with(r.ctx, tok), &testgrpc.StreamingOutputCallRequest{
			ResponseParameters: []*testgrpc.ResponseParameters{{}, {}}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := out.Recv(); err != nil {
			t.Fatal(err)
		}
		r.signOut(tok)
		r.step()
		_, err = out.Recv()
		r.wantStatus("the message after Forget", err, codes.Unauthenticated, wantRelayed)
		cause := receive(r, "end of the handler's context", r.svc.causes)
		if st, ok := status.FromError(cause); !ok || st.Code() != codes.Unauthenticated {
			t.Errorf("context.Cause of the handler's context = %v; want the refusal", cause)
		}
		r.wantStatus("the status the server ended the RPC with", r.served.last(outputCall), codes.Unauthenticated, wantRelayed)
	})
	t.Run("client streaming", func(t *testing.T) {
		r := newRig(t, rigConfig{})
		tok := r.token()
		in, err := r.client().StreamingInputCall(with(r.ctx, tok))
		if err != nil {
			t.Fatal(err)
		}
		if err := in.Send(&testgrpc.StreamingInputCallRequest{Payload: &testgrpc.Payload{Body: []byte("abc")}}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the check of the opening stream", func() bool { return r.authCalls() == 1 })
		// The first message is received before Forget or after: either
		// way the stream's first Recv checks, and the last one refuses.
		r.signOut(tok)
		_ = in.Send(&testgrpc.StreamingInputCallRequest{Payload: &testgrpc.Payload{Body: []byte("def")}})
		_, err = in.CloseAndRecv()
		r.wantStatus("the stream after Forget", err, codes.Unauthenticated, wantRelayed)
	})
}

// Once a stream's verdict is older than CacheTTL, its next message checks
// the token again: a revoked token ends it without Forget, a valid one
// goes on. (A short CacheTTL on the wall clock: the server's network I/O
// cannot run in a synctest bubble. The root package's TestRecheck holds
// the exact expiry under synctest.)
func TestStreamRecheckedAfterCacheTTL(t *testing.T) {
	const ttl = 50 * time.Millisecond
	for _, revoke := range []bool{true, false} {
		r := newRig(t, rigConfig{auth: func(a *management.Authenticator) { a.CacheTTL = ttl }})
		tok := r.token()
		duplex := r.duplex(with(r.ctx, tok))
		if revoke {
			r.fake.RevokeEndUserToken(strings.TrimPrefix(tok, "Bearer "))
		}
		time.Sleep(ttl) // the verdict, confirmed before this, expires
		user, err := exchange(duplex)
		if revoke {
			r.wantStatus("revoked, after CacheTTL", err, codes.Unauthenticated, wantRelayed)
		} else if err != nil || user != "u-ada" {
			t.Errorf("valid, after CacheTTL: %q, %v; want the stream to go on", user, err)
		}
		if n := r.authCalls(); n < 2 {
			t.Errorf("revoked %t: %d authenticate calls; want a second one after CacheTTL", revoke, n)
		}
	}
}

// One Authenticator guards a service's HTTP and gRPC surfaces: one cache
// (one call for both), and a sign-out on HTTP ends the token's gRPC stream.
func TestHTTPAndGRPCShareOneAuthenticator(t *testing.T) {
	r := newRig(t, rigConfig{})
	api := httptest.NewServer(r.auth.Handler(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/sign-out" {
			r.signOut(req.Header.Get("Authorization"))
		}
		u, _ := management.EndUserFromContext(req.Context())
		_, _ = io.WriteString(w, u.ID)
	})))
	defer api.Close()
	tok := r.token()
	get := func(path string) string {
		req, _ := http.NewRequest(http.MethodGet, api.URL+path, nil)
		req.Header.Set("Authorization", tok)
		res, err := api.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return string(b)
	}
	if got := get("/me"); got != "u-ada" {
		t.Fatalf("HTTP: %q; want u-ada", got)
	}
	duplex := r.duplex(with(r.ctx, tok))
	if n := r.authCalls(); n != 1 {
		t.Errorf("%d authenticate calls for one token on HTTP and gRPC; want 1", n)
	}
	if got := get("/sign-out"); got != "u-ada" {
		t.Fatalf("HTTP sign-out: %q", got)
	}
	_, err := exchange(duplex)
	r.wantStatus("the gRPC stream after the HTTP sign-out", err, codes.Unauthenticated, wantRelayed)
}

// Nothing the interceptors, the SDK or grpc started outlives the server:
// the goroutines of streams refused mid-way and of checks included.
func TestNoGoroutineLeft(t *testing.T) {
	before := goroutines()
	t.Run("serve", func(t *testing.T) {
		r := newRig(t, rigConfig{})
		tok := r.token()
		ctx := with(r.ctx, tok)
		if _, err := r.client().UnaryCall(ctx, &testgrpc.SimpleRequest{}); err != nil {
			t.Fatal(err)
		}
		duplex := r.duplex(ctx)
		r.duplex(ctx) // left open: Stop ends it
		r.signOut(tok)
		if _, err := exchange(duplex); status.Code(err) != codes.Unauthenticated {
			t.Fatalf("after Forget: %v", err)
		}
	})
	var left []string
	waitFor(t, "the goroutines to end", func() bool {
		left = nil
		for id, stack := range goroutines() {
			if _, ok := before[id]; !ok {
				left = append(left, stack)
			}
		}
		return len(left) == 0
	})
	if len(left) > 0 {
		t.Errorf("goroutines left:\n%s", strings.Join(left, "\n\n"))
	}
}

// goroutines returns the stacks of the goroutines that run code of grpc,
// of net/http or of this repository, by goroutine id.
func goroutines() map[string]string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	out := map[string]string{}
	for _, g := range strings.Split(string(buf), "\n\n") {
		head, _, _ := strings.Cut(g, "\n")
		if strings.Contains(head, "[running]") {
			continue // this goroutine
		}
		if strings.Contains(g, "google.golang.org/grpc") || strings.Contains(g, "net/http") || strings.Contains(g, "serviceconnect/management") {
			id, _, _ := strings.Cut(strings.TrimPrefix(head, "goroutine "), " ")
			out[id] = g
		}
	}
	return out
}

// duplexStream is the client's side of FullDuplexCall.
type duplexStream = grpc.BidiStreamingClient[testgrpc.StreamingOutputCallRequest, testgrpc.StreamingOutputCallResponse]

// duplex opens a bidi stream with ctx's authorization and exchanges one
// message on it, failing the test unless the End User u-ada answers.
func (r *rig) duplex(ctx context.Context) duplexStream {
	r.t.Helper()
	d, err := r.client().FullDuplexCall(ctx)
	if err != nil {
		r.t.Fatal(err)
	}
	if user, err := exchange(d); err != nil || user != "u-ada" {
		r.t.Fatalf("first message of the stream: %q, %v; want u-ada", user, err)
	}
	return d
}

// exchange sends a message on d and returns the End User the answer names,
// or the status that ended the stream.
func exchange(d duplexStream) (string, error) {
	// A Send on a stream the server ended says io.EOF; Recv says why.
	if err := d.Send(&testgrpc.StreamingOutputCallRequest{}); err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	res, err := d.Recv()
	return string(res.GetPayload().GetBody()), err
}
