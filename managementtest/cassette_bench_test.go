package managementtest_test

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

// benchThings is the number of answers of the benchmarks' cassettes.
const benchThings = 200

// benchServer is a fake of benchThings Things of about 1 KiB each.
func benchServer() *managementtest.Server {
	srv := managementtest.NewInMemoryServer()
	for i := range benchThings {
		srv.AddThing(management.ThingDetails{
			Thing:          management.Thing{PhysicalID: fmt.Sprintf("t-%d", i), Name: "Thing"},
			CustomSettings: map[string]any{"notes": strings.Repeat("n", 900)},
		})
	}
	return srv
}

// getThings reads every Thing of a benchServer through transport.
func getThings(b *testing.B, cfg management.Config, transport http.RoundTripper) {
	b.Helper()
	cfg.HTTPClient = &http.Client{Transport: transport}
	client, err := management.NewClient(cfg)
	if err != nil {
		b.Fatal(err)
	}
	for i := range benchThings {
		if _, err := client.Things.Get(b.Context(), fmt.Sprintf("t-%d", i)); err != nil {
			b.Fatal(err)
		}
	}
}

// recordThings records getThings against srv into path, not yet written.
func recordThings(b *testing.B, srv *managementtest.Server, path string) *managementtest.Recorder {
	b.Helper()
	rec, err := managementtest.NewRecorder(path, srv.URL, managementtest.RecordOptions{AllowedBaseURLs: []string{srv.URL}, Transport: srv.Transport()})
	if err != nil {
		b.Fatal(err)
	}
	getThings(b, srv.Config(), rec)
	return rec
}

// BenchmarkRecorderClose measures writing a cassette of benchThings
// answers of 1 KiB: learning the credentials, replacing their echoes in
// every form, the last check and the file.
func BenchmarkRecorderClose(b *testing.B) {
	srv := benchServer()
	path := filepath.Join(b.TempDir(), "c.json")
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		rec := recordThings(b, srv, path)
		b.StartTimer()
		if err := rec.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReplay measures a replay of that cassette through a Client.
func BenchmarkReplay(b *testing.B) {
	path := filepath.Join(b.TempDir(), "c.json")
	if err := recordThings(b, benchServer(), path).Close(); err != nil {
		b.Fatal(err)
	}
	c, err := managementtest.LoadCassette(path)
	if err != nil {
		b.Fatal(err)
	}
	cfg := management.Config{BaseURL: c.BaseURL, ClientID: "id", ClientSecret: "secret"}
	b.ReportAllocs()
	for b.Loop() {
		getThings(b, cfg, managementtest.NewReplayer(c))
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchThings), "ns/request")
}

// tokenCounts are the sizes of the benchmarks of many End User tokens:
// as many authenticate requests as distinct tokens. -short (CI, which
// runs every benchmark once) runs the smallest only.
var tokenCounts = []int{100, 1000, 10000}

// forTokenCounts runs bench for each of tokenCounts.
func forTokenCounts(b *testing.B, bench func(b *testing.B, n int)) {
	for _, n := range tokenCounts {
		b.Run(fmt.Sprintf("tokens=%d", n), func(b *testing.B) {
			if testing.Short() && n > tokenCounts[0] {
				b.Skip("-short: the smallest size only")
			}
			bench(b, n)
		})
	}
}

// authenticateAll authenticates tokens through transport, each once.
func authenticateAll(b *testing.B, cfg management.Config, transport http.RoundTripper, tokens []string) {
	b.Helper()
	cfg.HTTPClient = &http.Client{Transport: transport}
	client, err := management.NewClient(cfg)
	if err != nil {
		b.Fatal(err)
	}
	for _, tok := range tokens {
		if _, err := client.Authenticate(b.Context(), "Bearer "+tok); err != nil {
			b.Fatal(err)
		}
	}
}

// recordTokens records n authenticate requests, each with an End User
// token of its own, valid, into path; the cassette is not yet written.
func recordTokens(b *testing.B, n int, path string) *managementtest.Recorder {
	b.Helper()
	srv := managementtest.NewInMemoryServer()
	srv.AddUser(management.UserDetails{User: management.User{ID: "u-1"}})
	tokens := make([]string, n)
	for i := range tokens {
		tokens[i] = srv.IssueEndUserToken("u-1")
	}
	rec, err := managementtest.NewRecorder(path, srv.URL, managementtest.RecordOptions{AllowedBaseURLs: []string{srv.URL}, Transport: srv.Transport()})
	if err != nil {
		b.Fatal(err)
	}
	authenticateAll(b, srv.Config(), rec, tokens)
	return rec
}

// BenchmarkRecorderCloseTokens measures writing a cassette of n
// authenticate requests with as many distinct End User tokens: each is
// learnt, and every text of every interaction is searched for all of
// them.
func BenchmarkRecorderCloseTokens(b *testing.B) {
	forTokenCounts(b, func(b *testing.B, n int) {
		path := filepath.Join(b.TempDir(), "c.json")
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			rec := recordTokens(b, n, path)
			b.StartTimer()
			if err := rec.Close(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/interaction")
	})
}

// BenchmarkReplayTokens measures a replay of that cassette through a
// Client, with other tokens than the recording's: each is learnt as it
// comes, and each request's texts searched for all those learnt so far.
func BenchmarkReplayTokens(b *testing.B) {
	forTokenCounts(b, func(b *testing.B, n int) {
		path := filepath.Join(b.TempDir(), "c.json")
		if err := recordTokens(b, n, path).Close(); err != nil {
			b.Fatal(err)
		}
		c, err := managementtest.LoadCassette(path)
		if err != nil {
			b.Fatal(err)
		}
		tokens := make([]string, n)
		for i := range tokens {
			tokens[i] = fmt.Sprintf("replay-token-%06d", i)
		}
		cfg := management.Config{BaseURL: c.BaseURL, ClientID: "id", ClientSecret: "secret"}
		b.ReportAllocs()
		for b.Loop() {
			authenticateAll(b, cfg, managementtest.NewReplayer(c), tokens)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/interaction")
	})
}
