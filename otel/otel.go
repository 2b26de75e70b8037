// Package otel records the management SDK's calls with OpenTelemetry, by
// the HTTP client semantic conventions, through a management.Observer.
//
//	cfg.Observer = otel.New() // the global providers and propagator
//	client, err := management.NewClient(cfg)
//
// Spans: each SDK operation (a Users.Get, one page of a listing, an
// Authenticate, the management token's fetch) is an INTERNAL span named by
// its route template, "GET /users/{user_id}"; each HTTP request it sends,
// retries and the replay after a 401 included, is a CLIENT span of the
// same name below it, with http.request.method, server.address,
// server.port, url.template, url.full (ids replaced by REDACTED),
// http.response.status_code, error.type, http.request.resend_count on
// resends, network.protocol.version and the service's request id
// (http.response.header.x-request-id). Each attempt's request carries the
// trace context of its CLIENT span, injected by the propagator.
//
// Metrics (instrumentation scope github.com/serviceconnect/management/otel):
//
//	http.client.request.duration            histogram, s, once per HTTP request (conventions' attributes and buckets)
//	management.client.operation.duration    histogram, s, once per operation (retry waits and the token fetch included)
//	management.client.retries               counter, resends (retries and the 401 replay), by the cause
//	management.client.token.refreshes       counter, by status, error.type (absent on success)
//	management.authenticator.hits           counter, checks answered from the cache
//	management.authenticator.misses         counter, checks that joined or made a call
//	management.authenticator.refusals       counter, checks refused without a call
//	management.authenticator.stale          counter, checks that let a token through stale (StaleIfError)
//	management.authenticator.calls.active   up-down counter, authenticate calls in flight
//	management.breaker.open                 up-down counter, breakers open now, by management.breaker
//	management.breaker.openings             counter, breakers opened, by management.breaker
//
// management.breaker names what a breaker guards (management.BreakerName):
// "shared_store" (the shared store, after an operation failed or timed
// out), "lease_waits" (the waits on other replicas' leases, after several
// were waited out in a row) or "authenticate" (an Authenticator's calls to
// the service, after several in a row got no answer).
//
// No id, token, secret or page cursor is in a span name, attribute, event
// or metric by default; WithPathValues adds the ids (never cursors).
package otel

import (
	"context"

	"github.com/serviceconnect/management"
	otelapi "go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of the tracer and meter.
const ScopeName = "github.com/serviceconnect/management/otel"

// Option configures New.
type Option func(*config)

type config struct {
	tp         trace.TracerProvider
	mp         metric.MeterProvider
	props      propagation.TextMapPropagator
	pathValues bool
}

// WithTracerProvider sets the TracerProvider. Without it, each operation
// takes the provider of the span in its context, when there is a
// recording one, so that the SDK's spans join the caller's trace through
// the caller's pipeline, else the global one
// (go.opentelemetry.io/otel.GetTracerProvider) as it is at that moment.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) { c.tp = tp }
}

// WithMeterProvider sets the MeterProvider. Default: the global one
// (go.opentelemetry.io/otel.GetMeterProvider).
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) { c.mp = mp }
}

// WithPropagators sets the propagator that writes each attempt's trace
// context into its request's headers, in place of the global one
// (go.opentelemetry.io/otel.GetTextMapPropagator, a no-op until the
// program sets one), as otelhttp's option of that name does. The SDK
// copies only the fields a propagator may set: never Authorization.
func WithPropagators(p propagation.TextMapPropagator) Option {
	return func(c *config) { c.props = p }
}

// WithPathValues records the ids the SDK is called with: as span
// attributes of the operation ("management.user_id",
// "management.physical_id", "management.thing_physical_id"), in url.full
// as sent, and error texts (which may quote ids) as span status
// descriptions. Off by default: ids can be personal data. Page cursors
// stay out either way, and metrics never carry ids.
func WithPathValues() Option {
	return func(c *config) { c.pathValues = true }
}

// New returns a management.Observer that records spans and metrics with
// OpenTelemetry; set it as management.Config.Observer. An instrument the
// MeterProvider fails to create records nothing (the meter returns a no-op
// one with the error, reported to the global error handler).
func New(opts ...Option) *management.Observer {
	cfg := config{}
	for _, opt := range opts {
		opt(&cfg)
	}
	if cfg.mp == nil {
		cfg.mp = otelapi.GetMeterProvider()
	}
	o := &observer{tp: cfg.tp, props: cfg.props, pathValues: cfg.pathValues}
	o.instruments(cfg.mp.Meter(ScopeName, metric.WithInstrumentationVersion(management.Version)))
	return &management.Observer{
		OperationStart:    o.operationStart,
		OperationDone:     o.operationDone,
		Retry:             o.retry,
		AuthCheck:         o.check,
		AuthCallsInFlight: o.calls,
		AttemptStart:      o.attemptStart,
		AttemptDone:       o.attemptDone,
		FlightJoined:      o.flightJoined,
		BreakerChange:     o.breaker,
	}
}

// observer holds the configuration and the instruments; its methods are
// the hooks.
type observer struct {
	tp         trace.TracerProvider          // nil: chosen per operation (tracer)
	props      propagation.TextMapPropagator // nil: the global one at each attempt
	pathValues bool

	attemptDuration   metric.Float64Histogram
	operationDuration metric.Float64Histogram
	retries           metric.Int64Counter
	refresh           metric.Int64Counter
	hits              metric.Int64Counter
	misses            metric.Int64Counter
	refusals          metric.Int64Counter
	stale             metric.Int64Counter
	active            metric.Int64UpDownCounter
	breakersOpen      metric.Int64UpDownCounter
	breakerOpenings   metric.Int64Counter
}

// tracer returns the tracer of an operation started with ctx. Without a
// provider given, it is the provider of the caller's span when that span
// records, else the global one. Unlike otelhttp, which takes the span's
// provider whenever the span context is valid, a span that does not record
// (a remote parent, a span sampled out) does not decide: its provider can
// be the API's no-op one, and then an operation below a remote parent
// would record nothing although the program set a global provider.
func (o *observer) tracer(ctx context.Context) trace.Tracer {
	tp := o.tp
	if tp == nil {
		if span := trace.SpanFromContext(ctx); span.IsRecording() {
			tp = span.TracerProvider()
		} else {
			tp = otelapi.GetTracerProvider()
		}
	}
	return tp.Tracer(ScopeName, trace.WithInstrumentationVersion(management.Version))
}

// propagator returns the propagator of the attempts.
func (o *observer) propagator() propagation.TextMapPropagator {
	if o.props != nil {
		return o.props
	}
	return otelapi.GetTextMapPropagator()
}

func (o *observer) check(ctx context.Context, outcome management.AuthOutcome) {
	switch outcome {
	case management.AuthHit:
		o.hits.Add(ctx, 1)
	case management.AuthMiss:
		o.misses.Add(ctx, 1)
	case management.AuthRefused:
		o.refusals.Add(ctx, 1)
	case management.AuthStale:
		o.stale.Add(ctx, 1)
	}
}

func (o *observer) calls(ctx context.Context, delta int) {
	o.active.Add(ctx, int64(delta))
}

// breakerKey names a breaker in the breaker metrics: one of a few values.
const breakerKey = attribute.Key("management.breaker")

func (o *observer) breaker(ctx context.Context, b management.BreakerInfo) {
	attrs := metric.WithAttributes(breakerKey.String(string(b.Breaker)))
	if b.Open {
		o.breakersOpen.Add(ctx, 1, attrs)
		o.breakerOpenings.Add(ctx, 1, attrs)
		return
	}
	o.breakersOpen.Add(ctx, -1, attrs)
}
