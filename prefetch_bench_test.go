package management_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/serviceconnect/management"
)

// BenchmarkListPrefetch ranges over 10 pages from a loopback server that
// takes 2 ms per page, with a loop that spends 2 ms on each page: with
// Prefetch the wire and the work overlap.
func BenchmarkListPrefetch(b *testing.B) {
	const pages, latency = 10, 2 * time.Millisecond
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v2/api/management/service_connect/auth/token", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"access_token":"t","token_type":"Bearer","expires_in":600}`)
	})
	mux.HandleFunc("GET /v2/api/management/service_connect/users", func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(latency)
		n, _ := strconv.Atoi(r.URL.Query().Get("page"))
		next := "null"
		if n+1 < pages {
			next = fmt.Sprintf(`"/v2/api/management/service_connect/users?page=%d"`, n+1)
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"users":[{"id":"u-%d","created_at":"2026-11-21T08:00:00.000Z","updated_at":"2026-11-21T08:00:00.000Z"}],"next_page":%s}`, n, next)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	client, err := management.NewClient(management.Config{BaseURL: srv.URL, ClientID: "id", ClientSecret: "secret"})
	if err != nil {
		b.Fatal(err)
	}
	for _, prefetch := range []bool{false, true} {
		b.Run("prefetch="+strconv.FormatBool(prefetch), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				n := 0
				for _, err := range client.Users.List(context.Background(), &management.ListOptions{Prefetch: prefetch}) {
					if err != nil {
						b.Fatal(err)
					}
					time.Sleep(latency) // the loop's work on the page (one User a page)
					n++
				}
				if n != pages {
					b.Fatalf("got %d users, want %d", n, pages)
				}
			}
		})
	}
}
