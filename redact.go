package management

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// The one redaction choke point. Every text that came from outside (the
// service's reason, message, error and error_description, a body kept in an
// error, every kept header, a transport error's text, a panic value) passes
// a redactor bound to the credentials of the attempt that got it before an
// error is handed to anyone: the caller, a log record, an Observer hook.
// Errors are built, redacted into a new value, and only then returned; they
// are never changed afterwards.

const redacted = "REDACTED"

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

// minSecretLen is the shortest credential searched for in texts: a shorter
// one would match everywhere, so a redactor that knows one withholds the
// texts instead.
const minSecretLen = 8

// withheldText stands for a text a redactor withheld.
const withheldText = "[withheld: a credential is too short to search for]"

// redactor removes credentials from texts. It searches each text as it
// stands and as JSON, HTML and percent-decoding read it, for each
// credential raw and in standard and URL-safe base64, padded or not: the
// forms an echo takes.
type redactor struct {
	forms    []string // each credential and its base64 spellings
	withhold bool     // a credential shorter than minSecretLen: texts are withheld
}

// newRedactor returns the redactor of creds ("" ignored).
func newRedactor(creds ...string) *redactor {
	r := &redactor{}
	for _, c := range creds {
		r.add(c)
	}
	return r
}

// authForms returns the forms of an Authorization value that an echo may
// take: the whole "<scheme> <token>" and the token alone.
func authForms(h string) []string {
	if _, tok, ok := strings.Cut(strings.TrimSpace(h), " "); ok {
		return []string{h, tok}
	}
	return []string{h}
}

func (r *redactor) add(c string) {
	c = strings.TrimSpace(c)
	switch {
	case c == "":
		return
	case len(c) < minSecretLen:
		r.withhold = true
		return
	}
	b := []byte(c)
	for _, f := range [...]string{
		c,
		base64.StdEncoding.EncodeToString(b), base64.RawStdEncoding.EncodeToString(b),
		base64.URLEncoding.EncodeToString(b), base64.RawURLEncoding.EncodeToString(b),
	} {
		if !slices.Contains(r.forms, f) {
			r.forms = append(r.forms, f)
		}
	}
}

// text returns s without the credentials.
func (r *redactor) text(s string) string { return r.redact(s, false) }

// cut is text for a text cut at a limit: it also redacts a start of a
// credential at its end.
func (r *redactor) cut(s string) string { return r.redact(s, true) }

func (r *redactor) redact(s string, cut bool) string {
	switch {
	case s == "":
		return s
	case r.withhold && knownText(s):
		return s
	case r.withhold:
		return withheldText
	case len(r.forms) == 0:
		return s
	}
	var spans []span
	for _, dec := range decodersFor(s) {
		for _, f := range r.forms {
			spans = find(s, f, dec, cut, spans)
		}
	}
	if len(spans) == 0 {
		return s
	}
	return replaceSpans(s, spans)
}

// knownText reports whether s is one of the words the spec documents in the
// texts of answers (a reason, an OAuth 2.0 error code, a role): kept even
// when texts are withheld, so that errors still match their sentinels.
func knownText(s string) bool {
	switch strings.ToUpper(s) {
	case ReasonUnauthorized, ReasonRequestValidation, ReasonEntityNotFound, "AUTH.FORBIDDEN",
		"INVALID_CLIENT", "UNSUPPORTED_GRANT_TYPE", "INVALID_REQUEST", "INVALID_GRANT", "UNAUTHORIZED_CLIENT", "INVALID_SCOPE",
		string(RoleAppUser), string(RoleServiceAccount):
		return true
	}
	return false
}

// span is a part of a text, [from, to).
type span struct{ from, to int }

// replaceSpans replaces the parts of s that spans cover with redacted.
func replaceSpans(s string, spans []span) string {
	// Few spans: an insertion sort.
	for i := 1; i < len(spans); i++ {
		for j := i; j > 0 && spans[j].from < spans[j-1].from; j-- {
			spans[j], spans[j-1] = spans[j-1], spans[j]
		}
	}
	var b strings.Builder
	at := 0
	for i, sp := range spans {
		switch {
		case i == 0 || sp.from >= at:
			b.WriteString(s[at:sp.from])
			b.WriteString(redacted)
			at = sp.to
		case sp.to > at: // overlaps the span just written
			at = sp.to
		}
	}
	b.WriteString(s[at:])
	return b.String()
}

// A decoder reads the escape at the start of s: the bytes it stands for
// and its length, or n 0 when s does not start with one.
type decoder func(s string) (out []byte, n int)

// decodersFor returns the readings of s to search: as it stands (nil), and
// each escaping whose escape character s holds: JSON string escapes, HTML
// character references, percent-encoding (with and without '+' for space).
func decodersFor(s string) []decoder {
	decs := []decoder{nil}
	if strings.IndexByte(s, '\\') >= 0 {
		decs = append(decs, jsonEscape)
	}
	if strings.IndexByte(s, '&') >= 0 {
		decs = append(decs, htmlEntity)
	}
	if strings.IndexByte(s, '%') >= 0 || strings.IndexByte(s, '+') >= 0 {
		decs = append(decs, percentPlus, percent)
	}
	return decs
}

// maxEscape is the longest escape a cut can split: `\uXXXX\uXXXX`.
const maxEscape = 12

// find adds to spans each part of s that reads f, each byte of f written
// as it is or as an escape of dec; with cut, also a start of f at the end
// of s, or before an escape at the end that the cut split (`%2`, `\u00`).
func find(s, f string, dec decoder, cut bool, spans []span) []span {
	for i := 0; i < len(s); i++ {
		if s[i] != f[0] && (dec == nil || strings.IndexByte(`\&%+`, s[i]) < 0) {
			continue
		}
		end, k := match(s, i, f, 0, dec)
		switch {
		case k == len(f):
			spans = append(spans, span{i, end})
		case cut && k > 0 && (end == len(s) || (len(s)-end <= maxEscape && strings.IndexByte(`\&%`, s[end]) >= 0)):
			return append(spans, span{i, len(s)})
		}
	}
	return spans
}

// match reads f[k:] in s from i, as far as it goes: the end in s and in f.
// Where a byte can be read both as it is and as the start of an escape,
// both are tried.
func match(s string, i int, f string, k int, dec decoder) (int, int) {
	for k < len(f) && i < len(s) {
		if dec != nil {
			if out, n := dec(s[i:]); n > 0 && strings.HasPrefix(f[k:], string(out)) {
				if s[i] != f[k] {
					i, k = i+n, k+len(out)
					continue
				}
				e1, k1 := match(s, i+n, f, k+len(out), dec)
				e2, k2 := match(s, i+1, f, k+1, dec)
				if k1 >= k2 {
					return e1, k1
				}
				return e2, k2
			}
		}
		if s[i] != f[k] {
			break
		}
		i, k = i+1, k+1
	}
	return i, k
}

func jsonEscape(s string) ([]byte, int) {
	if len(s) < 2 || s[0] != '\\' {
		return nil, 0
	}
	switch s[1] {
	case '"', '\\', '/':
		return []byte{s[1]}, 2
	case 'b':
		return []byte{'\b'}, 2
	case 'f':
		return []byte{'\f'}, 2
	case 'n':
		return []byte{'\n'}, 2
	case 'r':
		return []byte{'\r'}, 2
	case 't':
		return []byte{'\t'}, 2
	case 'u':
		r, ok := hex4(s[2:])
		if !ok {
			return nil, 0
		}
		n := 6
		if utf16.IsSurrogate(r) {
			if lo, ok := hex4(strings.TrimPrefix(s[6:], `\u`)); ok && len(s) >= 12 && s[6:8] == `\u` {
				r = utf16.DecodeRune(r, lo)
				n = 12
			}
		}
		return utf8.AppendRune(nil, r), n
	}
	return nil, 0
}

func hex4(s string) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	v, err := strconv.ParseUint(s[:4], 16, 32)
	return rune(v), err == nil
}

// htmlEntities are the named references an echo of a credential may hold.
var htmlEntities = map[string]byte{"quot": '"', "amp": '&', "lt": '<', "gt": '>', "apos": '\'', "sol": '/', "plus": '+', "equals": '='}

func htmlEntity(s string) ([]byte, int) {
	if len(s) < 3 || s[0] != '&' {
		return nil, 0
	}
	end := strings.IndexByte(s[:min(len(s), 12)], ';')
	if end < 2 {
		return nil, 0
	}
	name := s[1:end]
	if name[0] == '#' {
		var v uint64
		var err error
		if len(name) > 1 && (name[1] == 'x' || name[1] == 'X') {
			v, err = strconv.ParseUint(name[2:], 16, 32)
		} else {
			v, err = strconv.ParseUint(name[1:], 10, 32)
		}
		if err != nil || v > unicode.MaxRune {
			return nil, 0
		}
		return utf8.AppendRune(nil, rune(v)), end + 1
	}
	if c, ok := htmlEntities[strings.ToLower(name)]; ok {
		return []byte{c}, end + 1
	}
	return nil, 0
}

func percent(s string) ([]byte, int) {
	if len(s) < 3 || s[0] != '%' {
		return nil, 0
	}
	v, err := strconv.ParseUint(s[1:3], 16, 8)
	if err != nil {
		return nil, 0
	}
	return []byte{byte(v)}, 3
}

func percentPlus(s string) ([]byte, int) {
	if s != "" && s[0] == '+' {
		return []byte{' '}, 1
	}
	return percent(s)
}

// verdict redacts what Authenticate hands back from the service: the role
// and the texts of the ClientResponse to relay. A text that cannot be
// searched (the token is too short) is replaced by the default relay's, not
// relayed as a marker.
func (r *redactor) verdict(auth *EndUserAuthentication) {
	auth.Role = Role(r.text(string(auth.Role)))
	if cr := auth.ClientResponse; cr != nil {
		body := &cr.HTTPBody
		if body.Reason = r.text(body.Reason); body.Reason == withheldText {
			body.Reason = defaultInvalidBody.Reason
		}
		if body.ErrorMessage = r.text(body.ErrorMessage); body.ErrorMessage == withheldText {
			body.ErrorMessage = defaultInvalidBody.ErrorMessage
		}
	}
}

// bytes redacts a body kept in an error; cut says it was cut at a limit.
func (r *redactor) bytes(b []byte, cut bool) []byte {
	if b == nil {
		return nil
	}
	if r.withhold {
		return nil
	}
	return []byte(r.redact(string(b), cut))
}

// header returns the headers of an answer kept in an error: without those
// that can carry a credential by name (cookies, anything named for
// authentication, a token, a key, a secret, a session or a signature),
// each value redacted (a credential echoed under an innocent name is caught
// by value) and without the query of a URL the SDK did not write. When the
// redactor withholds texts, no header is kept.
func (r *redactor) header(h http.Header) http.Header {
	if h == nil || r.withhold {
		return nil
	}
	safe := make(http.Header, len(h))
	for name, values := range h {
		if credentialLike(name) {
			continue
		}
		kept := make([]string, len(values))
		for i, v := range values {
			if urlHeader(name) {
				v = withoutQueries(v)
			}
			kept[i] = r.text(v)
		}
		safe[name] = kept
	}
	return safe
}

func credentialLike(name string) bool {
	n := strings.ToLower(name)
	for _, word := range []string{"cookie", "auth", "token", "secret", "key", "session", "signature", "credential"} {
		if strings.Contains(n, word) {
			return true
		}
	}
	return false
}

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

// requestID redacts a request id; it is dropped when texts are withheld.
func (r *redactor) requestID(id string) string {
	if r.withhold {
		return ""
	}
	return r.text(id)
}

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
// without those that can carry a credential by name, its request id when it
// has the shape of one, and the wait Retry-After asked for.
func answerMeta(h http.Header, now time.Time) (kept http.Header, requestID string, retryAfter time.Duration) {
	kept = make(http.Header, len(h))
	for name, values := range h {
		if !credentialLike(name) {
			kept[name] = append([]string(nil), values...)
		}
	}
	for _, name := range requestIDHeaders {
		if v := h.Get(name); v != "" {
			if requestIDShaped(v) {
				requestID = v
			}
			break
		}
	}
	if d, ok := parseRetryAfter(h.Get("Retry-After"), now); ok && d > 0 {
		retryAfter = d
	}
	return kept, requestID, retryAfter
}

// error returns err with every text that came from outside redacted: a
// new value of the SDK's error types (never err changed in place), and a
// foreign error whose text held a credential replaced by one that says the
// same without it.
func (r *redactor) error(err error) error {
	switch e := err.(type) {
	case nil:
		return nil
	case *APIError:
		out := *e
		out.Reason, out.Message = r.text(e.Reason), r.text(e.Message)
		out.Body = r.bytes(e.Body, len(e.Body) >= maxErrorBody)
		out.Header, out.RequestID = r.header(e.Header), r.requestID(e.RequestID)
		return &out
	case *TokenError:
		out := *e
		out.Code, out.Description = r.text(e.Code), r.text(e.Description)
		out.Header, out.RequestID = r.header(e.Header), r.requestID(e.RequestID)
		return &out
	case *DecodeError:
		out := *e
		out.ContentType = r.cut(e.ContentType)
		out.Body = r.bytes(e.Body, len(e.Body) >= maxDecodeErrorBody)
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
	return escape(truncate(r.text(s), maxPanicText))
}
