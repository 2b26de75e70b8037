package management

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jarcoal/httpmock"
)

// A 429 with Retry-After pauses the route it came from for the whole
// Client: other calls to that route wait (bounded by their context), calls
// to other routes do not.
func TestRateLimitPausesTheRoute(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, mt := setup(t, Config{RetryWaitMin: time.Millisecond, RetryWaitMax: time.Minute})
		start := time.Now()
		var mu sync.Mutex
		sent := map[string]time.Duration{}
		limited := true
		answer := func(id string, body map[string]any) httpmock.Responder {
			return func(r *http.Request) (*http.Response, error) {
				mu.Lock()
				defer mu.Unlock()
				if _, ok := sent[id]; !ok {
					sent[id] = time.Since(start)
				}
				if id == "u-1" && limited {
					limited = false
					resp := httpmock.NewStringResponse(http.StatusTooManyRequests, `{"reason":"RATE","error_message":"slow down"}`)
					resp.Header.Set("Retry-After", "10")
					return resp, nil
				}
				return httpmock.NewJsonResponse(http.StatusOK, body)
			}
		}
		mt.RegisterResponder(http.MethodGet, mockPrefix+"/users/u-1", answer("u-1", map[string]any{"id": "u-1"}))
		mt.RegisterResponder(http.MethodGet, mockPrefix+"/users/u-2", answer("u-2", map[string]any{"id": "u-2"}))
		mt.RegisterResponder(http.MethodGet, mockPrefix+"/things/t-1", answer("t-1", map[string]any{"physical_id": "t-1"}))

		var wg sync.WaitGroup
		errs := make(map[string]error)
		var emu sync.Mutex
		run := func(name string, at time.Duration, ctx context.Context, f func(context.Context) error) {
			wg.Go(func() {
				time.Sleep(at)
				err := f(ctx)
				emu.Lock()
				errs[name] = err
				emu.Unlock()
			})
		}
		bg := context.Background()
		short, cancel := context.WithTimeout(bg, 3*time.Second)
		defer cancel()
		getUser := func(id string) func(context.Context) error {
			return func(ctx context.Context) error { _, err := c.Users.Get(ctx, id); return err }
		}
		run("u-1", 0, bg, getUser("u-1"))
		run("u-2", time.Second, bg, getUser("u-2"))
		run("u-2 short", time.Second, short, getUser("u-2"))
		run("t-1", time.Second, bg, func(ctx context.Context) error { _, err := c.Things.Get(ctx, "t-1"); return err })
		wg.Wait()

		for _, name := range []string{"u-1", "u-2", "t-1"} {
			if errs[name] != nil {
				t.Errorf("%s: %v", name, errs[name])
			}
		}
		if err := errs["u-2 short"]; !errors.Is(err, ErrRateLimited) {
			t.Errorf("a call whose deadline ends within the pause: %v; want ErrRateLimited at once", err)
		}
		if got := sent["t-1"]; got != time.Second {
			t.Errorf("another route waited: sent at %v, want 1s", got)
		}
		if got := sent["u-2"]; got < 10*time.Second || got > 11*time.Second {
			t.Errorf("the paused route's other call was sent at %v; want within [10s, 11s] (the pause, spread)", got)
		}
	})
}
