//go:build race

package grpcauth_test

// raceEnabled says the race detector is on. sync.Pool then drops items at
// random, so allocation counts vary from run to run.
const raceEnabled = true
