package cli

import (
	"unicode/utf8"
)

// Exports spend most of their own time encoding JSON lines; reflection
// and the timestamps' MarshalJSON made an export a fifth slower than
// ranging over the same Users with the SDK. The items of a list (User,
// Thing) are flat: every field a string or null. Their columns say so, so
// a line is appended from them directly, byte for byte what json.Marshal
// writes (TestFlatJSONMatchesMarshal holds it).

// flat reports whether every column's value is a JSON string or null,
// so that appendFlat can encode items.
func flat[T any](cols []column[T]) bool {
	for _, c := range cols {
		if c.raw {
			return false
		}
	}
	return true
}

// appendFlat appends item as a JSON object of its columns, in order.
func appendFlat[T any](b []byte, cols []column[T], item *T) []byte {
	b = append(b, '{')
	for i, c := range cols {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, c.name)
		b = append(b, ':')
		if s, ok := c.value(item); ok {
			b = appendString(b, s)
		} else {
			b = append(b, "null"...)
		}
	}
	return append(b, '}')
}

const hex = "0123456789abcdef"

// appendString appends s as a JSON string, escaped as encoding/json
// escapes it: quotes, backslashes and control characters; <, > and & for
// HTML; U+2028 and U+2029 for JavaScript; invalid UTF-8 as U+FFFD.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
