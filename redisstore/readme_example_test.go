package redisstore_test

// The SDK's README shows newReplica exactly as it is here (the SDK's
// TestReadmeSnippetsAreExamples checks that); TestNewReplica runs it
// against a real redis-server.

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
	"github.com/serviceconnect/management/redisstore"
)

// newReplica wires one replica: its Client shares the management token,
// and the Authenticator it returns the verdicts on End User tokens, with
// every replica that uses the Redis at addr.
func newReplica(cfg management.Config, addr string) (*management.Authenticator, error) {
	rdb := redis.NewClient(&redis.Options{
		Addr:                  addr,
		ContextTimeoutEnabled: true, // honour the SDK's deadline on each operation
	})
	store := redisstore.New(rdb)
	cfg.SharedStore = store
	client, err := management.NewClient(cfg)
	if err != nil {
		return nil, err
	}
	return &management.Authenticator{Client: client, SharedStore: store}, nil
}

// TestNewReplica runs three replicas wired by newReplica on one Redis: each
// reads a User and checks one End User token, and the fake sees one token
// request and one authenticate call in all.
func TestNewReplica(t *testing.T) {
	addr := redisstore.StartRedis(t)
	srv := managementtest.NewServer()
	defer srv.Close()
	srv.AddUser(management.UserDetails{User: management.User{ID: "u-ada"}})
	header := "Bearer " + srv.IssueEndUserToken("u-ada")

	for i := range 3 {
		auth, err := newReplica(srv.Config(), addr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := auth.Client.Users.Get(t.Context(), "u-ada"); err != nil {
			t.Fatalf("replica %d: %v", i, err)
		}
		r := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/", nil)
		r.Header.Set("Authorization", header)
		if user, err := auth.Check(r); err != nil || user.ID != "u-ada" {
			t.Fatalf("replica %d: Check = %+v, %v; want Ada", i, user, err)
		}
	}
	if n := srv.Requests(managementtest.RouteToken); n != 1 {
		t.Errorf("%d token requests from 3 replicas, want 1", n)
	}
	if n := srv.Requests(managementtest.RouteAuthenticate); n != 1 {
		t.Errorf("%d authenticate calls for one End User token from 3 replicas, want 1", n)
	}
}
