package managementtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/serviceconnect/management"
)

// wireTimeLayout is the spec's timestamp format, yyyy-MM-dd'T'HH:mm:ss.SSS'Z'.
const wireTimeLayout = "2006-01-02T15:04:05.000Z"

// thingsPage is the body of GET /things.
type thingsPage struct {
	Things   []management.Thing `json:"things"`
	NextPage *string            `json:"next_page"`
}

func (s *service) listThings(w http.ResponseWriter, r *http.Request) {
	s.locked(w, func() answer {
		ids, next, fail := s.page(r.URL.RawQuery, "things", s.thingEntries)
		if fail != nil {
			return *fail
		}
		items := make([]management.Thing, 0, len(ids))
		for _, id := range ids {
			items = append(items, s.store.things[id].thing.Thing)
		}
		return answer{status: http.StatusOK, body: thingsPage{Things: items, NextPage: next}}
	})
}

func (s *service) getThing(w http.ResponseWriter, id string) {
	s.locked(w, func() answer {
		rec := s.store.things[id]
		if rec == nil {
			return thingNotFound(id)
		}
		return answer{status: http.StatusOK, body: s.store.thingDetails(rec)}
	})
}

// thingPatch is a parsed PATCH body. nil fields were absent or null and
// change nothing.
type thingPatch struct {
	name, firmwareVersion *string
	lastSeen              *management.Timestamp
	statuses              []management.ThingStatus
	customSettings        map[string]any
}

// updateThing answers PATCH /things/{thing_physical_id}: the fields present
// and not null replace the Thing's, statuses merge by name (rule 1), custom
// settings merge by key (rule 2) and the unset marker removes a key (rule
// 3). updated_at moves on every update.
func (s *service) updateThing(w http.ResponseWriter, r *http.Request, id string) {
	obj, err := readObject(w, r)
	if err != nil {
		validationError(w, err.Error())
		return
	}
	now := time.Now()
	p, err := parsePatch(obj, now)
	if err != nil {
		validationError(w, err.Error())
		return
	}
	s.locked(w, func() answer {
		rec := s.store.things[id]
		if rec == nil {
			return thingNotFound(id)
		}
		p.apply(&rec.thing, s.opts.unsetMarker)
		rec.thing.UpdatedAt = touch(rec.thing.UpdatedAt, now)
		return answer{status: http.StatusOK, body: s.store.thingDetails(rec)}
	})
}

func parsePatch(obj map[string]json.RawMessage, now time.Time) (thingPatch, error) {
	var p thingPatch
	var err error
	if p.name, err = optionalString(obj, "name"); err != nil {
		return p, err
	}
	if p.firmwareVersion, err = optionalString(obj, "firmware_version"); err != nil {
		return p, err
	}
	seen, err := optionalString(obj, "last_seen")
	if err != nil {
		return p, err
	}
	if seen != nil {
		t, err := time.Parse(wireTimeLayout, *seen)
		if err != nil {
			return p, fmt.Errorf("last_seen %q is not a timestamp of the form yyyy-MM-ddTHH:mm:ss.SSSZ", *seen)
		}
		p.lastSeen = management.Ptr(management.NewTimestamp(t))
	}
	if p.statuses, err = parseStatuses(obj["statuses"], now); err != nil {
		return p, err
	}
	if raw := obj["custom_settings"]; !isNull(raw) {
		if err := decodeExact(raw, &p.customSettings); err != nil || p.customSettings == nil {
			return p, errors.New("custom_settings must be an object")
		}
	}
	return p, nil
}

// wireStatus is a ThingStatus as sent, to tell absent fields apart.
type wireStatus struct {
	Name        *string `json:"name"`
	StatusValue *string `json:"status_value"`
	Date        *string `json:"date"`
}

// parseStatuses reads the statuses of a PATCH body. name and status_value
// are required; a missing date is now.
func parseStatuses(raw json.RawMessage, now time.Time) ([]management.ThingStatus, error) {
	if isNull(raw) {
		return nil, nil
	}
	var in []wireStatus
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, errors.New("statuses must be an array of objects with name, status_value and date")
	}
	out := make([]management.ThingStatus, len(in))
	for i, ws := range in {
		if ws.Name == nil || *ws.Name == "" || ws.StatusValue == nil {
			return nil, fmt.Errorf("statuses[%d] must have a name and a status_value", i)
		}
		date := management.NewTimestamp(now)
		if ws.Date != nil {
			t, err := time.Parse(wireTimeLayout, *ws.Date)
			if err != nil {
				return nil, fmt.Errorf("statuses[%d].date %q is not a timestamp of the form yyyy-MM-ddTHH:mm:ss.SSSZ", i, *ws.Date)
			}
			date = management.NewTimestamp(t)
		}
		out[i] = management.ThingStatus{Name: *ws.Name, StatusValue: *ws.StatusValue, Date: date}
	}
	return out, nil
}

// apply merges p into t by the spec's rules.
func (p thingPatch) apply(t *management.ThingDetails, unsetMarker string) {
	if p.name != nil {
		t.Name = *p.name
	}
	if p.firmwareVersion != nil {
		t.FirmwareVersion = *p.firmwareVersion
	}
	if p.lastSeen != nil {
		t.LastSeen = p.lastSeen
	}
	for _, st := range p.statuses { // rule 1
		i := indexOfStatus(t.Statuses, st.Name)
		if i < 0 {
			t.Statuses = append(t.Statuses, st)
			continue
		}
		t.Statuses[i].StatusValue, t.Statuses[i].Date = st.StatusValue, st.Date
	}
	for k, v := range p.customSettings { // rules 2 and 3
		if v == unsetMarker {
			delete(t.CustomSettings, k)
			continue
		}
		if t.CustomSettings == nil {
			t.CustomSettings = make(map[string]any)
		}
		t.CustomSettings[k] = v
	}
}

func indexOfStatus(statuses []management.ThingStatus, name string) int {
	for i, st := range statuses {
		if st.Name == name {
			return i
		}
	}
	return -1
}
