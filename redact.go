package management

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	// engine: the name redact is this package's own, below.
	engine "github.com/serviceconnect/management/internal/redact"
)

// The one redaction choke point. Every text that came from outside (the
// service's reason, message, error and error_description, a body kept in an
// error, every kept header, a transport error's text, a panic value, the
// path of a next_page link or of a redirect's Location) passes a redactor
// bound to the credentials of the attempt that got it before an error is
// handed to anyone: the caller, a log record, an Observer hook. Errors are
// built, redacted into a new value, and only then returned; they are never
// changed afterwards. A text an error keeps the start of is redacted whole
// (as far as it was read), then cut; one that ended early is a cut text.
//
// What a credential looks like in a text, and how to find it in time linear
// in the text, is internal/redact's: this file binds it to the SDK's
// credentials, texts and errors.

const redacted = engine.Marker

// redact stands for a secret the SDK prints itself, such as Config's.
func redact(s string) string {
	if s == "" {
		return `""`
	}
	return redacted
}

// formatRedacted is the Format of the types that hold a secret: it writes
// their redacted description for every verb, quoted for %q, so that no
// verb falls through to fmt's field-by-field printing.
func formatRedacted(f fmt.State, verb rune, description string) {
	if verb == 'q' {
		description = strconv.Quote(description)
	}
	_, _ = io.WriteString(f, description)
}

// The bounds of the texts the redactor reads. Every text from outside is
// cut at maxText before it is redacted (a longer one is then a cut text:
// a start of a credential at its end is redacted too), so that the work of
// redacting an answer is bounded whatever the answer; the headers kept in
// an error are bounded together by maxKeptHeaders. Each field then keeps
// its own, shorter bound: it is cut after it was redacted whole.
const (
	maxText        = 4 << 10
	maxKeptHeaders = 16 << 10
)

// redactor removes credentials from texts: the engine of internal/redact
// (the forms of a credential, the readings of a text, linear matching),
// bound to the credentials of one attempt, with the bounds above and the
// knowledge of the SDK's errors.
type redactor struct {
	engine *engine.Redactor
}

// newRedactor returns the redactor of creds ("" ignored).
func newRedactor(creds ...string) *redactor {
	return &redactor{engine: engine.New(creds...)}
}

// with returns a redactor of r's credentials and creds.
func (r *redactor) with(creds ...string) *redactor {
	return &redactor{engine: r.engine.With(creds...)}
}

// authForms returns the forms of an Authorization value that an echo may
// take: the whole "<scheme> <token>" and the token alone.
func authForms(h string) []string { return engine.AuthForms(h) }

// text returns s, cut at maxText, without the credentials.
func (r *redactor) text(s string) string { return r.redact(s, false) }

// redact is text; cut says that s ended early (at a limit, or a read that
// failed), so that a start of a credential at its end is redacted too.
func (r *redactor) redact(s string, cut bool) string {
	if len(s) > maxText {
		s, cut = s[:maxText], true
	}
	out, _ := r.engine.Redact(s, cut)
	return out
}

// kept is the first n bytes of s once redacted whole: a credential that
// the cut at n would split is redacted, not cut, and the mark that stands
// for it is kept whole (up to len(redacted)-1 bytes past n).
func (r *redactor) kept(s string, n int, cut bool) string {
	return cutKeepingMark(r.redact(s, cut), n)
}

// cutKeepingMark is the first n bytes of s, a redacted text, and the rest
// of a mark that the cut at n would split.
func cutKeepingMark(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for k := max(0, n-len(redacted)+1); k < n; k++ {
		if strings.HasPrefix(s[k:], redacted) {
			return s[:k+len(redacted)]
		}
	}
	return s[:n]
}

// word is text for a reason, a code or a role: one of the words the spec
// documents there is kept as it is, even where a short credential is a
// part of it, so that errors still match their sentinels.
func (r *redactor) word(s string) string {
	switch strings.ToUpper(s) {
	case ReasonUnauthorized, ReasonRequestValidation, ReasonEntityNotFound, "AUTH.FORBIDDEN",
		"INVALID_CLIENT", "UNSUPPORTED_GRANT_TYPE", "INVALID_REQUEST", "INVALID_GRANT", "UNAUTHORIZED_CLIENT", "INVALID_SCOPE",
		string(RoleAppUser), string(RoleServiceAccount):
		return s
	}
	return r.text(s)
}

// linkText names a next_page link in an error: its path alone (the query
// holds the page token), redacted whole, then quoted and cut.
func (r *redactor) linkText(link string) string {
	p, _, _ := strings.Cut(link, "?")
	p, _, _ = strings.Cut(p, "#")
	return fmt.Sprintf("%.80q", r.text(p))
}

// verdict redacts what Authenticate hands back from the service: the role
// and the texts of the ClientResponse to relay.
func (r *redactor) verdict(auth *EndUserAuthentication) {
	auth.Role = Role(r.word(string(auth.Role)))
	if cr := auth.ClientResponse; cr != nil {
		cr.HTTPBody.Reason = r.word(cr.HTTPBody.Reason)
		cr.HTTPBody.ErrorMessage = r.text(cr.HTTPBody.ErrorMessage)
	}
}

// body is the start of a body kept in an error, at most n bytes of it
// once redacted whole; cut says that the body ended early (a limit, a read
// that failed). It is nil for none.
func (r *redactor) body(b []byte, n int, cut bool) []byte {
	if b == nil {
		return nil
	}
	return []byte(r.kept(string(b), n, cut))
}

// header returns the headers of an answer kept in an error: without those
// that can carry a credential by name (cookies, anything named for
// authentication, a token, a key, a secret, a session or a signature),
// each value redacted (a credential echoed under an innocent name is caught
// by value) and without the query of a URL the SDK did not write. The
// values are kept in the order of their names up to maxKeptHeaders bytes
// in all, each cut at maxText: the rest is dropped.
func (r *redactor) header(h http.Header) http.Header {
	if h == nil {
		return nil
	}
	safe := make(http.Header, len(h))
	budget := maxKeptHeaders
	for _, name := range slices.Sorted(maps.Keys(h)) {
		if credentialLike(name) {
			continue
		}
		var kept []string
		for _, v := range h[name] {
			if budget <= 0 {
				break
			}
			if urlHeader(name) {
				v = withoutQueries(v)
			}
			cut := false
			if n := min(budget, maxText); len(v) > n {
				v, cut = v[:n], true
			}
			budget -= len(v)
			kept = append(kept, r.redact(v, cut))
		}
		if kept != nil {
			safe[name] = kept
		}
	}
	return safe
}

// credentialLike reports whether a header can carry a credential by its
// name (internal/redact's list, which managementtest's recorder shares).
func credentialLike(name string) bool { return engine.CredentialHeader(name) }

// urlHeader reports whether the header named name holds URLs.
func urlHeader(name string) bool {
	switch http.CanonicalHeaderKey(name) {
	case "Location", "Content-Location", "Link", "Refresh":
		return true
	}
	return false
}

// withoutQueries drops the query of every URL in a header value: a run
// from '?' to the end of the URL ('>', ';', ',', white space or the end).
func withoutQueries(v string) string {
	if strings.IndexByte(v, '?') < 0 {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] != '?' {
			b.WriteByte(v[i])
			continue
		}
		for i+1 < len(v) && !strings.ContainsRune("> ;,\t", rune(v[i+1])) {
			i++
		}
	}
	return b.String()
}

// maxRequestID bounds APIError.RequestID: a hostile answer could send anything.
const maxRequestID = 128

// requestIDHeaders are where services and proxies put a request's id.
var requestIDHeaders = [...]string{"X-Request-Id", "Request-Id", "X-Correlation-Id", "X-Amzn-Requestid", "X-Amz-Request-Id", "X-Trace-Id"}

// requestID redacts a request id.
func (r *redactor) requestID(id string) string { return r.text(id) }

// requestIDOf returns the first value of the request-id headers of h, in
// the order of requestIDHeaders, that has the shape of an id, and the name
// of its header: one that does not (a newline, a control byte, too long)
// is passed over, not taken for the answer's id.
func requestIDOf(h http.Header) (id, name string) {
	for _, name := range requestIDHeaders {
		for _, v := range h.Values(name) {
			if v != "" && requestIDShaped(v) {
				return v, name
			}
		}
	}
	return "", ""
}

// requestIDShaped reports whether v has the shape of a request id: at
// most maxRequestID bytes of [A-Za-z0-9._:/+=-].
func requestIDShaped(v string) bool {
	if len(v) > maxRequestID {
		return false
	}
	for i := range len(v) {
		switch b := v[i]; {
		case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9', strings.IndexByte("._:/+=-", b) >= 0:
		default:
			return false
		}
	}
	return true
}

// answerMeta is what an error tells of the answer beside its body, before
// the redactor of the attempt reads it (see redactor.error): its headers
// without those that can carry a credential by name, its request id (see
// requestIDOf), and the wait Retry-After asked for.
func answerMeta(h http.Header, now time.Time) (kept http.Header, requestID string, retryAfter time.Duration) {
	kept = make(http.Header, len(h))
	for name, values := range h {
		if !credentialLike(name) {
			kept[name] = append([]string(nil), values...)
		}
	}
	requestID, _ = requestIDOf(h)
	if d, ok := parseRetryAfter(h.Get("Retry-After"), now); ok && d > 0 {
		retryAfter = d
	}
	return kept, requestID, retryAfter
}

// error returns err with every text that came from outside redacted: a
// new value of the SDK's error types (never err changed in place), and a
// foreign error whose text held a credential replaced by one that says the
// same without it. The texts an error keeps only the start of (a body, a
// Content-Type, a redirect's path) were redacted whole where they were
// read, then cut (checkResponse, Client.decode, redirectError): they are
// not read again here.
func (r *redactor) error(err error) error {
	switch e := err.(type) {
	case nil:
		return nil
	case *APIError:
		out := *e
		out.Reason, out.Message = r.word(e.Reason), r.text(e.Message)
		out.Header, out.RequestID = r.header(e.Header), r.requestID(e.RequestID)
		return &out
	case *TokenError:
		out := *e
		out.Code, out.Description = r.word(e.Code), r.text(e.Description)
		out.Header, out.RequestID = r.header(e.Header), r.requestID(e.RequestID)
		return &out
	case *DecodeError:
		out := *e
		out.Err = r.cause(e.Err)
		return &out
	case *TransportError:
		out := *e
		out.Err = r.cause(e.Err)
		return &out
	}
	return r.cause(err)
}

// cause returns err when its text holds no credential, else an error of
// the redacted text that still matches what err matches (errors.Is): but
// errors.As no longer reaches err, whose fields may hold the credential.
func (r *redactor) cause(err error) error {
	if err == nil {
		return nil
	}
	text := err.Error()
	if clean := r.text(text); clean != text {
		return &redactedError{text: clean, cause: err}
	}
	return err
}

// redactedError is an error whose text held a credential.
type redactedError struct {
	text  string
	cause error
}

// Error gives the redacted text, never the cause's own.
func (e *redactedError) Error() string { return e.text }

// Is reports whether the original error matches target, so that
// errors.Is(err, context.DeadlineExceeded) and the like still work.
func (e *redactedError) Is(target error) bool { return errors.Is(e.cause, target) }

// escape returns s with every control, format and line-separator
// character, and every byte that is not UTF-8, written as a Go escape, so
// that a text from outside cannot forge a log line (CWE-117) or hide text.
func escape(s string) string {
	clean := true
	for _, c := range s {
		if c == utf8.RuneError || unsafeRune(c) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		c, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unsafeRune(c):
			q := strconv.QuoteRuneToASCII(c)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

func unsafeRune(c rune) bool {
	return unicode.IsControl(c) || unicode.Is(unicode.Cf, c) || unicode.In(c, unicode.Zl, unicode.Zp)
}

// maxPanicText bounds the text of a panic value in a log record.
const maxPanicText = 1024

// panicText describes a panic value for a log record, redacted by r and
// escaped. An *http.Request or *http.Response is named by method and path
// only: printed, its headers would show the Authorization header.
func (r *redactor) panicText(v any) string {
	var s string
	switch p := v.(type) {
	case *http.Request:
		s = "*http.Request"
		if p != nil && p.URL != nil {
			s += " " + p.Method + " " + p.URL.EscapedPath()
		}
	case *http.Response:
		s = "*http.Response"
		if p != nil {
			s += " " + p.Status
		}
	case error:
		s = p.Error()
	default:
		s = fmt.Sprint(v)
	}
	return escape(r.kept(s, maxPanicText, false))
}
