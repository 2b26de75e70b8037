package management

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"strconv"
)

var errUnsetPlacement = errorf("%w: Unset is only valid as a top-level ThingUpdate.CustomSettings value", ErrInvalidArgument)

// Thing is a connected device as listed (the spec's Thing list item).
type Thing struct {
	// PhysicalID is the identifier the client application set when it
	// associated the Thing with a User.
	PhysicalID      string     `json:"physical_id"`
	Name            string     `json:"name"`
	Model           string     `json:"model"`
	FirmwareVersion string     `json:"firmware_version"` // last known firmware version
	LastSeen        *Timestamp `json:"last_seen"`        // nil when never seen
	CreatedAt       Timestamp  `json:"created_at"`
	UpdatedAt       Timestamp  `json:"updated_at"`
}

// ThingDetails is a single Thing as read, updated or associated (the spec's SingleThing).
type ThingDetails struct {
	Thing
	Statuses []ThingStatus `json:"statuses"`
	// CustomSettings is nil when the service sent null. JSON numbers arrive
	// as json.Number so that no integer loses precision.
	CustomSettings  map[string]any   `json:"custom_settings"`
	AssociatedUsers []AssociatedUser `json:"associated_users"`
}

// ThingStatus is one named status of a Thing.
type ThingStatus struct {
	Name        string    `json:"name"`
	StatusValue string    `json:"status_value"`
	Date        Timestamp `json:"date"` // when the status was updated
}

// AssociatedUser is a User as it appears inside ThingDetails.
type AssociatedUser struct {
	ID              string          `json:"id"`
	AssociationData AssociationData `json:"association_data"`
}

// ThingUpdate is a partial update of a Thing: only the fields that are set
// are sent. Statuses are merged by Name (an existing status is overwritten,
// a new one added). CustomSettings are merged by key: a key's value is
// replaced or added, keys not mentioned stay, and the value Unset removes the
// key. The service merges top-level keys only, so Unset is refused deeper.
// A string equal to the client's unset marker (Config.UnsetMarker) is
// refused as a value, at the top level or nested: the service would remove
// the key, and only Unset says that.
type ThingUpdate struct {
	Name            *string
	FirmwareVersion *string
	LastSeen        *Timestamp
	Statuses        []ThingStatus
	CustomSettings  map[string]any
}

// Unset, as a value of ThingUpdate.CustomSettings, removes that key from the
// Thing. It is sent as Config.UnsetMarker.
var Unset = unset{}

// unset is the type of Unset. It refuses to be encoded on its own, so an
// Unset that is not a top-level CustomSettings value is never sent as
// something else.
type unset struct{}

// MarshalJSON refuses: Unset is only meaningful as a top-level CustomSettings value.
func (unset) MarshalJSON() ([]byte, error) {
	return nil, errUnsetPlacement
}

// Ptr returns a pointer to v. It is handy for the optional fields of ThingUpdate:
//
//	management.ThingUpdate{Name: management.Ptr("Kitchen sensor")}
func Ptr[T any](v T) *T {
	return &v
}

// ThingsService lists, reads and updates Things. Get it from Client.Things.
type ThingsService service

// thingsPage is the wire shape of a page of Things.
type thingsPage struct {
	Things   []Thing `json:"things"`
	NextPage *string `json:"next_page"`
}

func (p *thingsPage) reserve(n int) { p.Things = make([]Thing, 0, n) }

func (p *thingsPage) contents() ([]Thing, *string) { return p.Things, p.NextPage }

// validate refuses a page that lists nothing: no "things" array (absent or
// null, as in null or an error body sent with 200), or a Thing without a
// physical id. An empty array is a page, the last one.
func (p *thingsPage) validate() error {
	if p.Things == nil {
		return errors.New(`no "things" array`)
	}
	for i := range p.Things {
		if p.Things[i].PhysicalID == "" {
			return fmt.Errorf("things[%d] has no physical_id", i)
		}
	}
	return nil
}

// validate refuses a body that is not a Thing: without a physical id, as
// null or an error body sent with 200 are.
func (t *ThingDetails) validate() error {
	if t.PhysicalID == "" {
		return errors.New("no Thing physical_id")
	}
	return nil
}

func (s *ThingsService) list() list[thingsPage, Thing] {
	return list[thingsPage, Thing]{client: s.c(), path: "/things", contents: (*thingsPage).contents, reserve: (*thingsPage).reserve}
}

// List iterates over the Things, page after page, exactly as
// UsersService.List does over the Users (order, NextPage, errors, early
// break, re-ranging: see there).
//
// API: GET /things, then GET {next_page}
func (s *ThingsService) List(ctx context.Context, opts *ListOptions) iter.Seq2[*Thing, error] {
	return s.list().all(ctx, opts)
}

// ListPage fetches one page of Things, exactly as UsersService.ListPage
// does for Users (see there).
//
// API: GET /things or GET {next_page}
func (s *ThingsService) ListPage(ctx context.Context, opts *ListOptions) (*Page[*Thing], error) {
	return s.list().page(ctx, opts)
}

// Get returns the Thing with the given physical id, with its statuses,
// custom settings and associated Users. A Thing that does not exist yields
// an error matching ErrNotFound; a 2xx answer that is not a Thing with a
// physical id (null, an error body) yields a *DecodeError.
//
// API: GET /things/{thing_physical_id}
func (s *ThingsService) Get(ctx context.Context, physicalID string) (*ThingDetails, error) {
	id, err := pathSegment("physicalID", physicalID)
	if err != nil {
		return nil, err
	}
	var t ThingDetails
	req := s.c().newRequest(http.MethodGet, "/things/"+id, "", nil).named("/things/{thing_physical_id}", physicalID)
	if _, err := s.c().do(ctx, req, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// Update applies u to the Thing with the given physical id and returns the
// updated Thing. Only the fields set in u are sent; an update with no field
// set, with Unset anywhere but as a top-level CustomSettings value, or with
// the unset marker string as a CustomSettings value, fails with
// ErrInvalidArgument before anything is sent. u is not modified.
//
// API: PATCH /things/{thing_physical_id}
func (s *ThingsService) Update(ctx context.Context, physicalID string, u ThingUpdate) (*ThingDetails, error) {
	id, err := pathSegment("physicalID", physicalID)
	if err != nil {
		return nil, err
	}
	body, err := u.encode(s.c().unsetMarker)
	if err != nil {
		return nil, err
	}
	var t ThingDetails
	req := s.c().newRequest(http.MethodPatch, "/things/"+id, "", body).named("/things/{thing_physical_id}", physicalID)
	if _, err := s.c().do(ctx, req, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// thingUpdateBody is the wire shape of a ThingUpdate: absent keys are not updated.
type thingUpdateBody struct {
	Name            *string        `json:"name,omitempty"`
	FirmwareVersion *string        `json:"firmware_version,omitempty"`
	LastSeen        *Timestamp     `json:"last_seen,omitempty"`
	Statuses        []ThingStatus  `json:"statuses,omitempty"`
	CustomSettings  map[string]any `json:"custom_settings,omitempty"`
}

// encode returns the request body of u, with top-level Unset values
// replaced by the marker.
func (u ThingUpdate) encode(marker unsetMarker) ([]byte, error) {
	if u.Name == nil && u.FirmwareVersion == nil && u.LastSeen == nil && len(u.Statuses) == 0 && len(u.CustomSettings) == 0 {
		return nil, errorf("%w: ThingUpdate has no field set", ErrInvalidArgument)
	}
	settings, err := wireCustomSettings(u.CustomSettings, marker)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(thingUpdateBody{
		Name:            u.Name,
		FirmwareVersion: u.FirmwareVersion,
		LastSeen:        u.LastSeen,
		Statuses:        u.Statuses,
		CustomSettings:  settings,
	})
	if err != nil {
		return nil, errorf("%w: ThingUpdate cannot be encoded as JSON: %w", ErrInvalidArgument, err)
	}
	return body, nil
}

// unsetMarker is the string that removes a custom setting, and how a
// refusal names where it was set: Config.UnsetMarker, or
// MANAGEMENT_UNSET_MARKER for a Client configured from the environment.
type unsetMarker struct{ value, setting string }

// wireCustomSettings returns the custom settings to send, with each
// top-level Unset replaced by marker and every other value encoded here;
// the caller's map is left alone. A value that would reach the service as
// the marker string itself, at the top level or nested, is refused: only
// Unset removes a key, so a setting that happens to equal the marker is
// never deleted by surprise. The service removes top-level keys only, so an
// Unset found deeper is refused too.
func wireCustomSettings(settings map[string]any, marker unsetMarker) (map[string]any, error) {
	if len(settings) == 0 {
		return nil, nil
	}
	out := make(map[string]any, len(settings))
	for k, v := range settings {
		if _, ok := v.(unset); ok {
			out[k] = marker.value
			continue
		}
		raw, err := wireSetting(k, v, marker)
		if err != nil {
			return nil, err
		}
		out[k] = raw
	}
	return out, nil
}

// wireSetting encodes the value v of the custom settings key k, refusing
// an Unset or the marker string inside it. Its errors name where the
// problem is, not the settings' values.
func wireSetting(k string, v any, marker unsetMarker) (json.RawMessage, error) {
	if where, found := findUnset(v); found {
		return nil, errorf("%w, found at %s", errUnsetPlacement, settingPath(k, where))
	}
	raw, err := json.Marshal(v)
	switch {
	case errors.Is(err, errUnsetPlacement): // in a container findUnset does not open
		return nil, errorf("%w, found inside %s", errUnsetPlacement, settingPath(k, ""))
	case err != nil:
		return nil, errorf("%w: %s cannot be encoded as JSON: %w", ErrInvalidArgument, settingPath(k, ""), err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // any number json.Marshal wrote, 1e400 included
	where, found, err := findMarker(dec, marker.value)
	switch {
	case err != nil:
		return nil, errorf("%w: %s cannot be checked for the unset marker: %w", ErrInvalidArgument, settingPath(k, ""), err)
	case found:
		return nil, errorf("%w: %s is the unset marker string (%s); only management.Unset removes a key", ErrInvalidArgument, settingPath(k, where), marker.setting)
	}
	return raw, nil
}

// settingPath names a place in ThingUpdate.CustomSettings: the key k, then
// the index expressions where. Keys are quoted and cut short.
func settingPath(k, where string) string {
	return "CustomSettings[" + quoteKey(k) + "]" + where
}

func quoteKey(k string) string { return fmt.Sprintf("%.64q", k) }

// findMarker reads one JSON value from dec and reports whether a string in
// it equals marker, and where, as index expressions. Object keys are names,
// not values, and are not checked.
func findMarker(dec *json.Decoder, marker string) (string, bool, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", false, err
	}
	switch tok {
	case json.Delim('{'):
		for dec.More() {
			key, err := dec.Token()
			if err != nil {
				return "", false, err
			}
			k, _ := key.(string)
			if where, found, err := findMarker(dec, marker); err != nil || found {
				return "[" + quoteKey(k) + "]" + where, found, err
			}
		}
		_, err = dec.Token() // '}'
	case json.Delim('['):
		for i := 0; dec.More(); i++ {
			if where, found, err := findMarker(dec, marker); err != nil || found {
				return "[" + strconv.Itoa(i) + "]" + where, found, err
			}
		}
		_, err = dec.Token() // ']'
	default:
		s, ok := tok.(string)
		return "", ok && s == marker, nil
	}
	return "", false, err
}

// findUnset looks for Unset inside the JSON containers of v and returns
// where it is, as index expressions. Unset in other containers is caught
// when encoding, as its MarshalJSON refuses.
func findUnset(v any) (string, bool) {
	switch v := v.(type) {
	case unset:
		return "", true
	case map[string]any:
		for k, e := range v {
			if where, found := findUnset(e); found {
				return "[" + quoteKey(k) + "]" + where, true
			}
		}
	case []any:
		for i, e := range v {
			if where, found := findUnset(e); found {
				return "[" + strconv.Itoa(i) + "]" + where, true
			}
		}
	}
	return "", false
}
