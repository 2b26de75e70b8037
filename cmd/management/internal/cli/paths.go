package cli

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// canonical is the absolute path that path names once symbolic links are
// followed: the file's own when it exists, its directory's otherwise (the
// file is created there). Two flags naming one file through a link, "./"
// or "..", have the same canonical path.
func canonical(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(abs))
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, filepath.Base(abs)), nil
}

// sameFile reports whether the files at a and b both exist and are one
// file: the same path, or hard links to one file.
func sameFile(a, b string) bool {
	ia, err := os.Stat(a)
	if err != nil {
		return false
	}
	ib, err := os.Stat(b)
	return err == nil && os.SameFile(ia, ib)
}

// checkpointTemp is where a checkpoint is written before it is renamed
// over path.
func checkpointTemp(path string) string { return path + ".tmp" }

// checkPaths refuses an output and a checkpoint that are one file, or an
// output that is the checkpoint's temporary file: the export would
// overwrite (or delete) one with the other. out and ckpt are canonical.
// Nothing is written before this check.
func checkPaths(out, ckpt, outFlag, ckptFlag string) error {
	switch {
	case out == ckpt || sameFile(out, ckpt):
		return refusef("--out %s and --checkpoint %s are the same file (%s): the checkpoint would overwrite the output; give them different names (nothing was written)", outFlag, ckptFlag, out)
	case out == checkpointTemp(ckpt): // by name: the temporary file is removed and created anew, never followed
		return refusef("--out %s is the checkpoint's temporary file (%s), which each page replaces: give another --out or --checkpoint (nothing was written)", outFlag, checkpointTemp(ckpt))
	}
	return nil
}
