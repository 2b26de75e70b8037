package management

import (
	"fmt"
	"iter"
	"net/url"
	"strconv"
	"strings"
)

// Path safety. Every id a caller passes becomes one escaped path segment
// that no server can read as "." or "..", and every next_page link the
// service sends is followed only when it is a path under the base URL:
// the Authorization header travels nowhere else, and no request climbs out
// of the resource it names.

// pathSegment escapes an identifier as one path segment, so that "/", "?",
// "#", "%", ";" and spaces reach the service as part of it. Empty and
// white-space-only identifiers are refused, and so are those a server could resolve as a dot
// segment, and so climb out of the resource's path: ".", "..", "..;x" (a
// servlet container drops the ";x" path parameter), and any identifier that
// holds such a part between slashes or backslashes, as given or
// percent-decoded, since some proxies decode %2F before they resolve dot
// segments (see dotSegment and decodings), and any identifier whose
// escapes are nested deeper than maxDecodings.
func pathSegment(name, id string) (string, error) {
	if strings.TrimSpace(id) == "" {
		// Only white space is no identifier: the service would answer 404
		// or 405 for a path that names no resource.
		return "", errorf("%w: %s is empty or only white space", ErrInvalidArgument, name)
	}
	if dotIdentifier(id) {
		return "", errorf("%w: %s %.80q could be resolved as a dot segment", ErrInvalidArgument, name, id)
	}
	return url.PathEscape(id), nil
}

// dotIdentifier reports whether a server could read a part of the path
// segment that carries id as "." or "..". The server sees id once it has
// decoded the segment, so id itself is the first form checked. An id whose
// escapes are nested deeper than maxDecodings could be too.
func dotIdentifier(id string) bool {
	if nestedTooDeep(id) {
		return true
	}
	for form := range decodings(id) {
		if dotSegment(form) {
			return true
		}
	}
	return false
}

// checkPageLink reports whether link, a next_page value, may be requested
// as c.baseURL+link. The service's links are a path plus a query, appended to the base
// URL as they stand; anything that could reach another host or scheme,
// climb out of the base path, or be re-encoded on the way is refused, so
// that our Authorization header only ever travels where it belongs. The
// link came from outside: its error names it as r redacts it.
func (c *Client) checkPageLink(link string, r *redactor) error {
	problem := linkProblem(link)
	if problem == "" {
		problem = c.urlProblem(link)
	}
	if problem != "" {
		return errorf("%w %s: %s", ErrInvalidPageLink, r.linkText(link), problem)
	}
	return nil
}

// urlProblem says what is wrong with c.baseURL+link, a link linkProblem
// accepted, once parsed, or "" when it is the base URL's scheme and host,
// under its path, with the link unchanged: belt and braces.
func (c *Client) urlProblem(link string) string {
	base, basePath := c.base, c.basePath
	u, err := url.Parse(c.baseURL + link)
	linkPath, linkQuery, _ := strings.Cut(link, "?")
	switch {
	case err != nil:
		return "not a valid URL path"
	case u.Scheme != base.Scheme || u.Host != base.Host || u.User != nil || u.Opaque != "":
		return "leaves the base URL's host"
	case !underPath(u.Path, base.Path):
		return "leaves the base URL's path"
	case u.EscapedPath() != basePath+linkPath || u.RawQuery != linkQuery:
		return "would not be sent as given"
	}
	return ""
}

// linkProblem says what is wrong with link, or "" when it is a path (plus
// query) starting with a single "/", of printable ASCII without backslash
// or fragment, and without a segment that a server could resolve as "." or
// ".." and so climb out of the base path (see dotSegment).
func linkProblem(link string) string {
	switch {
	case link == "":
		return "empty"
	case link[0] != '/':
		return "not a path starting with /"
	case len(link) > 1 && link[1] == '/':
		return "starts with // (another host)"
	}
	for i := 0; i < len(link); i++ {
		switch b := link[i]; {
		case b <= ' ' || b >= 0x7f:
			return "holds a space, a control or a non-ASCII character"
		case b == '\\':
			return "holds a backslash"
		case b == '#':
			return "holds a fragment"
		}
	}
	p, _, _ := strings.Cut(link, "?")
	if _, err := url.PathUnescape(p); err != nil {
		return "holds an invalid escape"
	}
	// Checked decoded too, as often as it decodes: a proxy and a server may
	// each decode %2e, %2f, %3b and %5c before they resolve dot segments.
	if nestedTooDeep(p) {
		return fmt.Sprintf("holds percent-escapes nested more than %d deep", maxDecodings)
	}
	for form := range decodings(p) {
		switch {
		case strings.Contains(form, `\`):
			return "holds an escaped backslash"
		case dotSegment(form):
			return "holds a dot segment"
		}
	}
	return ""
}

// dotSegment reports whether a server could read a segment of p as "." or
// "..". Segments end at '/' and at '\' (which some servers take for one),
// and a segment's ";" path parameter is dropped first, as servlet
// containers do: "..;x" and ".;" are dot segments.
func dotSegment(p string) bool {
	for seg := range strings.FieldsFuncSeq(p, isPathSeparator) {
		seg, _, _ = strings.Cut(seg, ";")
		if seg == "." || seg == ".." {
			return true
		}
	}
	return false
}

func isPathSeparator(r rune) bool { return r == '/' || r == '\\' }

// maxDecodings is how many times over a path or an id is decoded to be
// checked: more than any chain of proxies and servers decodes. A text whose
// escapes are nested deeper is refused (nestedTooDeep): checking it as
// often as it decodes would take time quadratic in its length.
const maxDecodings = 4

// decodings yields s, then s percent-decoded once, twice, and so on until
// nothing is left to decode, at most maxDecodings times: "%252e" yields
// "%252e", "%2e" and ".". Each round decodes the valid escapes and keeps
// the others, as a lenient server would.
func decodings(s string) iter.Seq[string] {
	return func(yield func(string) bool) {
		for range maxDecodings {
			if !yield(s) {
				return
			}
			next := lenientUnescape(s)
			if next == s {
				return
			}
			s = next
		}
		yield(s)
	}
}

// nestedTooDeep reports whether s still decodes after maxDecodings rounds.
func nestedTooDeep(s string) bool {
	for range maxDecodings {
		s = lenientUnescape(s)
	}
	return lenientUnescape(s) != s
}

// lenientUnescape decodes every valid %XX escape of s and keeps the rest.
func lenientUnescape(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil {
				b.WriteByte(byte(v))
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// underPath reports whether p is base or below it, at a segment boundary.
func underPath(p, base string) bool {
	base = strings.TrimSuffix(base, "/")
	if base == "" {
		return strings.HasPrefix(p, "/")
	}
	rest, ok := strings.CutPrefix(p, base)
	return ok && (rest == "" || rest[0] == '/')
}
