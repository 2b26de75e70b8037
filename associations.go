package management

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
)

// NewAssociation describes a Thing to associate with a User. Every field is
// required. PhysicalID must equal the physical id the client application sets
// when it associates the Thing through the application SDK.
type NewAssociation struct {
	PhysicalID      string `json:"physical_id"`
	Model           string `json:"model"`
	FirmwareVersion string `json:"firmware_version"`
}

// AssociateThing associates a Thing with the User userID, creating the Thing
// when the service does not know it yet, and returns the Thing. created
// reports whether the service created it (201) rather than associating an
// existing one (200). Every field of a is required; an empty one, or a
// PhysicalID that Things.Get would refuse as an identifier, fails with
// ErrInvalidArgument before anything is sent.
//
// API: POST /users/{user_id}/associated_things
func (s *UsersService) AssociateThing(ctx context.Context, userID string, a NewAssociation) (thing *ThingDetails, created bool, err error) {
	id, err := pathSegment("userID", userID)
	if err != nil {
		return nil, false, err
	}
	if err := a.check(); err != nil {
		return nil, false, err
	}
	body, err := json.Marshal(a)
	if err != nil {
		return nil, false, errorf("%w: NewAssociation cannot be encoded as JSON: %w", ErrInvalidArgument, err)
	}
	var t ThingDetails
	req := s.c().newRequest(http.MethodPost, "/users/"+id+"/associated_things", "", body).named("/users/{user_id}/associated_things", userID)
	status, err := s.c().do(ctx, req, &t)
	if err != nil {
		return nil, false, err
	}
	return &t, status == http.StatusCreated, nil
}

// DisassociateThing removes the association between the User userID and
// the Thing physicalID. Success is a 2xx with an empty body (or {}); any
// other body sent with a 2xx fails with a *DecodeError.
//
// API: DELETE /users/{user_id}/associated_things/{physical_id}
func (s *UsersService) DisassociateThing(ctx context.Context, userID, physicalID string) error {
	uid, err := pathSegment("userID", userID)
	if err != nil {
		return err
	}
	pid, err := pathSegment("physicalID", physicalID)
	if err != nil {
		return err
	}
	req := s.c().newRequest(http.MethodDelete, "/users/"+uid+"/associated_things/"+pid, "", nil).
		named("/users/{user_id}/associated_things/{physical_id}", userID, physicalID)
	_, err = s.c().do(ctx, req, &emptyAnswer{})
	return err
}

// emptyAnswer is the success of an operation whose spec answers 200 with an
// empty body. Anything else sent with a 2xx (null, an HTML page of a login
// proxy, the error shape) is not that success: decoding fails with a
// *DecodeError. An empty JSON object, {}, counts as empty: it says nothing
// either, and frameworks send it for "no content".
type emptyAnswer struct{}

// UnmarshalJSON accepts {} only; an empty body never reaches it.
func (*emptyAnswer) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil || m == nil || len(m) > 0 {
		return errors.New("a body where the spec answers an empty one")
	}
	return nil
}

// check refuses a NewAssociation with an empty field.
func (a NewAssociation) check() error {
	switch {
	case strings.TrimSpace(a.PhysicalID) == "":
		return errorf("%w: NewAssociation.PhysicalID is empty or only white space", ErrInvalidArgument)
	case dotIdentifier(a.PhysicalID):
		// Sent in the body, but the Thing's path segment in every later
		// call, which would refuse it: a Thing no call could reach again.
		return errorf("%w: NewAssociation.PhysicalID %.80q could be resolved as a dot segment", ErrInvalidArgument, a.PhysicalID)
	case strings.TrimSpace(a.Model) == "":
		return errorf("%w: NewAssociation.Model is empty or only white space", ErrInvalidArgument)
	case strings.TrimSpace(a.FirmwareVersion) == "":
		return errorf("%w: NewAssociation.FirmwareVersion is empty or only white space", ErrInvalidArgument)
	}
	return nil
}
