package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

// BenchmarkExport measures an export of benchUsers Users from a
// managementtest server on loopback (the default page size, 100), against
// ranging over them with the SDK directly: what the tool adds is the
// encoding, the writes and, with a checkpoint, a sync of the output and
// an atomic checkpoint per page (and the hash of the output it records;
// --force starts each run over). Each run builds its client and fetches
// its token, as the tool does.
//
//	go test -run '^$' -bench Export -count 6 ./internal/cli
func BenchmarkExport(b *testing.B) {
	const benchUsers = 10000
	srv := managementtest.NewServer()
	defer srv.Close()
	seedUsers(srv, benchUsers)
	e := useServer(b, srv)

	b.Run("sdk-range-List", func(b *testing.B) {
		for b.Loop() {
			cfg, err := management.ConfigFromEnv()
			if err != nil {
				b.Fatal(err)
			}
			cfg.HTTPClient = e.httpClient
			client, err := management.NewClient(cfg)
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for _, err := range client.Users.List(b.Context(), nil) {
				if err != nil {
					b.Fatal(err)
				}
				n++
			}
			if n != benchUsers {
				b.Fatalf("%d Users listed", n)
			}
		}
		b.ReportMetric(float64(benchUsers*b.N)/b.Elapsed().Seconds(), "users/s")
	})
	b.Run("export-jsonl-devnull", func(b *testing.B) {
		for b.Loop() {
			if r := e.run(b, "users", "export", "--out", os.DevNull); r.code != ExitOK {
				b.Fatalf("exit %d: %s", r.code, r.stderr)
			}
		}
		b.ReportMetric(float64(benchUsers*b.N)/b.Elapsed().Seconds(), "users/s")
	})
	b.Run("export-jsonl-checkpoint", func(b *testing.B) {
		dir := b.TempDir()
		out, ckpt := filepath.Join(dir, "users.jsonl"), filepath.Join(dir, "ckpt")
		for b.Loop() {
			if r := e.run(b, "users", "export", "--out", out, "--checkpoint", ckpt, "--force"); r.code != ExitOK {
				b.Fatalf("exit %d: %s", r.code, r.stderr)
			}
		}
		b.ReportMetric(float64(benchUsers*b.N)/b.Elapsed().Seconds(), "users/s")
	})
}
