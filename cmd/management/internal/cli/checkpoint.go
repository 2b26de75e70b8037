package cli

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"

	"github.com/serviceconnect/management/internal/errtext"
)

// checkpointVersion is the version of the checkpoint file's format.
const checkpointVersion = 2

// checkpoint is what an export records, before its first byte of output
// and after each page, so that it can resume where it stopped, however it
// stopped. It vouches for its output: it names the service, the command
// and its options, and it holds the output's length (Offset) with the
// SHA-256 of the output up to there. It is written only after the output
// is synced, and atomically, so the output is always at least as long as
// its checkpoint says; resuming checks the hash and truncates the output
// to Offset, dropping a page written after the checkpoint.
//
// Seal is the SHA-256 of the rest: a checkpoint changed by hand, or
// damaged, is refused rather than trusted (it guards against mistakes,
// not against someone forging both files).
//
// The page link is a capability of sorts (it reads the list it belongs
// to): the file is created readable by its owner only.
type checkpoint struct {
	Version int `json:"version"`

	// What the export is: a resume must be the same export, of the same
	// service.
	Service serviceID   `json:"service"`
	Command string      `json:"command"` // "users export"
	Options exportFlags `json:"options"`

	// Where it stands.
	NextPage     string `json:"next_page,omitempty"` // the page to fetch next; "" for the first page, or when Done
	Count        int64  `json:"count"`               // items in the output
	Offset       int64  `json:"offset"`              // the output's length
	OutputSHA256 string `json:"output_sha256"`       // of the output's first Offset bytes
	Done         bool   `json:"done"`                // the last page is written

	Seal string `json:"seal"`
}

// serviceID is the service an export reads: never the client secret.
type serviceID struct {
	BaseURL    string `json:"base_url"`
	PathPrefix string `json:"path_prefix"`
	ClientID   string `json:"client_id"`
}

// exportFlags are the flags that make an export what it is.
type exportFlags struct {
	Format    format `json:"format"` // jsonl, json or csv
	Out       string `json:"out"`    // the output file, canonical
	OrderBy   string `json:"order_by,omitempty"`
	Direction string `json:"direction,omitempty"`
	Start     string `json:"start,omitempty"` // --next-page, if given
}

// seal is the checkpoint's seal: the hash of every other field.
func (c checkpoint) seal() string {
	c.Seal = ""
	data, _ := json.Marshal(c) // plain strings and numbers: cannot fail
	sum := sha256.Sum256(append([]byte("management export checkpoint\x00"), data...))
	return fmt.Sprintf("%x", sum[:])
}

// sameExport reports, when c and d are not the same export, the first
// flag that differs.
func (c *checkpoint) sameExport(d *checkpoint) (string, bool) {
	switch {
	case c.Command != d.Command:
		return "the command (" + c.Command + ")", false
	case c.Options.Format != d.Options.Format:
		return "--output " + string(c.Options.Format), false
	case c.Options.Out != d.Options.Out:
		return "--out " + c.Options.Out, false
	case c.Options.OrderBy != d.Options.OrderBy:
		return "--order-by " + c.Options.OrderBy, false
	case c.Options.Direction != d.Options.Direction:
		return "--direction " + c.Options.Direction, false
	case c.Options.Start != d.Options.Start:
		return "--next-page", false
	}
	return "", true
}

// errLocked: another process holds the checkpoint's lock.
var errLocked = errors.New("locked")

// checkpointFile is a checkpoint on disk, locked for this run.
type checkpointFile struct {
	path    string   // canonical
	held    *os.File // the file now at path, locked; nil where locks are not supported
	created bool     // this run created it, empty
}

// openCheckpoint locks the checkpoint at path, creating it empty when
// there is none. The lock is on the file, and each save renames a new
// file over it: the new one is locked before the rename, and a run that
// locked a file no longer at path tries again, so that at any time one
// run alone holds the checkpoint. errLocked: another run holds it.
func openCheckpoint(path string) (*checkpointFile, error) {
	for range 100 { // each retry means another run saved in between: it then holds the lock
		created := true
		f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			created = false
			f, err = os.Open(path)
		}
		if errors.Is(err, fs.ErrNotExist) {
			// O_EXCL does not follow a symbolic link, Open does: a link to
			// a missing file is neither creatable nor openable, however
			// often it is tried.
			if info, lerr := os.Lstat(path); lerr == nil && info.Mode()&fs.ModeSymlink != 0 {
				return nil, fmt.Errorf("%s is a symbolic link to a missing file", path)
			}
			continue // removed in between
		}
		if err != nil {
			return nil, err
		}
		if err := lockFile(f); err != nil {
			f.Close()
			return nil, err
		}
		if !canLock {
			return &checkpointFile{path: path, created: created}, f.Close()
		}
		if stillAt(f, path) {
			return &checkpointFile{path: path, held: f, created: created}, nil
		}
		f.Close()
	}
	return nil, errLocked
}

// stillAt reports whether f is the file at path now.
func stillAt(f *os.File, path string) bool {
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	pi, err := os.Stat(path)
	return err == nil && os.SameFile(fi, pi)
}

// errNotCheckpoint: the file holds something other than a checkpoint of
// this tool's exports.
var errNotCheckpoint = errors.New("not a checkpoint")

// errChanged: the file is a checkpoint that does not hold what this tool
// wrote: its seal does not match, or its fields are not the format's.
var errChanged = errors.New("changed")

// errOtherVersion: the file is a checkpoint of another version of the
// format, which this tool cannot resume.
var errOtherVersion = errors.New("another version")

// load reads the checkpoint; nil when the file is empty (new, or created
// by a run that stopped before saving).
func (cf *checkpointFile) load() (*checkpoint, error) {
	data, err := os.ReadFile(cf.path)
	if err != nil {
		return nil, errtext.Errorf("checkpoint: %w", err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	var v struct {
		Version *int `json:"version"`
	}
	if json.Unmarshal(data, &v) != nil || v.Version == nil {
		return nil, errNotCheckpoint
	}
	if *v.Version != checkpointVersion {
		return nil, errOtherVersion
	}
	var c checkpoint
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil || c.Seal != c.seal() {
		return &c, errChanged
	}
	return &c, nil
}

// save seals c and writes it atomically: a new file beside the
// checkpoint, locked, synced, renamed over it. A crash of the system may
// lose the rename, never a part of the file: the checkpoint found then is
// an older one, which resumes correctly (its output is longer than it
// says, and is truncated). The directory is synced when the export is
// done, so that "done" lasts.
func (cf *checkpointFile) save(c *checkpoint) error {
	c.Seal = c.seal()
	data, err := json.Marshal(c)
	if err != nil {
		return errtext.Errorf("checkpoint: %w", err)
	}
	tmp := checkpointTemp(cf.path)
	// A stale temporary file (from a run killed mid-write) is replaced, not
	// reused, so that the new one is created with the owner-only mode.
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return errtext.Errorf("checkpoint: %w", err)
	}
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return errtext.Errorf("checkpoint: %w", err)
	}
	err = lockFile(f)
	if err == nil {
		_, err = f.Write(append(data, '\n'))
	}
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = os.Rename(tmp, cf.path)
	}
	if err != nil || !canLock {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	} else {
		cf.held.Close() // the lock passes to the file now at path
		cf.held = f
	}
	if err == nil && c.Done {
		err = syncDir(filepath.Dir(cf.path))
	}
	if err != nil {
		return errtext.Errorf("checkpoint: %w", err)
	}
	return nil
}

// release ends the run's hold on the checkpoint. A checkpoint this run
// created and never saved is removed, so that a refused export leaves
// nothing behind.
func (cf *checkpointFile) release(saved bool) {
	if cf.created && !saved {
		os.Remove(cf.path)
	}
	if cf.held != nil {
		cf.held.Close()
		cf.held = nil
	}
}

// syncDir makes a rename in dir durable. Windows has no such call; its
// renames are durable as they are.
func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
