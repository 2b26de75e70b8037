package managementtest

import (
	"slices"
	"testing"
)

// The seeding order puts each item after those the pages show were
// created before it, else keeps the order first shown; a contradiction is
// settled by that order too.
func TestTiesOrder(t *testing.T) {
	var tt ties
	tt.before("c", "a")
	tt.before("b", "c")
	tt.before("x", "a") // an item not seeded
	if got, want := tt.order([]string{"a", "b", "c", "d"}), []string{"b", "c", "a", "d"}; !slices.Equal(got, want) {
		t.Errorf("order = %q, want %q", got, want)
	}
	var cycle ties
	cycle.before("b", "a")
	cycle.before("a", "b")
	cycle.before("c", "b")
	if got, want := cycle.order([]string{"a", "b", "c"}), []string{"c", "a", "b"}; !slices.Equal(got, want) {
		t.Errorf("order with a cycle = %q, want %q", got, want)
	}
}
