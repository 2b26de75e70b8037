package managementtest

import (
	"cmp"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/serviceconnect/management"
)

// Pagination. A listing is a snapshot: its first page orders the ids of
// every item at that moment, and the page links of the listing point into
// that ordered list. Items added later do not appear midway (they appear
// in the next listing) and an updated item keeps its place, so no item is
// skipped or repeated however the store changes between pages, even when
// ordering by updatedAt. Pages show each item's current fields. Following
// a link twice gives the same page, so a retried request is harmless.
//
// A page token is opaque to clients: base64url("<snapshot id>.<offset>").
// A listing that fits in one page keeps no snapshot. Only the
// maxSnapshots most recent snapshots are kept, so that a long test run
// does not pile them up; a link into an older one is an invalid page.

// maxSnapshots bounds the snapshots kept, oldest dropped first.
const maxSnapshots = 1000

// Messages of the list endpoints' 400 answers.
const (
	msgInvalidPage      = "The page parameter is not valid: drop page and start again from the first page"
	msgPageWithOrdering = "Order parameters (order_by, order_direction) must not be specified when page is provided"
)

// snapshot is the ordered ids of one listing.
type snapshot struct {
	id   string // "" when not kept: the listing fits in one page
	kind string // "users" or "things"
	ids  []string
}

// entry is what ordering needs to know of an item.
type entry struct {
	id      string
	seq     int64
	created management.Timestamp
	updated management.Timestamp
}

// ordering is a list's order: by creation time (default) or updatedAt,
// descending (default) or ascending. Ties are broken by creation sequence.
type ordering struct {
	byUpdated bool
	ascending bool
}

// parseOrdering reads order_by and order_direction, or returns the message
// of a 400 answer.
func parseOrdering(q url.Values) (ordering, string) {
	var o ordering
	if by, ok := q["order_by"]; ok {
		if by[0] != string(management.OrderByUpdatedAt) {
			return o, fmt.Sprintf("Unsupported order_by column %q: the supported column is %s", by[0], management.OrderByUpdatedAt)
		}
		o.byUpdated = true
	}
	if dir, ok := q["order_direction"]; ok {
		switch dir[0] {
		case string(management.Ascending):
			o.ascending = true
		case string(management.Descending):
		default:
			return o, fmt.Sprintf("Unsupported order_direction %q: use asc or desc", dir[0])
		}
	}
	return o, ""
}

func (o ordering) sort(es []entry) {
	slices.SortFunc(es, func(a, b entry) int {
		c := a.created.Compare(b.created.Time)
		if o.byUpdated {
			c = a.updated.Compare(b.updated.Time)
		}
		c = cmp.Or(c, cmp.Compare(a.seq, b.seq))
		if !o.ascending {
			c = -c
		}
		return c
	})
}

// page resolves a list request to the ids of the page it asks for and the
// next_page link (nil on the last page), or to a 400 answer. rawQuery is
// parsed strictly: a query with an unparsable pair is answered as an
// invalid page, since the page token may be the pair that was lost.
// entries is called only for a first page. s.mu must be held.
func (s *service) page(rawQuery, kind string, entries func() []entry) ([]string, *string, *answer) {
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return nil, nil, badRequest(msgInvalidPage)
	}
	if q.Has("page") {
		if q.Has("order_by") || q.Has("order_direction") {
			return nil, nil, badRequest(msgPageWithOrdering)
		}
		snap, offset, ok := s.findPage(kind, q["page"])
		if !ok {
			return nil, nil, badRequest(msgInvalidPage)
		}
		ids, next := s.cut(snap, offset)
		return ids, next, nil
	}
	o, msg := parseOrdering(q)
	if msg != "" {
		return nil, nil, badRequest(msg)
	}
	es := entries()
	o.sort(es)
	snap := &snapshot{kind: kind, ids: make([]string, len(es))}
	for i, e := range es {
		snap.ids[i] = e.id
	}
	if len(snap.ids) > s.opts.pageSize {
		s.keep(snap)
	}
	ids, next := s.cut(snap, 0)
	return ids, next, nil
}

// keep stores snap under a new id, dropping the oldest snapshot beyond
// maxSnapshots. s.mu must be held.
func (s *service) keep(snap *snapshot) {
	snap.id = rand.Text()
	s.snapshots[snap.id] = snap
	s.snapshotOrder = append(s.snapshotOrder, snap.id)
	if len(s.snapshotOrder) > maxSnapshots {
		delete(s.snapshots, s.snapshotOrder[0])
		s.snapshotOrder = s.snapshotOrder[1:]
	}
}

func badRequest(msg string) *answer {
	a := errorAnswer(http.StatusBadRequest, management.ReasonRequestValidation, msg)
	return &a
}

// cut returns the page of snap that starts at offset, and the link to the
// next one.
func (s *service) cut(snap *snapshot, offset int) ([]string, *string) {
	end := min(offset+s.opts.pageSize, len(snap.ids))
	if end == len(snap.ids) {
		return snap.ids[offset:end], nil
	}
	token := base64.RawURLEncoding.EncodeToString([]byte(snap.id + "." + strconv.Itoa(end)))
	link := s.escapedPrefix + "/" + snap.kind + "?page=" + token
	return snap.ids[offset:end], &link
}

// findPage decodes a page token of a list of kind.
func (s *service) findPage(kind string, tokens []string) (*snapshot, int, bool) {
	if len(tokens) != 1 {
		return nil, 0, false
	}
	raw, err := base64.RawURLEncoding.DecodeString(tokens[0])
	if err != nil {
		return nil, 0, false
	}
	snapID, off, ok := strings.Cut(string(raw), ".")
	if !ok {
		return nil, 0, false
	}
	snap := s.snapshots[snapID]
	offset, err := strconv.Atoi(off)
	if snap == nil || snap.kind != kind || err != nil || offset <= 0 || offset >= len(snap.ids) {
		return nil, 0, false
	}
	return snap, offset, true
}

// userEntries and thingEntries list the store for ordering. s.mu must be held.
func (s *service) userEntries() []entry {
	es := make([]entry, 0, len(s.store.users))
	for id, rec := range s.store.users {
		es = append(es, entry{id: id, seq: rec.seq, created: rec.user.CreatedAt, updated: rec.user.UpdatedAt})
	}
	return es
}

func (s *service) thingEntries() []entry {
	es := make([]entry, 0, len(s.store.things))
	for id, rec := range s.store.things {
		es = append(es, entry{id: id, seq: rec.seq, created: rec.thing.CreatedAt, updated: rec.thing.UpdatedAt})
	}
	return es
}

// ForgetPages drops the snapshots behind every page link issued so far:
// following one of them is then answered 400 COMMON.REQUEST_VALIDATION, as
// the service answers an invalid page. Use it to test how code recovers
// from a stale link.
func (s *service) ForgetPages() {
	s.mu.Lock()
	clear(s.snapshots)
	s.snapshotOrder = nil
	s.mu.Unlock()
}
