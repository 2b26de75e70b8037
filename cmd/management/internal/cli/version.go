package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/serviceconnect/management"
	"github.com/spf13/cobra"
)

// VersionOptions are what versionRun needs.
type VersionOptions struct {
	IO      *IOStreams
	Version string // the tool's
}

// NewCmdVersion returns the version command. runF, when not nil, is called
// with the options in place of versionRun.
func NewCmdVersion(f *Factory, runF func(*VersionOptions) error) *cobra.Command {
	opts := &VersionOptions{IO: f.IO, Version: f.Version}
	return &cobra.Command{
		Use:   "version",
		Short: "Print the tool's version, and the SDK's",
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
	_, err := fmt.Fprintf(opts.IO.Out, "management %s (management-go %s, %s)\n", opts.Version, management.Version, runtime.Version())
	return err
}

// buildVersion is the main module's version as the go command recorded it.
func buildVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	return info.Main.Version
}
