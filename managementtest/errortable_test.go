package managementtest_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

// errorTableRow stages one row of the error table (docs/errors.md) with the fake
// alone and says whether the error that comes back is the one the row names.
type errorTableRow struct {
	stage func(ctx context.Context, srv *managementtest.Server, c *management.Client) error
	is    func(err error) bool
}

func isErr(target error) func(error) bool {
	return func(err error) bool { return errors.Is(err, target) }
}

func asErr[E error](also func(E) bool) func(error) bool {
	return func(err error) bool {
		var e E
		return errors.As(err, &e) && (also == nil || also(e))
	}
}

// getUserAfter stages FailNext(route, n, status) and then reads a User.
func getUserAfter(route managementtest.Route, n, status int) func(context.Context, *managementtest.Server, *management.Client) error {
	return func(ctx context.Context, srv *managementtest.Server, c *management.Client) error {
		srv.FailNext(route, n, status, 0)
		_, err := c.Users.Get(ctx, "u-1")
		return err
	}
}

// getUserAnswered stages FailNextWith(route, n, r) and then reads a User.
func getUserAnswered(route managementtest.Route, n int, r managementtest.Response) func(context.Context, *managementtest.Server, *management.Client) error {
	return func(ctx context.Context, srv *managementtest.Server, c *management.Client) error {
		srv.FailNextWith(route, n, r)
		_, err := c.Users.Get(ctx, "u-1")
		return err
	}
}

func jsonAnswer(status int, body string) managementtest.Response {
	return managementtest.Response{Status: status, Header: http.Header{"Content-Type": {"application/json"}}, Body: body}
}

// errorTable has a row for every error the table of docs/errors.md names,
// keyed by the table's first column, and a second one where the column
// names two.
var errorTable = map[string]errorTableRow{
	"ErrNotFound": {
		stage: func(ctx context.Context, _ *managementtest.Server, c *management.Client) error {
			_, err := c.Users.Get(ctx, "u-nobody")
			return err
		},
		is: isErr(management.ErrNotFound),
	},
	"ErrValidation": {
		stage: func(ctx context.Context, srv *managementtest.Server, c *management.Client) error {
			srv.FailNext(managementtest.RouteUpdateThing, 1, http.StatusBadRequest, 0)
			_, err := c.Things.Update(ctx, "t-1", management.ThingUpdate{Name: management.Ptr("x")})
			return err
		},
		is: isErr(management.ErrValidation),
	},
	"ErrUnauthorized": {
		stage: getUserAfter(managementtest.RouteGetUser, 2, http.StatusUnauthorized), // the call and its replay
		is:    isErr(management.ErrUnauthorized),
	},
	"ErrRateLimited": {
		stage: getUserAfter(managementtest.RouteGetUser, 10, http.StatusTooManyRequests),
		is:    isErr(management.ErrRateLimited),
	},
	"ErrInvalidClient": {
		stage: func(ctx context.Context, srv *managementtest.Server, _ *management.Client) error {
			cfg := srv.Config()
			cfg.ClientSecret = "not-the-secret"
			c, err := management.NewClient(cfg)
			if err != nil {
				return err
			}
			_, err = c.Users.Get(ctx, "u-1")
			return err
		},
		is: isErr(management.ErrInvalidClient),
	},
	"ErrUnsupportedGrantType": {
		stage: getUserAfter(managementtest.RouteToken, 1, http.StatusBadRequest),
		is:    isErr(management.ErrUnsupportedGrantType),
	},
	"ErrInvalidArgument": {
		stage: func(ctx context.Context, _ *managementtest.Server, c *management.Client) error {
			_, err := c.Users.Get(ctx, "")
			return err
		},
		is: isErr(management.ErrInvalidArgument),
	},
	"ErrInvalidPageLink": {
		stage: func(ctx context.Context, srv *managementtest.Server, c *management.Client) error {
			srv.FailNextWith(managementtest.RouteListUsers, 1, jsonAnswer(http.StatusOK,
				`{"users":[],"next_page":"https://elsewhere.example/users?page=2"}`))
			for _, err := range c.Users.List(ctx, nil) {
				if err != nil {
					return err
				}
			}
			return nil
		},
		is: isErr(management.ErrInvalidPageLink),
	},
	"*TransportError": {
		stage: getUserAnswered(managementtest.RouteGetUser, 10, managementtest.Response{Cut: true}),
		is:    asErr[*management.TransportError](nil),
	},
	"ErrMisconfigured": {
		stage: getUserAnswered(managementtest.RouteGetUser, 1, managementtest.Response{
			Status: http.StatusMovedPermanently,
			Header: http.Header{"Location": {"https://elsewhere.example/users/u-1"}},
		}),
		is: func(err error) bool {
			return isErr(management.ErrMisconfigured)(err) && asErr[*management.APIError](nil)(err)
		},
	},
	"ErrMisconfigured, from the token endpoint": {
		stage: getUserAnswered(managementtest.RouteToken, 1, managementtest.Response{
			Status: http.StatusNotFound,
			Header: http.Header{"Content-Type": {"text/html"}},
			Body:   "<html><body>Not Found</body></html>",
		}),
		is: func(err error) bool {
			return isErr(management.ErrMisconfigured)(err) && asErr[*management.TokenError](nil)(err)
		},
	},
	"*DecodeError": {
		stage: getUserAnswered(managementtest.RouteGetUser, 1, jsonAnswer(http.StatusOK, `{"reason":"X","error_message":"an error shape on a 200"}`)),
		is:    asErr(func(e *management.DecodeError) bool { return e.ContentType == "application/json" }),
	},
	"ErrResponseTooLarge": {
		stage: func(ctx context.Context, srv *managementtest.Server, _ *management.Client) error {
			cfg := srv.Config()
			cfg.MaxResponseBytes = 1 << 10
			c, err := management.NewClient(cfg)
			if err != nil {
				return err
			}
			srv.FailNextWith(managementtest.RouteGetUser, 1, jsonAnswer(http.StatusOK, `{"id":"u-1","first_name":"`+strings.Repeat("a", 4<<10)+`"}`))
			_, err = c.Users.Get(ctx, "u-1")
			return err
		},
		is: func(err error) bool {
			return isErr(management.ErrResponseTooLarge)(err) && asErr[*management.DecodeError](nil)(err)
		},
	},
}

// TestErrorTableStagedWithTheFake holds the promise that a user's test can
// stage every failure the error table of docs/errors.md names with
// managementtest alone: each name in the table's first column has a row
// above, staged through the fake's public API, and gets the error it names.
func TestErrorTableStagedWithTheFake(t *testing.T) {
	guide, err := os.ReadFile("../docs/errors.md")
	if err != nil {
		t.Skip("no docs/errors.md here (not a checkout of the repository?):", err)
	}
	table := regexp.MustCompile("(?s)\n\\| error \\| when \\|\n\\|---\\|---\\|\n(.*?)\n\n").FindSubmatch(guide)
	if table == nil {
		t.Fatal("the error table of docs/errors.md is not where this test looks: | error | when |")
	}
	var names []string
	for line := range strings.Lines(string(table[1])) {
		first := strings.SplitN(line, "|", 3)[1]
		for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(first, -1) {
			names = append(names, m[1])
		}
	}
	if len(names) < 10 {
		t.Fatalf("found %d names in the error table of docs/errors.md, want at least 10: %q", len(names), names)
	}
	for _, name := range names {
		if _, ok := errorTable[name]; !ok {
			t.Errorf("the error table of docs/errors.md names %s, and no row of errorTable stages it", name)
		}
	}
	for name, row := range errorTable {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := managementtest.NewInMemoryServer()
				defer srv.Close()
				srv.AddUser(management.UserDetails{User: management.User{ID: "u-1"}})
				srv.AddThing(management.ThingDetails{Thing: management.Thing{PhysicalID: "t-1"}})
				err := row.stage(t.Context(), srv, srv.Client())
				if !row.is(err) {
					t.Errorf("staged %s, got %T %v", name, err, err)
				}
			})
		})
	}
}
