// Command middleware serves one route, GET /me, that only End Users of the
// service may call: management.Authenticator checks each request's
// Authorization header with the service before the handler runs.
//
// With MANAGEMENT_BASE_URL unset it uses managementtest's in-memory fake and
// prints an End User token to try:
//
//	go run ./examples/middleware
//	curl -H 'Authorization: Bearer <token>' http://127.0.0.1:8080/me
//
// Against a real service, set MANAGEMENT_BASE_URL, MANAGEMENT_CLIENT_ID and
// MANAGEMENT_CLIENT_SECRET. ADDR sets the listening address.
//
// GET /account is a sensitive route: it refuses an End User let through
// stale (Authenticator.StaleIfError) while the service cannot answer. The
// -outage flag shows that, against an in-memory fake, without listening:
// it confirms one End User token, takes the fake's authenticate endpoint
// down for the given time, and prints each second what the two routes
// answer to that token and to one the service never confirmed, and how
// long each answer took, until both pass fresh again:
//
//	go run ./examples/middleware -outage 20s
//
// The demo runs with the SDK's defaults, the Client's retries included, so
// that its first rows show what the onset of an outage costs; one setting
// differs: CacheTTL is 1s rather than 30s, so that the checks need the
// service within a short outage.
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"time"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

func main() {
	log.SetFlags(0)
	if err := run(); err != nil {
		log.Fatalf("middleware: %v", err)
	}
}

func run() error {
	outage := flag.Duration("outage", 0, "take the fake's authenticate endpoint down for this long, print what the routes answer, and exit")
	flag.Parse()
	if *outage > 0 {
		return demoOutage(os.Stdout, managementtest.NewInMemoryServer(), *outage)
	}
	client, cleanup, err := connect()
	if err != nil {
		return err
	}
	defer cleanup()

	addr := cmp.Or(os.Getenv("ADDR"), "127.0.0.1:8080")
	srv := &http.Server{
		Addr:              addr,
		Handler:           newMux(newAuthenticator(client)),
		ReadHeaderTimeout: 5 * time.Second,
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	fmt.Printf("Listening on http://%s (Ctrl-C to stop)\n", addr)
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// connect returns a client of the service named by the environment, or of
// the fake, for which it prints an End User token to try.
func connect() (*management.Client, func(), error) {
	if os.Getenv(management.EnvBaseURL) != "" {
		cfg, err := management.ConfigFromEnv()
		if err != nil {
			return nil, nil, err
		}
		client, err := management.NewClient(cfg)
		return client, func() {}, err
	}
	fake := managementtest.NewServer()
	fake.AddUser(management.UserDetails{User: management.User{ID: "u-ada", Email: management.Ptr("ada@example.com")}})
	token := fake.IssueEndUserToken("u-ada")
	fmt.Printf("MANAGEMENT_BASE_URL is not set: using managementtest's in-memory fake.\nTry:\n  curl -H 'Authorization: Bearer %s' http://%s/me\n",
		token, cmp.Or(os.Getenv("ADDR"), "127.0.0.1:8080"))
	return fake.Client(), fake.Close, nil
}

// newAuthenticator checks End User tokens with client and, while the
// service cannot answer, lets through those it confirmed in the last 10
// minutes, marked Stale.
func newAuthenticator(client *management.Client) *management.Authenticator {
	return &management.Authenticator{
		Client:       client,
		StaleIfError: 10 * time.Minute, // the same on every replica, as CacheTTL
	}
}

// newMux routes GET /me and GET /account through auth; /account refuses
// an End User let through stale.
func newMux(auth *management.Authenticator) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET /me", auth.Handler(http.HandlerFunc(me)))
	mux.Handle("GET /account", auth.Handler(refuseStale(http.HandlerFunc(me))))
	return mux
}

// refuseStale serves next only to an End User the service confirmed just
// now: one let through under StaleIfError gets 503, as if the check had
// failed, so that a route that must not serve a revoked token never does.
func refuseStale(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if user, ok := management.EndUserFromContext(r.Context()); ok && user.Stale {
			w.Header().Set("Retry-After", "5")
			http.Error(w, "the End User token could not be checked just now; try again later", http.StatusServiceUnavailable)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// me answers with the End User the Authenticator let through, and whether
// it was let through stale.
func me(w http.ResponseWriter, r *http.Request) {
	user, _ := management.EndUserFromContext(r.Context())
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"user_id": user.ID, "role": user.Role, "stale": user.Stale})
}
