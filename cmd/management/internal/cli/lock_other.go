//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd)

package cli

import "os"

// canLock: this system has no flock(2); Windows also refuses to rename
// over a file that is held open. A checkpoint is not locked here, and the
// README says so.
const canLock = false

func lockFile(*os.File) error { return nil }
