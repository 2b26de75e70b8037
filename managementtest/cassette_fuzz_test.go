package managementtest

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// A cassette is a file people edit: whatever it holds, loading it either
// fails or gives a cassette that replays and checks without a panic, and
// that writes back to a file that loads again the same.
func FuzzCassette(f *testing.F) {
	f.Add([]byte(`{"cassette": 1, "base_url": "https://sandbox.example.com", "interactions": [
 {"request": {"method": "POST", "path": "/v2/api/management/service_connect/auth/token", "header": {"Authorization": "Basic {{client_credentials_1}}"}, "body": {"grant_type": "client_credentials"}},
  "response": {"status": 200, "header": {"Content-Type": "application/json"}, "body": {"access_token": "{{management_token_1}}", "token_type": "Bearer", "expires_in": 600}}},
 {"request": {"method": "GET", "path": "/v2/api/management/service_connect/users/u-1"},
  "response": {"status": 200, "body": {"id": "u-1", "email": null, "is_anonymous": true, "associated_things": [{"physical_id": "t-1", "association_data": {"associated_at": "2026-01-02T03:04:05.678Z"}}], "created_at": "2026-01-02T03:04:05.678Z"}}},
 {"request": {"method": "GET", "path": "/v2/api/management/service_connect/users", "query": "page=x"},
  "response": {"status": 200, "body": {"users": [{"id": "u-2"}], "next_page": "/v2/api/management/service_connect/users?page=y"}}},
 {"request": {"method": "POST", "path": "/v2/api/management/service_connect/authenticate", "body": {"access_token": "Bearer {{end_user_token_1}}"}},
  "response": {"status": 200, "body": {"is_token_valid": true, "user_id": "u-3", "user_role": "APPUSER", "to_client_response": null}}},
 {"request": {"method": "DELETE", "path": "/v2/api/management/service_connect/users/u-1/associated_things/t-9"},
  "response": {"status": 503, "header": {"Retry-After": "1"}, "body_text": "<html>busy</html>"}},
 {"request": {"method": "GET", "path": "/v2/api/management/service_connect/things/t-1"},
  "response": {"error": "EOF"}},
 {"request": {"method": "GET", "path": "/x"}, "response": {"status": 200, "body_text": "{\"a\":", "cut": true}}
]}`))
	f.Add([]byte(`{"cassette": 1, "base_url": "http://127.0.0.1:1/base/", "interactions": [{"request": {"method": "PATCH", "path": "/base/p?x/things/%2F", "body": {"statuses": [{"name": "a"}, {"name": "a"}]}}, "response": {"status": 201, "body": {"physical_id": "%2F", "statuses": [{"name": "a"}, {"name": "a"}], "associated_users": [{"id": ""}]}}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := decodeCassette(data)
		if err != nil {
			return
		}
		r, err := CheckFidelity(c)
		if err != nil {
			t.Fatal(err)
		}
		_ = r.String()
		rp := NewReplayer(c)
		for _, in := range c.Interactions {
			req, err := http.NewRequest(in.Request.Method, "https://replay.invalid"+in.Request.Path+"?"+in.Request.Query, strings.NewReader(in.Request.Body))
			if err != nil {
				continue
			}
			if resp, err := rp.RoundTrip(req); err == nil {
				resp.Body.Close()
			}
		}
		// Written and read, a cassette settles: the second writing reads
		// back as the first.
		once := roundTrip(t, c)
		twice := roundTrip(t, once)
		if diff := cmp.Diff(once, twice, cmpopts.IgnoreUnexported(Cassette{}), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("written twice, the cassette changed (-once +twice):\n%s", diff)
		}
	})
}

func roundTrip(t *testing.T, c *Cassette) *Cassette {
	t.Helper()
	data, err := c.encode()
	if err != nil {
		t.Fatal(err)
	}
	out, err := decodeCassette(data)
	if err != nil {
		t.Fatalf("a cassette written does not load: %v\n%s", err, data)
	}
	return out
}
