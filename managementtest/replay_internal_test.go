package managementtest

import "testing"

// Two requests have the same match key when, and only when, the replay
// takes one for the other.
func TestMatchKey(t *testing.T) {
	same := [][2][4]string{
		{{"GET", "/u", "a=1&b=2", ""}, {"GET", "/u", "b=2&a=1", ""}},
		{{"GET", "/u", "", ""}, {"GET", "/u", "&", ""}},
		{{"POST", "/a", "", `{"x":1,"y":[true,null]}`}, {"POST", "/a", "", `{ "y": [true, null], "x": 1 }`}},
		{{"POST", "/a", "", "not json"}, {"POST", "/a", "", "not json"}},
		{{"GET", "/u", "%zz", ""}, {"GET", "/u", "%zz", ""}},
	}
	differ := [][2][4]string{
		{{"GET", "/u", "a=1&a=2", ""}, {"GET", "/u", "a=2&a=1", ""}},
		{{"POST", "/a", "", `{"x":1}`}, {"POST", "/a", "", `{"x":1.0}`}},
		{{"GET", "/u", "", ""}, {"DELETE", "/u", "", ""}},
		{{"GET", "/u/a", "", ""}, {"GET", "/u", "a", ""}},
		{{"POST", "/a", "", "{"}, {"POST", "/a", "", "{ "}},
	}
	key := func(r [4]string) string { return matchKey(r[0], r[1], r[2], r[3]) }
	for _, p := range same {
		if key(p[0]) != key(p[1]) {
			t.Errorf("%q and %q do not match", p[0], p[1])
		}
	}
	for _, p := range differ {
		if key(p[0]) == key(p[1]) {
			t.Errorf("%q and %q match", p[0], p[1])
		}
	}
}

// distance is the edit distance, or limit+1 once it is over limit.
func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b        string
		limit, want int
	}{
		{"kitten", "sitting", 10, 3},
		{"kitten", "sitting", 3, 3},
		{"kitten", "sitting", 2, 3},
		{"abc", "abc", 0, 0},
		{"", "abcdef", 3, 4},
		{"abcdef", "", 10, 6},
	} {
		if got := distance(tc.a, tc.b, tc.limit); got != tc.want {
			t.Errorf("distance(%q, %q, %d) = %d, want %d", tc.a, tc.b, tc.limit, got, tc.want)
		}
	}
}
