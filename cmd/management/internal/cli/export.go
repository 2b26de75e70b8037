package cli

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
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
	// Service names the service Client reaches, for the checkpoint; it is
	// called after Client.
	Service func() serviceID
	// Progress shows a progress bar on IO.ErrOut: set when standard error
	// is a terminal, without --debug (whose log goes there).
	Progress bool

	Order      orderOptions
	Output     string
	Out        string
	Checkpoint string
	Force      bool
}

// NewCmdExport returns the export command of res. runF, when not nil, is
// called with the options in place of exportRun.
func NewCmdExport[T any](f *Factory, res resource[T], runF func(*ExportOptions[T]) error) *cobra.Command {
	opts := &ExportOptions[T]{IO: f.IO, Client: f.Client, Service: f.service, Resource: res}
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Export every " + res.singular + " as JSON lines, JSON or CSV, resumably",
		Long: "Export every " + res.singular + `, page after page, in memory that does not grow with
their number. A progress bar shows on standard error when it is a terminal
that can show it (not with TERM=dumb, --no-progress, or --debug, whose log
goes there).

With --out FILE --checkpoint CKPT, the export can resume. CKPT is written
before the first byte of FILE, and after each page, once FILE is synced: it
records the service, the command and its flags, the link to the next page, the
count, FILE's length and a hash of FILE up to there. Run the same command again
after an interruption (Ctrl-C, a crash, a network failure) and it checks FILE
against CKPT, truncates it to the recorded length and goes on from there: no
duplicate, no gap. Once complete, CKPT says so, and running the command again
does nothing. A CKPT of another export, of another service, changed by hand,
or that FILE no longer matches is refused, as is an existing non-empty FILE
that no CKPT vouches for: --force starts over, overwriting both. One run at a
time holds CKPT; another fails at once.

CKPT holds a page link, a credential of sorts: it is created readable by its
owner only, and so is FILE, which holds personal data.`,
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
	fl := cmd.Flags()
	fl.StringVar(&opts.Out, "out", "", "write to this file rather than standard output")
	fl.StringVar(&opts.Checkpoint, "checkpoint", "", "record progress in this file, and resume from it (needs --out)")
	fl.BoolVar(&opts.Force, "force", false, "start over: overwrite a non-empty --out, and a --checkpoint that cannot resume")
	return cmd
}

// export is one run of an export command.
type export[T any] struct {
	io       *IOStreams
	res      resource[T]
	force    bool
	outFlag  string          // --out as given, for messages
	ckptFlag string          // --checkpoint as given
	ckpt     *checkpointFile // locked for the run; nil without --checkpoint
	saved    bool            // ckpt was written by this run
	state    *checkpoint     // what is exported, and how far
	from     *management.ListOptions
	base     int64     // items exported by earlier runs
	origin   int64     // the output's length when this run opened it
	file     *os.File  // the output; nil for standard output
	sum      hash.Hash // the output's bytes from the start, with a checkpoint
	iw       *itemWriter[T]
	bar      *progress
	start    time.Time
}

func exportRun[T any](ctx context.Context, opts *ExportOptions[T]) error {
	e, err := newExport(opts)
	if err != nil {
		return err
	}
	// The client next: a configuration mistake must not touch the output.
	client, err := opts.Client()
	if err != nil {
		return err
	}
	e.state.Service = opts.Service()
	defer e.close()
	complete, err := e.open()
	if err != nil || complete {
		return err
	}
	if opts.Progress {
		e.bar = newProgress(ctx, opts.IO.ErrOut, e.res.plural, e.base)
	}
	link, err := walk(ctx, e.res.pages(client), e.from, e.page)
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

// newExport checks the flags, and that --out and --checkpoint are
// different files, before anything is opened.
func newExport[T any](opts *ExportOptions[T]) (*export[T], error) {
	res := opts.Resource
	lo, err := opts.Order.listOptions()
	if err != nil {
		return nil, err
	}
	out, err := chooseFormat(opts.Output, false, formatJSONL, formatJSON, formatCSV)
	if err != nil {
		return nil, err
	}
	if opts.Checkpoint != "" && opts.Out == "" {
		return nil, usagef("--checkpoint needs --out: an export to standard output cannot be resumed")
	}
	if opts.Force && opts.Out == "" {
		return nil, usagef("--force needs --out: it allows overwriting a file")
	}
	e := &export[T]{
		io: opts.IO, res: res, force: opts.Force, outFlag: opts.Out, ckptFlag: opts.Checkpoint, from: lo, start: time.Now(),
		state: &checkpoint{
			Version: checkpointVersion,
			Command: res.noun + " export",
			Options: exportFlags{Format: out, OrderBy: string(lo.OrderBy), Direction: string(lo.Direction), Start: lo.NextPage},
		},
	}
	if opts.Out == "" {
		return e, nil
	}
	if e.state.Options.Out, err = canonical(opts.Out); err != nil {
		return nil, usagef("--out: %w", err)
	}
	if opts.Checkpoint == "" {
		return e, nil
	}
	ckpt, err := canonical(opts.Checkpoint)
	if err != nil {
		return nil, usagef("--checkpoint: %w", err)
	}
	if err := checkPaths(e.state.Options.Out, ckpt, opts.Out, opts.Checkpoint); err != nil {
		return nil, err
	}
	e.ckpt = &checkpointFile{path: ckpt}
	return e, nil
}

// open takes the checkpoint, checks what it records, and opens the output:
// anew, or to resume. It reports true when the checkpoint says the export
// is complete, and the output is still what it was.
func (e *export[T]) open() (bool, error) {
	if e.ckpt == nil {
		if err := e.refuseOverwrite(); err != nil {
			return false, err
		}
		return false, e.create()
	}
	ckpt, err := openCheckpoint(e.ckpt.path)
	if errors.Is(err, errLocked) {
		return false, errtext.Errorf("another export is running with the checkpoint %s (it holds the file's lock): wait for it to end, or give another --checkpoint", e.ckptFlag)
	}
	if err != nil {
		return false, errtext.Errorf("checkpoint: %w", err)
	}
	e.ckpt = ckpt
	saved, err := ckpt.load()
	switch {
	case errors.Is(err, errNotCheckpoint):
		return false, refusef("%s is not a checkpoint of this tool's exports (nothing was written): give another --checkpoint", e.ckptFlag)
	case err != nil && !errors.Is(err, errChanged) && !errors.Is(err, errOtherVersion):
		return false, err
	case saved == nil && err == nil || e.force:
		return false, e.startOver()
	case errors.Is(err, errOtherVersion):
		return false, refusef("%s was written by another version of this tool, which this one cannot resume (nothing was written): start over with --force, which overwrites it and %s", e.ckptFlag, e.outFlag)
	case errors.Is(err, errChanged):
		return false, refusef("%s was changed since this tool wrote it, so it cannot vouch for %s (nothing was written): start over with --force, which overwrites both", e.ckptFlag, e.outFlag)
	}
	if err := e.sameService(saved); err != nil {
		return false, err
	}
	if differs, same := saved.sameExport(e.state); !same {
		return false, refusef("%s records another export, with %s (nothing was written): run that command to resume it, or start over with --force", e.ckptFlag, differs)
	}
	return e.resume(saved)
}

// sameService refuses to resume the export of another service, or of
// another client: its page links mean nothing here, and the output would
// mix the items of two services.
func (e *export[T]) sameService(saved *checkpoint) error {
	was, is := saved.Service, e.state.Service
	switch {
	case was == is:
		return nil
	case was == fakeService:
		return refusef("%s records an export from the built-in fake service, but this run is configured for %s%s as client %s (nothing was written): run the command with --fake to resume it, or start over with --force",
			e.ckptFlag, is.BaseURL, is.PathPrefix, is.ClientID)
	case is == fakeService:
		return refusef("%s records an export from %s%s as client %s, but this run, with --fake, is against the built-in fake service (nothing was written): run the command without --fake to resume it, or start over with --force",
			e.ckptFlag, was.BaseURL, was.PathPrefix, was.ClientID)
	}
	return refusef("%s records an export from %s%s as client %s, but this run is configured for %s%s as client %s (nothing was written): set %s (or --base-url) and %s to that service to resume it, or start over with --force",
		e.ckptFlag, was.BaseURL, was.PathPrefix, was.ClientID, is.BaseURL, is.PathPrefix, is.ClientID, management.EnvBaseURL, management.EnvClientID)
}

// refuseOverwrite refuses an existing non-empty output that no checkpoint
// vouches for, unless --force.
func (e *export[T]) refuseOverwrite() error {
	path := e.state.Options.Out
	if path == "" || e.force {
		return nil
	}
	info, err := os.Stat(path)
	if err != nil || !info.Mode().IsRegular() || info.Size() == 0 {
		return nil // new, or a device or pipe (--out /dev/stdout): nothing to lose
	}
	if e.ckpt != nil {
		return refusef("%s exists and is not empty, and %s does not record it (nothing was written): give another --out, or --force to overwrite it", e.outFlag, e.ckptFlag)
	}
	return refusef("%s exists and is not empty (nothing was written): give another --out, or --force to overwrite it", e.outFlag)
}

// startOver begins the export afresh: the checkpoint first, then the
// output, so that a run killed at any point leaves a checkpoint that
// vouches for what the output holds.
func (e *export[T]) startOver() error {
	if err := e.refuseOverwrite(); err != nil {
		return err
	}
	if info, err := os.Stat(e.state.Options.Out); err == nil && !info.Mode().IsRegular() {
		// A device or a pipe can be neither synced nor truncated to resume.
		return usagef("--checkpoint needs --out to be a regular file: %s cannot be truncated to resume", e.outFlag)
	}
	e.sum = sha256.New()
	e.state.OutputSHA256 = fmt.Sprintf("%x", e.sum.Sum(nil))
	e.state.NextPage = e.from.NextPage
	if err := e.save(); err != nil {
		return err
	}
	return e.create()
}

// create starts the output afresh: standard output, or a new (or
// truncated) file.
func (e *export[T]) create() error {
	w := e.io.OutFor(e.state.Options.Format)
	if path := e.state.Options.Out; path != "" {
		file, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return errtext.Errorf("--out: %w", err)
		}
		e.file, w = file, file
	}
	if e.sum != nil {
		w = io.MultiWriter(w, e.sum)
	}
	e.iw = newItemWriter(w, e.state.Options.Format, e.res.cols, 0)
	if err := e.iw.header(); err != nil {
		return e.writeError(err)
	}
	return nil
}

// resume checks that the output still holds what the checkpoint records
// (its hash up to the recorded length), then truncates it to that length:
// what was written after (part of a page, or a whole page whose checkpoint
// was not saved) is written again.
func (e *export[T]) resume(saved *checkpoint) (bool, error) {
	path := saved.Options.Out
	changed := func(what string) error {
		return refusef("%s %s, so the export cannot go on (nothing was written): start over with --force, which overwrites it", e.outFlag, what)
	}
	file, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) && saved.Offset == 0 && !saved.Done {
		e.state, e.sum = saved, sha256.New()
		return false, e.create() // killed before the output was created
	}
	if err != nil {
		return false, errtext.Errorf("cannot resume: %w; start over with --force", err)
	}
	e.file = file
	info, err := file.Stat()
	if err != nil {
		return false, e.writeError(err)
	}
	switch size := info.Size(); {
	case !info.Mode().IsRegular():
		return false, changed("is no longer a regular file")
	case size < saved.Offset:
		return false, changed(fmt.Sprintf("is shorter (%d bytes) than %s records (%d)", size, e.ckptFlag, saved.Offset))
	case saved.Done && size > saved.Offset:
		return false, changed(fmt.Sprintf("is longer (%d bytes) than the complete export %s records (%d)", size, e.ckptFlag, saved.Offset))
	}
	sum := sha256.New()
	if _, err := io.CopyN(sum, file, saved.Offset); err != nil {
		return false, e.writeError(err)
	}
	if fmt.Sprintf("%x", sum.Sum(nil)) != saved.OutputSHA256 {
		return false, changed(fmt.Sprintf("does not hold what %s records (its first %d bytes differ)", e.ckptFlag, saved.Offset))
	}
	if saved.Done {
		fmt.Fprintf(e.io.ErrOut, "The export is already complete: %d %s in %s, as %s records. Give --force to export again.\n",
			saved.Count, e.res.plural, escapeControls(e.outFlag), escapeControls(e.ckptFlag))
		return true, nil
	}
	if saved.Offset == 0 { // killed before the first page was recorded
		e.state, e.sum = saved, sha256.New()
		e.file.Close()
		e.file = nil
		return false, e.create()
	}
	if err := file.Truncate(saved.Offset); err != nil {
		return false, e.writeError(err)
	}
	if _, err := file.Seek(saved.Offset, io.SeekStart); err != nil {
		return false, e.writeError(err)
	}
	e.state, e.base, e.origin, e.sum = saved, saved.Count, saved.Offset, sum
	if saved.NextPage != "" {
		e.from = &management.ListOptions{NextPage: saved.NextPage}
	}
	e.iw = newItemWriter(io.MultiWriter(file, sum), saved.Options.Format, e.res.cols, saved.Count)
	return false, nil
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
	e.state.Offset = e.origin + e.iw.Len()
	if e.ckpt == nil {
		return true, nil
	}
	if err := e.file.Sync(); err != nil {
		return false, e.writeError(err)
	}
	e.state.OutputSHA256 = fmt.Sprintf("%x", e.sum.Sum(nil))
	return true, e.save()
}

// save writes the checkpoint, and notes that this run did: a checkpoint
// the run created is then kept when it ends (see checkpointFile.release).
func (e *export[T]) save() error {
	if err := e.ckpt.save(e.state); err != nil {
		return err
	}
	e.saved = true
	return nil
}

// finish makes a complete output durable, and closes it.
func (e *export[T]) finish() error {
	if e.file == nil {
		return nil
	}
	var err error
	if e.ckpt == nil { // with a checkpoint, each page was synced
		if info, serr := e.file.Stat(); serr == nil && info.Mode().IsRegular() {
			err = e.file.Sync()
		}
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

// writeError names the output in an error writing it.
func (e *export[T]) writeError(err error) error {
	if e.state.Options.Out == "" {
		return errtext.Errorf("writing standard output: %w", err)
	}
	return errtext.Errorf("writing %s: %w", e.outFlag, err)
}

// failed explains an export that stopped, and how to go on.
func (e *export[T]) failed(ctx context.Context, link string, err error) error {
	done := e.state.Count - e.base
	switch {
	case e.ckpt != nil && refusedLink(link, err):
		return errtext.Errorf("the service refused the page link %s holds (%w): this export cannot be resumed; start over with --force",
			e.ckptFlag, err)
	case refusedLink(link, err):
		return errtext.Errorf("the page link was refused (%w): export again without --next-page", err)
	case ctx.Err() != nil && e.ckpt != nil:
		return errtext.Errorf("interrupted after %d %s (%d in all): run the same command to resume", done, e.res.plural, e.state.Count)
	case ctx.Err() != nil:
		return errtext.Errorf("interrupted after %d %s", done, e.res.plural)
	case e.ckpt != nil:
		return errtext.Errorf("%w; %d %s exported (%d in this run): run the same command to resume", err, e.state.Count, e.res.plural, done)
	}
	return errtext.Errorf("%w; %d %s exported", err, done, e.res.plural)
}

// summary says what was exported, on standard error.
func (e *export[T]) summary() {
	elapsed := time.Since(e.start)
	done := e.state.Count - e.base
	to := "standard output"
	if e.outFlag != "" {
		to = escapeControls(e.outFlag) // the user's data
	}
	rate := float64(done) / max(elapsed.Seconds(), 1e-9)
	msg := fmt.Sprintf("Exported %d %s to %s in %s (%.0f/s)", e.state.Count, e.res.plural, to, elapsed.Round(time.Millisecond), rate)
	if e.base > 0 {
		msg = fmt.Sprintf("Exported %d %s to %s: %d in this run, in %s (%.0f/s)", e.state.Count, e.res.plural, to, done, elapsed.Round(time.Millisecond), rate)
	}
	fmt.Fprintln(e.io.ErrOut, msg)
}

// close closes the output, if still open, and releases the checkpoint.
func (e *export[T]) close() {
	if e.file != nil {
		e.file.Close()
	}
	if e.ckpt != nil && (e.ckpt.held != nil || e.ckpt.created) {
		e.ckpt.release(e.saved)
	}
}
