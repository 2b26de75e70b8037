package managementtest_test

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

var mtT0 = time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)

func mtTS(d time.Duration) management.Timestamp { return management.NewTimestamp(mtT0.Add(d)) }

// mtListIDs follows every page of a list and returns the ids in order, and
// how many pages it took.
func (c *mtConn) listIDs(t testing.TB, kind, query string) ([]string, int) {
	t.Helper()
	key := map[string]string{"users": "id", "things": "physical_id"}[kind]
	path := mtPrefix + "/" + kind + query
	var ids []string
	for pages := 1; ; pages++ {
		r := c.follow("GET", path, "")
		if r.status != 200 {
			t.Fatalf("GET %s: %d %s", path, r.status, r.body)
		}
		v := r.json(t)
		for _, it := range mtField(t, v, kind).([]any) {
			ids = append(ids, it.(map[string]any)[key].(string))
		}
		next := mtField(t, v, "next_page")
		if next == nil {
			return ids, pages
		}
		path = next.(string)
		if pages > 100 {
			t.Fatal("too many pages")
		}
	}
}

// mtSeedOrdered adds users u-1..u-4 and things t-1..t-4 whose creation
// order is 1,2,3,4 and whose update order is 3,1,4,2.
func mtSeedOrdered(srv *managementtest.Server) {
	updated := map[int]time.Duration{1: 20 * time.Hour, 2: 40 * time.Hour, 3: 10 * time.Hour, 4: 30 * time.Hour}
	for i := 1; i <= 4; i++ {
		created := time.Duration(i) * time.Hour
		srv.AddUser(management.UserDetails{User: management.User{
			ID: fmt.Sprintf("u-%d", i), CreatedAt: mtTS(created), UpdatedAt: mtTS(updated[i]),
		}})
		srv.AddThing(management.ThingDetails{Thing: management.Thing{
			PhysicalID: fmt.Sprintf("t-%d", i), CreatedAt: mtTS(created), UpdatedAt: mtTS(updated[i]),
		}})
	}
}

func TestListOrdering(t *testing.T) {
	for _, size := range []int{100, 3, 1} {
		c := mtStart(t, managementtest.WithPageSize(size))
		mtSeedOrdered(c.srv)
		tests := []struct {
			query string
			want  []string
		}{
			{"", []string{"4", "3", "2", "1"}},
			{"?order_direction=desc", []string{"4", "3", "2", "1"}},
			{"?order_direction=asc", []string{"1", "2", "3", "4"}},
			{"?order_by=updatedAt", []string{"2", "4", "1", "3"}},
			{"?order_by=updatedAt&order_direction=desc", []string{"2", "4", "1", "3"}},
			{"?order_by=updatedAt&order_direction=asc", []string{"3", "1", "4", "2"}},
			{"?order_direction=asc&other=ignored", []string{"1", "2", "3", "4"}},
		}
		for _, kind := range []string{"users", "things"} {
			for _, tt := range tests {
				t.Run(fmt.Sprintf("%s%s/size%d", kind, tt.query, size), func(t *testing.T) {
					got, pages := c.listIDs(t, kind, tt.query)
					var want []string
					for _, n := range tt.want {
						want = append(want, kind[:1]+"-"+n)
					}
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("order (-want +got):\n%s", diff)
					}
					if wantPages := (4 + size - 1) / size; pages != wantPages {
						t.Errorf("pages = %d, want %d", pages, wantPages)
					}
				})
			}
		}
	}
}

// Items created in the same millisecond (synctest's clock does not move)
// keep their order of creation.
func TestListOrderingTies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := mtMemory(t, managementtest.WithPageSize(2))
		for _, id := range []string{"b", "c", "a"} {
			c.srv.AddUser(management.UserDetails{User: management.User{ID: id}})
		}
		if got, _ := c.listIDs(t, "users", ""); !slices.Equal(got, []string{"a", "c", "b"}) {
			t.Errorf("desc = %v, want [a c b]", got)
		}
		if got, _ := c.listIDs(t, "users", "?order_by=updatedAt&order_direction=asc"); !slices.Equal(got, []string{"b", "c", "a"}) {
			t.Errorf("updatedAt asc = %v, want [b c a]", got)
		}
	})
}

func TestListPages(t *testing.T) {
	c := mtStart(t, managementtest.WithPageSize(2))
	mtSeedOrdered(c.srv)
	c.srv.AddUser(management.UserDetails{User: management.User{ID: "u-5", CreatedAt: mtTS(5 * time.Hour)}})

	first := c.api("GET", "/users", "")
	v := first.json(t)
	next, _ := mtField(t, v, "next_page").(string)
	if !strings.HasPrefix(next, mtPrefix+"/users?page=") {
		t.Fatalf("next_page = %q, want a path and query below the prefix", next)
	}
	u, err := url.Parse(next)
	if err != nil || u.Host != "" || u.Scheme != "" || len(u.Query()) != 1 {
		t.Fatalf("next_page %q is not a bare path with one page parameter", next)
	}
	want := mtJSON(t, `[
		{"id":"u-5","email":null,"first_name":null,"last_name":null,"created_at":"2024-03-01T17:00:00.000Z","updated_at":"2024-03-01T17:00:00.000Z"},
		{"id":"u-4","email":null,"first_name":null,"last_name":null,"created_at":"2024-03-01T16:00:00.000Z","updated_at":"2024-03-02T18:00:00.000Z"}]`)
	if diff := cmp.Diff(want, mtField(t, v, "users")); diff != "" {
		t.Errorf("first page (-want +got):\n%s", diff)
	}

	second := c.follow("GET", next, "")
	again := c.follow("GET", next, "") // a link can be followed again, e.g. by a retry
	if diff := cmp.Diff(second.json(t), again.json(t)); diff != "" {
		t.Errorf("following a link twice (-first +second):\n%s", diff)
	}
	ids := func(r mtResp) []string {
		var out []string
		for _, it := range mtField(t, r.json(t), "users").([]any) {
			out = append(out, it.(map[string]any)["id"].(string))
		}
		return out
	}
	if got := ids(second); !slices.Equal(got, []string{"u-3", "u-2"}) {
		t.Errorf("second page = %v", got)
	}
	last := c.follow("GET", mtField(t, second.json(t), "next_page").(string), "")
	if got := ids(last); !slices.Equal(got, []string{"u-1"}) {
		t.Errorf("last page = %v", got)
	}
	if n := mtField(t, last.json(t), "next_page"); n != nil {
		t.Errorf("last page next_page = %v, want null", n)
	}

	// Exactly full pages: the last full page has no next_page.
	c2 := mtStart(t, managementtest.WithPageSize(2))
	c2.srv.AddThing(management.ThingDetails{Thing: management.Thing{PhysicalID: "a"}})
	c2.srv.AddThing(management.ThingDetails{Thing: management.Thing{PhysicalID: "b"}})
	c2.api("GET", "/things", "").want(t, 200, fmt.Sprintf(`{"things":[%s,%s],"next_page":null}`,
		mtThingJSON(t, c2.srv, "b"), mtThingJSON(t, c2.srv, "a")))
}

// mtThingJSON is a Thing list item as the server should render it.
func mtThingJSON(t testing.TB, srv *managementtest.Server, id string) string {
	t.Helper()
	th, ok := srv.Thing(id)
	if !ok {
		t.Fatalf("no thing %s", id)
	}
	ls := "null"
	if th.LastSeen != nil {
		ls = `"` + th.LastSeen.String() + `"`
	}
	return fmt.Sprintf(`{"physical_id":%q,"name":%q,"model":%q,"firmware_version":%q,"last_seen":%s,"created_at":%q,"updated_at":%q}`,
		th.PhysicalID, th.Name, th.Model, th.FirmwareVersion, ls, th.CreatedAt.String(), th.UpdatedAt.String())
}

func TestListValidation(t *testing.T) {
	c := mtStart(t, managementtest.WithPageSize(1))
	mtSeedOrdered(c.srv)
	const reason = "COMMON.REQUEST_VALIDATION"
	for _, kind := range []string{"users", "things"} {
		other := map[string]string{"users": "things", "things": "users"}[kind]
		link := mtField(t, c.api("GET", "/"+kind, "").json(t), "next_page").(string)
		otherLink := mtField(t, c.api("GET", "/"+other, "").json(t), "next_page").(string)
		_, token, _ := strings.Cut(link, "?page=")
		_, otherToken, _ := strings.Cut(otherLink, "?page=")
		raw, _ := base64.RawURLEncoding.DecodeString(token)
		snap, _, _ := strings.Cut(string(raw), ".")
		tampered := base64.RawURLEncoding.EncodeToString([]byte(snap + ".99"))

		t.Run(kind, func(t *testing.T) {
			c.api("GET", "/"+kind+"?order_by=createdAt", "").
				wantError(t, 400, reason, `Unsupported order_by column "createdAt": the supported column is updatedAt`)
			c.api("GET", "/"+kind+"?order_by=updated_at&order_direction=asc", "").wantErrorContaining(t, 400, reason, `"updated_at"`)
			c.api("GET", "/"+kind+"?order_by=", "").wantErrorContaining(t, 400, reason, `""`)
			c.api("GET", "/"+kind+"?order_direction=up", "").
				wantError(t, 400, reason, `Unsupported order_direction "up": use asc or desc`)

			const invalid = "The page parameter is not valid: drop page and start again from the first page"
			for _, bad := range []string{"garbage!", "", "bm90LWEtc25hcHNob3Q", otherToken, tampered, token + "&page=" + token} {
				c.api("GET", "/"+kind+"?page="+bad, "").wantError(t, 400, reason, invalid)
			}
			const combined = "Order parameters (order_by, order_direction) must not be specified when page is provided"
			c.follow("GET", link+"&order_by=updatedAt", "").wantError(t, 400, reason, combined)
			c.follow("GET", link+"&order_direction=asc", "").wantError(t, 400, reason, combined)
			c.follow("GET", link+"&order_direction=", "").wantError(t, 400, reason, combined)
			c.api("GET", "/"+kind+"?order_by=updatedAt&page=garbage", "").wantError(t, 400, reason, combined)

			// The link itself is still good.
			if r := c.follow("GET", link, ""); r.status != 200 {
				t.Errorf("link: %d %s", r.status, r.body)
			}
			c.srv.ForgetPages()
			c.follow("GET", link, "").wantError(t, 400, reason, invalid)
		})
	}
}

// A listing is a snapshot: adding and updating items between pages skips
// and repeats nothing, in every order.
func TestListPagesWhileChanging(t *testing.T) {
	for _, query := range []string{"", "?order_direction=asc", "?order_by=updatedAt", "?order_by=updatedAt&order_direction=asc"} {
		t.Run(query, func(t *testing.T) {
			c := mtStart(t, managementtest.WithPageSize(2))
			c.srv.AddUser(management.UserDetails{User: management.User{ID: "u-1"}})
			var want []string
			for i := range 6 {
				id := fmt.Sprintf("t-%d", i)
				c.srv.AddThing(management.ThingDetails{Thing: management.Thing{PhysicalID: id,
					CreatedAt: mtTS(time.Duration(i) * time.Minute), UpdatedAt: mtTS(time.Duration(6-i) * time.Minute)}})
				want = append(want, id)
			}
			first := c.api("GET", "/things"+query, "").json(t)
			var got []string
			collect := func(v any) {
				for _, it := range mtField(t, v, "things").([]any) {
					got = append(got, it.(map[string]any)["physical_id"].(string))
				}
			}
			collect(first)
			next := mtField(t, first, "next_page")
			for step := 0; next != nil; step++ {
				// Between pages: update every Thing (each moves to an end of
				// the updatedAt order), associate a new one and seed another.
				for _, id := range want {
					if r := c.api("PATCH", "/things/"+id, fmt.Sprintf(`{"name":"step %d"}`, step)); r.status != 200 {
						t.Fatalf("PATCH: %d %s", r.status, r.body)
					}
				}
				c.srv.AddThing(management.ThingDetails{Thing: management.Thing{PhysicalID: fmt.Sprintf("new-%d", step)}})
				body := fmt.Sprintf(`{"physical_id":"assoc-%d","model":"m","firmware_version":"1"}`, step)
				if r := c.api("POST", "/users/u-1/associated_things", body); r.status != 201 {
					t.Fatalf("associate: %d %s", r.status, r.body)
				}
				v := c.follow("GET", next.(string), "").json(t)
				collect(v)
				next = mtField(t, v, "next_page")
			}
			slices.Sort(got)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("items of the listing (-want +got):\n%s", diff)
			}
			// A new listing shows the new Things.
			if all, _ := c.listIDs(t, "things", query); len(all) != 10 {
				t.Errorf("new listing has %d items, want 10: %v", len(all), all)
			}
		})
	}
}

// A query string with an unparsable pair may have lost its page token, so
// it is an invalid page, not a first page.
func TestListUnparsableQuery(t *testing.T) {
	c := mtMemory(t, managementtest.WithPageSize(1)) // in memory: net/http would log the semicolons
	mtSeedOrdered(c.srv)
	const invalid = "The page parameter is not valid: drop page and start again from the first page"
	for _, kind := range []string{"users", "things"} {
		link := mtField(t, c.api("GET", "/"+kind, "").json(t), "next_page").(string)
		for _, query := range []string{"?page=%zz", "?page=abc;x", "?x=%zz", "?%zz"} {
			c.api("GET", "/"+kind+query, "").wantError(t, 400, "COMMON.REQUEST_VALIDATION", invalid)
		}
		for _, suffix := range []string{";x", "&x=%zz"} {
			c.follow("GET", link+suffix, "").wantError(t, 400, "COMMON.REQUEST_VALIDATION", invalid)
		}
	}
}

// Only the 1000 most recent listings longer than a page keep their links;
// the oldest is dropped first.
func TestListSnapshotsCapped(t *testing.T) {
	const limit = 1000
	c := mtMemory(t, managementtest.WithPageSize(1))
	mtSeedOrdered(c.srv)
	links := make([]string, 0, limit+1)
	for range limit + 1 {
		links = append(links, mtField(t, c.api("GET", "/users", "").json(t), "next_page").(string))
	}
	c.follow("GET", links[0], "").wantError(t, 400, "COMMON.REQUEST_VALIDATION",
		"The page parameter is not valid: drop page and start again from the first page")
	for _, link := range []string{links[1], links[limit]} {
		if r := c.follow("GET", link, ""); r.status != 200 {
			t.Errorf("a link of one of the %d most recent listings: %d %s", limit, r.status, r.body)
		}
	}
}
