package cli

import (
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/serviceconnect/management"
)

// TestVersionText: the module version from the build information, the
// SDK's Version, the revision when the build recorded one, the toolchain.
func TestVersionText(t *testing.T) {
	platform := " " + runtime.GOOS + "/" + runtime.GOARCH + "\n"
	sdk := "SDK management-go " + management.Version + "\n"
	for _, c := range []struct {
		name string
		info *debug.BuildInfo
		ok   bool
		want string
	}{
		{"tagged, with revision", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.4.0"}, Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "0123456789abcdef"}, {Key: "vcs.time", Value: "2026-11-20T10:00:00Z"}, {Key: "vcs.modified", Value: "false"},
		}}, true, "management v1.4.0\n" + sdk + "revision 0123456789abcdef (2026-11-20T10:00:00Z)\ngo1.26.8" + platform},
		{"modified work tree", &debug.BuildInfo{GoVersion: "go1.27.4", Main: debug.Module{Version: "v0.0.0-20261120100000-0123456789ab+dirty"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef"}, {Key: "vcs.modified", Value: "true"},
		}}, true, "management v0.0.0-20261120100000-0123456789ab+dirty\n" + sdk + "revision 0123456789abcdef (with uncommitted changes)\ngo1.27.4" + platform},
		{"no revision recorded", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}, true,
			"management (devel)\n" + sdk + "go1.26.8" + platform},
		{"no build information", nil, false, "management unknown (built without module information)\n" + sdk + runtime.Version() + platform},
	} {
		if got := versionText(c.info, c.ok); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}
