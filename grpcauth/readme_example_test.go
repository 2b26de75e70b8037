package grpcauth_test

// The snippets of declarations of the module's README, exactly as it shows
// them (the SDK's TestReadmeSnippetsAreExamples checks that; users and
// connectErrorHandler are in the examples), and the tests that run them.

import (
	"context"
	"net"
	"testing"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/grpcauth"
	"github.com/serviceconnect/management/managementtest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthgrpc "google.golang.org/grpc/health/grpc_health_v1"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
)

// serve serves gRPC on lis until ctx ends, its RPCs checked by an
// Authenticator of a Client configured from the environment (MANAGEMENT_*),
// as a service's main does; register registers your services. The health
// service's probes are served without a token.
func serve(ctx context.Context, lis net.Listener, register func(*grpc.Server)) error {
	cfg, err := management.ConfigFromEnv()
	if err != nil {
		return err
	}
	client, err := management.NewClient(cfg)
	if err != nil {
		return err
	}
	auth := &management.Authenticator{
		Client:     client,
		MissBudget: management.MissBudget{PerSecond: 20, Burst: 40},
	}
	srv := grpc.NewServer(
		grpc.ChainUnaryInterceptor(grpcauth.UnaryServerInterceptor(auth)),
		grpc.ChainStreamInterceptor(grpcauth.StreamServerInterceptor(auth)),
	)
	healthgrpc.RegisterHealthServer(srv, health.NewServer())
	register(srv)
	stop := context.AfterFunc(ctx, srv.GracefulStop)
	defer stop()
	return srv.Serve(lis)
}

// TestServe runs the README's serve against the fake: configured from the
// environment, it lets a valid token through, answers the health probe
// without one, and stops when its context ends.
func TestServe(t *testing.T) {
	fake := managementtest.NewServer()
	defer fake.Close()
	fake.AddUser(management.UserDetails{User: management.User{ID: "u-ada"}})
	cfg := fake.Config()
	t.Setenv(management.EnvBaseURL, cfg.BaseURL)
	t.Setenv(management.EnvClientID, cfg.ClientID)
	t.Setenv(management.EnvClientSecret, cfg.ClientSecret)
	t.Setenv(management.EnvPathPrefix, cfg.PathPrefix)

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() {
		served <- serve(ctx, lis, func(s *grpc.Server) { testgrpc.RegisterTestServiceServer(s, users{}) })
	}()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	res, err := testgrpc.NewTestServiceClient(conn).UnaryCall(with(t.Context(), "Bearer "+fake.IssueEndUserToken("u-ada")), &testgrpc.SimpleRequest{})
	if err != nil || res.GetUsername() != "u-ada" {
		t.Errorf("UnaryCall = %v, %v; want u-ada", res, err)
	}
	if probe, err := healthgrpc.NewHealthClient(conn).Check(t.Context(), &healthgrpc.HealthCheckRequest{}); err != nil || probe.GetStatus() != healthgrpc.HealthCheckResponse_SERVING {
		t.Errorf("Health/Check without a token = %v, %v; want SERVING", probe, err)
	}
	cancel()
	if err := <-served; err != nil {
		t.Errorf("serve = %v; want nil once its context ended", err)
	}
}
