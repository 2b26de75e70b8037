package management

import (
	"errors"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// associatedWant is testdata/associate_response.json, field by field.
func associatedWant(t testing.TB) *ThingDetails {
	return &ThingDetails{
		Thing: Thing{
			PhysicalID: "new-device-9", Model: "TH-200", FirmwareVersion: "2.0.0",
			CreatedAt: stamp(t, "2024-07-01T09:30:00.000Z"), UpdatedAt: stamp(t, "2024-07-01T09:30:00.000Z"),
		},
		Statuses:       []ThingStatus{},
		CustomSettings: map[string]any{},
		AssociatedUsers: []AssociatedUser{
			{ID: "u/1 ?#%", AssociationData: AssociationData{AssociatedAt: stamp(t, "2024-07-01T09:30:00.000Z")}},
		},
	}
}

// 201 means the Thing was created, 200 that an existing one was associated.
func TestUsersAssociateThing(t *testing.T) {
	tests := []struct {
		status  int
		created bool
	}{
		{http.StatusCreated, true},
		{http.StatusOK, false},
	}
	for _, tt := range tests {
		t.Run(http.StatusText(tt.status), func(t *testing.T) {
			const path = "/v2/api/management/service_connect/users/u%2F1%20%3F%23%25/associated_things"
			c, mt := setup(t)
			mt.RegisterResponder(http.MethodPost, mockBaseURL+path, func(r *http.Request) (*http.Response, error) {
				testMethod(t, r, "POST")
				testAPIHeaders(t, r)
				testQuery(t, r, "")
				testJSONBody(t, r, `{"physical_id": "new-device-9", "model": "TH-200", "firmware_version": "2.0.0"}`)
				return rawResponder(tt.status, "application/json", readSample(t, "associate_response.json"))(r)
			})
			thing, created, err := c.Users.AssociateThing(t.Context(), "u/1 ?#%",
				NewAssociation{PhysicalID: "new-device-9", Model: "TH-200", FirmwareVersion: "2.0.0"})
			if err != nil {
				t.Fatal(err)
			}
			if created != tt.created {
				t.Errorf("created = %t, want %t", created, tt.created)
			}
			if diff := cmp.Diff(associatedWant(t), thing); diff != "" {
				t.Errorf("Thing (-want +got):\n%s", diff)
			}
			testCalls(t, mt, map[string]int{"POST " + tokenURL: 1, "POST " + mockBaseURL + path: 1})
		})
	}
}

func TestUsersAssociateThingRefusesBadInput(t *testing.T) {
	full := NewAssociation{PhysicalID: "p-1", Model: "m", FirmwareVersion: "1.0"}
	tests := []struct {
		name string
		user string
		a    NewAssociation
	}{
		{"empty user id", "", full},
		{"dot user id", ".", full},
		{"empty physical id", "u-1", NewAssociation{Model: "m", FirmwareVersion: "1.0"}},
		{"empty model", "u-1", NewAssociation{PhysicalID: "p-1", FirmwareVersion: "1.0"}},
		{"empty firmware version", "u-1", NewAssociation{PhysicalID: "p-1", Model: "m"}},
		{"zero association", "u-1", NewAssociation{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, mt := setup(t)
			thing, created, err := c.Users.AssociateThing(t.Context(), tt.user, tt.a)
			if !errors.Is(err, ErrInvalidArgument) || thing != nil || created {
				t.Errorf("AssociateThing = %v, %t, %v; want nil, false, ErrInvalidArgument", thing, created, err)
			}
			testCalls(t, mt, nil)
		})
	}
}

// An error answer is returned as such, never as a Thing.
func TestUsersAssociateThingError(t *testing.T) {
	c, mt := setup(t)
	mt.RegisterResponder(http.MethodPost, mockPrefix+"/users/u-404/associated_things", func(r *http.Request) (*http.Response, error) {
		testMethod(t, r, "POST")
		testAPIHeaders(t, r)
		testJSONBody(t, r, `{"physical_id": "p", "model": "m", "firmware_version": "1"}`)
		return rawResponder(http.StatusNotFound, "application/json", readSample(t, "error_management.json"))(r)
	})
	thing, created, err := c.Users.AssociateThing(t.Context(), "u-404", NewAssociation{"p", "m", "1"})
	if !errors.Is(err, ErrNotFound) || thing != nil || created {
		t.Errorf("AssociateThing = %v, %t, %v; want nil, false, ErrNotFound", thing, created, err)
	}
}

// Disassociation sends DELETE with both ids escaped and no body, and
// accepts the empty 200 answer.
func TestUsersDisassociateThing(t *testing.T) {
	const path = "/v2/api/management/service_connect/users/u%2F1%20%3F/associated_things/AC:DE%2F48%23%25"
	c, mt := setup(t)
	mt.RegisterResponder(http.MethodDelete, mockBaseURL+path, func(r *http.Request) (*http.Response, error) {
		testMethod(t, r, "DELETE")
		testAPIHeaders(t, r)
		testQuery(t, r, "")
		testBody(t, r, "")
		return rawResponder(http.StatusOK, "application/json", "")(r)
	})
	if err := c.Users.DisassociateThing(t.Context(), "u/1 ?", "AC:DE/48#%"); err != nil {
		t.Fatal(err)
	}
	testCalls(t, mt, map[string]int{"POST " + tokenURL: 1, "DELETE " + mockBaseURL + path: 1})
}

func TestUsersDisassociateThingErrors(t *testing.T) {
	t.Run("not found", func(t *testing.T) {
		c, mt := setup(t)
		mt.RegisterResponder(http.MethodDelete, mockPrefix+"/users/u-1/associated_things/p-1", func(r *http.Request) (*http.Response, error) {
			testMethod(t, r, "DELETE")
			testAPIHeaders(t, r)
			testBody(t, r, "")
			return rawResponder(http.StatusNotFound, "application/json", readSample(t, "error_management.json"))(r)
		})
		if err := c.Users.DisassociateThing(t.Context(), "u-1", "p-1"); !errors.Is(err, ErrNotFound) {
			t.Errorf("error %v, want ErrNotFound", err)
		}
	})
	for _, ids := range [][2]string{{"", "p-1"}, {"u-1", ""}, {"..", "p-1"}, {"u-1", "."}} {
		t.Run(ids[0]+"|"+ids[1], func(t *testing.T) {
			c, mt := setup(t)
			if err := c.Users.DisassociateThing(t.Context(), ids[0], ids[1]); !errors.Is(err, ErrInvalidArgument) {
				t.Errorf("error %v, want ErrInvalidArgument", err)
			}
			testCalls(t, mt, nil)
		})
	}
}
