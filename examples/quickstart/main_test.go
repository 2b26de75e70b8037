package main

import (
	"context"
	"testing"
)

// TestRunOffline runs the tour as `go run ./examples/quickstart` does on a
// machine without credentials: against the seeded fake.
func TestRunOffline(t *testing.T) {
	t.Setenv("MANAGEMENT_BASE_URL", "")
	if err := run(context.Background()); err != nil {
		t.Fatalf("run: %v", err)
	}
}
