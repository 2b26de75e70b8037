package managementtest

import (
	"net/http"
	"net/http/httptest"
)

// memoryTransport serves requests with a handler on the caller's goroutine:
// no listener, no connection, nothing for a synctest bubble to wait on.
type memoryTransport struct {
	handler http.Handler
}

// RoundTrip hands req to the handler as a server would receive it, and
// returns what the handler wrote. A request whose context ends while the
// handler runs fails with the context's error, as over a network.
func (t memoryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	in := req.Clone(ctx)
	if in.Body == nil {
		in.Body = http.NoBody
	}
	if in.Host == "" {
		in.Host = req.URL.Host
	}
	in.RequestURI = req.URL.RequestURI()
	in.RemoteAddr = "127.0.0.1:0"

	rec := httptest.NewRecorder()
	t.handler.ServeHTTP(rec, in)
	if req.Body != nil {
		_ = req.Body.Close() // a RoundTripper must close the body, even on errors
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	resp := rec.Result()
	resp.Request = req
	return resp, nil
}
