package managementtest_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

// recorded records a read of u-1 and of u-2 (which does not exist)
// against a fake that stands in for the sandbox, and returns the
// cassette. In a test of yours, the base URL is the sandbox's and
// Transport your HTTPClient's (nil: http.DefaultTransport).
func recorded(opts managementtest.RecordOptions) (*managementtest.Cassette, error) {
	dir, err := os.MkdirTemp("", "cassettes")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "read-users.json")

	srv := managementtest.NewInMemoryServer()
	srv.AddUser(management.UserDetails{User: management.User{ID: "u-1", Email: management.Ptr("ada@example.com")}})
	opts.AllowedBaseURLs = []string{managementtest.InMemoryURL}
	opts.Transport = srv.Transport()
	rec, err := managementtest.NewRecorder(path, srv.URL, opts)
	if err != nil {
		return nil, err
	}
	cfg := srv.Config()
	cfg.HTTPClient = &http.Client{Transport: rec}
	client, err := management.NewClient(cfg)
	if err != nil {
		return nil, err
	}
	_, _ = client.Users.Get(context.Background(), "u-1")
	_, _ = client.Users.Get(context.Background(), "u-2")
	if err := rec.Close(); err != nil {
		return nil, err
	}
	return managementtest.LoadCassette(path)
}

// A cassette holds the requests and the answers, with placeholders for
// the credentials.
func ExampleNewRecorder() {
	c, err := recorded(managementtest.RecordOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, in := range c.Interactions {
		fmt.Println(in.Request.Method, in.Request.Path, "|", in.Request.Header.Get("Authorization"), "|", in.Response.Status)
	}
	// Output:
	// POST /v2/api/management/service_connect/auth/token | Basic {{client_credentials_1}} | 200
	// GET /v2/api/management/service_connect/users/u-1 | Bearer {{management_token_1}} | 200
	// GET /v2/api/management/service_connect/users/u-2 | Bearer {{management_token_1}} | 404
}

// A replay answers from the cassette, with no service and any
// credentials; a request it does not hold gets a 501 that says so.
func ExampleNewReplayer() {
	c, err := recorded(managementtest.RecordOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	client, err := management.NewClient(management.Config{
		BaseURL: c.BaseURL, ClientID: "any", ClientSecret: "any",
		HTTPClient: &http.Client{Transport: managementtest.NewReplayer(c)},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	u, err := client.Users.Get(context.Background(), "u-1")
	fmt.Println(*u.Email, err)
	_, err = client.Users.Get(context.Background(), "u-2")
	fmt.Println(err)
	_, err = client.Users.Get(context.Background(), "u-3")
	fmt.Println(err != nil)
	// Output:
	// ada@example.com <nil>
	// management: GET /users/u-2: 404 COMMON.ENTITY_NOT_FOUND: User u-2 was not found
	// true
}

// Scrub replaces what the answers hold of people, should the sandbox's
// data not be as synthetic as it ought to be.
func ExampleRecordOptions_scrub() {
	email := regexp.MustCompile(`"email":\s*"[^"]*"`)
	c, err := recorded(managementtest.RecordOptions{
		Scrub: func(in *managementtest.Interaction) {
			in.Response.Body = email.ReplaceAllString(in.Response.Body, `"email":"someone@example.invalid"`)
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.Interactions[1].Response.Body[:48])
	// Output:
	// {"id":"u-1","email":"someone@example.invalid","f
}

// The fidelity check sends a cassette's requests to a fake seeded from its
// answers, and lists where the fake answers otherwise: here, a cassette
// changed to say the service answered 410 where the fake answers 404.
func ExampleCheckFidelity() {
	c, err := recorded(managementtest.RecordOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	c.Interactions[2].Response.Status = http.StatusGone
	r, err := managementtest.CheckFidelity(c)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(r.Compared, "answers compared")
	for _, d := range r.Differences {
		fmt.Println(d.Interactions, d.Request, d.Aspect, d.Service, d.Fake)
	}
	// Output:
	// 3 answers compared
	// [3] GET /users/{user_id} status 410 404
}
