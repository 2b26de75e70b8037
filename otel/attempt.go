package otel

import (
	"context"
	"net/url"
	"strings"
	"time"

	"github.com/serviceconnect/management"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// attempt is what an attempt's context carries for its end.
type attempt struct {
	span  trace.Span // CLIENT, a child of the operation's span
	start time.Time
}

// attemptKey keys an attempt's *attempt in its context.
type attemptKey struct{}

// attemptStart starts the CLIENT span of one HTTP request, counts a
// resend as a retry, and writes the span's trace context into the
// request's headers.
func (o *observer) attemptStart(ctx context.Context, op management.Operation, a management.Attempt) context.Context {
	attrs := requestAttrs(make([]attribute.KeyValue, 0, 7), a.Method, a.Route)
	attrs = append(attrs,
		semconv.ServerAddress(a.ServerAddress),
		semconv.ServerPort(a.ServerPort),
		semconv.URLFull(o.fullURL(op, a)))
	if a.ResendCount > 0 {
		attrs = append(attrs, semconv.HTTPRequestResendCount(a.ResendCount))
	}
	state := operationFrom(ctx)
	var tracer trace.Tracer
	if state != nil {
		tracer = state.tracer
	} else { // not reached through the SDK: every attempt is an operation's
		tracer = o.tracer(ctx)
	}
	if a.ResendCount > 0 {
		cause := append(requestAttrs(make([]attribute.KeyValue, 0, 4), a.Method, a.Route),
			attribute.String("management.resend.reason", a.Resend.String()))
		if state != nil && state.cause.Valid() {
			cause = append(cause, state.cause)
		}
		o.retries.Add(ctx, 1, metric.WithAttributes(cause...))
	}
	name := management.Operation{Method: a.Method, Route: a.Route}.Name()
	ctx, span := tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	o.propagator().Inject(ctx, propagation.HeaderCarrier(a.Header))
	return context.WithValue(ctx, attemptKey{}, &attempt{span: span, start: time.Now()})
}

// attemptDone ends the CLIENT span and records the request's duration,
// from its start to its answer's headers (or its failure), as
// http.client.request.duration.
func (o *observer) attemptDone(ctx context.Context, op management.Operation, a management.Attempt, r management.AttemptResult) {
	at, _ := ctx.Value(attemptKey{}).(*attempt)
	if at == nil {
		return
	}
	elapsed := time.Since(at.start).Seconds()
	attrs := requestAttrs(make([]attribute.KeyValue, 0, 8), a.Method, a.Route)
	attrs = append(attrs,
		semconv.ServerAddress(a.ServerAddress),
		semconv.ServerPort(a.ServerPort))
	common := len(attrs) // the span has these already
	var cause attribute.KeyValue
	if r.Status != 0 {
		cause = semconv.HTTPResponseStatusCode(r.Status)
		attrs = append(attrs, cause)
	}
	if r.Status >= 400 || r.Err != nil {
		et := semconv.ErrorTypeKey.String(errorType(r.Status, r.Err))
		attrs = append(attrs, et)
		if r.Status == 0 {
			cause = et
		}
	}
	if r.Protocol != "" {
		attrs = append(attrs, semconv.NetworkProtocolVersion(r.Protocol))
	}
	if state := operationFrom(ctx); state != nil {
		state.cause = cause
	}
	o.attemptDuration.Record(ctx, elapsed, metric.WithAttributes(append(attrs, semconv.URLScheme(scheme(a.URL)))...))

	span := at.span
	span.SetAttributes(attrs[common:]...)
	if r.RequestID != "" {
		span.SetAttributes(attribute.StringSlice("http.response.header."+strings.ToLower(r.RequestIDHeader), []string{r.RequestID}))
	}
	switch {
	case r.Err != nil:
		span.SetStatus(codes.Error, o.describe(r.Err))
	case r.Status >= 400:
		span.SetStatus(codes.Error, "") // the status code says why
	}
	span.End()
}

// fullURL is url.full: the URL with each id replaced by REDACTED, as the
// SDK gives it, or with WithPathValues the URL as sent, each id escaped
// back into its segment. Never the query: a page's can hold a cursor.
func (o *observer) fullURL(op management.Operation, a management.Attempt) string {
	if !o.pathValues || len(op.PathValues) == 0 {
		return a.URL
	}
	// a.URL is the base URL and prefix, then the route with each
	// parameter replaced by REDACTED.
	var redacted, sent strings.Builder
	rest := a.Route
	for {
		before, after, ok := strings.Cut(rest, "{")
		redacted.WriteString(before)
		sent.WriteString(before)
		if !ok {
			break
		}
		name, tail, _ := strings.Cut(after, "}")
		redacted.WriteString("REDACTED")
		sent.WriteString(url.PathEscape(op.PathValues[name]))
		rest = tail
	}
	base, ok := strings.CutSuffix(a.URL, redacted.String())
	if !ok {
		return a.URL
	}
	return base + sent.String()
}

// scheme is url.scheme of u.
func scheme(u string) string {
	s, _, _ := strings.Cut(u, "://")
	return s
}
