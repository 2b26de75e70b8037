package management

import (
	"github.com/serviceconnect/management/internal/fleet"
	engine "github.com/serviceconnect/management/internal/redact"
	"log/slog"
	"strconv"
	"time"
)

// DocumentedDefaults returns the defaults and bounds of this package that
// docs/defaults.md lists, by the name of their row there, as the code has
// them: a Config's and an Authenticator's defaults as they take effect, the
// other bounds from their constants. TestDefaultsTable formats and compares
// them.
func DocumentedDefaults() map[string]any {
	cfg := Config{}.withDefaults()
	auth := &Authenticator{SharedStore: newMemStore()}
	auth.init()
	return map[string]any{
		"Config.MaxRetries":                             cfg.MaxRetries,
		"Config.RetryWaitMin":                           cfg.RetryWaitMin,
		"Config.RetryWaitMax":                           cfg.RetryWaitMax,
		"Config.RefreshMargin":                          refreshMarginText(cfg.RefreshMargin),
		"Config.PathPrefix":                             cfg.PathPrefix,
		"Config.UnsetMarker":                            cfg.UnsetMarker,
		"Config.MaxResponseBytes":                       Bytes(cfg.MaxResponseBytes),
		"Config.SharedStoreTimeout":                     cfg.SharedStoreTimeout,
		"Config.SharedStoreKey":                         Bytes(minSharedStoreKey),
		"Config.Logger":                                 logging(Config{BaseURL: "https://a.example", ClientID: "id", ClientSecret: "secret"}),
		"a token request":                               tokenFetchTimeout,
		"token requests left running":                   maxTokenCalls,
		"the calls a route's pause held":                pauseSpread,
		"APIError.RequestID":                            Bytes(maxRequestID),
		"a credential found only where it stands alone": Bytes(engine.MinLen),
		"a text from outside, before redaction":         Bytes(maxText),

		"Authenticator.CacheTTL":            auth.validTTL,
		"an invalid verdict":                auth.invalidTTL,
		"Authenticator.CacheSize":           orDefault(0, defaultAuthCacheSize),
		"Authenticator.MaxConcurrentChecks": auth.maxCalls,
		"Authenticator.Timeout":             auth.timeout,
		"Authenticator.StaleIfError":        offOr(auth.grace),

		"calls without an answer before the authenticate breaker opens": authBreakerThreshold,
		"the authenticate breaker's cool-down, first and longest":       authCoolDown.String() + " to " + authMaxCoolDown.String(),

		"the lease on refreshing the token":                         tokenLease,
		"the lease on asking about an End User token":               verdictLease,
		"an in-process verdict, with a shared store":                auth.firstLevel,
		"a Client's store operations running":                       fleet.MaxCalls,
		"the store breaker's longest cool-down":                     storeMaxCoolDown,
		"store failures before the store breaker opens":             storeFailures,
		"answers that take one failure off the store breaker's run": storeForgive,
		"leases waited out before lease waits stop":                 fleet.LeaseWaitsOut,
		"lease waits stopped, first and longest":                    fleet.LeaseCoolDown.String() + " to " + fleet.LeaseMaxCoolDown.String(),
		"reads of a key per second while waiting on a lease":        maxPollsPerSecond(),
	}
}

// logging is what a Client of cfg does with its log records as
// docs/defaults.md writes it: "off" when it discards them.
func logging(cfg Config) string {
	c, err := NewClient(cfg)
	switch {
	case err != nil:
		return err.Error()
	case c.logger.Handler() == slog.DiscardHandler:
		return "off"
	}
	return "a logger"
}

// offOr is d as docs/defaults.md writes it, "off" for 0.
func offOr(d time.Duration) string {
	if d == 0 {
		return "off"
	}
	return d.String()
}

// Bytes is a size in bytes, which docs/defaults.md writes in the largest
// unit that divides it: "32 MiB", "128 bytes".
type Bytes int64

func (b Bytes) String() string {
	switch {
	case b >= 1<<20 && b%(1<<20) == 0:
		return strconv.FormatInt(int64(b>>20), 10) + " MiB"
	case b >= 1<<10 && b%(1<<10) == 0:
		return strconv.FormatInt(int64(b>>10), 10) + " KiB"
	}
	return strconv.FormatInt(int64(b), 10) + " bytes"
}

// maxPollsPerSecond is the most rounds that the waits on a lease in one
// Client make on its key in any second: the first read at once, then
// rounds firstPollGaps apart, then at least pollGap apart (the jitter only
// lengthens a gap).
func maxPollsPerSecond() int {
	at := []time.Duration{0}
	for _, gap := range fleet.FirstPollGaps {
		at = append(at, at[len(at)-1]+gap)
	}
	for at[len(at)-1] < 2*time.Second {
		at = append(at, at[len(at)-1]+fleet.PollGap)
	}
	most := 0
	for i := range at {
		n := 0
		for j := i; j < len(at) && at[j]-at[i] < time.Second; j++ {
			n++
		}
		most = max(most, n)
	}
	return most
}
