package otel_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
	mgmtotel "github.com/serviceconnect/management/otel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// downStore is a SharedStore that fails while down is set and otherwise
// holds nothing.
type downStore struct{ down atomic.Bool }

var errDown = errors.New("store down")

func (s *downStore) err() error {
	if s.down.Load() {
		return errDown
	}
	return nil
}
func (s *downStore) Get(context.Context, string) ([]byte, error) { return nil, s.err() }
func (s *downStore) Set(context.Context, string, []byte, time.Duration) error {
	return s.err()
}
func (s *downStore) Delete(context.Context, string) error { return s.err() }
func (s *downStore) TryLock(context.Context, string, time.Duration) (func(context.Context) error, bool, error) {
	if err := s.err(); err != nil {
		return nil, false, err
	}
	return func(context.Context) error { return nil }, true, nil
}

// The shared store's breaker opening and closing are counted by
// management.breaker: an up-down counter of the breakers open, back to 0
// once the store answers a probe, and a counter of openings.
func TestBreakerMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := managementtest.NewInMemoryServer()
		srv.AddUser(management.UserDetails{User: management.User{ID: "u-ada"}})
		reader := sdkmetric.NewManualReader()
		store := &downStore{}
		store.down.Store(true)
		cfg := srv.Config()
		cfg.SharedStore = store
		cfg.Observer = mgmtotel.New(mgmtotel.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
		client, err := management.NewClient(cfg)
		if err != nil {
			t.Fatal(err)
		}
		auth := &management.Authenticator{Client: client, SharedStore: store}
		check := func() {
			t.Helper()
			r := httptest.NewRequest("GET", "/", nil)
			r.Header.Set("Authorization", "Bearer "+srv.IssueEndUserToken("u-ada"))
			if _, err := auth.Check(r); err != nil {
				t.Fatal(err)
			}
		}
		sums := func() map[string]map[string]int64 {
			t.Helper()
			return sumsByBreaker(t, reader, "management.breaker.")
		}
		for range 3 { // the store fails: three failures in a row open the breaker
			check()
		}
		synctest.Wait() // the token's write-back, which fails too
		want := map[string]map[string]int64{
			"management.breaker.open":     {"shared_store": 1},
			"management.breaker.openings": {"shared_store": 1},
		}
		if diff := cmp.Diff(want, sums()); diff != "" {
			t.Errorf("with the store down (-want +got):\n%s", diff)
		}
		store.down.Store(false)
		time.Sleep(time.Second) // past the cool-down
		check()                 // starts the probe, in the background
		synctest.Wait()         // it succeeds: the breaker closes
		want["management.breaker.open"]["shared_store"] = 0
		if diff := cmp.Diff(want, sums()); diff != "" {
			t.Errorf("with the store back (-want +got):\n%s", diff)
		}
	})
}

// sumsByBreaker collects reader and returns the int64 sums whose names
// start with one of prefixes, by metric name and management.breaker ("" on
// the points without it).
func sumsByBreaker(t *testing.T, reader *sdkmetric.ManualReader, prefixes ...string) map[string]map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			d, ok := m.Data.(metricdata.Sum[int64])
			if !ok || !slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(m.Name, p) }) {
				continue
			}
			for _, p := range d.DataPoints {
				name, _ := p.Attributes.Value("management.breaker")
				if got[m.Name] == nil {
					got[m.Name] = map[string]int64{}
				}
				got[m.Name][name.AsString()] += p.Value
			}
		}
	}
	return got
}
