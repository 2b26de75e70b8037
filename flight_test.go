package management

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

func TestFlightWaitersAreBoundedByTheirOwnContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		caller, cancelCaller := context.WithCancel(context.Background())
		f := startFlight(caller, flightHost{what: "test"}, time.Minute, func(ctx context.Context) (int, error) {
			<-release
			return 42, ctx.Err()
		}, nil, nil)
		impatient, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if _, err := f.wait(impatient); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("impatient waiter: err = %v; want its own deadline", err)
		}
		cancelCaller() // the caller that started the flight gives up: the call goes on
		close(release)
		if v, err := f.wait(context.Background()); v != 42 || err != nil {
			t.Errorf("patient waiter = %d, %v; want 42, nil (detached from the starter's cancellation)", v, err)
		}
	})
}

func TestFlightTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		f := startFlight(context.Background(), flightHost{what: "test"}, 5*time.Second, func(ctx context.Context) (int, error) {
			<-ctx.Done()
			return 0, ctx.Err()
		}, nil, nil)
		if _, err := f.wait(context.Background()); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v; want the flight's timeout", err)
		}
		if d := time.Since(start); d != 5*time.Second {
			t.Errorf("the flight ended after %v; want 5s", d)
		}
	})
}
