package grpcauth_test

import (
	"testing"
	"time"

	"github.com/serviceconnect/management"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
)

// BenchmarkUnary is one unary RPC over the loopback, with grpcauth's
// interceptor and a cached verdict, against the same server without it.
func BenchmarkUnary(b *testing.B) {
	for _, mode := range []struct {
		name   string
		noAuth bool
	}{{"interceptor=none", true}, {"interceptor=grpcauth", false}} {
		b.Run(mode.name, func(b *testing.B) {
			r := newRig(b, rigConfig{bench: true, noAuth: mode.noAuth})
			r.svc.user = "u-ada"
			ctx := with(r.ctx, r.token())
			client := r.client()
			req := &testgrpc.SimpleRequest{}
			if res, err := client.UnaryCall(ctx, req); err != nil || res.GetUsername() != "u-ada" {
				b.Fatalf("warming RPC: %v, %v", res, err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := client.UnaryCall(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(r.authCalls()), "calls")
		})
	}
}

// BenchmarkStreamMessage is one message each way on an open bidi stream,
// with grpcauth's stream interceptor (a cached verdict read again on each
// message) and without it: what a busy stream pays for being re-checked.
func BenchmarkStreamMessage(b *testing.B) {
	for _, mode := range []struct {
		name   string
		noAuth bool
	}{{"interceptor=none", true}, {"interceptor=grpcauth", false}} {
		b.Run(mode.name, func(b *testing.B) {
			r := newRig(b, rigConfig{bench: true, noAuth: mode.noAuth, auth: func(a *management.Authenticator) {
				a.CacheTTL = 24 * time.Hour // no re-check call while it runs
			}})
			r.svc.user = "u-ada"
			duplex, err := r.client().FullDuplexCall(with(r.ctx, r.token()))
			if err != nil {
				b.Fatal(err)
			}
			msg := &testgrpc.StreamingOutputCallRequest{}
			b.ReportAllocs()
			for b.Loop() {
				if err := duplex.Send(msg); err != nil {
					b.Fatal(err)
				}
				if _, err := duplex.Recv(); err != nil {
					b.Fatal(err)
				}
			}
			_ = duplex.CloseSend()
			b.ReportMetric(float64(r.authCalls()), "calls")
		})
	}
}
