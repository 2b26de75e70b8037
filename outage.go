package management

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/serviceconnect/management/internal/fleet"
)

// The breaker on the authenticate call (BreakerAuthenticate). Three calls
// in a row that got no answer, each after the Client's retries within
// Timeout, open it: one slow or failed call (a blip) does not stop the
// checks, while an outage stops them after a few calls, each of which cost
// its checks up to Timeout. The first cool-down is about a second (a
// blip's length: the service is asked again soon), doubling while probes
// fail, up to half a minute (a long outage costs one probe per 30 s),
// jittered so that the replicas of a fleet do not probe in step.
const (
	authBreakerThreshold = 3
	authCoolDown         = time.Second
	authMaxCoolDown      = 30 * time.Second
)

// errHeld is why a check that needed a call made none: the breaker on the
// authenticate call is open (the call it may have started as the probe
// runs without it).
var errHeld = errors.New("calls to the service got no answer in a row: it is not called during a cool-down")

// unreachable reports whether err, why a check got no verdict, says that
// the service could not answer, judged by what happened rather than by the
// error's type: no answer (a transport error, a timeout, the call left
// behind at Timeout), an answer whose body the network cut (errBodyCut), a
// 5xx or a 429 from the authenticate or the token endpoint in either error
// shape, or the Authenticator's own bounds. A 4xx other than 429, a
// redirect, an answer that is not the API's or is malformed (complete, but
// not the documented JSON) are answers; a panic of hosted code is a bug.
func unreachable(err error) bool {
	var api *APIError
	var token *TokenError
	var transport *TransportError
	switch {
	case panicked(err):
		return false
	case errors.Is(err, ErrTooManyChecks), errors.Is(err, ErrOverMissBudget), errors.Is(err, errBodyCut):
		return true
	case errors.As(err, &api):
		return outageStatus(api.StatusCode)
	case errors.As(err, &token):
		return outageStatus(token.StatusCode)
	case errors.As(err, &transport):
		return true
	}
	return errors.Is(err, context.DeadlineExceeded)
}

// outageStatus reports whether status says that the service cannot answer
// just now: a 5xx or a 429.
func outageStatus(status int) bool {
	return status >= 500 || status == http.StatusTooManyRequests
}

// panicked reports whether err is a call's whose hosted code panicked. The
// target of errors.As escapes: declared here, it is allocated only for a
// call that failed, not on the path of every answer.
func panicked(err error) bool {
	var p hostedPanic
	return errors.As(err, &p)
}

// unanswered is the end of a check that got no verdict on header (key's),
// for err, with outcome so far: a stale pass when StaleIfError allows one,
// a verdict another replica stored when the service was not asked, else
// err, carrying the rest of the breaker's cool-down while it is open.
// called is the store's record as the check's call read it, nil for a
// check that made no call: with a store, a check reads it once, within
// one SharedStoreTimeout, so that the fallback does not read it again.
func (a *Authenticator) unanswered(ctx context.Context, key verdictKey, header string, outcome AuthOutcome, err error, called *storeRecord) (authVerdict, AuthOutcome, error) {
	held := err == errHeld
	switch {
	case ctx.Err() != nil && held:
		return authVerdict{}, outcome, errorf("waiting for the End User token check: %w", ctx.Err())
	case ctx.Err() != nil, !held && !unreachable(err):
		return authVerdict{}, outcome, err
	}
	switch v, use, first := a.verdictCache.fallback(key, time.Now()); use {
	case useFresh: // the call this check started as the probe, or another, answered since
		return v, AuthMiss, nil
	case useStale:
		return a.stalePass(ctx, v, first), AuthStale, nil
	}
	// With a store, the fleet's record: a grace a replica confirmed, or,
	// for a check that made no call, a verdict another replica stored
	// since. A check whose call read the store uses what it read.
	if a.shared != nil && (held || a.grace > 0) {
		r := called
		if r == nil {
			r = &storeRecord{gen: a.verdictCache.generation()}
			r.v, r.found = a.shared.peek(ctx, header)
		}
		if r.found {
			switch use, first := a.verdictCache.adopt(key, r.v, r.gen, time.Now(), called != nil); use {
			case useFresh:
				return r.v, AuthMiss, nil
			case useStale:
				return a.stalePass(ctx, r.v, first), AuthStale, nil
			}
		}
	}
	if held || a.breaker.IsOpen() {
		if held {
			err = errorf("%w: %w", ErrAuthenticationUnavailable, errHeld)
		}
		return authVerdict{}, outcome, &AuthenticationUnavailableError{RetryAfter: max(a.breaker.Remaining(), time.Second), Err: err}
	}
	return authVerdict{}, outcome, err
}

// stalePass returns v, an End User within its grace, let through stale
// (and counted, see verdictCache.fallback). The first stale pass since the
// service last answered is logged.
func (a *Authenticator) stalePass(ctx context.Context, v authVerdict, first bool) authVerdict {
	if first {
		a.Client.logger.LogAttrs(ctx, slog.LevelWarn, "management: the service cannot check End User tokens; letting through, marked Stale, those it confirmed within StaleIfError",
			slog.Duration("stale_if_error", a.grace))
	}
	v.user.Stale = true
	return v
}

// called reports how the call of ticket t went (v or err, what it gave)
// to the breaker, and ends a run of stale passes when the service
// answered. It runs before the call's waiters are woken, and so calls no
// hosted code: what may (the breaker's OnChange, the log) is returned, to
// run once they are.
func (a *Authenticator) called(ctx context.Context, t fleet.Ticket, v authVerdict, err error) (report func()) {
	failed := false
	switch {
	case err == nil && !v.asked, err == ErrOverMissBudget, err == errHeld, err != nil && panicked(err):
		t.Abstained() // the service was not asked, or says nothing
		return nil
	case err != nil && unreachable(err):
		failed = true
	}
	if !failed && !t.Probe() && a.stalePasses.Load() == 0 {
		t.Succeeded(ctx) // only a probe's success closes the breaker, and tells OnChange
		return nil
	}
	return func() {
		if failed {
			t.Failed(ctx, err)
			return
		}
		t.Succeeded(ctx)
		if n := a.stalePasses.Swap(0); n > 0 {
			a.Client.logger.LogAttrs(ctx, slog.LevelInfo, "management: the service checks End User tokens again; tokens let through stale meanwhile counted",
				slog.Int64("stale_passes", n))
		}
	}
}
