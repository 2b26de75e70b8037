package otel_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
	mgmtotel "github.com/serviceconnect/management/otel"
	"go.opentelemetry.io/otel"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// withGlobal sets the global TracerProvider for the test.
func withGlobal(t *testing.T, tp trace.TracerProvider) {
	previous := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	t.Cleanup(func() { otel.SetTracerProvider(previous) })
}

// defaultClient is a Client of srv observed by mgmtotel.New() without a
// TracerProvider; wrap, when not nil, wraps its RoundTripper.
func defaultClient(t *testing.T, srv *managementtest.Server, wrap func(http.RoundTripper) http.RoundTripper) *management.Client {
	t.Helper()
	cfg := srv.Config()
	if wrap != nil {
		cfg.HTTPClient = &http.Client{Transport: wrap(cfg.HTTPClient.Transport)}
	}
	cfg.Observer = mgmtotel.New(mgmtotel.WithMeterProvider(metricnoop.NewMeterProvider()))
	c, err := management.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func fakeWithAda(t *testing.T) *managementtest.Server {
	srv := managementtest.NewServer()
	t.Cleanup(srv.Close)
	srv.AddUser(management.UserDetails{User: management.User{ID: "u-ada"}})
	return srv
}

// otelhttpLike is a RoundTripper that chooses its tracer as otelhttp's
// Transport does without a provider of its own (the provider of the
// request context's span when its span context is valid, else the global
// one) and records a CLIENT span "HTTP {method}" around the request. The
// real otelhttp is not a dependency of this module: this is the part of it
// that decides whether the SDK hides its spans.
type otelhttpLike struct{ base http.RoundTripper }

func (rt otelhttpLike) RoundTrip(r *http.Request) (*http.Response, error) {
	tp := otel.GetTracerProvider()
	if span := trace.SpanFromContext(r.Context()); span.SpanContext().IsValid() {
		tp = span.TracerProvider()
	}
	ctx, span := tp.Tracer("otelhttp-like").Start(r.Context(), "HTTP "+r.Method, trace.WithSpanKind(trace.SpanKindClient))
	defer span.End()
	return rt.base.RoundTrip(r.WithContext(ctx))
}

// Without a TracerProvider, the caller's span's provider records the
// SDK's spans below the caller's, though the global one is a no-op; and
// the spans an otelhttp Transport under the SDK records (with no provider
// of its own, it takes the context's span's) are not hidden: they are the
// children of the attempts' CLIENT spans.
func TestCallerSpanProviderAndOtelhttpBelow(t *testing.T) {
	withGlobal(t, noop.NewTracerProvider())
	app := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(app))
	c := defaultClient(t, fakeWithAda(t), func(rt http.RoundTripper) http.RoundTripper {
		return otelhttpLike{rt}
	})
	ctx, handler := tp.Tracer("app").Start(t.Context(), "handle request")
	if _, err := c.Users.Get(ctx, "u-ada"); err != nil {
		t.Fatal(err)
	}
	handler.End()
	if diff := cmp.Diff([]string{
		"handle request internal",
		"  GET /users/{user_id} internal",
		"    POST /auth/token internal",
		"      POST /auth/token client",
		"        HTTP POST client",
		"    GET /users/{user_id} client",
		"      HTTP GET client",
	}, shape(tree(app.Ended()))); diff != "" {
		t.Errorf("spans in the caller's provider (-want +got):\n%s", diff)
	}
}

// Without a span in the context, the global provider, as it is when the
// operation starts (set after New).
func TestGlobalProviderWithoutSpan(t *testing.T) {
	c := defaultClient(t, fakeWithAda(t), nil)
	global := tracetest.NewSpanRecorder()
	withGlobal(t, sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(global)))
	if _, err := c.Users.Get(t.Context(), "u-ada"); err != nil {
		t.Fatal(err)
	}
	if got := len(global.Ended()); got != 4 {
		t.Errorf("the global provider recorded %d spans, want 4:\n%s", got, render(tree(global.Ended())))
	}
}

// A span that does not record (here a remote parent, as a server that
// extracted the caller's trace context holds) does not choose the
// provider: the global one records the SDK's spans, in the remote trace.
func TestRemoteParentGlobalProvider(t *testing.T) {
	c := defaultClient(t, fakeWithAda(t), nil)
	global := tracetest.NewSpanRecorder()
	withGlobal(t, sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(global)))
	remote := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5, 6}, TraceFlags: trace.FlagsSampled, Remote: true})
	ctx := trace.ContextWithRemoteSpanContext(t.Context(), remote)
	if _, err := c.Users.Get(ctx, "u-ada"); err != nil {
		t.Fatal(err)
	}
	roots := tree(global.Ended())
	if len(roots) != 1 || !roots[0].span.Parent().Equal(remote) || roots[0].span.SpanContext().TraceID() != remote.TraceID() {
		t.Errorf("want one operation under the remote parent; got:\n%s", render(roots))
	}
}

// Two operations on a cold Client share one token fetch: the spans of the
// fetch sit under the operation that started it, and the other
// operation's span links to that one.
func TestFlightLink(t *testing.T) {
	srv := fakeWithAda(t)
	spans := tracetest.NewSpanRecorder()
	f := newFlightRig(t, srv, sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)), "/auth/token")
	c, sent, release, joined := f.client, f.sent, f.release, f.joined
	done := make(chan error, 2)
	get := func() {
		_, err := c.Users.Get(t.Context(), "u-ada")
		done <- err
	}
	go get()
	<-sent // the first operation's fetch is under way
	go get()
	<-joined
	close(release)
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	roots := tree(spans.Ended())
	if diff := cmp.Diff([]string{
		"GET /users/{user_id} internal",
		"  POST /auth/token internal",
		"    POST /auth/token client",
		"  GET /users/{user_id} client",
		"GET /users/{user_id} internal",
		"  GET /users/{user_id} client",
	}, shape(roots)); diff != "" {
		t.Fatalf("span trees (-want +got):\n%s", diff)
	}
	starter, waiter := roots[0].span, roots[1].span
	if len(starter.Links()) != 0 || len(waiter.Links()) != 1 || waiter.Links()[0].SpanContext.SpanID() != starter.SpanContext().SpanID() {
		t.Errorf("links: starter %v, waiter %v; want the waiter's only, to the starter", starter.Links(), waiter.Links())
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Two checks of one End User token make one call to the service: its spans
// sit under the request whose check started it, and the other request's
// span gets a link to that request's span.
func TestCheckFlightLink(t *testing.T) {
	srv := fakeWithAda(t)
	endUser := "Bearer " + srv.IssueEndUserToken("u-ada")
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	f := newFlightRig(t, srv, tp, "/authenticate")
	c, sent, release, joined := f.client, f.sent, f.release, f.joined
	a := &management.Authenticator{Client: c}
	done := make(chan error, 2)
	check := func(name string) {
		ctx, span := tp.Tracer("server").Start(t.Context(), name, trace.WithSpanKind(trace.SpanKindServer))
		r, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://app.example/", nil)
		r.Header.Set("Authorization", endUser)
		_, err := a.Check(r)
		// Ended before done is sent: the test reads the recorder once both
		// checks are done, and a span still open is not in it.
		span.End()
		done <- err
	}
	go check("request A")
	<-sent // A's call to the service is under way
	go check("request B")
	<-joined
	close(release)
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	roots := tree(spans.Ended())
	if diff := cmp.Diff([]string{
		"request A server",
		"  POST /authenticate internal",
		"    POST /auth/token internal",
		"      POST /auth/token client",
		"    POST /authenticate client",
		"request B server",
	}, shape(roots)); diff != "" {
		t.Fatalf("span trees (-want +got):\n%s", diff)
	}
	starter, waiter := roots[0].span, roots[1].span
	if len(starter.Links()) != 0 || len(waiter.Links()) != 1 || waiter.Links()[0].SpanContext.SpanID() != starter.SpanContext().SpanID() {
		t.Errorf("links: starter %v, waiter %v; want the waiter's only, to the starter", starter.Links(), waiter.Links())
	}
}

// flightRig is a Client of a fake whose requests to one path wait for
// release, once sent has told of them, and whose Observer (this module's,
// on tp) closes joined once an operation or check has joined another's
// flight.
type flightRig struct {
	client  *management.Client
	sent    chan struct{}
	release chan struct{}
	joined  chan struct{}
}

func newFlightRig(t *testing.T, srv *managementtest.Server, tp trace.TracerProvider, held string) flightRig {
	t.Helper()
	f := flightRig{sent: make(chan struct{}, 1), release: make(chan struct{}), joined: make(chan struct{})}
	cfg := srv.Config()
	base := cfg.HTTPClient.Transport
	cfg.HTTPClient = &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if strings.HasSuffix(r.URL.Path, held) {
			f.sent <- struct{}{}
			<-f.release
		}
		return base.RoundTrip(r)
	})}
	obs := mgmtotel.New(mgmtotel.WithTracerProvider(tp), mgmtotel.WithMeterProvider(metricnoop.NewMeterProvider()))
	link := obs.FlightJoined
	obs.FlightJoined = func(ctx, started context.Context) {
		link(ctx, started)
		close(f.joined)
	}
	cfg.Observer = obs
	c, err := management.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.client = c
	return f
}
