package management

import "fmt"

var errUnsetPlacement = fmt.Errorf("%w: Unset is only valid as a top-level ThingUpdate.CustomSettings value", ErrInvalidArgument)

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
type ThingsService struct {
	client *Client
}
