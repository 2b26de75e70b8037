// Package echotest spells a text the ways an echo of a credential takes,
// for the tests of what must hold no credential: the redaction engine's,
// the SDK's errors and logs, and whatever else redacts with it.
package echotest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf16"
)

// An Encoding is one spelling of a text.
type Encoding struct {
	Name   string
	Encode func(string) string
	// Core returns the part of Encode(s) that carries s, when that is not
	// all of it: a text inside a longer base64 line leaves the characters
	// of the rest of the line. Nil for all of it.
	Core func(string) string
}

// Held is what of Encode(s) no redacted output may keep: Core(s), or all
// of Encode(s).
func (e Encoding) Held(s string) string {
	if e.Core != nil {
		return e.Core(s)
	}
	return e.Encode(s)
}

// Encodings are the spellings an echo takes in one step: as it is, base64
// (alone, or inside a longer line encoded whole), JSON, HTML,
// percent-encoding and Go quoting.
var Encodings = []Encoding{
	{Name: "raw", Encode: func(s string) string { return s }},
	{Name: "base64", Encode: func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }},
	{Name: "base64 unpadded", Encode: func(s string) string { return base64.RawStdEncoding.EncodeToString([]byte(s)) }},
	{Name: "base64 URL-safe", Encode: func(s string) string { return base64.URLEncoding.EncodeToString([]byte(s)) }},
	{Name: "base64 URL-safe unpadded", Encode: func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }},
	{Name: "query escape", Encode: url.QueryEscape},
	{Name: "path escape", Encode: url.PathEscape},
	{Name: "percent lower case", Encode: func(s string) string { return strings.ToLower(PercentAll(s)) }},
	{Name: "percent upper case", Encode: PercentAll},
	{Name: "JSON", Encode: JSON},
	{Name: "JSON escaped slash", Encode: func(s string) string { return strings.ReplaceAll(JSON(s), "/", `\/`) }},
	{Name: "JSON \\u", Encode: JSONAll},
	{Name: "HTML escape", Encode: html.EscapeString},
	{Name: "HTML decimal references", Encode: func(s string) string { return References(s, "&#%d;") }},
	{Name: "HTML hex references", Encode: func(s string) string { return References(s, "&#x%X;") }},
	{Name: "HTML named references", Encode: strings.NewReplacer("+", "&plus;", "/", "&sol;", "=", "&equals;", ":", "&colon;", ".", "&period;").Replace},
	{Name: "quoted", Encode: strconv.Quote},
	Base64Line(0),
	Base64Line(1),
	Base64Line(2),
}

// Twice are the spellings of an escape applied twice, or of one kind
// inside another.
var Twice = []Encoding{
	{Name: "percent twice", Encode: func(s string) string { return url.QueryEscape(url.QueryEscape(s)) }},
	{Name: "percent of percent", Encode: func(s string) string { return strings.ReplaceAll(PercentAll(s), "%", "%25") }},
	{Name: "percent three times", Encode: func(s string) string {
		return strings.ReplaceAll(strings.ReplaceAll(PercentAll(s), "%", "%25"), "%", "%25")
	}},
	{Name: "HTML in JSON", Encode: func(s string) string { return JSONAll(References(s, "&#x%X;")) }},
	{Name: "HTML twice", Encode: func(s string) string { return html.EscapeString(References(s, "&#x%X;")) }},
	{Name: "percent in HTML", Encode: func(s string) string { return References(PercentAll(s), "&#%d;") }},
	{Name: "percent in JSON", Encode: func(s string) string { return JSONAll(PercentAll(s)) }},
	{Name: "JSON in JSON", Encode: func(s string) string { return JSON(JSONAll(s)) }},
	{Name: "base64 in percent", Encode: func(s string) string { return url.QueryEscape(base64.StdEncoding.EncodeToString([]byte(s))) }},
	// A text holding a percent escape of its own (%7E), quoted in JSON
	// twice: JSON leaves the escape as it is.
	{Name: "JSON in JSON with a literal percent escape", Encode: func(s string) string { return JSON(JSON(s)) }},
}

// lineStart is what a base64 line holds before the text, but for the
// spaces that set its offset: 9 bytes, 3 groups of 3.
const lineStart = `{"said":"`

// Base64Line is the spelling of a text inside a longer line encoded whole
// in standard base64 (a JSON object quoting it, as a proxy that encodes
// what it relays writes it), at offset 0, 1 or 2 of base64's groups of 3
// bytes. Its Core is the run of characters that carry the text's bits.
func Base64Line(offset int) Encoding {
	before := lineStart + strings.Repeat(" ", offset)
	const after = "\"}\n"
	encode := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(before + s + after)) }
	return Encoding{
		Name:   fmt.Sprintf("inside a longer base64 line at offset %d", offset),
		Encode: encode,
		Core: func(s string) string {
			p, n := len(before), len(s)
			return encode(s)[8*p/6 : (8*(p+n)-1)/6+1]
		},
	}
}

// JSON is s as the inside of a JSON string, as encoding/json writes it.
func JSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// JSONAll writes every character of s as a JSON \u escape (a pair of them
// beyond the Basic Multilingual Plane).
func JSONAll(s string) string {
	var b strings.Builder
	for _, u := range utf16.Encode([]rune(s)) {
		fmt.Fprintf(&b, `\u%04x`, u)
	}
	return b.String()
}

// References writes every character of s as a numeric character reference
// of format ("&#%d;", "&#x%X;").
func References(s, format string) string {
	var b strings.Builder
	for _, r := range s {
		fmt.Fprintf(&b, format, r)
	}
	return b.String()
}

// PercentAll writes every byte of s as a %XX escape.
func PercentAll(s string) string {
	var b strings.Builder
	for i := range len(s) {
		fmt.Fprintf(&b, "%%%02X", s[i])
	}
	return b.String()
}
