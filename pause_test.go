package management

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
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

// The calls a pause holds go out at the end of the pause, spread over the
// second after it exactly as spreadOffset says, however many there are (the
// 300th of 300 does not wait 3 s more); a call refused at once because its
// deadline ends first, and a retry that gives up for the same reason, take
// no turn.
func TestPauseReleaseSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, mt := setup(t, Config{RetryWaitMin: time.Millisecond, RetryWaitMax: time.Minute})
		start := time.Now()
		var mu sync.Mutex
		var sent []time.Duration // the patient calls' and the paused call's retry
		mt.RegisterRegexpResponder(http.MethodGet, regexp.MustCompile(`/users/`), func(r *http.Request) (*http.Response, error) {
			id := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
			at := time.Since(start)
			switch {
			case id == "first" && at == 10*time.Millisecond:
				resp := httpmock.NewStringResponse(http.StatusTooManyRequests, `{}`)
				resp.Header.Set("Retry-After", "2")
				return resp, nil
			case id == "slow": // in flight when the pause starts; fails after it
				time.Sleep(500 * time.Millisecond)
				return httpmock.NewStringResponse(http.StatusInternalServerError, `{}`), nil
			}
			mu.Lock()
			sent = append(sent, at)
			mu.Unlock()
			return httpmock.NewJsonResponse(http.StatusOK, map[string]any{"id": id})
		})
		get := func(ctx context.Context, id string) error { _, err := c.Users.Get(ctx, id); return err }

		var wg sync.WaitGroup
		wg.Go(func() { // sent at once, answered 500 at 500 ms: its retry would wait past its deadline
			ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
			defer cancel()
			if err := get(ctx, "slow"); err == nil {
				t.Error("the slow call succeeded; want its 500")
			}
		})
		wg.Go(func() {
			time.Sleep(10 * time.Millisecond)
			if err := get(context.Background(), "first"); err != nil { // 429, then its retry at the pause's end
				t.Error(err)
			}
		})
		const patient, impatient = 300, 50
		refused := 0
		var rmu sync.Mutex
		for i := range patient + impatient {
			wg.Go(func() {
				time.Sleep(100 * time.Millisecond)
				ctx, cancel := context.Background(), func() {}
				if i >= patient {
					ctx, cancel = context.WithTimeout(ctx, time.Second)
				}
				defer cancel()
				err := get(ctx, fmt.Sprint("p-", i))
				switch {
				case i < patient && err != nil:
					t.Errorf("patient call %d: %v", i, err)
				case i >= patient && errors.Is(err, ErrRateLimited) && time.Since(start) == 100*time.Millisecond:
					rmu.Lock()
					refused++
					rmu.Unlock()
				case i >= patient:
					t.Errorf("impatient call %d: %v at %v; want ErrRateLimited at once", i, err, time.Since(start))
				}
			})
		}
		wg.Wait()

		if refused != impatient {
			t.Errorf("%d impatient calls refused at once; want %d", refused, impatient)
		}
		until := 10*time.Millisecond + 2*time.Second
		var want []time.Duration
		for k := range patient + 1 { // turn 0 is the paused call's own retry
			want = append(want, until+spreadOffset(uint64(k)))
		}
		slices.Sort(want)
		slices.Sort(sent)
		if diff := cmp.Diff(want, sent); diff != "" {
			t.Errorf("release schedule (-want +got):\n%s", diff)
		}
		if last := sent[len(sent)-1]; last >= until+time.Second {
			t.Errorf("the last held call went out at %v; want before %v", last, until+time.Second)
		}
	})
}

// The spread is even whatever the number of held calls: the first n turns
// split the second into gaps of at most twice 1/n.
func TestSpreadOffsetIsEven(t *testing.T) {
	for _, n := range []int{1, 2, 3, 7, 100, 300, 1000} {
		var offs []time.Duration
		for k := range n {
			offs = append(offs, spreadOffset(uint64(k)))
		}
		slices.Sort(offs)
		offs = append(offs, pauseSpread)
		if offs[0] != 0 {
			t.Errorf("n=%d: the first turn at %v; want 0", n, offs[0])
		}
		for i := 1; i < len(offs); i++ {
			if gap := offs[i] - offs[i-1]; gap > 2*pauseSpread/time.Duration(n)+1 {
				t.Errorf("n=%d: gap of %v between turns; want at most %v", n, gap, 2*pauseSpread/time.Duration(n))
			}
		}
	}
}

// A 429 answering a call released after a pause pauses the route again:
// the calls still held wait for their turns after the new pause.
func TestRateLimitAfterReleasePausesAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, mt := setup(t, Config{RetryWaitMin: time.Millisecond, RetryWaitMax: time.Minute})
		start := time.Now()
		var mu sync.Mutex
		limited := 0
		var sent []time.Duration
		mt.RegisterRegexpResponder(http.MethodGet, regexp.MustCompile(`/users/`), func(r *http.Request) (*http.Response, error) {
			mu.Lock()
			defer mu.Unlock()
			at := time.Since(start)
			if at == 0 || at == time.Second && limited == 1 { // the first call, then the first released
				limited++
				resp := httpmock.NewStringResponse(http.StatusTooManyRequests, `{}`)
				resp.Header.Set("Retry-After", fmt.Sprint(limited*2-1)) // 1 s, then 3 s
				return resp, nil
			}
			sent = append(sent, at)
			return httpmock.NewJsonResponse(http.StatusOK, map[string]any{"id": "u"})
		})
		var wg sync.WaitGroup
		wg.Go(func() {
			if _, err := c.Users.Get(context.Background(), "first"); err != nil {
				t.Error(err)
			}
		})
		for i := range 10 {
			wg.Go(func() {
				time.Sleep(100 * time.Millisecond)
				if _, err := c.Users.Get(context.Background(), fmt.Sprint("u-", i)); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if limited != 2 {
			t.Fatalf("%d answers 429; want 2", limited)
		}
		if len(sent) != 11 {
			t.Fatalf("%d calls answered 200; want 11", len(sent))
		}
		for _, at := range sent {
			if at < 4*time.Second || at >= 5*time.Second {
				t.Errorf("a call went out at %v; want within [4s, 5s), after the second pause", at)
			}
		}
	})
}
