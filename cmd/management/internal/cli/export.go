package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/internal/errtext"
	"github.com/spf13/cobra"
)

// ExportOptions are the flags of users export and things export, and what
// exportRun needs besides: NewCmdExport fills them from the command line,
// tests fill them directly.
type ExportOptions[T any] struct {
	IO       *IOStreams
	Client   func() (*management.Client, error)
	Resource resource[T]
	// Progress shows a progress bar on IO.ErrOut: set when standard error
	// is a terminal, without --debug (whose log goes there).
	Progress bool

	Order      orderOptions
	Output     string
	Out        string
	Checkpoint string
}

// NewCmdExport returns the export command of res. runF, when not nil, is
// called with the options in place of exportRun.
func NewCmdExport[T any](f *Factory, res resource[T], runF func(*ExportOptions[T]) error) *cobra.Command {
	opts := &ExportOptions[T]{IO: f.IO, Client: f.Client, Resource: res}
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Export every " + res.singular + " as JSON lines, JSON or CSV, resumably",
		Long: "Export every " + res.singular + `, page after page, in memory that does not grow with
their number. A progress bar shows on standard error when it is a terminal
(except with --debug, whose log goes there).

With --out FILE --checkpoint CKPT, the export can resume: after each page the
output is synced and CKPT records the link to the next page, the count and the
output's length. Run the same command again after an interruption (Ctrl-C, a
crash, a network failure) and it truncates FILE to the recorded length and goes
on from there: no duplicate, no gap. Once complete, CKPT says so, and running
the command again does nothing; delete CKPT to export again. CKPT holds a page
link, a credential of sorts: it is created readable by its owner only, and so
is FILE, which holds personal data.`,
		Example: `  management ` + res.noun + ` export --out ` + res.noun + `.jsonl --checkpoint ` + res.noun + `.ckpt
  management ` + res.noun + ` export -o csv --order-by updatedAt --direction asc > ` + res.noun + `.csv`,
		Args: exactArgs(),
		RunE: runE(func(cmd *cobra.Command, _ []string) error {
			opts.Progress = f.IO.CanShowProgress() && !f.debug // global flags: known once the command line is parsed
			if runF != nil {
				return runF(opts)
			}
			return exportRun(cmd.Context(), opts)
		}),
	}
	addOutputFlag(cmd, &opts.Output, formatJSONL, formatJSON, formatCSV)
	cmd.Flag("output").Usage = "output format: jsonl (the default), json or csv"
	opts.Order.addFlags(cmd)
	cmd.Flags().StringVar(&opts.Out, "out", "", "write to this file rather than standard output")
	cmd.Flags().StringVar(&opts.Checkpoint, "checkpoint", "", "record progress in this file, and resume from it (needs --out)")
	return cmd
}

// export is one run of an export command.
type export[T any] struct {
	io      *IOStreams
	res     resource[T]
	ckpt    string      // the checkpoint's path; "" without one
	state   *checkpoint // what is exported, and how far
	base    int64       // items exported by earlier runs
	origin  int64       // the output's length when this run opened it
	file    *os.File    // the output; nil for standard output
	regular bool        // file is a regular file: it can be synced and truncated
	iw      *itemWriter[T]
	bar     *progress
	start   time.Time
}

func exportRun[T any](ctx context.Context, opts *ExportOptions[T]) error {
	// The client first: a configuration mistake must not truncate the output.
	client, err := opts.Client()
	if err != nil {
		return err
	}
	e, from, err := newExport(opts)
	if err != nil || e == nil {
		return err
	}
	defer e.close()
	if opts.Progress {
		e.bar = newProgress(ctx, opts.IO.ErrOut, e.res.plural, e.base)
	}
	link, err := walk(ctx, e.res.pages(client), from, e.page)
	e.bar.stop(err == nil)
	if err != nil {
		return e.failed(ctx, link, err)
	}
	if err := e.finish(); err != nil {
		return err
	}
	e.summary()
	return nil
}

// finish makes a complete output durable, and closes it.
func (e *export[T]) finish() error {
	if e.file == nil {
		return nil
	}
	var err error
	if e.regular && e.ckpt == "" { // with a checkpoint, each page was synced
		err = e.file.Sync()
	}
	if cerr := e.file.Close(); err == nil {
		err = cerr
	}
	e.file = nil
	if err != nil {
		return e.writeError(err)
	}
	return nil
}

// newExport checks the flags, loads the checkpoint and opens the output.
// It returns a nil export when the checkpoint says the export is complete,
// and the options of the first page to fetch.
func newExport[T any](opts *ExportOptions[T]) (*export[T], *management.ListOptions, error) {
	res := opts.Resource
	lo, err := opts.Order.listOptions()
	if err != nil {
		return nil, nil, err
	}
	out, err := chooseFormat(opts.Output, false, formatJSONL, formatJSON, formatCSV)
	if err != nil {
		return nil, nil, err
	}
	if opts.Checkpoint != "" && opts.Out == "" {
		return nil, nil, usagef("--checkpoint needs --out: an export to standard output cannot be resumed")
	}
	want := &checkpoint{Version: checkpointVersion, Kind: res.noun, Format: out, OrderBy: string(lo.OrderBy), Direction: string(lo.Direction), Start: lo.NextPage}
	if opts.Out != "" {
		if want.Out, err = filepath.Abs(opts.Out); err != nil {
			return nil, nil, usagef("--out: %w", err)
		}
	}
	e := &export[T]{io: opts.IO, res: res, ckpt: opts.Checkpoint, state: want, start: time.Now()}
	if e.ckpt == "" {
		return e, lo, e.create()
	}
	saved, err := loadCheckpoint(e.ckpt)
	if err != nil {
		return nil, nil, err
	}
	if saved == nil {
		return e, lo, e.create()
	}
	if differs, same := saved.sameExport(want); !same {
		return nil, nil, usagef("%s records another export, with %s: run that command to resume it, or delete %s to start this one", e.ckpt, differs, e.ckpt)
	}
	if saved.Done {
		fmt.Fprintf(opts.IO.ErrOut, "The export is already complete: %d %s in %s. Delete %s to export again.\n", saved.Count, res.plural, opts.Out, e.ckpt)
		return nil, nil, nil
	}
	e.state, e.base = saved, saved.Count
	if saved.NextPage != "" {
		lo = &management.ListOptions{NextPage: saved.NextPage}
	}
	return e, lo, e.resume()
}

// create starts the output afresh: standard output, or a new (or
// truncated) file.
func (e *export[T]) create() error {
	w := io.Writer(e.io.Out)
	if e.state.Out != "" {
		file, err := os.OpenFile(e.state.Out, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return errtext.Errorf("--out: %w", err)
		}
		e.file, w = file, file
		info, err := file.Stat()
		if err != nil {
			return e.writeError(err)
		}
		// A device or a pipe (--out /dev/stdout) can be neither synced nor
		// truncated to resume.
		e.regular = info.Mode().IsRegular()
		if !e.regular && e.ckpt != "" {
			return usagef("--checkpoint needs --out to be a regular file: %s cannot be truncated to resume", e.state.Out)
		}
	}
	e.iw = newItemWriter(w, e.state.Format, e.res.cols, 0)
	if err := e.iw.header(); err != nil {
		return e.writeError(err)
	}
	return nil
}

// resume reopens the output and truncates it to the length the checkpoint
// records: what was written after it (part of a page, or a whole page
// whose checkpoint was not saved) is written again.
func (e *export[T]) resume() error {
	file, err := os.OpenFile(e.state.Out, os.O_WRONLY, 0)
	if err != nil {
		return errtext.Errorf("cannot resume: %w; delete %s to start over", err, e.ckpt)
	}
	e.file, e.regular = file, true
	info, err := file.Stat()
	if err != nil {
		return e.writeError(err)
	}
	if info.Size() < e.state.Bytes {
		return errtext.Errorf("cannot resume: %s is shorter (%d bytes) than %s records (%d): it was changed; delete %s to start over",
			e.state.Out, info.Size(), e.ckpt, e.state.Bytes, e.ckpt)
	}
	if err := file.Truncate(e.state.Bytes); err != nil {
		return e.writeError(err)
	}
	if _, err := file.Seek(e.state.Bytes, io.SeekStart); err != nil {
		return e.writeError(err)
	}
	e.origin = e.state.Bytes
	e.iw = newItemWriter(file, e.state.Format, e.res.cols, e.state.Count)
	return nil
}

// page writes one page, and records it when checkpointing: the output is
// synced first, so the checkpoint never counts bytes that are not on disk.
func (e *export[T]) page(p *management.Page[*T]) (bool, error) {
	for _, item := range p.Items {
		if err := e.iw.write(item); err != nil {
			return false, e.writeError(err)
		}
	}
	var err error
	if p.NextPage == "" {
		err = e.iw.footer()
	} else {
		err = e.iw.flush()
	}
	if err != nil {
		return false, e.writeError(err)
	}
	e.bar.add(len(p.Items))
	e.state.Count += int64(len(p.Items))
	e.state.NextPage, e.state.Done = p.NextPage, p.NextPage == ""
	e.state.Bytes = e.origin + e.iw.Len()
	if e.ckpt == "" {
		return true, nil
	}
	if err := e.file.Sync(); err != nil {
		return false, e.writeError(err)
	}
	return true, e.state.save(e.ckpt)
}

// writeError names the output in an error writing it.
func (e *export[T]) writeError(err error) error {
	if e.state.Out == "" {
		return errtext.Errorf("writing standard output: %w", err)
	}
	return errtext.Errorf("writing %s: %w", e.state.Out, err)
}

// failed explains an export that stopped, and how to go on.
func (e *export[T]) failed(ctx context.Context, link string, err error) error {
	done := e.state.Count - e.base
	switch {
	case e.ckpt != "" && refusedLink(link, err):
		return errtext.Errorf("the service refused the page link %s holds (%w): this export cannot be resumed; delete %s and run the command again to start over",
			e.ckpt, err, e.ckpt)
	case refusedLink(link, err):
		return errtext.Errorf("the page link was refused (%w): export again without --next-page", err)
	case ctx.Err() != nil && e.ckpt != "":
		return errtext.Errorf("interrupted after %d %s (%d in all): run the same command to resume", done, e.res.plural, e.state.Count)
	case ctx.Err() != nil:
		return errtext.Errorf("interrupted after %d %s", done, e.res.plural)
	case e.ckpt != "":
		return errtext.Errorf("%w; %d %s exported (%d in this run): run the same command to resume", err, e.state.Count, e.res.plural, done)
	}
	return errtext.Errorf("%w; %d %s exported", err, done, e.res.plural)
}

// summary says what was exported, on standard error.
func (e *export[T]) summary() {
	elapsed := time.Since(e.start)
	done := e.state.Count - e.base
	to := "standard output"
	if e.state.Out != "" {
		to = e.state.Out
	}
	rate := float64(done) / max(elapsed.Seconds(), 1e-9)
	msg := fmt.Sprintf("Exported %d %s to %s in %s (%.0f/s)", e.state.Count, e.res.plural, to, elapsed.Round(time.Millisecond), rate)
	if e.base > 0 {
		msg = fmt.Sprintf("Exported %d %s to %s: %d in this run, in %s (%.0f/s)", e.state.Count, e.res.plural, to, done, elapsed.Round(time.Millisecond), rate)
	}
	fmt.Fprintln(e.io.ErrOut, msg)
}

// close closes the output of an export that failed.
func (e *export[T]) close() {
	if e.file != nil {
		e.file.Close()
	}
}
