package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/serviceconnect/management"
	"github.com/spf13/cobra"
)

func newVersionCmd(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the tool's version, and the SDK's",
		Args:  exactArgs(),
		RunE: runE(func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(f.IO.Out, "management %s (management-go %s, %s)\n", f.Version, management.Version, runtime.Version())
			return err
		}),
	}
}

// buildVersion is the main module's version as the go command recorded it.
func buildVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	return info.Main.Version
}
