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
