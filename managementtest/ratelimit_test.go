package managementtest_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

func TestWithRateLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := managementtest.NewInMemoryServer(managementtest.WithRateLimit(2, 3))
		srv.AddUser(management.UserDetails{User: management.User{ID: "u-1"}})
		cfg := srv.Config()
		cfg.MaxRetries = -1
		c, err := management.NewClient(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		// The burst: the token request and two reads; the third read is over.
		for i := range 2 {
			if _, err := c.Users.Get(ctx, "u-1"); err != nil {
				t.Fatalf("read %d: %v", i, err)
			}
		}
		_, err = c.Users.Get(ctx, "u-1")
		var ae *management.APIError
		if !errors.As(err, &ae) || ae.StatusCode != http.StatusTooManyRequests || !errors.Is(err, management.ErrRateLimited) {
			t.Fatalf("over the rate: %v; want a 429 *APIError", err)
		}
		if got := srv.RateLimited(); got != 1 {
			t.Errorf("RateLimited() = %d; want 1", got)
		}
		time.Sleep(time.Second) // two more allowed
		if _, err := c.Users.Get(ctx, "u-1"); err != nil {
			t.Errorf("after a second: %v", err)
		}
	})
}
