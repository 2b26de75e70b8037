// Package linkset is the guard of every walk through a paged list, in the
// SDK and in its command-line tool: the set of next-page links already
// followed, so that a service whose links loop back ends the walk with an
// error instead of making it endless.
package linkset

import (
	"hash/maphash"
	"slices"
)

// Set is the set of links a walk has followed. It keeps a 64-bit hash of
// each in a slice rather than the links in a map: 8 bytes a page, so that
// walking a million Users holds tens of kilobytes, not the links'
// megabytes (a map costs about 70 bytes an entry). The linear search is
// nothing beside the HTTP request each page costs. Two different links
// sharing a hash (odds of 2^-64 a pair, with a seed of its own per Set)
// would end the walk with an error, never make it loop.
//
// The zero Set is not usable; make one with New.
type Set struct {
	seed   maphash.Seed
	hashes []uint64
}

// New returns an empty Set with a seed of its own.
func New() *Set {
	return &Set{seed: maphash.MakeSeed()}
}

// Add records link and reports whether it was new to the Set.
func (s *Set) Add(link string) bool {
	h := maphash.String(s.seed, link)
	if slices.Contains(s.hashes, h) {
		return false
	}
	s.hashes = append(s.hashes, h)
	return true
}

// Len is the number of links recorded.
func (s *Set) Len() int { return len(s.hashes) }
