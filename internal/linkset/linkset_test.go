package linkset

import (
	"fmt"
	"testing"
)

// TestAdd: a link is new once; different links are all new.
func TestAdd(t *testing.T) {
	s := New()
	for i := range 1000 {
		if !s.Add(fmt.Sprintf("/users?page=%d", i)) {
			t.Fatalf("link %d reported as a repeat", i)
		}
	}
	if s.Add("/users?page=7") {
		t.Error("a link followed before is reported new")
	}
	if s.Len() != 1000 {
		t.Errorf("Len = %d, want 1000", s.Len())
	}
}
