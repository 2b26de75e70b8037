package management

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestInstallFromACloneFirst: until a version is tagged, `go get` and
// `go install ...@version` of this repository's modules fail, so a
// Markdown file that shows one says first how to install from a clone (or
// links the README's Install, which does).
func TestInstallFromACloneFirst(t *testing.T) {
	fetch := regexp.MustCompile(`go (get|install) github\.com/serviceconnect/management`)
	clone := regexp.MustCompile(`-replace=github\.com/serviceconnect/management|go install -C cmd/management|README\.md#install\)`)
	for path, text := range markdownFiles(t) {
		at := fetch.FindStringIndex(text)
		if at == nil {
			continue
		}
		if c := clone.FindStringIndex(text); c == nil || c[0] > at[0] {
			t.Errorf("%s:%d: %q comes before any word of how to install from a clone; it fails until a version is tagged",
				path, strings.Count(text[:at[0]], "\n")+1, text[at[0]:at[1]])
		}
	}
}

// TestCloneInstallVersion: the version at which the docs' commands have a
// module require this repository's modules, replaced by a clone, is the one
// the companion modules require of the SDK, so that `go mod tidy` leaves it
// as written when a companion is added (checked by hand: with v0.0.0, tidy
// rewrote it to v0.1.0 once grpcauth was added).
func TestCloneInstallVersion(t *testing.T) {
	required := regexp.MustCompile(`(?m)^\s*(?:require\s+)?github\.com/serviceconnect/management (v\S+)`)
	var want string
	for _, companion := range []string{"grpcauth", "otel", "redisstore"} {
		b, err := os.ReadFile(filepath.Join(companion, "go.mod"))
		if err != nil {
			t.Fatal(err)
		}
		m := required.FindSubmatch(b)
		switch {
		case m == nil:
			t.Fatalf("%s/go.mod does not require the SDK", companion)
		case want == "":
			want = string(m[1])
		case string(m[1]) != want:
			t.Errorf("%s/go.mod requires the SDK at %s, another companion at %s", companion, m[1], want)
		}
	}
	block := regexp.MustCompile("(?s)```sh\n(.*?)```")
	flag := regexp.MustCompile(`-require=(github\.com/serviceconnect/management\S*)@(\S+)`)
	n := 0
	for path, text := range markdownFiles(t) {
		var commands string
		for _, b := range block.FindAllStringSubmatch(text, -1) {
			commands += b[1]
		}
		for _, m := range flag.FindAllStringSubmatch(commands, -1) {
			n++
			if m[2] != want {
				t.Errorf("%s: -require=%s@%s; the companions require the SDK at %s, which go mod tidy would write in its place", path, m[1], m[2], want)
			}
		}
	}
	if n == 0 {
		t.Error("no Markdown file shows -require=github.com/serviceconnect/management@...: is the README's Install elsewhere?")
	}
}
