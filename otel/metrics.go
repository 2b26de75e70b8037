package otel

import (
	otelapi "go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/semconv/v1.43.0/httpconv"
)

// operationBuckets are the boundaries of
// management.client.operation.duration: the conventions' HTTP boundaries
// and two more, since an operation includes its retry waits (Retry-After
// can ask for tens of seconds) and would otherwise pile up in the last one.
var operationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 30, 60}

// instruments creates the metrics; see the package comment.
func (o *observer) instruments(m metric.Meter) {
	handle := func(err error) {
		if err != nil {
			otelapi.Handle(err)
		}
	}
	// httpconv gives the conventions' name, unit, description and bucket
	// boundaries, the same as otelhttp's instrument.
	attempt, err := httpconv.NewClientRequestDuration(m)
	handle(err)
	o.attemptDuration = attempt.Inst()
	o.operationDuration, err = m.Float64Histogram("management.client.operation.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of the management API's operations: every attempt, the waits between them and the token fetch they needed."),
		metric.WithExplicitBucketBoundaries(operationBuckets...))
	handle(err)
	o.retries, err = m.Int64Counter("management.client.retries", metric.WithUnit("{retry}"),
		metric.WithDescription("Requests to the management API sent again: retries and the replay after a 401."))
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
	o.stale, err = m.Int64Counter("management.authenticator.stale", metric.WithUnit("{check}"),
		metric.WithDescription("Authenticator checks that let a token through stale: the service could not answer, and had confirmed it within StaleIfError."))
	handle(err)
	o.active, err = m.Int64UpDownCounter("management.authenticator.calls.active", metric.WithUnit("{call}"),
		metric.WithDescription("Authenticate calls in flight."))
	handle(err)
	o.breakersOpen, err = m.Int64UpDownCounter("management.breaker.open", metric.WithUnit("{breaker}"),
		metric.WithDescription("Breakers of the SDK open now, by management.breaker: what they guard is left alone for a cool-down."))
	handle(err)
	o.breakerOpenings, err = m.Int64Counter("management.breaker.openings", metric.WithUnit("{opening}"),
		metric.WithDescription("Breakers of the SDK opened, by management.breaker."))
	handle(err)
}
