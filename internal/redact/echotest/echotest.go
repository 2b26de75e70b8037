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
}

// Encodings are the spellings an echo takes in one step: as it is, base64,
// JSON, HTML, percent-encoding and Go quoting.
var Encodings = []Encoding{
	{"raw", func(s string) string { return s }},
	{"base64", func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }},
	{"base64 unpadded", func(s string) string { return base64.RawStdEncoding.EncodeToString([]byte(s)) }},
	{"base64 URL-safe", func(s string) string { return base64.URLEncoding.EncodeToString([]byte(s)) }},
	{"base64 URL-safe unpadded", func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }},
	{"query escape", url.QueryEscape},
	{"path escape", url.PathEscape},
	{"percent lower case", func(s string) string { return strings.ToLower(PercentAll(s)) }},
	{"percent upper case", PercentAll},
	{"JSON", JSON},
	{"JSON escaped slash", func(s string) string { return strings.ReplaceAll(JSON(s), "/", `\/`) }},
	{"JSON \\u", JSONAll},
	{"HTML escape", html.EscapeString},
	{"HTML decimal references", func(s string) string { return References(s, "&#%d;") }},
	{"HTML hex references", func(s string) string { return References(s, "&#x%X;") }},
	{"HTML named references", strings.NewReplacer("+", "&plus;", "/", "&sol;", "=", "&equals;", ":", "&colon;", ".", "&period;").Replace},
	{"quoted", strconv.Quote},
}

// Twice are the spellings of an escape applied twice, or of one kind
// inside another.
var Twice = []Encoding{
	{"percent twice", func(s string) string { return url.QueryEscape(url.QueryEscape(s)) }},
	{"percent of percent", func(s string) string { return strings.ReplaceAll(PercentAll(s), "%", "%25") }},
	{"percent three times", func(s string) string {
		return strings.ReplaceAll(strings.ReplaceAll(PercentAll(s), "%", "%25"), "%", "%25")
	}},
	{"HTML in JSON", func(s string) string { return JSONAll(References(s, "&#x%X;")) }},
	{"HTML twice", func(s string) string { return html.EscapeString(References(s, "&#x%X;")) }},
	{"percent in HTML", func(s string) string { return References(PercentAll(s), "&#%d;") }},
	{"percent in JSON", func(s string) string { return JSONAll(PercentAll(s)) }},
	{"JSON in JSON", func(s string) string { return JSON(JSONAll(s)) }},
	{"base64 in percent", func(s string) string { return url.QueryEscape(base64.StdEncoding.EncodeToString([]byte(s))) }},
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
