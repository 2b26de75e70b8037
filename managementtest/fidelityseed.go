package managementtest

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
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
		Users []management.User `json:"users"`
	}
	thingsPageBody struct {
		Things []management.Thing `json:"things"`
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
}

// seed adds to the fake what the cassette's answers show.
func (ck *check) seed() {
	sd := &seeding{
		users: map[string]*management.UserDetails{}, full: map[string]bool{}, things: map[string]*management.ThingDetails{},
		assoc: map[[2]string]management.Timestamp{}, left: map[string]bool{}, endUsers: map[string]string{},
	}
	for _, in := range ck.c.Interactions {
		route, values := ck.routeOf(in)
		sd.read(route, values, in)
	}
	ck.srv.mu.Lock()
	defer ck.srv.mu.Unlock()
	now := time.Now()
	for _, id := range sd.thingOrder {
		if err := ck.srv.store.addThing(*sd.things[id], now); err != nil {
			ck.notCompared(fmt.Sprintf("Thing %q could not be seeded: %v", id, err))
		}
	}
	for _, id := range sd.userOrder {
		u := *sd.users[id]
		u.AssociatedThings = nil
		for _, a := range sd.assocOrder {
			if a[0] == id && ck.srv.store.things[a[1]] != nil {
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
	for _, u := range page.Users {
		sd.user(management.UserDetails{User: u}, false)
	}
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
	for _, t := range page.Things {
		sd.thing(management.ThingDetails{Thing: t})
	}
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
