package grpcauth_test

// The rig of the tests: a grpc.Server on a loopback port with both
// interceptors, grpc's own test service (google.golang.org/grpc/interop's
// TestService, served by testService below) and the health service, a
// client connection over that port, and managementtest's fake as the
// management service.

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/grpcauth"
	"github.com/serviceconnect/management/managementtest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/grpclog"
	"google.golang.org/grpc/health"
	healthgrpc "google.golang.org/grpc/health/grpc_health_v1"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// grpcLogs holds every line grpc logs during the tests (grpclog's logger
// belongs to the process, so it is set once, here); each rig checks that
// none holds a token it issued.
var grpcLogs syncBuffer

func TestMain(m *testing.M) {
	grpclog.SetLoggerV2(grpclog.NewLoggerV2WithVerbosity(&grpcLogs, &grpcLogs, &grpcLogs, 99))
	os.Exit(m.Run())
}

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// rig is a gRPC server guarded by grpcauth, and a client of it.
type rig struct {
	t testing.TB
	// ctx bounds every RPC of a test, so that a test fails rather than
	// hangs when a stream does not end as it should.
	ctx    context.Context
	fake   *managementtest.Server
	auth   *management.Authenticator
	conn   *grpc.ClientConn
	svc    *testService
	logs   *syncBuffer // the Client's log lines
	served *served     // the statuses the interceptors ended RPCs with

	mu     sync.Mutex
	tokens []string // every credential issued, which no log line or status may hold
}

// rigConfig changes a rig before its server starts.
type rigConfig struct {
	config func(*management.Config)        // the Client's
	auth   func(*management.Authenticator) // the Authenticator's fields
	opts   []grpcauth.Option
	// bench: the server has grpcauth's interceptors alone (none with
	// noAuth), without the recorder of statuses.
	bench, noAuth bool
}

func newRig(t testing.TB, rc rigConfig) *rig {
	t.Helper()
	fake := managementtest.NewServer()
	fake.AddUser(management.UserDetails{User: management.User{ID: "u-ada"}})
	logs := &syncBuffer{}
	cfg := fake.Config()
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if rc.config != nil {
		rc.config(&cfg)
	}
	client, err := management.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	auth := &management.Authenticator{Client: client}
	if rc.auth != nil {
		rc.auth(auth)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	r := &rig{t: t, ctx: ctx, fake: fake, auth: auth, svc: newTestService(), logs: logs, served: &served{}}

	var unary []grpc.UnaryServerInterceptor
	var stream []grpc.StreamServerInterceptor
	if !rc.bench {
		unary, stream = append(unary, r.served.unary), append(stream, r.served.stream)
	}
	if !rc.noAuth {
		unary = append(unary, grpcauth.UnaryServerInterceptor(auth, rc.opts...))
		stream = append(stream, grpcauth.StreamServerInterceptor(auth, rc.opts...))
	}
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(unary...), grpc.ChainStreamInterceptor(stream...))
	testgrpc.RegisterTestServiceServer(srv, r.svc)
	healthgrpc.RegisterHealthServer(srv, health.NewServer())
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serving := make(chan error, 1)
	go func() { serving <- srv.Serve(lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	r.conn = conn
	t.Cleanup(func() {
		_ = conn.Close()
		srv.Stop()
		if err := <-serving; err != nil {
			t.Errorf("Serve: %v", err)
		}
		fake.Close()
		r.checkNoTokenIn("the Client's log", logs.String())
		r.checkNoTokenIn("grpc's log", grpcLogs.String())
	})
	return r
}

// token issues an End User token of u-ada and returns it with its type,
// as the client sends it.
func (r *rig) token() string {
	tok := r.fake.IssueEndUserToken("u-ada")
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tokens = append(r.tokens, tok)
	return "Bearer " + tok
}

// managementToken fetches a management token from the fake, as a client
// that holds the service's credentials would, and returns it with its type.
func (r *rig) managementToken() string {
	r.t.Helper()
	cfg := r.fake.Config()
	req, err := http.NewRequest(http.MethodPost, r.fake.URL+cfg.PathPrefix+"/auth/token", strings.NewReader(`{"grant_type":"client_credentials"}`))
	if err != nil {
		r.t.Fatal(err)
	}
	req.SetBasicAuth(cfg.ClientID, cfg.ClientSecret)
	req.Header.Set("Content-Type", "application/json")
	res, err := cfg.HTTPClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	tok, ok := strings.CutPrefix(string(body), `{"access_token":"`)
	tok, _, _ = strings.Cut(tok, `"`)
	if res.StatusCode != http.StatusOK || !ok || tok == "" {
		r.t.Fatalf("token endpoint: %d %s", res.StatusCode, body)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tokens = append(r.tokens, tok)
	return "Bearer " + tok
}

// checkNoTokenIn fails the test when text holds a credential the rig
// issued.
func (r *rig) checkNoTokenIn(what, text string) {
	r.t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, tok := range r.tokens {
		if strings.Contains(text, strings.TrimPrefix(tok, "Bearer ")) {
			r.t.Errorf("%s holds a token:\n%s", what, text)
		}
	}
}

// with returns ctx carrying the authorization metadata values, as a
// client's per-RPC credentials send them.
func with(ctx context.Context, authorization ...string) context.Context {
	for _, v := range authorization {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", v)
	}
	return ctx
}

func (r *rig) client() testgrpc.TestServiceClient { return testgrpc.NewTestServiceClient(r.conn) }

// status returns err's status, having checked that it quotes no token.
func (r *rig) status(err error) *status.Status {
	r.t.Helper()
	st, ok := status.FromError(err)
	if !ok {
		r.t.Fatalf("%v is not a status", err)
	}
	r.checkNoTokenIn("status "+st.Code().String(), st.Message())
	return st
}

// authCalls is the number of authenticate calls the fake received.
func (r *rig) authCalls() int { return r.fake.Requests(managementtest.RouteAuthenticate) }

// served records the errors the interceptors ended RPCs with, by method,
// as the server sent them (the client may see its own deadline instead).
type served struct {
	mu   sync.Mutex
	errs map[string][]error
}

func (s *served) add(method string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.errs == nil {
		s.errs = map[string][]error{}
	}
	s.errs[method] = append(s.errs[method], err)
}

// last is the error the last RPC of method ended with.
func (s *served) last(method string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	errs := s.errs[method]
	if len(errs) == 0 {
		return errors.New("no RPC served")
	}
	return errs[len(errs)-1]
}

// serverDeadline is the metadata key of a deadline the server sets on the
// RPC ("100ms"), as a server that caps its RPCs' time does: the client's own
// deadline would end its RPC at the client, racing the server's.
const serverDeadline = "test-server-deadline"

func (s *served) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if v := metadata.ValueFromIncomingContext(ctx, serverDeadline); len(v) == 1 {
		d, err := time.ParseDuration(v[0])
		if err != nil {
			return nil, err
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	resp, err := handler(ctx, req)
	s.add(info.FullMethod, err)
	return resp, err
}

func (s *served) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	err := handler(srv, ss)
	s.add(info.FullMethod, err)
	return err
}

// testService serves grpc's interop TestService: each answer names the End
// User the handler found in its context ("" for none).
type testService struct {
	testgrpc.UnimplementedTestServiceServer
	// step lets the server-streaming call send its next message.
	step chan struct{}
	// causes receives context.Cause of a server-streaming call's context
	// once a send failed and the context ended.
	causes chan error
	// handled counts the RPCs that reached a handler.
	handled atomic.Int64
	// user, when set, is the End User every answer names, whatever the
	// context holds: benchmarks with and without the interceptors then
	// send the same messages.
	user string
	// last is the End User the last handler found in its context.
	last atomic.Pointer[management.EndUser]
}

func newTestService() *testService {
	return &testService{step: make(chan struct{}), causes: make(chan error, 16)}
}

func (s *testService) endUserID(ctx context.Context) string {
	if s.user != "" {
		return s.user
	}
	if u, ok := management.EndUserFromContext(ctx); ok {
		s.last.Store(u)
		return u.ID
	}
	return ""
}

func (s *testService) EmptyCall(ctx context.Context, _ *testgrpc.Empty) (*testgrpc.Empty, error) {
	s.handled.Add(1)
	// The End User, if any, in a header: Empty has no field for it.
	if err := grpc.SetHeader(ctx, metadata.Pairs("end-user", s.endUserID(ctx))); err != nil {
		return nil, err
	}
	return &testgrpc.Empty{}, nil
}

func (s *testService) UnaryCall(ctx context.Context, _ *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	s.handled.Add(1)
	return &testgrpc.SimpleResponse{Username: s.endUserID(ctx)}, nil
}

// StreamingOutputCall sends one message per response parameter, the first
// at once and each other when the test steps it. When a send fails, it
// waits for its context to end, reports the cause, and returns nil: the
// interceptor must still end the RPC with the refusal.
func (s *testService) StreamingOutputCall(req *testgrpc.StreamingOutputCallRequest, stream grpc.ServerStreamingServer[testgrpc.StreamingOutputCallResponse]) error {
	s.handled.Add(1)
	ctx := stream.Context()
	for i := range req.GetResponseParameters() {
		if i > 0 {
			select {
			case <-s.step:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if err := stream.Send(&testgrpc.StreamingOutputCallResponse{Payload: &testgrpc.Payload{Body: []byte(s.endUserID(ctx))}}); err != nil {
			<-ctx.Done()
			s.causes <- context.Cause(ctx) // buffered
			return nil
		}
	}
	return nil
}

// StreamingInputCall counts the bytes it receives.
func (s *testService) StreamingInputCall(stream grpc.ClientStreamingServer[testgrpc.StreamingInputCallRequest, testgrpc.StreamingInputCallResponse]) error {
	s.handled.Add(1)
	var n int32
	for {
		m, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return stream.SendAndClose(&testgrpc.StreamingInputCallResponse{AggregatedPayloadSize: n})
		}
		if err != nil {
			return err
		}
		n += int32(len(m.GetPayload().GetBody()))
	}
}

// FullDuplexCall answers each message with the End User's id.
func (s *testService) FullDuplexCall(stream grpc.BidiStreamingServer[testgrpc.StreamingOutputCallRequest, testgrpc.StreamingOutputCallResponse]) error {
	s.handled.Add(1)
	for {
		if _, err := stream.Recv(); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
		if err := stream.Send(&testgrpc.StreamingOutputCallResponse{Payload: &testgrpc.Payload{Body: []byte(s.endUserID(stream.Context()))}}); err != nil {
			return err
		}
	}
}

// receive returns the next value of ch, or fails the test once r's
// context ends.
func receive[T any](r *rig, what string, ch <-chan T) T {
	r.t.Helper()
	select {
	case v := <-ch:
		return v
	case <-r.ctx.Done():
		r.t.Fatalf("no %s: %v", what, r.ctx.Err())
	}
	panic("unreachable")
}

// step lets the server-streaming call send its next message, or fails the
// test once r's context ends.
func (r *rig) step() {
	r.t.Helper()
	select {
	case r.svc.step <- struct{}{}:
	case <-r.ctx.Done():
		r.t.Fatalf("the server-streaming call did not take its step: %v", r.ctx.Err())
	}
}
