package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/serviceconnect/management"
	"github.com/spf13/cobra"
)

// VersionOptions are what versionRun needs.
type VersionOptions struct {
	IO *IOStreams
	// BuildInfo returns the build information the go command recorded in
	// the binary (debug.ReadBuildInfo); tests give their own.
	BuildInfo func() (*debug.BuildInfo, bool)
}

// NewCmdVersion returns the version command. runF, when not nil, is called
// with the options in place of versionRun.
func NewCmdVersion(f *Factory, runF func(*VersionOptions) error) *cobra.Command {
	opts := &VersionOptions{IO: f.IO, BuildInfo: debug.ReadBuildInfo}
	return &cobra.Command{
		Use:   "version",
		Short: "Print the tool's version, the SDK's, and the source revision when the build recorded it",
		Args:  exactArgs(),
		RunE: runE(func(*cobra.Command, []string) error {
			if runF != nil {
				return runF(opts)
			}
			return versionRun(opts)
		}),
	}
}

func versionRun(opts *VersionOptions) error {
	_, err := fmt.Fprint(opts.IO.Out, versionText(opts.BuildInfo()))
	return err
}

// versionText is what version and --version print: the tool's module
// version as the go command recorded it (the version of go install
// ...@version; from a clone, the tag's or a pseudo-version of the commit;
// "(devel)" for go run or a build without -buildvcs), the SDK's Version,
// the source revision when the build recorded one (go build -buildvcs),
// and the Go toolchain.
func versionText(info *debug.BuildInfo, ok bool) string {
	var b strings.Builder
	v := "unknown (built without module information)"
	if ok && info.Main.Version != "" {
		v = info.Main.Version
	}
	fmt.Fprintf(&b, "management %s\n", v)
	fmt.Fprintf(&b, "SDK management-go %s\n", management.Version)
	if ok {
		settings := make(map[string]string)
		for _, s := range info.Settings {
			settings[s.Key] = s.Value
		}
		if rev := settings["vcs.revision"]; rev != "" {
			fmt.Fprintf(&b, "revision %s", rev)
			var notes []string
			if t := settings["vcs.time"]; t != "" {
				notes = append(notes, t)
			}
			if settings["vcs.modified"] == "true" {
				notes = append(notes, "with uncommitted changes")
			}
			if len(notes) > 0 {
				fmt.Fprintf(&b, " (%s)", strings.Join(notes, ", "))
			}
			b.WriteByte('\n')
		}
	}
	goVersion := runtime.Version()
	if ok && info.GoVersion != "" {
		goVersion = info.GoVersion
	}
	fmt.Fprintf(&b, "%s %s/%s\n", goVersion, runtime.GOOS, runtime.GOARCH)
	return b.String()
}

// buildVersion is the main module's version as the go command recorded it.
func buildVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	return info.Main.Version
}
