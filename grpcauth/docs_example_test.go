package grpcauth_test

// The snippets of docs/grpc.md, exactly as the guide shows them (the SDK's
// TestReadmeSnippetsAreExamples checks that), and the test that runs them
// against the fake service.

import (
	"context"
	"testing"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/grpcauth"
	"github.com/serviceconnect/management/managementtest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthgrpc "google.golang.org/grpc/health/grpc_health_v1"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// newGuardedServer returns a gRPC server whose RPCs need a valid End User
// token, and the Authenticator that checks them (give it to auth.Handler
// too, if the service also serves HTTP).
func newGuardedServer() (*grpc.Server, *management.Authenticator, error) {
	cfg, err := management.ConfigFromEnv()
	if err != nil {
		return nil, nil, err
	}
	client, err := management.NewClient(cfg)
	if err != nil {
		return nil, nil, err
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
	return srv, auth, nil
}

// whoAmI is the body of a handler: the End User's id, or an error that
// would only come from a method served without a check.
func whoAmI(ctx context.Context) (string, error) {
	user, ok := management.EndUserFromContext(ctx)
	if !ok {
		return "", status.Error(codes.Internal, "no End User: is this method skipped?")
	}
	return user.ID, nil
}

// withToken returns ctx carrying the End User's token, for the RPCs made
// with it.
func withToken(ctx context.Context, token string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
}

// signOut drops the cached verdict of the End User's credential, as the
// sign-out endpoint does once the token is revoked.
func signOut(ctx context.Context, auth *management.Authenticator, authorization string) error {
	return auth.Forget(ctx, authorization)
}

// newCatalogServer serves the catalogue's listing to anyone, and every
// other method to End Users.
func newCatalogServer(auth *management.Authenticator) *grpc.Server {
	public := grpcauth.WithSkip("/catalog.v1.Catalog/ListProducts")
	return grpc.NewServer(
		grpc.ChainUnaryInterceptor(grpcauth.UnaryServerInterceptor(auth, public)),
		grpc.ChainStreamInterceptor(grpcauth.StreamServerInterceptor(auth, public)),
	)
}

// whoAmIService answers UnaryCall with the End User's id, through whoAmI.
type whoAmIService struct {
	testgrpc.UnimplementedTestServiceServer
}

func (whoAmIService) UnaryCall(ctx context.Context, _ *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	id, err := whoAmI(ctx)
	if err != nil {
		return nil, err
	}
	return &testgrpc.SimpleResponse{Username: id}, nil
}

// TestGuideSnippets runs the guide's server, handler, client and sign-out
// against the fake: the End User's id reaches the handler, the health probe
// needs no token, a signed-out token is refused at once, and the catalogue
// server refuses an RPC without a token.
func TestGuideSnippets(t *testing.T) {
	fake := managementtest.NewServer()
	defer fake.Close()
	fake.AddUser(management.UserDetails{User: management.User{ID: "u-ada"}})
	cfg := fake.Config()
	t.Setenv(management.EnvBaseURL, cfg.BaseURL)
	t.Setenv(management.EnvClientID, cfg.ClientID)
	t.Setenv(management.EnvClientSecret, cfg.ClientSecret)
	t.Setenv(management.EnvPathPrefix, cfg.PathPrefix)

	srv, auth, err := newGuardedServer()
	if err != nil {
		t.Fatal(err)
	}
	testgrpc.RegisterTestServiceServer(srv, whoAmIService{})
	conn, stop := serveLoopback(srv)
	defer stop()
	client := testgrpc.NewTestServiceClient(conn)

	token := fake.IssueEndUserToken("u-ada")
	res, err := client.UnaryCall(withToken(t.Context(), token), &testgrpc.SimpleRequest{})
	if err != nil || res.GetUsername() != "u-ada" {
		t.Fatalf("UnaryCall with the token = %v, %v; want u-ada", res, err)
	}
	if probe, err := healthgrpc.NewHealthClient(conn).Check(t.Context(), &healthgrpc.HealthCheckRequest{}); err != nil || probe.GetStatus() != healthgrpc.HealthCheckResponse_SERVING {
		t.Errorf("Health/Check without a token = %v, %v; want SERVING", probe, err)
	}

	fake.RevokeEndUserToken(token)
	if err := signOut(t.Context(), auth, "Bearer "+token); err != nil {
		t.Fatal(err)
	}
	if _, err := client.UnaryCall(withToken(t.Context(), token), &testgrpc.SimpleRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Errorf("UnaryCall after the sign-out = %v; want Unauthenticated", err)
	}

	catalog := newCatalogServer(auth)
	testgrpc.RegisterTestServiceServer(catalog, whoAmIService{})
	catalogConn, stopCatalog := serveLoopback(catalog)
	defer stopCatalog()
	if _, err := testgrpc.NewTestServiceClient(catalogConn).UnaryCall(t.Context(), &testgrpc.SimpleRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Errorf("the catalogue's UnaryCall without a token = %v; want Unauthenticated", err)
	}
}

// TestGuideTestingSnippet runs the guide's last snippet as it stands.
func TestGuideTestingSnippet(t *testing.T) {
	fake := managementtest.NewServer()
	defer fake.Close()
	fake.AddUser(management.UserDetails{User: management.User{ID: "u-ada"}})
	token := fake.IssueEndUserToken("u-ada")
	auth := &management.Authenticator{Client: fake.Client()}
	_ = auth                       // give it to the interceptors; send "Bearer "+token from the client
	fake.RevokeEndUserToken(token) // the End User signed out: the next check refuses it

	r := &management.Authenticator{Client: fake.Client()}
	if _, _, err := r.CheckAuthorization(t.Context(), []string{"Bearer " + token}); err == nil {
		t.Error("a revoked token passed the check")
	}
}
