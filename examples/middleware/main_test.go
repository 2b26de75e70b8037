package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

func TestProtectedRoute(t *testing.T) {
	fake := managementtest.NewServer()
	defer fake.Close()
	fake.AddUser(management.UserDetails{User: management.User{ID: "u-ada"}, IsAnonymous: true})
	token := fake.IssueEndUserToken("u-ada")

	app := httptest.NewServer(newMux(&management.Authenticator{Client: fake.Client()}))
	defer app.Close()

	tests := []struct {
		name, auth string
		status     int
		body       string
	}{
		{"End User", "Bearer " + token, 200, `{"role":"APPUSER","user_id":"u-ada"}`},
		{"no token", "", 401, ""},
		{"made-up token", "Bearer nope", 401, "auth.unauthorized"},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest(http.MethodGet, app.URL+"/me", nil)
		if tt.auth != "" {
			req.Header.Set("Authorization", tt.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.status || !strings.Contains(string(body), tt.body) {
			t.Errorf("%s: %d %s; want %d containing %q", tt.name, resp.StatusCode, body, tt.status, tt.body)
		}
	}
}
