package grpcauth_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/grpcauth"
	"github.com/serviceconnect/management/managementtest"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
)

// connectErrorHandler answers a request the Authenticator refused in the
// protocol the request speaks (Connect, gRPC or gRPC-Web), with the code and
// message grpcauth's interceptors would give it: set it as the
// Authenticator's ErrorHandler in front of Connect services.
func connectErrorHandler() func(http.ResponseWriter, *http.Request, error) {
	errorWriter := connect.NewErrorWriter()
	return func(w http.ResponseWriter, r *http.Request, err error) {
		st := grpcauth.Status(err)
		_ = errorWriter.Write(w, r, connect.NewError(connect.Code(st.Code()), errors.New(st.Message())))
	}
}

// newConnectServer serves TestService's UnaryCall with Connect behind auth,
// over HTTP/2 (which gRPC needs) and HTTP/1.1.
func newConnectServer(auth *management.Authenticator) *httptest.Server {
	mux := http.NewServeMux()
	mux.Handle("/grpc.testing.TestService/UnaryCall", connect.NewUnaryHandler("/grpc.testing.TestService/UnaryCall",
		func(ctx context.Context, _ *connect.Request[testgrpc.SimpleRequest]) (*connect.Response[testgrpc.SimpleResponse], error) {
			user, _ := management.EndUserFromContext(ctx)
			return connect.NewResponse(&testgrpc.SimpleResponse{Username: user.ID}), nil
		}))
	srv := httptest.NewUnstartedServer(auth.Handler(mux))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	return srv
}

// A Connect service is a net/http handler: Authenticator.Handler guards it
// with the same check as grpcauth's interceptors, and connectErrorHandler
// answers its refusals as Connect, gRPC and gRPC-Web clients expect.
func Example_connect() {
	fake := managementtest.NewServer()
	defer fake.Close()
	fake.AddUser(management.UserDetails{User: management.User{ID: "u-ada"}})
	token := fake.IssueEndUserToken("u-ada")

	auth := &management.Authenticator{Client: fake.Client(), ErrorHandler: connectErrorHandler()}
	srv := newConnectServer(auth)
	defer srv.Close()

	for _, protocol := range []connect.ClientOption{connect.WithProtoJSON(), connect.WithGRPC()} {
		client := connect.NewClient[testgrpc.SimpleRequest, testgrpc.SimpleResponse](srv.Client(),
			srv.URL+"/grpc.testing.TestService/UnaryCall", protocol)
		req := connect.NewRequest(&testgrpc.SimpleRequest{})
		req.Header().Set("Authorization", "Bearer "+token)
		res, err := client.CallUnary(context.Background(), req)
		fmt.Println(res.Msg.GetUsername(), err)

		_, err = client.CallUnary(context.Background(), connect.NewRequest(&testgrpc.SimpleRequest{}))
		fmt.Println(connect.CodeOf(err), err)
	}
	// Output:
	// u-ada <nil>
	// unauthenticated unauthenticated: An access token must be provided in the authorization metadata.
	// u-ada <nil>
	// unauthenticated unauthenticated: An access token must be provided in the authorization metadata.
}

// On the wire, a Connect client gets Connect's error: the HTTP status of
// the code and a JSON body of code and message.
func TestConnectErrorFormat(t *testing.T) {
	fake := managementtest.NewServer()
	defer fake.Close()
	auth := &management.Authenticator{Client: fake.Client(), ErrorHandler: connectErrorHandler()}
	srv := newConnectServer(auth)
	defer srv.Close()
	for _, tc := range []struct {
		token  string
		status int
		body   string
	}{
		{"", http.StatusUnauthorized, `{"code":"unauthenticated","message":"An access token must be provided in the authorization metadata."}`},
		{"Bearer eu-0123456789abcdefghij", http.StatusUnauthorized, `{"code":"unauthenticated","message":"The access token is invalid or has expired"}`},
	} {
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/grpc.testing.TestService/UnaryCall", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if tc.token != "" {
			req.Header.Set("Authorization", tc.token)
		}
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		var got, want any
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatalf("body %q: %v", body, err)
		}
		_ = json.Unmarshal([]byte(tc.body), &want)
		if res.StatusCode != tc.status || fmt.Sprint(got) != fmt.Sprint(want) || res.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%q: %d %s %q; want %d %s application/json", tc.token, res.StatusCode, body, res.Header.Get("Content-Type"), tc.status, tc.body)
		}
	}
}
