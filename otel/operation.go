package otel

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"syscall"
	"time"

	"github.com/serviceconnect/management"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// tokenRoute is the route of the management token's fetch.
const tokenRoute = "/auth/token"

// requestAttrs appends to attrs what names a request in every span and
// measurement: its method and its route template. A Client.Do has no
// template (its Route is ""): url.template is left out rather than made
// of a path that may hold values, as the HTTP semantic conventions' rule
// of low cardinality asks, and its spans are named by the method alone.
func requestAttrs(attrs []attribute.KeyValue, method, route string) []attribute.KeyValue {
	attrs = append(attrs, semconv.HTTPRequestMethodKey.String(method))
	if route != "" {
		attrs = append(attrs, semconv.URLTemplate(route))
	}
	return attrs
}

// operation is what an operation's context carries for its attempts and
// its end. Its attempts run one after the other, so its fields need no
// lock: each hook of an operation happens after the previous one.
type operation struct {
	tracer trace.Tracer
	span   trace.Span // INTERNAL, the parent of the attempts' CLIENT spans
	start  time.Time
	// cause describes the last attempt (its status, else its error.type),
	// for the retry counter of the resend that follows it.
	cause attribute.KeyValue
}

// operationKey keys an operation's *operation in its context.
type operationKey struct{}

// operationFrom returns the operation ctx is in, nil outside one.
func operationFrom(ctx context.Context) *operation {
	op, _ := ctx.Value(operationKey{}).(*operation)
	return op
}

func (o *observer) operationStart(ctx context.Context, op management.Operation) context.Context {
	attrs := requestAttrs(make([]attribute.KeyValue, 0, 2+len(op.PathValues)), op.Method, op.Route)
	if o.pathValues {
		for name, v := range op.PathValues {
			attrs = append(attrs, attribute.String("management."+name, v))
		}
	}
	state := &operation{tracer: o.tracer(ctx), start: time.Now()}
	ctx, state.span = state.tracer.Start(ctx, op.Name(), trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	return context.WithValue(ctx, operationKey{}, state)
}

func (o *observer) operationDone(ctx context.Context, op management.Operation, r management.OperationResult) {
	state := operationFrom(ctx)
	attrs := requestAttrs(make([]attribute.KeyValue, 0, 4), op.Method, op.Route)
	common := len(attrs) // the span has these already
	if r.Status != 0 {
		attrs = append(attrs, semconv.HTTPResponseStatusCode(r.Status))
	}
	if r.Status >= 400 || r.Err != nil {
		attrs = append(attrs, semconv.ErrorTypeKey.String(errorType(r.Status, r.Err)))
	}
	if state != nil {
		o.operationDuration.Record(ctx, time.Since(state.start).Seconds(), metric.WithAttributes(attrs...))
	}
	if op.Route == tokenRoute {
		o.refresh.Add(ctx, 1, metric.WithAttributes(attrs[common:]...))
	}
	if state == nil {
		return
	}
	span := state.span
	span.SetAttributes(attrs[common:]...)
	span.SetAttributes(attribute.Int("management.attempts", r.Attempts),
		attribute.Float64("management.retry_wait", r.RetryWait.Seconds()))
	if r.Err != nil {
		span.SetStatus(codes.Error, o.describe(r.Err))
	}
	span.End()
}

// describe is the status description of a failed span: the error's text
// with WithPathValues (it may quote ids, never tokens), else none.
func (o *observer) describe(err error) string {
	if o.pathValues && err != nil {
		return err.Error()
	}
	return ""
}

// retry adds an event to the operation's span: the wait before a retry is
// a gap between two attempts' spans that the event explains.
func (o *observer) retry(ctx context.Context, op management.Operation, r management.RetryInfo) {
	state := operationFrom(ctx)
	if state == nil {
		return
	}
	attrs := []attribute.KeyValue{attribute.Int("management.attempt", r.Attempt),
		attribute.Float64("management.retry_wait", r.Wait.Seconds())}
	if r.Status != 0 { // 0: no answer came
		attrs = append(attrs, semconv.HTTPResponseStatusCode(r.Status))
	}
	state.span.AddEvent("retry", trace.WithAttributes(attrs...))
}

// flightJoined links the span of an operation that waited for another's
// token fetch to the span of that operation, under which the fetch's spans
// sit: the trace of the waiter then leads to the fetch that delayed it.
func (o *observer) flightJoined(ctx, started context.Context) {
	starter := trace.SpanContextFromContext(started)
	if !starter.IsValid() {
		return
	}
	link := trace.Link{SpanContext: starter, Attributes: []attribute.KeyValue{
		attribute.String("management.link", "flight")}}
	if state := operationFrom(ctx); state != nil {
		state.span.AddLink(link)
		return
	}
	// An Authenticator's check is no operation of the SDK's: the link goes
	// on the span of the request being checked (its server span), as the
	// authenticate call sits under the request whose check started it.
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.AddLink(link)
	}
}

// errorType is error.type as the HTTP semantic conventions define it: the
// status code of an answer of 400 or more, else a low-cardinality name of
// the failure (see failureType).
func errorType(status int, err error) string {
	if status >= 400 {
		return strconv.Itoa(status)
	}
	return failureType(err)
}

// failureType names a failure without an answer by its kind, as the
// conventions ask of error.type: "timeout", "canceled",
// "name_resolution_error", "connection_refused", "connection_reset",
// "connection_closed" (the server closed before answering), else the Go
// type of the error ("*management.DecodeError").
func failureType(err error) string {
	var dns *net.DNSError
	var ne net.Error
	switch {
	case err == nil:
		return semconv.ErrorTypeOther.Value.AsString()
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.As(err, &dns):
		return "name_resolution_error"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection_refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection_reset"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection_closed"
	}
	return semconv.ErrorType(err).Value.AsString()
}
