package cli

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"

	"github.com/serviceconnect/management/internal/errtext"
)

// checkpointVersion is the version of the checkpoint file's format.
const checkpointVersion = 1

// checkpoint is what an export records after each page, so that it can
// resume where it stopped, however it stopped: the link to the next page,
// the count of items written, and the output's length after them. It is
// written only after the output is synced, and atomically, so the output
// is always at least as long as its checkpoint says; resuming truncates it
// to that length, dropping a page written after the checkpoint.
//
// The page link is a capability of sorts (it reads the list it belongs
// to): the file is created readable by its owner only.
type checkpoint struct {
	Version int `json:"version"`

	// What the export is: a resume must be the same export.
	Kind      string `json:"kind"`   // "users" or "things"
	Format    format `json:"format"` // jsonl, json or csv
	Out       string `json:"out"`    // the output file, absolute
	OrderBy   string `json:"order_by,omitempty"`
	Direction string `json:"direction,omitempty"`
	Start     string `json:"start,omitempty"` // --next-page, if given

	// Where it stands.
	NextPage string `json:"next_page,omitempty"` // the page to fetch next; "" when Done
	Count    int64  `json:"count"`               // items in the output
	Bytes    int64  `json:"bytes"`               // the output's length
	Done     bool   `json:"done"`                // the last page is written
}

// sameExport reports, when c and d are not the same export, the first
// flag that differs.
func (c *checkpoint) sameExport(d *checkpoint) (string, bool) {
	switch {
	case c.Kind != d.Kind:
		return "the command (" + c.Kind + " export)", false
	case c.Format != d.Format:
		return "--output " + string(c.Format), false
	case c.Out != d.Out:
		return "--out " + c.Out, false
	case c.OrderBy != d.OrderBy:
		return "--order-by " + c.OrderBy, false
	case c.Direction != d.Direction:
		return "--direction " + c.Direction, false
	case c.Start != d.Start:
		return "--next-page", false
	}
	return "", true
}

// loadCheckpoint reads the checkpoint at path; nil when there is none.
func loadCheckpoint(path string) (*checkpoint, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, errtext.Errorf("checkpoint: %w", err)
	}
	var c checkpoint
	if err := json.Unmarshal(data, &c); err != nil || c.Version != checkpointVersion {
		return nil, usagef("%s is not a checkpoint of this tool's exports: give another --checkpoint file, or delete it", path)
	}
	return &c, nil
}

// save writes c to path atomically: a new file beside it, synced, renamed
// over it. A crash of the system may lose the rename, never a part of the
// file: the checkpoint found then is an older one, which resumes
// correctly (its output is longer than it says, and is truncated). The
// directory is synced when the export is done, so that "done" lasts.
func (c *checkpoint) save(path string) error {
	data, err := json.Marshal(c)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	// A stale temporary file (from a run killed mid-write) is replaced, not
	// reused, so that the new one is created with the owner-only mode.
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return errtext.Errorf("checkpoint: %w", err)
	}
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return errtext.Errorf("checkpoint: %w", err)
	}
	_, err = f.Write(append(data, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil && c.Done {
		err = syncDir(filepath.Dir(path))
	}
	if err != nil {
		return errtext.Errorf("checkpoint: %w", err)
	}
	return nil
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
