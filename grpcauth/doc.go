// Package grpcauth checks End User access tokens in gRPC servers with a
// management.Authenticator: the same check, cache, calls in flight,
// budgets, shared store and Forget as the Authenticator's net/http
// middleware, so that one Authenticator guards a service's HTTP and gRPC
// surfaces with one cache and one sign-out.
//
//	auth := &management.Authenticator{Client: client}
//	srv := grpc.NewServer(
//		grpc.ChainUnaryInterceptor(grpcauth.UnaryServerInterceptor(auth)),
//		grpc.ChainStreamInterceptor(grpcauth.StreamServerInterceptor(auth)),
//	)
//
//	// in the handlers:
//	user, _ := management.EndUserFromContext(ctx)
//
// The token is the "authorization" metadata value, "Bearer <token>", exactly
// one, as gRPC clients send it with per-RPC credentials. Refused RPCs end
// with the codes that Status lists; a stream is checked when it opens and
// again on its messages once its verdict is older than CacheTTL or after
// Forget (see StreamServerInterceptor).
//
// A Connect service (connectrpc.com/connect) is a net/http handler: guard
// it with Authenticator.Handler, and answer refusals in the protocol of each
// request from the Authenticator's ErrorHandler with connect.NewErrorWriter
// and the code Status gives (see the example).
package grpcauth
