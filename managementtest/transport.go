package managementtest

import (
	"bytes"
	"fmt"
	"io"
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
// handler runs fails with the context's error, as over a network. A
// handler that aborts (panics with http.ErrAbortHandler, as a cut Response
// does) fails as a closed connection would: the request with an error
// wrapping io.EOF when nothing was flushed, else the body with
// io.ErrUnexpectedEOF after what was.
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
	aborted := serve(t.handler, rec, in)
	if req.Body != nil {
		_ = req.Body.Close() // a RoundTripper must close the body, even on errors
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if aborted && !rec.Flushed {
		return nil, fmt.Errorf("managementtest: the connection was closed without an answer: %w", io.EOF)
	}
	resp := rec.Result()
	resp.Request = req
	for k, v := range resp.Header {
		if len(v) == 0 { // a server sends no header for a nil value
			delete(resp.Header, k)
		}
	}
	if aborted {
		resp.Body = io.NopCloser(io.MultiReader(bytes.NewReader(rec.Body.Bytes()), failingReader{io.ErrUnexpectedEOF}))
	}
	return resp, nil
}

// serve runs h, and reports whether it aborted with http.ErrAbortHandler.
// Other panics go on, to the test that caused them.
func serve(h http.Handler, w http.ResponseWriter, r *http.Request) (aborted bool) {
	defer func() {
		if v := recover(); v != nil {
			if v != http.ErrAbortHandler {
				panic(v)
			}
			aborted = true
		}
	}()
	h.ServeHTTP(w, r)
	return false
}

// failingReader fails every read with err.
type failingReader struct{ err error }

// Read reads nothing, as a connection cut before the body would.
func (r failingReader) Read([]byte) (int, error) { return 0, r.err }
