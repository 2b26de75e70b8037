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

// A request built by hand may have no body: the fake reads it as empty.
func TestHandlerRequestWithoutBody(t *testing.T) {
	s := NewInMemoryServer()
	req := httptest.NewRequest("GET", DefaultPathPrefix+"/users", nil)
	req.Body = nil
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	if rec.Code != 401 || len(s.Log()) != 1 || s.Log()[0].Body != nil {
		t.Errorf("GET without a body: %d, log %+v", rec.Code, s.Log())
	}
}
