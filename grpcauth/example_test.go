package grpcauth_test

import (
	"context"
	"fmt"
	"net"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/grpcauth"
	"github.com/serviceconnect/management/managementtest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthgrpc "google.golang.org/grpc/health/grpc_health_v1"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// newGRPCServer returns a gRPC server that lets an RPC through only for a
// valid End User token, checked by auth (its cache, budgets and Forget,
// shared with auth.Handler on the service's HTTP side); the health
// service's probes are served without one.
func newGRPCServer(auth *management.Authenticator, opts ...grpcauth.Option) *grpc.Server {
	srv := grpc.NewServer(
		grpc.ChainUnaryInterceptor(grpcauth.UnaryServerInterceptor(auth, opts...)),
		grpc.ChainStreamInterceptor(grpcauth.StreamServerInterceptor(auth, opts...)),
	)
	healthgrpc.RegisterHealthServer(srv, health.NewServer())
	return srv
}

// serveLoopback serves srv on a loopback port and returns a client
// connection to it, and the function that closes both.
func serveLoopback(srv *grpc.Server) (*grpc.ClientConn, func()) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go func() { _ = srv.Serve(lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		panic(err)
	}
	return conn, func() { _ = conn.Close(); srv.Stop() }
}

// users is a service whose handlers read the End User the interceptors
// let through.
type users struct {
	testgrpc.UnimplementedTestServiceServer
}

func (users) UnaryCall(ctx context.Context, _ *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	user, ok := management.EndUserFromContext(ctx)
	if !ok {
		return &testgrpc.SimpleResponse{}, nil // a method of WithSkip
	}
	return &testgrpc.SimpleResponse{Username: user.ID}, nil
}

// A gRPC server guarded by an Authenticator, against managementtest's fake
// service, and a client that sends an End User token.
func Example() {
	fake := managementtest.NewServer()
	defer fake.Close()
	fake.AddUser(management.UserDetails{User: management.User{ID: "u-ada"}})
	token := fake.IssueEndUserToken("u-ada") // what the End User signed in with

	auth := &management.Authenticator{Client: fake.Client()}
	srv := newGRPCServer(auth)
	testgrpc.RegisterTestServiceServer(srv, users{})
	conn, stop := serveLoopback(srv)
	defer stop()
	client := testgrpc.NewTestServiceClient(conn)

	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+token)
	res, err := client.UnaryCall(ctx, &testgrpc.SimpleRequest{})
	fmt.Println(res.GetUsername(), err)

	_, err = client.UnaryCall(context.Background(), &testgrpc.SimpleRequest{})
	fmt.Println(status.Code(err), status.Convert(err).Message())

	probe, err := healthgrpc.NewHealthClient(conn).Check(context.Background(), &healthgrpc.HealthCheckRequest{})
	fmt.Println(probe.GetStatus(), err)
	// Output:
	// u-ada <nil>
	// Unauthenticated An access token must be provided in the authorization metadata.
	// SERVING <nil>
}

// A method served without a check: its handler finds no End User.
func ExampleWithSkip() {
	fake := managementtest.NewServer()
	defer fake.Close()
	auth := &management.Authenticator{Client: fake.Client()}
	srv := newGRPCServer(auth, grpcauth.WithSkip("/grpc.testing.TestService/UnaryCall"))
	testgrpc.RegisterTestServiceServer(srv, users{})
	conn, stop := serveLoopback(srv)
	defer stop()
	client := testgrpc.NewTestServiceClient(conn)

	res, err := client.UnaryCall(context.Background(), &testgrpc.SimpleRequest{})
	fmt.Printf("%q %v\n", res.GetUsername(), err)
	_, err = client.EmptyCall(context.Background(), &testgrpc.Empty{})
	fmt.Println(status.Code(err))
	// Output:
	// "" <nil>
	// Unauthenticated
}

// The status an interceptor ends a refused RPC with, for code that answers
// refusals itself.
func ExampleStatus() {
	for _, err := range []error{
		management.ErrMissingToken,
		management.ErrForbiddenRole,
		management.ErrOverMissBudget,
		management.ErrAuthenticationUnavailable,
	} {
		st := grpcauth.Status(err)
		fmt.Println(st.Code(), st.Message())
	}
	// Output:
	// Unauthenticated An access token must be provided in the authorization metadata.
	// PermissionDenied This access token is not allowed here.
	// ResourceExhausted The access token could not be checked; try again later.
	// Unavailable The access token could not be checked; try again later.
}
