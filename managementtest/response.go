package managementtest

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strconv"
)

// A Response is an answer the server gives instead of serving a request,
// as FailNextWith and FailNextFor inject it: any status, headers and raw
// body (an HTML page from a proxy, broken JSON, an error shape on a 200, a
// redirect), or an answer cut off by a closed connection.
//
// Cutting is a field of Response rather than a method of its own because
// a body cut midway needs what a Response holds (a status, headers and the
// body to cut), and so that every way of choosing requests (per route, per
// id) works for cut answers too.
type Response struct {
	// Status is the status code, 200 to 599; a 3xx with a Location header
	// is a redirect. It is zero only in a Response that is Cut before any
	// answer.
	Status int
	// Header holds the answer's headers, sent as they are. The server adds
	// Content-Length, the length of Body (a Content-Length here panics);
	// it adds no Content-Type.
	Header http.Header
	// Body is sent as it is. 204 and 304 answers have none.
	Body string
	// Cut makes the server close the connection instead of finishing the
	// answer: with a zero Status, before anything is sent; otherwise after
	// the status, the headers (Content-Length still announcing all of
	// Body) and the first CutAfter bytes of Body, which must be shorter.
	//
	// Over the network the server hijacks the connection: the client sees
	// an error (io.EOF or the like) or a body whose reading fails with
	// io.ErrUnexpectedEOF. Note that net/http's Transport replays a GET
	// once on a new connection when a reused one closes before any answer,
	// so that such a request reaches the server twice. Through Transport
	// (and NewInMemoryServer's Client) there is no replay: the request
	// fails with an error that wraps io.EOF, or the body fails with
	// io.ErrUnexpectedEOF after CutAfter bytes.
	Cut bool
	// CutAfter is the number of bytes of Body sent before a Cut.
	CutAfter int
}

// check panics unless r can be sent, as test helpers do; caller names the
// method that was given r.
func (r Response) check(caller string) {
	var problem string
	switch {
	case r.Status == 0 && r.Cut:
		if r.Header != nil || r.Body != "" || r.CutAfter != 0 {
			problem = "a Response cut before any answer has no Header, Body or CutAfter"
		}
	case r.Status < 200 || r.Status > 599:
		problem = "Status must be 200 to 599 (or zero with Cut)"
	case r.Body != "" && (r.Status == http.StatusNoContent || r.Status == http.StatusNotModified):
		problem = "a " + strconv.Itoa(r.Status) + " answer has no Body"
	case hasContentLength(r.Header):
		problem = "Content-Length is set by the server from Body"
	case !r.Cut && r.CutAfter != 0:
		problem = "CutAfter needs Cut"
	case r.Cut && (r.CutAfter < 0 || r.CutAfter >= len(r.Body)):
		problem = "CutAfter must be at least 0 and less than the length of Body, or nothing is cut"
	}
	if problem != "" {
		panic(fmt.Sprintf("managementtest: %s: Response{Status: %d, Body: %d bytes, Cut: %t, CutAfter: %d}: %s",
			caller, r.Status, len(r.Body), r.Cut, r.CutAfter, problem))
	}
}

func hasContentLength(h http.Header) bool {
	for k := range h {
		if http.CanonicalHeaderKey(k) == "Content-Length" {
			return true
		}
	}
	return false
}

// clone returns r with its own Header, so that the caller may change theirs.
func (r Response) clone() Response {
	r.Header = r.Header.Clone()
	return r
}

// serve answers with r. It neither changes r nor keeps its Header, since
// one injected Response answers several requests.
func (r Response) serve(w http.ResponseWriter) {
	if r.Cut {
		r.cut(w)
		return
	}
	r.writeHead(w)
	_, _ = io.WriteString(w, r.Body)
}

// writeHead sends the status and headers, without the Content-Type that
// net/http would otherwise guess from the body.
func (r Response) writeHead(w http.ResponseWriter) {
	h := w.Header()
	for k, v := range r.Header {
		h[k] = append([]string(nil), v...)
	}
	if _, ok := h["Content-Type"]; !ok {
		h["Content-Type"] = nil // net/http sends no header for nil
	}
	h.Set("Content-Length", strconv.Itoa(len(r.Body)))
	w.WriteHeader(r.Status)
}

// cut sends the start of r and closes the connection. Where there is no
// connection to hijack (the in-memory transport, HTTP/2), it sends the
// same start and aborts the handler, which the in-memory transport turns
// into the same failures and net/http into a reset stream.
func (r Response) cut(w http.ResponseWriter) {
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		r.abort(w) // does not return
	}
	defer conn.Close()
	if r.Status == 0 {
		return
	}
	r.writeRaw(buf.Writer)
}

// writeRaw writes the status line, the headers and the bytes of the body
// before the cut, as HTTP/1.1. Write errors are ignored: the connection is
// closed next anyway.
func (r Response) writeRaw(w *bufio.Writer) {
	fmt.Fprintf(w, "HTTP/1.1 %03d %s\r\n", r.Status, http.StatusText(r.Status))
	_ = r.Header.Write(w)
	fmt.Fprintf(w, "Content-Length: %d\r\n\r\n", len(r.Body))
	_, _ = w.WriteString(r.Body[:r.CutAfter])
	_ = w.Flush()
}

// abort sends the start of r through w and aborts the handler.
func (r Response) abort(w http.ResponseWriter) {
	if r.Status != 0 {
		r.writeHead(w)
		_, _ = io.WriteString(w, r.Body[:r.CutAfter])
		_ = http.NewResponseController(w).Flush() // what was sent before the cut
	}
	panic(http.ErrAbortHandler)
}
