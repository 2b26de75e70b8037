package managementtest

import (
	"container/heap"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/serviceconnect/management"
)

// Seeding the fake of a fidelity check from what a cassette's answers
// show: the state the service had before the cassette's requests, as far
// as its answers tell it.

// The answers' bodies, as the check reads them.
type (
	usersPageBody struct {
		Users    []management.User `json:"users"`
		NextPage *string           `json:"next_page"`
	}
	thingsPageBody struct {
		Things   []management.Thing `json:"things"`
		NextPage *string            `json:"next_page"`
	}
	verdictBody struct {
		Valid  bool            `json:"is_token_valid"`
		UserID string          `json:"user_id"`
		Role   management.Role `json:"user_role"`
	}
)

// seeding is what the answers of a cassette show, in the order shown.
type seeding struct {
	users      map[string]*management.UserDetails
	full       map[string]bool // the User was read whole, not only listed
	userOrder  []string
	things     map[string]*management.ThingDetails
	thingOrder []string
	assoc      map[[2]string]management.Timestamp // (user, thing) -> associated at
	assocOrder [][2]string
	left       map[string]bool   // "u:<id>", "t:<id>", "a:<user>/<thing>": not to seed
	endUsers   map[string]string // placeholder -> user id

	// What the list pages show of the order of items created (or
	// updated) in the same millisecond, which the fake orders by their
	// creation: see ties.
	below               func(path string) string // a recorded path without the base path
	listings            map[string]*listing      // the listings under way, by the link to their next page
	latest              map[*ties]*listing       // the listing of each kind read last
	userTies, thingTies ties
}

// listing is a list read page by page: its order, and the last item of
// the page before.
type listing struct {
	order ordering
	last  listed
}

// listed is an item of a list page: its id, and the times it is ordered by.
type listed struct {
	id               string
	created, updated management.Timestamp
}

// at is the time o orders it by.
func (it listed) at(o ordering) management.Timestamp {
	if o.byUpdated {
		return it.updated
	}
	return it.created
}

// ties are what the list pages show of the order in which the service
// created items whose ordering times are equal: the service orders them
// as the fake does, by creation, so an item listed before a tied one in
// a descending list was created after it, and before it in an ascending
// one.
type ties struct {
	later map[string][]string // id -> the ids created after it
}

// before notes that a was created before b.
func (t *ties) before(a, b string) {
	if t.later == nil {
		t.later = make(map[string][]string)
	}
	t.later[a] = append(t.later[a], b)
}

// order returns ids, in the order first shown, reordered so that each
// comes after those the ties say were created before it; where ties
// contradict each other (pages read while items changed), the one first
// shown goes first. It takes time in proportion to the ids and ties, and
// a logarithm.
func (t *ties) order(ids []string) []string {
	if len(t.later) == 0 {
		return ids
	}
	rank := make(map[string]int, len(ids))
	for i, id := range ids {
		rank[id] = i
	}
	waits := make([]int, len(ids)) // the ties before each, not yet placed
	for a, later := range t.later {
		if _, ok := rank[a]; ok {
			for _, b := range later {
				if j, ok := rank[b]; ok {
					waits[j]++
				}
			}
		}
	}
	ready := &rankHeap{}
	for i := range ids {
		if waits[i] == 0 {
			heap.Push(ready, i)
		}
	}
	placed := make([]bool, len(ids))
	out := make([]string, 0, len(ids))
	for next := 0; len(out) < len(ids); {
		var i int
		if ready.Len() > 0 {
			i = heap.Pop(ready).(int)
		} else { // a cycle: the first shown of what is left goes first
			for placed[next] {
				next++
			}
			i = next
		}
		if placed[i] {
			continue
		}
		placed[i] = true
		out = append(out, ids[i])
		for _, b := range t.later[ids[i]] {
			if j, ok := rank[b]; ok && !placed[j] {
				if waits[j]--; waits[j] == 0 {
					heap.Push(ready, j)
				}
			}
		}
	}
	return out
}

// rankHeap is a min-heap of ranks.
type rankHeap []int

// Len, Less, Swap, Push and Pop make rankHeap a container/heap.Interface:
// the seeding order takes the lowest ready rank first, so that items the
// pages do not order keep the order they were first shown in.

// Len is the number of ranks held.
func (h rankHeap) Len() int { return len(h) }

// Less orders the lower rank first: a min-heap.
func (h rankHeap) Less(i, j int) bool { return h[i] < h[j] }

// Swap exchanges two ranks, for container/heap.
func (h rankHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }

// Push adds a rank, for container/heap; x is always an int.
func (h *rankHeap) Push(x any) { *h = append(*h, x.(int)) }

// Pop removes the last rank, which container/heap has moved there.
func (h *rankHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// page notes the ties that a list page shows: consecutive items with the
// same ordering time, on the page and across the link from the page
// before. A further page whose link no recorded page gave (a cassette
// edited by hand) is taken to follow the page of its kind read last.
func (sd *seeding) page(in Interaction, items []listed, next *string, t *ties) {
	var l listing
	if q, err := url.ParseQuery(in.Request.Query); err != nil || q.Has("page") {
		prev := sd.listings[sd.below(in.Request.Path)+"?"+in.Request.Query]
		if prev == nil {
			prev = sd.latest[t]
		}
		if prev == nil {
			return
		}
		l = *prev
	} else if o, msg := parseOrdering(q); msg == "" {
		l.order = o
	} else {
		return
	}
	for _, it := range items {
		if l.last.id != "" && l.last.id != it.id && l.last.at(l.order).Equal(it.at(l.order)) {
			if l.order.ascending {
				t.before(l.last.id, it.id)
			} else {
				t.before(it.id, l.last.id)
			}
		}
		l.last = it
	}
	sd.latest[t] = &l
	if next != nil && *next != "" {
		sd.listings[*next] = &l
	}
}

// seed adds to the fake what the cassette's answers show.
func (ck *check) seed() {
	sd := &seeding{
		users: map[string]*management.UserDetails{}, full: map[string]bool{}, things: map[string]*management.ThingDetails{},
		assoc: map[[2]string]management.Timestamp{}, left: map[string]bool{}, endUsers: map[string]string{},
		below: ck.below, listings: map[string]*listing{}, latest: map[*ties]*listing{},
	}
	for _, in := range ck.c.Interactions {
		route, values := ck.routeOf(in)
		sd.read(route, values, in)
	}
	ck.srv.mu.Lock()
	defer ck.srv.mu.Unlock()
	now := time.Now()
	// Seeded in the order the service created them, as far as the lists
	// show it (see ties): the fake orders ties by creation.
	for _, id := range sd.thingTies.order(sd.thingOrder) {
		if err := ck.srv.store.addThing(*sd.things[id], now); err != nil {
			ck.notCompared(fmt.Sprintf("Thing %q could not be seeded: %v", id, err))
		}
	}
	byUser := map[string][][2]string{}
	for _, a := range sd.assocOrder {
		byUser[a[0]] = append(byUser[a[0]], a)
	}
	for _, id := range sd.userTies.order(sd.userOrder) {
		u := *sd.users[id]
		u.AssociatedThings = nil
		for _, a := range byUser[id] {
			if ck.srv.store.things[a[1]] != nil {
				u.AssociatedThings = append(u.AssociatedThings, management.AssociatedThing{PhysicalID: a[1], AssociationData: management.AssociationData{AssociatedAt: sd.assoc[a]}})
			}
		}
		if err := ck.srv.store.addUser(u, now); err != nil {
			ck.notCompared(fmt.Sprintf("User %q could not be seeded: %v", id, err))
		}
	}
	for _, p := range slices.Sorted(maps.Keys(sd.endUsers)) {
		if ck.srv.store.users[sd.endUsers[p]] != nil {
			tok := "eu-" + strings.Trim(p, "{}")
			ck.srv.endUsers[tok] = sd.endUsers[p]
			ck.tokens[p] = tok
		}
	}
}

// seeders note what the answer of each endpoint shows, by route. Each is
// given the request's path values and the interaction.
var seeders = map[Route]func(sd *seeding, values map[string]string, in Interaction){
	RouteListUsers:    (*seeding).usersPage,
	RouteGetUser:      (*seeding).userRead,
	RouteListThings:   (*seeding).thingsPage,
	RouteGetThing:     (*seeding).thingRead,
	RouteUpdateThing:  (*seeding).thingRead,
	RouteAssociate:    (*seeding).associated,
	RouteDisassociate: (*seeding).disassociated,
	RouteAuthenticate: (*seeding).verdict,
}

// read notes what the answer of in, a request to route, shows.
func (sd *seeding) read(route Route, values map[string]string, in Interaction) {
	if seed := seeders[route]; seed != nil {
		seed(sd, values, in)
	}
}

// success reports whether in was answered 2xx.
func success(in Interaction) bool { return in.Response.Status/100 == 2 }

func (sd *seeding) usersPage(_ map[string]string, in Interaction) {
	var page usersPageBody
	if !success(in) || json.Unmarshal([]byte(in.Response.Body), &page) != nil {
		return
	}
	items := make([]listed, len(page.Users))
	for i, u := range page.Users {
		sd.user(management.UserDetails{User: u}, false)
		items[i] = listed{u.ID, u.CreatedAt, u.UpdatedAt}
	}
	sd.page(in, items, page.NextPage, &sd.userTies)
}

// userRead notes a User read whole, and the Things it shows; a User
// answered 404 is left out.
func (sd *seeding) userRead(values map[string]string, in Interaction) {
	if in.Response.Status == http.StatusNotFound {
		sd.leave("u:" + values["user_id"])
		return
	}
	var u management.UserDetails
	if !success(in) || decodeExact([]byte(in.Response.Body), &u) != nil || u.ID == "" {
		return
	}
	sd.user(u, true)
	for _, at := range u.AssociatedThings {
		sd.thing(management.ThingDetails{Thing: management.Thing{PhysicalID: at.PhysicalID, Name: at.Name, Model: at.Model, FirmwareVersion: at.FirmwareVersion, LastSeen: at.LastSeenAt}})
		sd.association(u.ID, at.PhysicalID, at.AssociationData.AssociatedAt)
	}
}

func (sd *seeding) thingsPage(_ map[string]string, in Interaction) {
	var page thingsPageBody
	if !success(in) || json.Unmarshal([]byte(in.Response.Body), &page) != nil {
		return
	}
	items := make([]listed, len(page.Things))
	for i, t := range page.Things {
		sd.thing(management.ThingDetails{Thing: t})
		items[i] = listed{t.PhysicalID, t.CreatedAt, t.UpdatedAt}
	}
	sd.page(in, items, page.NextPage, &sd.thingTies)
}

// thingRead notes a Thing answered whole (a read, an update) and the Users
// it shows; a Thing read answered 404 is left out.
func (sd *seeding) thingRead(values map[string]string, in Interaction) {
	if in.Response.Status == http.StatusNotFound && in.Request.Method == http.MethodGet {
		sd.leave("t:" + values["thing_physical_id"])
		return
	}
	if t, ok := thingAnswer(in); ok {
		sd.thingAndUsers(t)
	}
}

// associated notes the Thing of an associate's answer, leaving what the
// associate made for it to make again: a Thing it created (201), and the
// association.
func (sd *seeding) associated(values map[string]string, in Interaction) {
	t, ok := thingAnswer(in)
	if !ok {
		return
	}
	if in.Response.Status == http.StatusCreated {
		sd.leave("t:" + t.PhysicalID)
	}
	sd.user(management.UserDetails{User: management.User{ID: values["user_id"]}}, false)
	sd.leave("a:" + values["user_id"] + "/" + t.PhysicalID)
	sd.thingAndUsers(t)
}

// thingAnswer decodes the Thing of a 2xx answer.
func thingAnswer(in Interaction) (management.ThingDetails, bool) {
	var t management.ThingDetails
	ok := success(in) && decodeExact([]byte(in.Response.Body), &t) == nil && t.PhysicalID != ""
	return t, ok
}

// thingAndUsers notes a Thing and the Users associated with it.
func (sd *seeding) thingAndUsers(t management.ThingDetails) {
	sd.thing(t)
	for _, au := range t.AssociatedUsers {
		sd.user(management.UserDetails{User: management.User{ID: au.ID}}, false)
		sd.association(au.ID, t.PhysicalID, au.AssociationData.AssociatedAt)
	}
}

// disassociated notes the association a disassociate ended, which was
// there before.
func (sd *seeding) disassociated(values map[string]string, in Interaction) {
	if !success(in) {
		return
	}
	sd.user(management.UserDetails{User: management.User{ID: values["user_id"]}}, false)
	sd.thing(management.ThingDetails{Thing: management.Thing{PhysicalID: values["physical_id"]}})
	sd.association(values["user_id"], values["physical_id"], management.Timestamp{})
}

// verdict notes the User of an End User token the service found valid.
func (sd *seeding) verdict(_ map[string]string, in Interaction) {
	var v verdictBody
	if !success(in) || json.Unmarshal([]byte(in.Response.Body), &v) != nil || !v.Valid || v.Role != management.RoleAppUser || v.UserID == "" {
		return
	}
	var req struct {
		AccessToken string `json:"access_token"`
	}
	_ = json.Unmarshal([]byte(in.Request.Body), &req)
	_, tok, _ := strings.Cut(req.AccessToken, " ")
	if isPlaceholder(tok) {
		sd.endUsers[tok] = v.UserID
		sd.user(management.UserDetails{User: management.User{ID: v.UserID}}, false)
	}
}

// leave marks an item not to seed, unless it was shown before.
func (sd *seeding) leave(key string) {
	id := key[2:]
	switch {
	case strings.HasPrefix(key, "u:") && sd.users[id] != nil,
		strings.HasPrefix(key, "t:") && sd.things[id] != nil:
		return
	}
	if strings.HasPrefix(key, "a:") {
		user, thing, _ := strings.Cut(id, "/")
		if _, ok := sd.assoc[[2]string{user, thing}]; ok {
			return
		}
	}
	sd.left[key] = true
}

// user notes a User as shown: the first showing, or the first whole one.
func (sd *seeding) user(u management.UserDetails, whole bool) {
	if u.ID == "" || sd.left["u:"+u.ID] || (sd.users[u.ID] != nil && (sd.full[u.ID] || !whole)) {
		return
	}
	if sd.users[u.ID] == nil {
		sd.userOrder = append(sd.userOrder, u.ID)
	}
	if u.IsAnonymous {
		u.Email, u.FirstName, u.LastName = nil, nil, nil // as the fake requires
	}
	sd.users[u.ID], sd.full[u.ID] = &u, whole
}

// thing notes a Thing as first shown.
func (sd *seeding) thing(t management.ThingDetails) {
	if t.PhysicalID == "" || sd.left["t:"+t.PhysicalID] || sd.things[t.PhysicalID] != nil {
		return
	}
	t.AssociatedUsers = nil
	seen := map[string]bool{}
	t.Statuses = slices.DeleteFunc(slices.Clone(t.Statuses), func(s management.ThingStatus) bool { // the fake refuses a name twice
		defer func() { seen[s.Name] = true }()
		return seen[s.Name]
	})
	sd.things[t.PhysicalID] = &t
	sd.thingOrder = append(sd.thingOrder, t.PhysicalID)
}

// association notes an association as first shown.
func (sd *seeding) association(user, thing string, at management.Timestamp) {
	key := [2]string{user, thing}
	if _, ok := sd.assoc[key]; ok || sd.left["a:"+user+"/"+thing] || sd.users[user] == nil || sd.things[thing] == nil {
		return
	}
	sd.assoc[key] = at
	sd.assocOrder = append(sd.assocOrder, key)
}
