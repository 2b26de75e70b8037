package management

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

// requireServersEnv, when set (as .ci/run sets it), turns the skips of tests
// that need something outside the Go toolchain (redis-server, nginx, a
// pseudo-terminal, the module proxy) into failures.
const requireServersEnv = "MANAGEMENT_REQUIRE_SERVERS"

// unreachableProxy matches what the go command says when it cannot fetch a
// module: the proxy is off, unknown, refusing or silent.
var unreachableProxy = regexp.MustCompile(`module lookup disabled by GOPROXY=off|dial tcp|no such host|connection refused|network is unreachable|i/o timeout|TLS handshake timeout|proxyconnect|Client\.Timeout exceeded|server misbehaving`)

// downloadModules runs go mod download in each of dirs, which fetches into
// the module cache whatever the packages and tests of the module there need
// and the cache lacks. unreachable says that it failed because the module
// proxy could not be reached.
func downloadModules(goTool string, dirs ...string) (unreachable bool, err error) {
	for _, dir := range dirs {
		cmd := exec.Command(goTool, "mod", "download")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off")
		out, err := cmd.CombinedOutput()
		if err != nil {
			return unreachableProxy.Match(out), fmt.Errorf("go mod download in %s: %v\n%s", dir, err, bytes.TrimSpace(out))
		}
	}
	return false, nil
}

// needModules makes sure that the module cache holds every module that the
// modules in dirs need (downloadModules). The tests that build other
// modules of the repository call it first: with only the root module's
// dependencies at hand and no module proxy, they would fail on a missing
// download. When the proxy cannot be reached, the test is skipped, saying
// so, unless MANAGEMENT_REQUIRE_SERVERS is set, as CI sets it: then it
// fails. Any other failure of the download fails the test.
func needModules(t *testing.T, goTool string, dirs ...string) {
	t.Helper()
	unreachable, err := downloadModules(goTool, dirs...)
	switch {
	case err == nil:
	case !unreachable:
		t.Fatal(err)
	case os.Getenv(requireServersEnv) != "":
		t.Fatalf("the module proxy cannot be reached, and the module cache lacks modules this test needs (%s is set: this fails rather than skips): %v", requireServersEnv, err)
	default:
		t.Skipf("the module proxy cannot be reached, and the module cache lacks modules this test needs (set %s=1 to fail instead, as CI does): %v", requireServersEnv, err)
	}
}

// TestDownloadModules tells an unreachable module proxy, which skips the
// tests that need it, from a module that is wrong, which fails them.
func TestDownloadModules(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	t.Setenv("GOMODCACHE", t.TempDir()) // empty: every module must be fetched
	t.Setenv("GOFLAGS", "-modcacherw")  // so that TempDir can remove what the go command writes there
	t.Setenv("GOPROXY", "off")
	t.Setenv("GOTOOLCHAIN", "local") // the empty cache holds no other toolchain, and the proxy is off
	module := func(gomod string) string {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	for _, tc := range []struct {
		name, gomod     string
		unreachable, ok bool
	}{
		{"no dependencies", "module example.com/a\n\ngo 1.26.0\n", false, true},
		{"a dependency the cache lacks", "module example.com/a\n\ngo 1.26.0\n\nrequire golang.org/x/text v0.3.0\n", true, false},
		{"a malformed go.mod", "module example.com/a\n\ngo 1.26.0\n\nrequire golang.org/x/text\n", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			unreachable, err := downloadModules(goTool, module(tc.gomod))
			if unreachable != tc.unreachable || (err == nil) != tc.ok {
				t.Errorf("downloadModules = %v, %v; want unreachable %v, success %v", unreachable, err, tc.unreachable, tc.ok)
			}
		})
	}
}
