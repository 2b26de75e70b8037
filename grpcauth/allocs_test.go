package grpcauth_test

import (
	"context"
	"testing"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/grpcauth"
	"github.com/serviceconnect/management/managementtest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// TestStreamMessageAllocs: a message received or sent on a checked stream
// whose verdict is cached costs no allocation (Recheck reads the cache
// under the key computed when the stream opened), so that a busy stream
// makes no garbage for being re-checked. Under the race detector the
// counts are noisy; .ci/run runs this test without it.
func TestStreamMessageAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts vary under the race detector; .ci/run runs this test without it")
	}
	fake := managementtest.NewServer()
	defer fake.Close()
	fake.AddUser(management.UserDetails{User: management.User{ID: "u-ada"}})
	auth := &management.Authenticator{Client: fake.Client()}
	ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs("authorization", "Bearer "+fake.IssueEndUserToken("u-ada")))
	intercept := grpcauth.StreamServerInterceptor(auth)
	handled := false
	err := intercept(nil, nopStream{ctx}, &grpc.StreamServerInfo{FullMethod: fullDuplex}, func(_ any, ss grpc.ServerStream) error {
		handled = true
		if n := testing.AllocsPerRun(1000, func() {
			if err := ss.RecvMsg(nil); err != nil {
				t.Fatal(err)
			}
			if err := ss.SendMsg(nil); err != nil {
				t.Fatal(err)
			}
		}); n != 0 {
			t.Errorf("a message each way allocates %v times; want 0", n)
		}
		return nil
	})
	if err != nil || !handled {
		t.Errorf("the stream was not let through: %v", err)
	}
}

// nopStream is a grpc.ServerStream whose messages go nowhere.
type nopStream struct{ ctx context.Context }

func (s nopStream) SetHeader(metadata.MD) error  { return nil }
func (s nopStream) SendHeader(metadata.MD) error { return nil }
func (s nopStream) SetTrailer(metadata.MD)       {}
func (s nopStream) Context() context.Context     { return s.ctx }
func (s nopStream) SendMsg(any) error            { return nil }
func (s nopStream) RecvMsg(any) error            { return nil }
