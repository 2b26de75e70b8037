package management

import (
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// thingDetailsWant is testdata/thing_details.json, field by field.
func thingDetailsWant(t testing.TB) *ThingDetails {
	return &ThingDetails{
		Thing: Thing{
			PhysicalID: "AC:DE:48:00:11:22", Name: "Kitchen sensor", Model: "TH-100", FirmwareVersion: "1.4.2",
			LastSeen:  stampPtr(t, "2024-05-06T07:08:09.010Z"),
			CreatedAt: stamp(t, "2023-12-01T00:00:00.000Z"), UpdatedAt: stamp(t, "2024-05-06T07:08:09.010Z"),
		},
		Statuses: []ThingStatus{
			{Name: "battery", StatusValue: "87", Date: stamp(t, "2024-05-06T07:08:09.010Z")},
			{Name: "door", StatusValue: "closed", Date: stamp(t, "2024-05-05T22:00:00.000Z")},
		},
		CustomSettings: map[string]any{
			"threshold":   json.Number("21.5"),
			"serial":      json.Number("9007199254740993"),
			"labels":      []any{"a", "b"},
			"calibration": map[string]any{"offsets": []any{json.Number("0.1"), json.Number("-0.2")}, "by": nil},
		},
		AssociatedUsers: []AssociatedUser{
			{ID: "u-1", AssociationData: AssociationData{AssociatedAt: stamp(t, "2024-01-03T08:00:00.000Z")}},
		},
	}
}

func TestThingsListPageDecodesSample(t *testing.T) {
	c, mt := setup(t)
	mt.RegisterResponder(http.MethodGet, mockPrefix+"/things", func(r *http.Request) (*http.Response, error) {
		testMethod(t, r, "GET")
		testAPIHeaders(t, r)
		testQuery(t, r, "order_by=updatedAt&order_direction=asc")
		testBody(t, r, "")
		return rawResponder(http.StatusOK, "application/json", readSample(t, "things_page.json"))(r)
	})

	got, err := c.Things.ListPage(t.Context(), &ListOptions{OrderBy: OrderByUpdatedAt, Direction: Ascending})
	if err != nil {
		t.Fatal(err)
	}
	want := &Page[*Thing]{Items: []*Thing{
		{
			PhysicalID: "AC:DE:48:00:11:22", Name: "Kitchen sensor", Model: "TH-100", FirmwareVersion: "1.4.2",
			LastSeen:  stampPtr(t, "2024-05-06T07:08:09.010Z"),
			CreatedAt: stamp(t, "2023-12-01T00:00:00.000Z"), UpdatedAt: stamp(t, "2024-05-06T07:08:09.010Z"),
		},
		{
			PhysicalID: "never-seen", Name: "Spare", Model: "TH-100", FirmwareVersion: "1.0.0",
			CreatedAt: stamp(t, "2024-01-01T12:00:00.000Z"), UpdatedAt: stamp(t, "2024-01-01T12:00:00.000Z"),
		},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("page (-want +got):\n%s", diff)
	}
	testCalls(t, mt, map[string]int{"POST " + tokenURL: 1, "GET " + mockPrefix + "/things": 1})
}

func TestThingsGetDecodesSamples(t *testing.T) {
	tests := []struct {
		sample string
		want   func(testing.TB) *ThingDetails
	}{
		{"thing_details.json", thingDetailsWant},
		{"thing_details_bare.json", func(t testing.TB) *ThingDetails {
			return &ThingDetails{Thing: Thing{
				PhysicalID: "never-seen", Name: "Spare", Model: "TH-100", FirmwareVersion: "1.0.0",
				CreatedAt: stamp(t, "2024-01-01T12:00:00.000Z"), UpdatedAt: stamp(t, "2024-01-01T12:00:00.000Z"),
			}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.sample, func(t *testing.T) {
			c, mt := setup(t)
			mt.RegisterResponder(http.MethodGet, mockPrefix+"/things/AC:DE:48:00:11:22", func(r *http.Request) (*http.Response, error) {
				testMethod(t, r, "GET")
				testAPIHeaders(t, r)
				testQuery(t, r, "")
				testBody(t, r, "")
				return rawResponder(http.StatusOK, "application/json", readSample(t, tt.sample))(r)
			})
			got, err := c.Things.Get(t.Context(), "AC:DE:48:00:11:22")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want(t), got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			testCalls(t, mt, map[string]int{"POST " + tokenURL: 1, "GET " + mockPrefix + "/things/AC:DE:48:00:11:22": 1})
		})
	}
}

// The integer 2^53+1 reaches the caller exactly, and goes back exactly.
func TestThingsCustomSettingsKeepIntegers(t *testing.T) {
	c, mt := setup(t)
	mt.RegisterResponder(http.MethodGet, mockPrefix+"/things/p-1", func(r *http.Request) (*http.Response, error) {
		testMethod(t, r, "GET")
		testAPIHeaders(t, r)
		testBody(t, r, "")
		return rawResponder(http.StatusOK, "application/json", readSample(t, "thing_details.json"))(r)
	})
	mt.RegisterResponder(http.MethodPatch, mockPrefix+"/things/p-1", func(r *http.Request) (*http.Response, error) {
		testMethod(t, r, "PATCH")
		testAPIHeaders(t, r)
		testBody(t, r, `{"custom_settings":{"serial":9007199254740993}}`) // the integer as it came
		return rawResponder(http.StatusOK, "application/json", readSample(t, "thing_details.json"))(r)
	})
	th, err := c.Things.Get(t.Context(), "p-1")
	if err != nil {
		t.Fatal(err)
	}
	n, ok := th.CustomSettings["serial"].(json.Number)
	if !ok || n.String() != "9007199254740993" {
		t.Fatalf("serial = %#v, want json.Number 9007199254740993", th.CustomSettings["serial"])
	}
	if _, err := c.Things.Update(t.Context(), "p-1", ThingUpdate{CustomSettings: map[string]any{"serial": n}}); err != nil {
		t.Fatal(err)
	}
	testCalls(t, mt, map[string]int{"POST " + tokenURL: 1, "GET " + mockPrefix + "/things/p-1": 1, "PATCH " + mockPrefix + "/things/p-1": 1})
}

func TestThingsGetRefusesBadIDs(t *testing.T) {
	for _, id := range []string{"", ".", ".."} {
		c, mt := setup(t)
		if got, err := c.Things.Get(t.Context(), id); !errors.Is(err, ErrInvalidArgument) || got != nil {
			t.Errorf("Get(%q) = %v, %v; want nil, ErrInvalidArgument", id, got, err)
		}
		testCalls(t, mt, nil)
	}
}

// Update sends only the fields that are set, in the wire format, with
// top-level Unset values replaced by the configured marker.
func TestThingsUpdateBody(t *testing.T) {
	seen := time.Date(2024, 5, 6, 7, 8, 9, 10_999_999, time.FixedZone("CEST", 2*3600))
	ts := NewTimestamp(seen)
	tests := []struct {
		name   string
		marker string
		update ThingUpdate
		body   string
	}{
		{"name only", "", ThingUpdate{Name: Ptr("Hall sensor")}, `{"name": "Hall sensor"}`},
		{"empty strings are sent", "", ThingUpdate{Name: Ptr(""), FirmwareVersion: Ptr("")}, `{"name": "", "firmware_version": ""}`},
		{"last seen in the wire format", "", ThingUpdate{LastSeen: &ts}, `{"last_seen": "2024-05-06T05:08:09.010Z"}`},
		{"statuses as given", "", ThingUpdate{Statuses: []ThingStatus{
			{Name: "battery", StatusValue: "80", Date: NewTimestamp(time.Date(2024, 1, 2, 3, 4, 5, 6_000_000, time.UTC))},
			{Name: "", StatusValue: ""},
		}}, `{"statuses": [
			{"name": "battery", "status_value": "80", "date": "2024-01-02T03:04:05.006Z"},
			{"name": "", "status_value": "", "date": "0001-01-01T00:00:00.000Z"}]}`},
		{"custom settings merged and unset", "", ThingUpdate{CustomSettings: map[string]any{
			"mode":   "eco",
			"gone":   Unset,
			"nested": map[string]any{"list": []any{1, "two", nil, map[string]any{"deep": true}}},
			"big":    json.Number("9007199254740993"),
			"null":   nil,
		}}, `{"custom_settings": {"mode": "eco", "gone": "$ServiceUnset$",
			"nested": {"list": [1, "two", null, {"deep": true}]}, "big": 9007199254740993, "null": null}}`},
		{"configured marker", "__gone__", ThingUpdate{CustomSettings: map[string]any{"gone": Unset}},
			`{"custom_settings": {"gone": "__gone__"}}`},
		{"every field", "", ThingUpdate{
			Name: Ptr("n"), FirmwareVersion: Ptr("2.0"), LastSeen: &ts,
			Statuses:       []ThingStatus{{Name: "s", StatusValue: "v", Date: ts}},
			CustomSettings: map[string]any{"k": 1.5},
		}, `{"name": "n", "firmware_version": "2.0", "last_seen": "2024-05-06T05:08:09.010Z",
			"statuses": [{"name": "s", "status_value": "v", "date": "2024-05-06T05:08:09.010Z"}],
			"custom_settings": {"k": 1.5}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, mt := setup(t, Config{UnsetMarker: tt.marker})
			mt.RegisterResponder(http.MethodPatch, mockPrefix+"/things/AC:DE:48:00:11:22", func(r *http.Request) (*http.Response, error) {
				testMethod(t, r, "PATCH")
				testAPIHeaders(t, r)
				testQuery(t, r, "")
				testJSONBody(t, r, tt.body)
				return rawResponder(http.StatusOK, "application/json", readSample(t, "thing_details.json"))(r)
			})
			got, err := c.Things.Update(t.Context(), "AC:DE:48:00:11:22", tt.update)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(thingDetailsWant(t), got); diff != "" {
				t.Errorf("updated Thing (-want +got):\n%s", diff)
			}
			testCalls(t, mt, map[string]int{"POST " + tokenURL: 1, "PATCH " + mockPrefix + "/things/AC:DE:48:00:11:22": 1})
		})
	}
}

// The caller's map keeps its Unset values: the marker goes into a copy.
func TestThingsUpdateLeavesCallerMapAlone(t *testing.T) {
	c, mt := setup(t)
	mt.RegisterResponder(http.MethodPatch, mockPrefix+"/things/p-1", func(r *http.Request) (*http.Response, error) {
		testMethod(t, r, "PATCH")
		testAPIHeaders(t, r)
		testJSONBody(t, r, `{"custom_settings": {"gone": "$ServiceUnset$", "kept": "v"}}`)
		return rawResponder(http.StatusOK, "application/json", readSample(t, "thing_details.json"))(r)
	})
	settings := map[string]any{"gone": Unset, "kept": "v"}
	if _, err := c.Things.Update(t.Context(), "p-1", ThingUpdate{CustomSettings: settings}); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"gone": Unset, "kept": "v"}
	if diff := cmp.Diff(want, settings, cmp.AllowUnexported(unset{})); diff != "" {
		t.Errorf("caller's map changed (-want +got):\n%s", diff)
	}
}

func TestThingsUpdateEscapesID(t *testing.T) {
	const path = "/v2/api/management/service_connect/things/p%2F1%20%3F%23%25"
	c, mt := setup(t)
	mt.RegisterResponder(http.MethodPatch, mockBaseURL+path, func(r *http.Request) (*http.Response, error) {
		testMethod(t, r, "PATCH")
		testAPIHeaders(t, r)
		testQuery(t, r, "")
		testJSONBody(t, r, `{"name": "n"}`)
		return rawResponder(http.StatusOK, "application/json", readSample(t, "thing_details.json"))(r)
	})
	if _, err := c.Things.Update(t.Context(), "p/1 ?#%", ThingUpdate{Name: Ptr("n")}); err != nil {
		t.Fatal(err)
	}
	testCalls(t, mt, map[string]int{"POST " + tokenURL: 1, "PATCH " + mockBaseURL + path: 1})
}

// Bad updates are refused before anything is sent, the token request included.
func TestThingsUpdateRefusesBadInput(t *testing.T) {
	tests := []struct {
		name   string
		id     string
		update ThingUpdate
	}{
		{"empty id", "", ThingUpdate{Name: Ptr("n")}},
		{"dot id", "..", ThingUpdate{Name: Ptr("n")}},
		{"empty update", "p-1", ThingUpdate{}},
		{"empty collections", "p-1", ThingUpdate{Statuses: []ThingStatus{}, CustomSettings: map[string]any{}}},
		{"unset in a map", "p-1", ThingUpdate{CustomSettings: map[string]any{"a": map[string]any{"b": Unset}}}},
		{"unset in a slice", "p-1", ThingUpdate{CustomSettings: map[string]any{"a": []any{1, Unset}}}},
		{"unset deep down", "p-1", ThingUpdate{CustomSettings: map[string]any{
			"a": []any{map[string]any{"b": []any{[]any{map[string]any{"c": Unset}}}}},
		}}},
		{"unset in a typed map", "p-1", ThingUpdate{CustomSettings: map[string]any{"a": map[string]unset{"b": Unset}}}},
		{"unset in a typed slice", "p-1", ThingUpdate{CustomSettings: map[string]any{"a": [][]any{{Unset}}}}},
		{"pointer to unset", "p-1", ThingUpdate{CustomSettings: map[string]any{"a": Ptr(Unset)}}},
		{"not JSON", "p-1", ThingUpdate{CustomSettings: map[string]any{"a": math.NaN()}}},
		{"a valid field does not excuse a nested unset", "p-1", ThingUpdate{
			Name: Ptr("n"), CustomSettings: map[string]any{"ok": Unset, "a": map[string]any{"b": Unset}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, mt := setup(t)
			got, err := c.Things.Update(t.Context(), tt.id, tt.update)
			if !errors.Is(err, ErrInvalidArgument) || got != nil {
				t.Errorf("Update = %v, %v; want nil, ErrInvalidArgument", got, err)
			}
			testCalls(t, mt, nil)
		})
	}
}

// A nested Unset is named where it was found, or by its key when it is in
// a container of another type; the prefix is said once.
func TestThingsUpdateNamesNestedUnset(t *testing.T) {
	tests := []struct {
		value any
		want  string
	}{
		{[]any{0, map[string]any{"b": Unset}}, `found at CustomSettings["a"][1]["b"]`},
		{map[string]unset{"b": Unset}, `found inside CustomSettings["a"]`},
		{Ptr(Unset), `found inside CustomSettings["a"]`},
	}
	for _, tt := range tests {
		c, _ := setup(t)
		_, err := c.Things.Update(t.Context(), "p-1", ThingUpdate{CustomSettings: map[string]any{"a": tt.value}})
		want := "management: invalid argument: Unset is only valid as a top-level ThingUpdate.CustomSettings value, " + tt.want
		if err == nil || err.Error() != want {
			t.Errorf("error %v, want %s", err, want)
		}
	}
}

// A CustomSettings value that is the unset marker string, at the top level
// or nested in any container, is refused before anything is sent: only
// Unset removes a key. The error names where the marker is, and nothing of
// the other settings.
func TestThingsUpdateRefusesUnsetMarkerString(t *testing.T) {
	type named struct {
		Color string `json:"color"`
	}
	tests := []struct {
		name     string
		marker   string // Config.UnsetMarker
		settings map[string]any
		where    string
	}{
		{"top level", "", map[string]any{"gone": "$ServiceUnset$"}, `CustomSettings["gone"]`},
		{"in a map", "", map[string]any{"a": map[string]any{"b": "$ServiceUnset$"}}, `CustomSettings["a"]["b"]`},
		{"in a slice", "", map[string]any{"a": []any{1, "x", "$ServiceUnset$"}}, `CustomSettings["a"][2]`},
		{"deep down", "", map[string]any{"a": []any{map[string]any{"b": []any{[]any{map[string]any{"c": "$ServiceUnset$"}}}}}},
			`CustomSettings["a"][0]["b"][0][0]["c"]`},
		{"in a typed slice", "", map[string]any{"a": []string{"x", "$ServiceUnset$"}}, `CustomSettings["a"][1]`},
		{"in a typed map", "", map[string]any{"a": map[string]string{"b": "$ServiceUnset$"}}, `CustomSettings["a"]["b"]`},
		{"in a struct", "", map[string]any{"a": named{Color: "$ServiceUnset$"}}, `CustomSettings["a"]["color"]`},
		{"behind a pointer", "", map[string]any{"a": Ptr("$ServiceUnset$")}, `CustomSettings["a"]`},
		{"raw JSON", "", map[string]any{"a": json.RawMessage(`{"b": "\u0024ServiceUnset$"}`)}, `CustomSettings["a"]["b"]`},
		{"configured marker", "__gone__", map[string]any{"keep": "$ServiceUnset$", "a": []any{"__gone__"}}, `CustomSettings["a"][0]`},
		{"beside other settings", "", map[string]any{"pin": "hunter2", "n": 1, "gone": "$ServiceUnset$"}, `CustomSettings["gone"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, mt := setup(t, Config{UnsetMarker: tt.marker})
			got, err := c.Things.Update(t.Context(), "p-1", ThingUpdate{Name: Ptr("n"), CustomSettings: tt.settings})
			if !errors.Is(err, ErrInvalidArgument) || got != nil {
				t.Fatalf("Update = %v, %v; want nil, ErrInvalidArgument", got, err)
			}
			want := "management: invalid argument: " + tt.where + " is the unset marker string (Config.UnsetMarker); only management.Unset removes a key"
			if err.Error() != want {
				t.Errorf("error %q, want %q", err, want)
			}
			testCalls(t, mt, nil)
		})
	}
}

// The marker is refused as a value only: as a key, inside a longer string,
// or another client's marker, it is sent as it stands; Unset is still sent
// as the marker.
func TestThingsUpdateSendsMarkerLookalikes(t *testing.T) {
	c, mt := setup(t, Config{UnsetMarker: "__gone__"})
	mt.RegisterResponder(http.MethodPatch, mockPrefix+"/things/p-1", func(r *http.Request) (*http.Response, error) {
		testMethod(t, r, "PATCH")
		testHeader(t, r, "Authorization", "Bearer "+mockToken)
		testBody(t, r, `{"custom_settings":{"__gone__":1,"default":"$ServiceUnset$","gone":"__gone__","longer":"x__gone__","nested":{"__gone__":["__gone__x"]}}}`)
		return rawResponder(http.StatusOK, "application/json", readSample(t, "thing_details.json"))(r)
	})
	got, err := c.Things.Update(t.Context(), "p-1", ThingUpdate{CustomSettings: map[string]any{
		"__gone__": 1,
		"default":  "$ServiceUnset$",
		"gone":     Unset,
		"longer":   "x__gone__",
		"nested":   map[string]any{"__gone__": []string{"__gone__x"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(thingDetailsWant(t), got); diff != "" {
		t.Errorf("updated Thing (-want +got):\n%s", diff)
	}
	testCalls(t, mt, map[string]int{"POST " + tokenURL: 1, "PATCH " + mockPrefix + "/things/p-1": 1})
}

// Errors about a custom setting name its key cut short, not the whole key.
func TestThingsUpdateErrorCutsLongKeys(t *testing.T) {
	c, _ := setup(t)
	key := strings.Repeat("k", 64) + "-rest-of-a-very-long-key"
	_, err := c.Things.Update(t.Context(), "p-1", ThingUpdate{CustomSettings: map[string]any{key: "$ServiceUnset$"}})
	if err == nil || strings.Contains(err.Error(), "rest-of") || !strings.Contains(err.Error(), `["`+strings.Repeat("k", 64)+`"]`) {
		t.Errorf("error %v, want the key's first 64 characters only", err)
	}
}
