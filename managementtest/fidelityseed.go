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
		route, values := ck.srv.routeOf(in.Request.Method, ck.below(in.Request.Path))
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

// read notes what the answer of in shows.
func (sd *seeding) read(route Route, values map[string]string, in Interaction) {
	status, body := in.Response.Status, []byte(in.Response.Body)
	if status == http.StatusNotFound {
		switch route {
		case RouteGetUser:
			sd.leave("u:" + values["user_id"])
		case RouteGetThing:
			sd.leave("t:" + values["thing_physical_id"])
		}
		return
	}
	if status/100 != 2 {
		return
	}
	switch route {
	case RouteListUsers:
		var page usersPageBody
		if json.Unmarshal(body, &page) == nil {
			for _, u := range page.Users {
				sd.user(management.UserDetails{User: u}, false)
			}
		}
	case RouteGetUser:
		var u management.UserDetails
		if decodeExact(body, &u) == nil && u.ID != "" {
			sd.user(u, true)
			for _, at := range u.AssociatedThings {
				sd.thing(management.ThingDetails{Thing: management.Thing{PhysicalID: at.PhysicalID, Name: at.Name, Model: at.Model, FirmwareVersion: at.FirmwareVersion, LastSeen: at.LastSeenAt}})
				sd.association(u.ID, at.PhysicalID, at.AssociationData.AssociatedAt)
			}
		}
	case RouteListThings:
		var page thingsPageBody
		if json.Unmarshal(body, &page) == nil {
			for _, t := range page.Things {
				sd.thing(management.ThingDetails{Thing: t})
			}
		}
	case RouteGetThing, RouteUpdateThing, RouteAssociate:
		var t management.ThingDetails
		if decodeExact(body, &t) != nil || t.PhysicalID == "" {
			return
		}
		if route == RouteAssociate {
			// What the associate made is left for it to make again: a
			// Thing it created (201), and the association.
			if status == http.StatusCreated {
				sd.leave("t:" + t.PhysicalID)
			}
			sd.user(management.UserDetails{User: management.User{ID: values["user_id"]}}, false)
			sd.leave("a:" + values["user_id"] + "/" + t.PhysicalID)
		}
		sd.thing(t)
		for _, au := range t.AssociatedUsers {
			sd.user(management.UserDetails{User: management.User{ID: au.ID}}, false)
			sd.association(au.ID, t.PhysicalID, au.AssociationData.AssociatedAt)
		}
	case RouteDisassociate:
		sd.user(management.UserDetails{User: management.User{ID: values["user_id"]}}, false)
		sd.thing(management.ThingDetails{Thing: management.Thing{PhysicalID: values["physical_id"]}})
		sd.association(values["user_id"], values["physical_id"], management.Timestamp{})
	case RouteAuthenticate:
		var v verdictBody
		if json.Unmarshal(body, &v) != nil || !v.Valid || v.Role != management.RoleAppUser || v.UserID == "" {
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
