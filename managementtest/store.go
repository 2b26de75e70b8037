package managementtest

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/serviceconnect/management"
)

// store holds the fake's Users and Things. An association is kept on both
// sides (userRecord.things and thingRecord.users, always in step), and the
// lists inside UserDetails and ThingDetails are derived from it when
// rendered, so that both sides always show the Thing's current fields.
// The Server's mutex guards it.
type store struct {
	seq    int64 // creation counter: orders items created in the same millisecond
	users  map[string]*userRecord
	things map[string]*thingRecord
}

type userRecord struct {
	seq    int64
	user   management.UserDetails          // AssociatedThings always nil
	things map[string]management.Timestamp // physical id -> associated at
}

type thingRecord struct {
	seq   int64
	thing management.ThingDetails         // AssociatedUsers always nil
	users map[string]management.Timestamp // user id -> associated at
}

func newStore() store {
	return store{users: make(map[string]*userRecord), things: make(map[string]*thingRecord)}
}

func (st *store) nextSeq() int64 {
	st.seq++
	return st.seq
}

// AddUser adds a User as if it had registered. Zero CreatedAt is set to
// now, zero UpdatedAt to CreatedAt, zero consent UpdatedAt to now, and an
// empty EmailVerificationStatus to management.EmailUnset; timestamps are
// truncated to the millisecond the wire keeps. Each AssociatedThings entry
// associates the User with a Thing added before: only its PhysicalID and
// AssociationData.AssociatedAt (zero: now) are read; the other fields come
// from that Thing. The server keeps its own copy of u.
//
// AddUser panics on misuse, as test helpers do: an empty or duplicate id,
// an anonymous User with an email or a name, an unknown or repeated
// associated Thing, or custom settings that cannot be encoded as JSON.
func (s *service) AddUser(u management.UserDetails) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.store.addUser(u, time.Now()); err != nil {
		panic(fmt.Sprintf("managementtest: AddUser(%q): %v", u.ID, err))
	}
}

// AddThing adds a Thing. Zero CreatedAt is set to now, zero UpdatedAt to
// CreatedAt, zero status dates to now; timestamps are truncated to the
// millisecond. Each AssociatedUsers entry associates the Thing with a User
// added before, at AssociationData.AssociatedAt (zero: now). The server
// keeps its own copy of t.
//
// AddThing panics on misuse, as test helpers do: an empty or duplicate
// physical id, a repeated status name, an unknown or repeated associated
// User, or custom settings that cannot be encoded as JSON.
func (s *service) AddThing(t management.ThingDetails) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.store.addThing(t, time.Now()); err != nil {
		panic(fmt.Sprintf("managementtest: AddThing(%q): %v", t.PhysicalID, err))
	}
}

// User returns the User with the given id as the API would answer a read
// of it (custom settings numbers are json.Number), and whether it exists.
// The result is a copy.
func (s *service) User(id string) (management.UserDetails, bool) {
	var u management.UserDetails
	s.mu.Lock()
	rec, ok := s.store.users[id]
	var data []byte
	if ok {
		data = encode(s.store.userDetails(rec))
	}
	s.mu.Unlock()
	if ok {
		mustDecode(data, &u)
	}
	return u, ok
}

// Thing returns the Thing with the given physical id as the API would
// answer a read of it (custom settings numbers are json.Number), and
// whether it exists. The result is a copy.
func (s *service) Thing(physicalID string) (management.ThingDetails, bool) {
	var t management.ThingDetails
	s.mu.Lock()
	rec, ok := s.store.things[physicalID]
	var data []byte
	if ok {
		data = encode(s.store.thingDetails(rec))
	}
	s.mu.Unlock()
	if ok {
		mustDecode(data, &t)
	}
	return t, ok
}

func mustDecode(data []byte, v any) {
	if err := decodeExact(data, v); err != nil {
		panic(fmt.Sprintf("managementtest: decoding: %v", err))
	}
}

func (st *store) addUser(u management.UserDetails, now time.Time) error {
	switch {
	case u.ID == "":
		return errors.New("the User id is empty")
	case st.users[u.ID] != nil:
		return errors.New("a User with this id was already added")
	case u.IsAnonymous && (u.Email != nil || u.FirstName != nil || u.LastName != nil):
		return errors.New("an anonymous User has no email, first name or last name (leave them nil)")
	}
	settings, err := copySettings(u.CustomSettings)
	if err != nil {
		return err
	}
	assoc := make(map[string]management.Timestamp, len(u.AssociatedThings))
	for _, a := range u.AssociatedThings {
		if st.things[a.PhysicalID] == nil {
			return fmt.Errorf("associated Thing %q was not added (add Things first, or associate them in AddThing)", a.PhysicalID)
		}
		if _, dup := assoc[a.PhysicalID]; dup {
			return fmt.Errorf("associated Thing %q is listed twice", a.PhysicalID)
		}
		assoc[a.PhysicalID] = stamp(a.AssociationData.AssociatedAt, now)
	}

	rec := &userRecord{seq: st.nextSeq(), things: assoc}
	rec.user = u
	rec.user.Email, rec.user.FirstName, rec.user.LastName = clonePtr(u.Email), clonePtr(u.FirstName), clonePtr(u.LastName)
	rec.user.TermsOfUseVersionApproved = clonePtr(u.TermsOfUseVersionApproved)
	rec.user.CreatedAt = stamp(u.CreatedAt, now)
	rec.user.UpdatedAt = stamp(u.UpdatedAt, rec.user.CreatedAt.Time)
	rec.user.EmailVerificationStatus = cmp.Or(u.EmailVerificationStatus, management.EmailUnset)
	rec.user.Consents = make([]management.Consent, len(u.Consents))
	for i, c := range u.Consents {
		c.UpdatedAt = stamp(c.UpdatedAt, now)
		rec.user.Consents[i] = c
	}
	rec.user.CustomSettings = settings
	rec.user.AssociatedThings = nil
	st.users[u.ID] = rec
	for pid, at := range assoc {
		st.things[pid].users[u.ID] = at
	}
	return nil
}

func (st *store) addThing(t management.ThingDetails, now time.Time) error {
	switch {
	case t.PhysicalID == "":
		return errors.New("the physical id is empty")
	case st.things[t.PhysicalID] != nil:
		return errors.New("a Thing with this physical id was already added")
	}
	settings, err := copySettings(t.CustomSettings)
	if err != nil {
		return err
	}
	statuses := make([]management.ThingStatus, len(t.Statuses))
	for i, ts := range t.Statuses {
		if slices.ContainsFunc(statuses[:i], func(o management.ThingStatus) bool { return o.Name == ts.Name }) {
			return fmt.Errorf("status %q is listed twice", ts.Name)
		}
		ts.Date = stamp(ts.Date, now)
		statuses[i] = ts
	}
	assoc := make(map[string]management.Timestamp, len(t.AssociatedUsers))
	for _, a := range t.AssociatedUsers {
		if st.users[a.ID] == nil {
			return fmt.Errorf("associated User %q was not added (add Users first, or associate them in AddUser)", a.ID)
		}
		if _, dup := assoc[a.ID]; dup {
			return fmt.Errorf("associated User %q is listed twice", a.ID)
		}
		assoc[a.ID] = stamp(a.AssociationData.AssociatedAt, now)
	}

	rec := &thingRecord{seq: st.nextSeq(), users: assoc}
	rec.thing = t
	if t.LastSeen != nil {
		rec.thing.LastSeen = management.Ptr(management.NewTimestamp(t.LastSeen.Time))
	}
	rec.thing.CreatedAt = stamp(t.CreatedAt, now)
	rec.thing.UpdatedAt = stamp(t.UpdatedAt, rec.thing.CreatedAt.Time)
	rec.thing.Statuses = statuses
	rec.thing.CustomSettings = settings
	rec.thing.AssociatedUsers = nil
	st.things[t.PhysicalID] = rec
	for uid, at := range assoc {
		st.users[uid].things[t.PhysicalID] = at
	}
	return nil
}

// stamp returns t in the wire's precision, or def when t is zero.
func stamp(t management.Timestamp, def time.Time) management.Timestamp {
	if t.IsZero() {
		return management.NewTimestamp(def)
	}
	return management.NewTimestamp(t.Time)
}

// touch returns the updated_at that follows prev at now: now, or a
// millisecond after prev when the clock has not moved past it (fast tests,
// synctest's frozen clock), so that every update visibly moves updated_at.
func touch(prev management.Timestamp, now time.Time) management.Timestamp {
	t := management.NewTimestamp(now)
	if !t.After(prev.Time) {
		t = management.NewTimestamp(prev.Add(time.Millisecond))
	}
	return t
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// copySettings deep-copies custom settings through JSON, so that the
// server shares nothing with the caller and can always encode them.
// Numbers become json.Number, as the SDK decodes them.
func copySettings(m map[string]any) (map[string]any, error) {
	if m == nil {
		return nil, nil
	}
	data, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("custom settings cannot be encoded as JSON: %v", err)
	}
	var out map[string]any
	if err := decodeExact(data, &out); err != nil {
		return nil, fmt.Errorf("custom settings cannot be decoded: %v", err)
	}
	return out, nil
}

// userDetails renders a SingleUser. The result shares memory with the
// store: encode it under the lock.
func (st *store) userDetails(rec *userRecord) management.UserDetails {
	u := rec.user
	u.AssociatedThings = make([]management.AssociatedThing, 0, len(rec.things))
	for _, pid := range byAssociation(rec.things) {
		t := st.things[pid].thing
		u.AssociatedThings = append(u.AssociatedThings, management.AssociatedThing{
			PhysicalID:      t.PhysicalID,
			Name:            t.Name,
			Model:           t.Model,
			FirmwareVersion: t.FirmwareVersion,
			LastSeenAt:      t.LastSeen,
			AssociationData: management.AssociationData{AssociatedAt: rec.things[pid]},
		})
	}
	return u
}

// thingDetails renders a SingleThing. The result shares memory with the
// store: encode it under the lock.
func (st *store) thingDetails(rec *thingRecord) management.ThingDetails {
	t := rec.thing
	t.AssociatedUsers = make([]management.AssociatedUser, 0, len(rec.users))
	for _, uid := range byAssociation(rec.users) {
		t.AssociatedUsers = append(t.AssociatedUsers, management.AssociatedUser{
			ID:              uid,
			AssociationData: management.AssociationData{AssociatedAt: rec.users[uid]},
		})
	}
	return t
}

// byAssociation returns the keys of an association map, oldest association
// first (ties by key), so that renderings are deterministic.
func byAssociation(m map[string]management.Timestamp) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		return cmp.Or(m[a].Compare(m[b].Time), cmp.Compare(a, b))
	})
	return keys
}

// associate associates a Thing with a User, creating the Thing when it is
// new. It reports whether the Thing was created.
func (st *store) associate(userID string, a management.NewAssociation, now time.Time) (*thingRecord, bool) {
	rec, exists := st.things[a.PhysicalID]
	if !exists {
		ts := management.NewTimestamp(now)
		rec = &thingRecord{seq: st.nextSeq(), users: make(map[string]management.Timestamp)}
		rec.thing = management.ThingDetails{
			Thing: management.Thing{
				PhysicalID: a.PhysicalID, Model: a.Model, FirmwareVersion: a.FirmwareVersion,
				CreatedAt: ts, UpdatedAt: ts,
			},
			Statuses: []management.ThingStatus{},
		}
		st.things[a.PhysicalID] = rec
	}
	changed := rec.thing.Model != a.Model || rec.thing.FirmwareVersion != a.FirmwareVersion
	rec.thing.Model, rec.thing.FirmwareVersion = a.Model, a.FirmwareVersion
	if _, ok := rec.users[userID]; !ok {
		at := management.NewTimestamp(now)
		rec.users[userID] = at
		st.users[userID].things[a.PhysicalID] = at
		changed = true
	}
	if exists && changed {
		rec.thing.UpdatedAt = touch(rec.thing.UpdatedAt, now)
	}
	return rec, !exists
}
