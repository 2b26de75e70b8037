package grpcauth

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/serviceconnect/management"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// The methods of the standard health service (grpc.health.v1) that a load
// balancer or an orchestrator calls without a token: always served.
const (
	healthCheck = "/grpc.health.v1.Health/Check"
	healthWatch = "/grpc.health.v1.Health/Watch"
)

// metadataKey is the metadata key of the End User's credential, as gRPC
// clients send it (per-RPC credentials such as oauth's): the lower-case
// form of HTTP's Authorization header.
const metadataKey = "authorization"

// Option configures an interceptor.
type Option func(*config)

type config struct {
	skip map[string]bool // full method names served without a check
}

// WithSkip serves the given methods without a check, for example a public
// catalogue or a method that authenticates by other means. A method is
// named as grpc.UnaryServerInfo.FullMethod and grpc.StreamServerInfo.FullMethod
// give it, "/package.Service/Method". Their handlers find no End User in
// their context. The health service's Check and Watch are always served
// (probes carry no token); its List, which names every service, is checked
// unless it is given here. WithSkip panics, when the interceptor is built,
// on a name that is not of that form.
func WithSkip(fullMethods ...string) Option {
	return func(c *config) {
		for _, m := range fullMethods {
			c.skip[m] = true
		}
	}
}

// guard is what both interceptors hold: the Authenticator and the methods
// served without a check.
type guard struct {
	a    *management.Authenticator
	skip map[string]bool
}

// newGuard returns the guard of an interceptor, or panics on misuse, naming
// what is wrong and the function it was given to (as management's
// Authenticator.Handler does): an interceptor that could never let an RPC
// through is a setup error, not a run of refusals.
func newGuard(fn string, a *management.Authenticator, opts []Option) *guard {
	if a == nil {
		panic("grpcauth: " + fn + ": the Authenticator is nil")
	}
	// Recheck of a context without a check refuses a misconfigured
	// Authenticator as Check would, and otherwise says ErrMissingToken,
	// doing nothing else.
	if err := a.Recheck(context.Background()); !errors.Is(err, management.ErrMissingToken) {
		panic("grpcauth: " + fn + ": " + strings.TrimPrefix(err.Error(), "management: "))
	}
	c := config{skip: map[string]bool{healthCheck: true, healthWatch: true}}
	for _, opt := range opts {
		if opt != nil {
			opt(&c)
		}
	}
	for m := range c.skip {
		if !isFullMethod(m) {
			panic(fmt.Sprintf("grpcauth: %s: WithSkip(%q): want a full method name, such as %q", fn, m, healthCheck))
		}
	}
	return &guard{a: a, skip: c.skip}
}

// isFullMethod reports whether m is "/package.Service/Method".
func isFullMethod(m string) bool {
	service, method, ok := strings.Cut(strings.TrimPrefix(m, "/"), "/")
	return strings.HasPrefix(m, "/") && ok && service != "" && method != "" && !strings.Contains(method, "/")
}

// check checks the RPC of ctx: the context for its handler, carrying the
// End User, or the error that ends the RPC.
func (g *guard) check(ctx context.Context) (context.Context, error) {
	checked, _, err := g.a.CheckAuthorization(ctx, metadata.ValueFromIncomingContext(ctx, metadataKey))
	if err != nil {
		return nil, refusal(ctx, err)
	}
	return checked, nil
}

// UnaryServerInterceptor returns an interceptor that calls the handler only
// for an RPC whose "authorization" metadata holds a valid End User access
// token of role RoleAppUser, as a.CheckAuthorization says (with its cache,
// its calls in flight, MissBudget, MaxConcurrentChecks, SharedStore and
// Forget: one Authenticator may guard the service's HTTP surface too).
// The End User is in the handler's context: management.EndUserFromContext.
// Other RPCs end with the status Status gives the refusal, without calling
// the handler.
//
// It panics, naming what is wrong, when a is nil or is an Authenticator
// that Check refuses (its Client nil or not made by management.NewClient),
// as Authenticator.Handler does, or when WithSkip was given a name that is
// not a full method name.
func UnaryServerInterceptor(a *management.Authenticator, opts ...Option) grpc.UnaryServerInterceptor {
	g := newGuard("UnaryServerInterceptor", a, opts)
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if g.skip[info.FullMethod] {
			return handler(ctx, req)
		}
		ctx, err := g.check(ctx)
		if err != nil {
			return nil, err
		}
		return handler(ctx, req)
	}
}

// StreamServerInterceptor returns an interceptor that opens a stream only
// for an RPC whose "authorization" metadata holds a valid End User access
// token, as UnaryServerInterceptor does, and keeps checking it while the
// stream lasts: on each message received or sent, the verdict is read
// again from a's cache (a.Recheck: no digest of the token, no allocation),
// and once it is older than a.CacheTTL, or a.Forget dropped it, the token
// is checked again. A refusal ends the stream: the message is neither
// delivered nor sent, RecvMsg and SendMsg return the refusal's status from
// then on, the handler's context is canceled (its context.Cause is that
// status), and the status is the RPC's, whatever the handler returns.
//
// A stream that neither receives nor sends is not checked again: end it
// from the handler when it must not outlive its token.
//
// The End User in the handler's context is the one of the check that
// opened the stream: a re-check that lets the token through stale (see
// management.Authenticator.StaleIfError) keeps the stream going without
// changing it, so its Stale field tells how the stream was opened, not
// how it was last checked. Serve what must never reach a stale End User
// by unary calls, each checked on its own.
//
// It panics as UnaryServerInterceptor does.
func StreamServerInterceptor(a *management.Authenticator, opts ...Option) grpc.StreamServerInterceptor {
	g := newGuard("StreamServerInterceptor", a, opts)
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if g.skip[info.FullMethod] {
			return handler(srv, ss)
		}
		checked, err := g.check(ss.Context())
		if err != nil {
			return err
		}
		s := newStream(ss, g.a, checked)
		defer s.cancel(nil)
		err = handler(srv, s)
		if r := s.refused.Load(); r != nil {
			return *r
		}
		return err
	}
}
