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
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
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
	client, cleanup, err := connect()
	if err != nil {
		return err
	}
	defer cleanup()

	addr := cmp.Or(os.Getenv("ADDR"), "127.0.0.1:8080")
	srv := &http.Server{
		Addr:              addr,
		Handler:           newMux(&management.Authenticator{Client: client}),
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

// newMux routes GET /me through auth.
func newMux(auth *management.Authenticator) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET /me", auth.Handler(http.HandlerFunc(me)))
	return mux
}

// me answers with the End User the Authenticator let through.
func me(w http.ResponseWriter, r *http.Request) {
	user, _ := management.EndUserFromContext(r.Context())
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{"user_id": user.ID, "role": string(user.Role)})
}
