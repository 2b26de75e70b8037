package managementtest

import (
	"net/http/httptest"
	"testing"
)

// A panic under the lock, which net/http recovers from, must not leave the
// server locked for every later request.
func TestLockedUnlocksOnPanic(t *testing.T) {
	s := NewInMemoryServer()
	func() {
		defer func() { _ = recover() }()
		s.locked(httptest.NewRecorder(), func() answer { panic("boom") })
	}()
	if !s.mu.TryLock() {
		t.Fatal("the server's mutex is still held after a panic in locked")
	}
	s.mu.Unlock()
}
