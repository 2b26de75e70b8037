package management

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jarcoal/httpmock"
)

// prefetchPages serves four users pages, p1 to p4, each after latency.
func prefetchPages(t *testing.T, latency time.Duration) (*Client, *httpmock.MockTransport) {
	t.Helper()
	c, mt := setup(t, Config{MaxRetries: -1})
	slow := func(r httpmock.Responder) httpmock.Responder {
		return func(req *http.Request) (*http.Response, error) {
			time.Sleep(latency)
			return r(req)
		}
	}
	registerPages(t, mt, map[string]httpmock.Responder{
		usersPath:             slow(pageOfUsers(usersPath+"?page=2", "a", "b")),
		usersPath + "?page=2": slow(pageOfUsers(usersPath+"?page=3", "c")),
		usersPath + "?page=3": slow(pageOfUsers(usersPath + "?page=4")),
		usersPath + "?page=4": slow(pageOfUsers("", "d", "e")),
	})
	return c, mt
}

func TestPrefetchKeepsOrderAndRestarts(t *testing.T) {
	c, mt := prefetchPages(t, 0)
	seq := c.Users.List(context.Background(), &ListOptions{Prefetch: true})
	for run := range 2 {
		ids, errs := collect(seq, idOfUser)
		if diff := cmp.Diff([]string{"a", "b", "c", "d", "e"}, ids); diff != "" || errs != nil {
			t.Errorf("run %d: ids (-want +got):\n%s errors %v", run, diff, errs)
		}
	}
	pages := []string{usersPath, usersPath + "?page=2", usersPath + "?page=3", usersPath + "?page=4"}
	testCalls(t, mt, pageCalls(append(pages, pages...)...)) // 4 per run
}

// With 2 s per page on the wire and 2 s of work per page with items (the
// third is empty), prefetching overlaps the two: the wire's 2 s per page
// once ahead of the work, 10 s in all, instead of 4×2 + 3×2 = 14 s.
func TestPrefetchOverlapsWireAndWork(t *testing.T) {
	for _, tt := range []struct {
		prefetch bool
		want     time.Duration
	}{{false, 14 * time.Second}, {true, 10 * time.Second}} {
		synctest.Test(t, func(t *testing.T) {
			c, _ := prefetchPages(t, 2*time.Second)
			start := time.Now()
			for user, err := range c.Users.List(context.Background(), &ListOptions{Prefetch: tt.prefetch}) {
				if err != nil {
					t.Fatal(err)
				}
				if user.ID == "a" || user.ID == "c" || user.ID == "d" { // first item of a page
					time.Sleep(2 * time.Second)
				}
			}
			if got := time.Since(start); got != tt.want {
				t.Errorf("Prefetch %t: took %v, want %v", tt.prefetch, got, tt.want)
			}
		})
	}
}

func TestPrefetchBreakCancelsTheFetch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, mt := setup(t, Config{MaxRetries: -1})
		var cancelled atomic.Bool
		registerPages(t, mt, map[string]httpmock.Responder{
			usersPath: pageOfUsers(usersPath+"?page=2", "a", "b"),
			usersPath + "?page=2": func(req *http.Request) (*http.Response, error) {
				select {
				case <-req.Context().Done():
					cancelled.Store(true)
					return nil, req.Context().Err()
				case <-time.After(time.Hour):
					return httpmock.NewStringResponse(200, `{"users":[],"next_page":null}`), nil
				}
			},
		})
		start := time.Now()
		for range c.Users.List(context.Background(), &ListOptions{Prefetch: true}) {
			synctest.Wait() // the prefetch of page 2 is now waiting on the server
			break
		}
		// The range has returned at once: the prefetch was cancelled and
		// waited for, and no goroutine of it is left (synctest.Test fails if
		// one is). httpmock answers a cancelled request without waiting for
		// its responder, which sees the cancellation just after.
		elapsed := time.Since(start)
		synctest.Wait()
		if !cancelled.Load() || elapsed != 0 {
			t.Errorf("cancelled %t after %v; want the prefetch cancelled at once", cancelled.Load(), elapsed)
		}
	})
}

func TestPrefetchErrorAfterEarlierItems(t *testing.T) {
	c, mt := setup(t, Config{MaxRetries: -1})
	registerPages(t, mt, map[string]httpmock.Responder{
		usersPath:             pageOfUsers(usersPath+"?page=2", "a", "b"),
		usersPath + "?page=2": jsonResponder(500, map[string]any{"reason": "COMMON.INTERNAL", "error_message": "boom"}),
	})
	ids, errs := collect(c.Users.List(context.Background(), &ListOptions{Prefetch: true}), idOfUser)
	if diff := cmp.Diff([]string{"a", "b"}, ids); diff != "" || len(errs) != 1 {
		t.Fatalf("ids (-want +got):\n%s errors %v; want the page 2 error once, after a and b", diff, errs)
	}
	if got := errs[0].Error(); got != "management: listing /users, page 2: GET /users: 500 COMMON.INTERNAL: boom" {
		t.Errorf("error = %q", got)
	}
}
