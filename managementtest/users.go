package managementtest

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/serviceconnect/management"
)

// usersPage is the body of GET /users.
type usersPage struct {
	Users    []management.User `json:"users"`
	NextPage *string           `json:"next_page"`
}

func (s *service) listUsers(w http.ResponseWriter, r *http.Request) {
	s.locked(w, func() answer {
		ids, next, fail := s.page(r.URL.RawQuery, "users", s.userEntries)
		if fail != nil {
			return *fail
		}
		items := make([]management.User, 0, len(ids))
		for _, id := range ids {
			items = append(items, s.store.users[id].user.User)
		}
		return answer{status: http.StatusOK, body: usersPage{Users: items, NextPage: next}}
	})
}

func (s *service) getUser(w http.ResponseWriter, id string) {
	s.locked(w, func() answer {
		rec := s.store.users[id]
		if rec == nil {
			return userNotFound(id)
		}
		return answer{status: http.StatusOK, body: s.store.userDetails(rec)}
	})
}

func userNotFound(id string) answer {
	return errorAnswer(http.StatusNotFound, management.ReasonEntityNotFound, "User "+id+" was not found")
}

func thingNotFound(id string) answer {
	return errorAnswer(http.StatusNotFound, management.ReasonEntityNotFound, "Thing "+id+" was not found")
}

// associate answers POST /users/{user_id}/associated_things: 201 with a
// new Thing, or 200 with an existing one, whose model and firmware version
// take the values sent. Associating an already associated Thing again
// changes nothing else, so a retried request is harmless.
func (s *service) associate(w http.ResponseWriter, r *http.Request, userID string) {
	a, err := readAssociation(w, r)
	if err != nil {
		validationError(w, err.Error())
		return
	}
	s.locked(w, func() answer {
		if s.store.users[userID] == nil {
			return userNotFound(userID)
		}
		rec, created := s.store.associate(userID, a, time.Now())
		status := http.StatusOK
		if created {
			status = http.StatusCreated
		}
		return answer{status: status, body: s.store.thingDetails(rec)}
	})
}

// readAssociation reads the associate body, whose fields are all required
// non-empty strings.
func readAssociation(w http.ResponseWriter, r *http.Request) (management.NewAssociation, error) {
	var a management.NewAssociation
	obj, err := readObject(w, r)
	if err != nil {
		return a, err
	}
	var missing []string
	for _, f := range []struct {
		key string
		dst *string
	}{{"physical_id", &a.PhysicalID}, {"model", &a.Model}, {"firmware_version", &a.FirmwareVersion}} {
		v, err := optionalString(obj, f.key)
		if err != nil {
			return a, err
		}
		if v == nil || *v == "" {
			missing = append(missing, f.key)
			continue
		}
		*f.dst = *v
	}
	if len(missing) > 0 {
		return a, fmt.Errorf("physical_id, model and firmware_version are required; missing: %s", strings.Join(missing, ", "))
	}
	return a, nil
}

// disassociate answers DELETE /users/{user_id}/associated_things/{physical_id}
// with 200 and an empty body. The Thing stays.
func (s *service) disassociate(w http.ResponseWriter, userID, physicalID string) {
	s.locked(w, func() answer {
		user, thing := s.store.users[userID], s.store.things[physicalID]
		switch {
		case user == nil:
			return userNotFound(userID)
		case thing == nil:
			return thingNotFound(physicalID)
		}
		if _, ok := thing.users[userID]; !ok {
			return errorAnswer(http.StatusNotFound, management.ReasonEntityNotFound,
				"Association of Thing "+physicalID+" with User "+userID+" was not found")
		}
		delete(thing.users, userID)
		delete(user.things, physicalID)
		thing.thing.UpdatedAt = touch(thing.thing.UpdatedAt, time.Now())
		return answer{status: http.StatusOK}
	})
}
