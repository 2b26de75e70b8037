package cli

import (
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/serviceconnect/management"
	"github.com/spf13/cobra"
)

// parseInto runs cmd's command line parsing on args; its run function
// records the options instead of running.
func parseInto(t *testing.T, cmd *cobra.Command, args ...string) {
	t.Helper()
	cmd.SetArgs(args)
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	if err := cmd.Execute(); err != nil {
		t.Fatalf("%s %v: %v", cmd.Name(), args, err)
	}
}

// TestCommandsFillOptions: each command's flags and arguments land in its
// options, and the run function replaces the command's own. The fields
// the factory fills (IO, Client, ...) are left out of the comparisons.
func TestCommandsFillOptions(t *testing.T) {
	streams, _, _, _ := Test()
	f := NewFactory(streams)

	var export *ExportOptions[management.User]
	parseInto(t, NewCmdExport(f, usersResource, func(o *ExportOptions[management.User]) error { export = o; return nil }),
		"--out", "u.csv", "--checkpoint", "u.ckpt", "-o", "csv", "--order-by", "updatedAt", "--direction", "asc", "--force")
	want := ExportOptions[management.User]{Order: orderOptions{OrderBy: "updatedAt", Direction: "asc"}, Output: "csv", Out: "u.csv", Checkpoint: "u.ckpt", Force: true}
	if diff := cmp.Diff(want, *export, cmpopts.IgnoreFields(ExportOptions[management.User]{}, "IO", "Client", "Service", "Resource")); diff != "" {
		t.Errorf("export options (-want +got):\n%s", diff)
	}

	var list *ListOptions[management.Thing]
	parseInto(t, NewCmdList(f, thingsResource, func(o *ListOptions[management.Thing]) error { list = o; return nil }),
		"--pages", "3", "--next-page", "/things?page=2", "-o", "json")
	wantList := ListOptions[management.Thing]{Order: orderOptions{NextPage: "/things?page=2"}, Output: "json", Pages: 3}
	if diff := cmp.Diff(wantList, *list, cmpopts.IgnoreFields(ListOptions[management.Thing]{}, "IO", "Client", "Resource")); diff != "" {
		t.Errorf("list options (-want +got):\n%s", diff)
	}

	var get *GetOptions[management.UserDetails]
	parseInto(t, NewCmdGet(f, userGet, func(o *GetOptions[management.UserDetails]) error { get = o; return nil }), "u-1", "-o", "table")
	if get.ID != "u-1" || get.Output != "table" {
		t.Errorf("get options: ID %q, Output %q", get.ID, get.Output)
	}

	var assoc *AssociateOptions
	parseInto(t, NewCmdAssociate(f, func(o *AssociateOptions) error { assoc = o; return nil }), "u-1", "lamp-7", "--model", "L", "--firmware-version", "1.0")
	wantAssoc := AssociateOptions{UserID: "u-1", PhysicalID: "lamp-7", Model: "L", FirmwareVersion: "1.0"}
	if diff := cmp.Diff(wantAssoc, *assoc, cmpopts.IgnoreFields(AssociateOptions{}, "IO", "Client")); diff != "" {
		t.Errorf("associate options (-want +got):\n%s", diff)
	}

	var dis *DisassociateOptions
	parseInto(t, NewCmdDisassociate(f, func(o *DisassociateOptions) error { dis = o; return nil }), "u-1", "lamp-7")
	if dis.UserID != "u-1" || dis.PhysicalID != "lamp-7" {
		t.Errorf("disassociate options: %q %q", dis.UserID, dis.PhysicalID)
	}

	var tok *TokenCheckOptions
	parseInto(t, NewCmdTokenCheck(f, func(o *TokenCheckOptions) error { tok = o; return nil }), "--token-stdin", "-o", "csv")
	if !tok.TokenStdin || tok.Output != "csv" || tok.FakeToken != nil {
		t.Errorf("token check options: stdin %v, output %q, fake %v", tok.TokenStdin, tok.Output, tok.FakeToken != nil)
	}

	var ver *VersionOptions
	parseInto(t, NewCmdVersion(f, func(o *VersionOptions) error { ver = o; return nil }))
	if ver.IO != f.IO || ver.BuildInfo == nil {
		t.Errorf("version options: %+v", ver)
	}
}
