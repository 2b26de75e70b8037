// Package otel records the management SDK's operations with OpenTelemetry:
// a client span per operation and the metrics below, through a
// management.Observer.
//
//	cfg.Observer = otel.New() // the global TracerProvider and MeterProvider
//	client, err := management.NewClient(cfg)
//
// Spans are named by the route template, "GET /users/{user_id}", and have
// the HTTP client attributes of the OpenTelemetry semantic conventions:
// http.request.method, url.template, http.response.status_code,
// error.type, http.request.resend_count; each retry is an event "retry"
// on the span; the management token's fetch, "POST /auth/token", is a
// span of its own, a child of the operation that needed it. The HTTP
// requests and log records of an operation see its span in their context.
//
// Metrics (instrumentation scope github.com/serviceconnect/management/otel):
//
//	http.client.request.duration            histogram, s, by method, url.template, status, error.type
//	management.client.retries               counter, by method, url.template, status of the retried attempt
//	management.client.token.refreshes       counter, by status, error.type (absent on success)
//	management.authenticator.hits           counter, checks answered from the cache
//	management.authenticator.misses         counter, checks that joined or made a call
//	management.authenticator.refusals       counter, checks refused without a call
//	management.authenticator.calls.active   up-down counter, authenticate calls in flight
//
// No id or token is in a span name, attribute or metric by default: ids
// (user_id, physical_id, thing_physical_id) and error texts, which may
// quote ids, are recorded only with WithPathValues.
package otel

import (
	"context"
	"strconv"
	"time"

	"github.com/serviceconnect/management"
	otelapi "go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of the tracer and meter.
const ScopeName = "github.com/serviceconnect/management/otel"

// tokenRoute is the route of the management token's fetch.
const tokenRoute = "/auth/token"

// Option configures New.
type Option func(*config)

type config struct {
	tp         trace.TracerProvider
	mp         metric.MeterProvider
	pathValues bool
}

// WithTracerProvider sets the TracerProvider. Default: the global one
// (go.opentelemetry.io/otel.GetTracerProvider).
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) { c.tp = tp }
}

// WithMeterProvider sets the MeterProvider. Default: the global one
// (go.opentelemetry.io/otel.GetMeterProvider).
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) { c.mp = mp }
}

// WithPathValues records the operations' ids as span attributes
// ("management.user_id", "management.physical_id",
// "management.thing_physical_id") and error texts as span status
// descriptions. Off by default: ids can be personal data, and the
// cardinality of metrics never depends on it (metrics never carry ids).
func WithPathValues() Option {
	return func(c *config) { c.pathValues = true }
}

// observer holds the instruments; its methods are the hooks.
type observer struct {
	tracer     trace.Tracer
	pathValues bool

	duration metric.Float64Histogram
	retries  metric.Int64Counter
	refresh  metric.Int64Counter
	hits     metric.Int64Counter
	misses   metric.Int64Counter
	refusals metric.Int64Counter
	active   metric.Int64UpDownCounter
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
	if cfg.tp == nil {
		cfg.tp = otelapi.GetTracerProvider()
	}
	if cfg.mp == nil {
		cfg.mp = otelapi.GetMeterProvider()
	}
	o := &observer{
		tracer:     cfg.tp.Tracer(ScopeName, trace.WithInstrumentationVersion(management.Version)),
		pathValues: cfg.pathValues,
	}
	o.instruments(cfg.mp.Meter(ScopeName, metric.WithInstrumentationVersion(management.Version)))
	return &management.Observer{
		OperationStart:    o.start,
		OperationDone:     o.done,
		Retry:             o.retry,
		AuthCheck:         o.check,
		AuthCallsInFlight: o.calls,
	}
}

// instruments creates the metrics; see the package comment.
func (o *observer) instruments(m metric.Meter) {
	handle := func(err error) {
		if err != nil {
			otelapi.Handle(err)
		}
	}
	var err error
	o.duration, err = m.Float64Histogram("http.client.request.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of the management API's operations, retries and their waits included."),
		metric.WithExplicitBucketBoundaries(0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10))
	handle(err)
	o.retries, err = m.Int64Counter("management.client.retries", metric.WithUnit("{retry}"),
		metric.WithDescription("Retries of the management API's requests."))
	handle(err)
	o.refresh, err = m.Int64Counter("management.client.token.refreshes", metric.WithUnit("{fetch}"),
		metric.WithDescription("Fetches of the management token."))
	handle(err)
	o.hits, err = m.Int64Counter("management.authenticator.hits", metric.WithUnit("{check}"),
		metric.WithDescription("Authenticator checks answered from the cache."))
	handle(err)
	o.misses, err = m.Int64Counter("management.authenticator.misses", metric.WithUnit("{check}"),
		metric.WithDescription("Authenticator checks that joined or made an authenticate call."))
	handle(err)
	o.refusals, err = m.Int64Counter("management.authenticator.refusals", metric.WithUnit("{check}"),
		metric.WithDescription("Authenticator checks refused without a call."))
	handle(err)
	o.active, err = m.Int64UpDownCounter("management.authenticator.calls.active", metric.WithUnit("{call}"),
		metric.WithDescription("Authenticate calls in flight."))
	handle(err)
}

// startKey keys the operation's start time in its context.
type startKey struct{}

func (o *observer) start(ctx context.Context, op management.Operation) context.Context {
	attrs := []attribute.KeyValue{semconv.HTTPRequestMethodKey.String(op.Method), semconv.URLTemplate(op.Route)}
	if o.pathValues {
		for name, v := range op.PathValues {
			attrs = append(attrs, attribute.String("management."+name, v))
		}
	}
	ctx, _ = o.tracer.Start(ctx, op.Name(), trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	return context.WithValue(ctx, startKey{}, time.Now())
}

func (o *observer) done(ctx context.Context, op management.Operation, r management.OperationResult) {
	span := trace.SpanFromContext(ctx)
	attrs := []attribute.KeyValue{semconv.HTTPRequestMethodKey.String(op.Method), semconv.URLTemplate(op.Route)}
	if r.Status != 0 {
		attrs = append(attrs, semconv.HTTPResponseStatusCode(r.Status))
	}
	if et, ok := errorType(r); ok {
		attrs = append(attrs, semconv.ErrorTypeKey.String(et))
	}
	if start, ok := ctx.Value(startKey{}).(time.Time); ok {
		o.duration.Record(ctx, time.Since(start).Seconds(), metric.WithAttributes(attrs...))
	}
	if op.Route == tokenRoute {
		o.refresh.Add(ctx, 1, metric.WithAttributes(attrs[2:]...))
	}
	span.SetAttributes(attrs[2:]...)
	span.SetAttributes(attribute.Int("management.attempts", r.Attempts),
		attribute.Float64("management.retry_wait", r.RetryWait.Seconds()))
	if r.Attempts > 1 {
		span.SetAttributes(semconv.HTTPRequestResendCount(r.Attempts - 1))
	}
	if r.Err != nil {
		desc := ""
		if o.pathValues {
			desc = r.Err.Error() // may quote ids, never tokens
		}
		span.SetStatus(codes.Error, desc)
	}
	span.End()
}

// errorType is error.type as the HTTP semantic conventions define it: the
// status code of an answer of 400 or more, else the error's Go type.
func errorType(r management.OperationResult) (string, bool) {
	switch {
	case r.Status >= 400:
		return strconv.Itoa(r.Status), true
	case r.Err != nil:
		return semconv.ErrorType(r.Err).Value.AsString(), true
	}
	return "", false
}

func (o *observer) retry(ctx context.Context, op management.Operation, r management.RetryInfo) {
	attrs := []attribute.KeyValue{semconv.HTTPRequestMethodKey.String(op.Method), semconv.URLTemplate(op.Route)}
	if r.Status != 0 { // 0: the connection failed
		attrs = append(attrs, semconv.HTTPResponseStatusCode(r.Status))
	}
	o.retries.Add(ctx, 1, metric.WithAttributes(attrs...))
	trace.SpanFromContext(ctx).AddEvent("retry", trace.WithAttributes(append(attrs[2:],
		attribute.Int("management.attempt", r.Attempt),
		attribute.Float64("management.retry_wait", r.Wait.Seconds()))...))
}

func (o *observer) check(ctx context.Context, outcome management.AuthOutcome) {
	switch outcome {
	case management.AuthHit:
		o.hits.Add(ctx, 1)
	case management.AuthMiss:
		o.misses.Add(ctx, 1)
	case management.AuthRefused:
		o.refusals.Add(ctx, 1)
	}
}

func (o *observer) calls(ctx context.Context, delta int) {
	o.active.Add(ctx, int64(delta))
}
