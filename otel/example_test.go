package otel_test

import (
	"context"
	"fmt"
	"log"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
	mgmtotel "github.com/serviceconnect/management/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// Example traces a Client with OpenTelemetry: an INTERNAL span per
// operation and a CLIENT span per HTTP request, named by the route
// template, never by an id. Here the spans go to an in-memory recorder; in
// production, to your TracerProvider's exporter. They end children first:
// the token fetch (its request, then its operation) inside the Users.Get.
func Example() {
	srv := managementtest.NewServer()
	defer srv.Close()
	srv.AddUser(management.UserDetails{User: management.User{ID: "u-ada"}})
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))

	cfg := srv.Config()
	cfg.Observer = mgmtotel.New(mgmtotel.WithTracerProvider(tp))
	client, err := management.NewClient(cfg)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := client.Users.Get(context.Background(), "u-ada"); err != nil {
		log.Fatal(err)
	}
	for _, s := range spans.Ended() {
		fmt.Println(s.Name(), s.SpanKind())
	}
	// Output:
	// POST /auth/token client
	// POST /auth/token internal
	// GET /users/{user_id} client
	// GET /users/{user_id} internal
}
