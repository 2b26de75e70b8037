package redact

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// decode reads text once, decoding the escapes of kind k: it appends the
// reading to out and, for each of its bytes, to start where in st.s the
// escape it came from starts (from maps text's bytes; nil: text is st.s).
// It also returns the kinds of escape the reading's characters could start
// (for the next depth), and whether it decoded any escape. With note, it
// notes in st.escapes each escape of more than one character it decoded.
func (st *search) decode(text string, from []int32, k kind, out []byte, start []int32, note bool) ([]byte, []int32, kind, bool) {
	var holds kind
	changed := false
	for i := 0; i < len(text); {
		// The bytes up to the next one that starts an escape of k, as they are.
		j := i
		for j < len(text) && startKind[text[j]]&k == 0 {
			holds |= startKind[text[j]]
			j++
		}
		if j > i {
			st.steps += j - i
			out = append(out, text[i:j]...)
			if from != nil {
				start = append(start, from[i:j]...)
			} else {
				for p := i; p < j; p++ {
					start = append(start, int32(p))
				}
			}
			if i = j; i == len(text) {
				break
			}
		}
		st.steps++
		var v [utf8.UTFMax]byte
		nv, n := 0, 0
		switch c := text[i]; starts(c) & k {
		case kJSON:
			nv, n = st.jsonEscape(text[i:], &v)
		case kHTML:
			nv, n = st.htmlReference(text[i:], &v)
		case kPercent:
			nv, n = st.percentEscape(text[i:], &v)
		case kPlus:
			v[0], nv, n = ' ', 1, 1
		}
		at := int32(orig(from, i))
		if n == 0 { // not an escape: the byte as it is
			v[0], nv, n = text[i], 1, 1
		} else {
			changed = true
		}
		for _, b := range v[:nv] {
			out = append(out, b)
			start = append(start, at)
			holds |= starts(b)
		}
		if note && n > 1 {
			st.escapes = append(st.escapes, escape{in: int32(i), end: int32(i + n), next: int32(len(out))})
		}
		i += n
	}
	return out, start, holds, changed
}

// jsonEscape reads the JSON string escape at the start of s into v: its
// length in v and in s, or 0, 0.
func (st *search) jsonEscape(s string, v *[utf8.UTFMax]byte) (int, int) {
	if len(s) < 2 {
		return 0, 0
	}
	st.steps++
	switch s[1] {
	case '"', '\\', '/':
		v[0] = s[1]
	case 'b':
		v[0] = '\b'
	case 'f':
		v[0] = '\f'
	case 'n':
		v[0] = '\n'
	case 'r':
		v[0] = '\r'
	case 't':
		v[0] = '\t'
	case 'u':
		r, ok := st.hex4(s[2:])
		if !ok {
			return 0, 0
		}
		n := 6
		if utf16.IsSurrogate(r) && len(s) >= 12 && s[6] == '\\' && s[7] == 'u' {
			st.steps += 2
			if lo, ok := st.hex4(s[8:]); ok {
				if pair := utf16.DecodeRune(r, lo); pair != utf8.RuneError {
					r, n = pair, 12
				}
			}
		}
		return utf8.EncodeRune(v[:], r), n
	default:
		return 0, 0
	}
	return 1, 2
}

// hex4 reads four hexadecimal digits.
func (st *search) hex4(s string) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for i := range 4 {
		st.steps++
		d, ok := hexDigit(s[i])
		if !ok {
			return 0, false
		}
		r = r<<4 | rune(d)
	}
	return r, true
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// percentEscape reads the %XX escape at the start of s into v.
func (st *search) percentEscape(s string, v *[utf8.UTFMax]byte) (int, int) {
	if len(s) < 3 {
		return 0, 0
	}
	st.steps += 2
	hi, ok1 := hexDigit(s[1])
	lo, ok2 := hexDigit(s[2])
	if !ok1 || !ok2 {
		return 0, 0
	}
	v[0] = hi<<4 | lo
	return 1, 3
}

// maxReference is the longest character reference read, `&#x10FFFF;`
// (and the longest name below).
const maxReference = 10

// htmlNames are the named character references of ASCII punctuation:
// those an HTML page may write a credential's characters with.
var htmlNames = [...]struct {
	name string
	c    byte
}{
	{"amp", '&'}, {"lt", '<'}, {"gt", '>'}, {"quot", '"'}, {"apos", '\''}, {"sol", '/'}, {"bsol", '\\'},
	{"plus", '+'}, {"equals", '='}, {"colon", ':'}, {"semi", ';'}, {"period", '.'}, {"comma", ','},
	{"lowbar", '_'}, {"num", '#'}, {"percnt", '%'}, {"excl", '!'}, {"quest", '?'}, {"dollar", '$'},
	{"lpar", '('}, {"rpar", ')'}, {"ast", '*'}, {"commat", '@'}, {"lsqb", '['}, {"rsqb", ']'},
	{"lcub", '{'}, {"rcub", '}'}, {"verbar", '|'}, {"grave", '`'}, {"hat", '^'},
}

// htmlReference reads the character reference at the start of s into v:
// `&name;` for the names above (in any case), `&#DDD;` or `&#xHHH;`.
func (st *search) htmlReference(s string, v *[utf8.UTFMax]byte) (int, int) {
	window := s[:min(len(s), maxReference+1)]
	st.steps += len(window) - 1
	semi := strings.IndexByte(window, ';')
	if semi < 2 {
		return 0, 0
	}
	name := s[1:semi]
	if name[0] != '#' {
		for _, e := range htmlNames {
			if strings.EqualFold(name, e.name) {
				v[0] = e.c
				return 1, semi + 1
			}
		}
		return 0, 0
	}
	digits, base := name[1:], rune(10)
	if digits != "" && (digits[0] == 'x' || digits[0] == 'X') {
		digits, base = digits[1:], 16
	}
	if digits == "" {
		return 0, 0
	}
	var r rune
	for i := range len(digits) {
		d, ok := hexDigit(digits[i])
		if !ok || rune(d) >= base {
			return 0, 0
		}
		r = r*base + rune(d)
		if r > utf8.MaxRune {
			return 0, 0
		}
	}
	if r == 0 {
		return 0, 0
	}
	return utf8.EncodeRune(v[:], r), semi + 1
}
