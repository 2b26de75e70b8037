package managementtest

import (
	"strconv"
	"testing"
)

// The log keeps the last maxLog requests, so that a long run does not pile
// them up.
func TestLogKeepsTheLast(t *testing.T) {
	s := NewInMemoryServer()
	for i := range maxLog + 5 {
		s.record(&Request{Path: strconv.Itoa(i)}, "", nil)
	}
	log := s.Log()
	if len(log) != maxLog || log[0].Path != "5" || log[maxLog-1].Path != strconv.Itoa(maxLog+4) {
		t.Errorf("log of %d, from %q to %q; want %d, from 5 to %d", len(log), log[0].Path, log[len(log)-1].Path, maxLog, maxLog+4)
	}
}
