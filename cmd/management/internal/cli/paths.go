package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// canonical is the absolute path that path names once symbolic links are
// followed: the file's own when it exists; otherwise the path its
// directory's links resolve to, and, when that is a link to a file that
// does not exist yet, the file the link names (the export would create
// that file through it), link after link. Two flags naming one file
// through a link, dangling or not, "./" or "..", have the same canonical
// path.
func canonical(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	for links := 0; links <= maxLinks; links++ {
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			return real, nil
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		dir, err := filepath.EvalSymlinks(filepath.Dir(abs))
		if err != nil && links > 0 && errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("%s is a symbolic link to %s, in a directory that does not exist", path, abs)
		}
		if err != nil {
			return "", err
		}
		abs = filepath.Join(dir, filepath.Base(abs))
		info, err := os.Lstat(abs)
		if err != nil || info.Mode()&fs.ModeSymlink == 0 {
			return abs, nil // not there: the file to create
		}
		target, err := os.Readlink(abs)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(dir, target)
		}
		abs = target
	}
	return "", fmt.Errorf("%s: too many levels of symbolic links", path)
}

// maxLinks bounds the links canonical follows, as the kernel bounds a path's.
const maxLinks = 40

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
