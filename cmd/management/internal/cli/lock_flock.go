//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package cli

import (
	"errors"
	"os"
	"syscall"
)

// canLock: a checkpoint is locked for its run with flock(2), which the
// kernel releases when the process ends, however it ends.
const canLock = true

// lockFile takes f's exclusive advisory lock without waiting; errLocked
// when another process holds it.
func lockFile(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, syscall.EWOULDBLOCK):
			return errLocked
		case errors.Is(err, syscall.EINTR):
			continue
		}
		return err
	}
}
