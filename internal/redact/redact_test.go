package redact

import (
	"encoding/base64"
	"fmt"
	"html"
	"net/url"
	"strings"
	"testing"

	"github.com/serviceconnect/management/internal/redact/echotest"
)

const token = "mgmt-token+/=1"

// encodings are the spellings of an echo that each must be found in.
var encodings = append(append([]echotest.Encoding(nil), echotest.Encodings...), echotest.Twice...)

var (
	jsonString = echotest.JSON
	jsonAll    = echotest.JSONAll
	references = echotest.References
	percentAll = echotest.PercentAll
)

func TestEveryEncodingIsRedacted(t *testing.T) {
	for _, cred := range []string{token, "Bearer " + token, `back\slash%25&amp;"quote"`, "s3cr3t wïth ünïcode 😀", `tok%7E\n"x"`} {
		r := New(cred)
		for _, enc := range encodings {
			echo := enc.Encode(cred)
			text := "before " + echo + " after"
			got := r.Text(text)
			if want := "before " + Marker + " after"; got != want && !(strings.HasPrefix(got, "before ") && strings.HasSuffix(got, " after") && strings.Contains(got, Marker)) {
				t.Errorf("%q, %s: %q became %q; want %q", cred, enc.Name, text, got, want)
			}
			if held := enc.Held(cred); strings.Contains(got, held) {
				t.Errorf("%q, %s: %q survives in %q", cred, enc.Name, held, got)
			}
		}
	}
}

// An echo is replaced whole, and only the echo.
func TestSpansAreTheEchoes(t *testing.T) {
	r := New(token)
	for text, want := range map[string]string{
		"a " + token + " b " + token:                   "a REDACTED b REDACTED",
		token + token:                                  "REDACTED",
		`{"m":"` + jsonAll(token) + `"}`:               `{"m":"REDACTED"}`,
		"/x/" + url.PathEscape(token) + "/y":           "/x/REDACTED/y",
		"q=" + url.QueryEscape(url.QueryEscape(token)): "q=REDACTED",
		"mgmt-token+/=":                                "mgmt-token+/=",
		"":                                             "",
		"nothing here":                                 "nothing here",
	} {
		if got := r.Text(text); got != want {
			t.Errorf("Text(%q) = %q, want %q", text, got, want)
		}
	}
}

// A short credential is found where neither neighbour is an ASCII
// letter or digit, in every form and reading; the rest of the text stays.
func TestShortCredentials(t *testing.T) {
	r := New("Bearer qzx7k", "qzx7k")
	for text, want := range map[string]string{
		"User u-9 was not found":            "User u-9 was not found",
		"token qzx7k refused":               "token REDACTED refused",
		`{"t":"qzx7k"}`:                     `{"t":"REDACTED"}`,
		"/users/qzx7k/things":               "/users/REDACTED/things",
		"qzx7k":                             "REDACTED",
		"aqzx7k qzx7kb qzx7k9 9qzx7k":       "aqzx7k qzx7kb qzx7k9 9qzx7k",
		"t=" + percentAll("qzx7k") + "&x":   "t=REDACTED&x",
		"t=" + references("qzx7k", "&#%d;"): "t=REDACTED",
		`"` + jsonAll("qzx7k") + `"`:        `"REDACTED"`,
		"b=" + base64.RawStdEncoding.EncodeToString([]byte("qzx7k")) + ".": "b=REDACTED.",
		"Authorization: Bearer qzx7k":                                      "Authorization: REDACTED",
	} {
		if got := r.Text(text); got != want {
			t.Errorf("Text(%q) = %q, want %q", text, got, want)
		}
	}
}

// A cut text loses a start of a form at its end, raw or escaped, also one
// followed by an escape the cut split.
func TestCutTexts(t *testing.T) {
	r := New(token)
	for _, tail := range []string{
		token[:5], token[:1], percentAll(token)[:11], percentAll(token)[:10], references(token, "&#x%x;")[:14],
		`mgmt\u002d`, `mgmt\u00`, `mgmt\`, "mgmt%2", "mgmt%", "mgmt&#x2", "mgmt&am", strings.ReplaceAll(percentAll(token), "%", "%25")[:16],
		jsonAll(references(token, "&#x%x;"))[:40],
	} {
		text := "kept text; " + tail
		if got, want := r.Cut(text), "kept text; "+Marker; got != want {
			t.Errorf("Cut(%q) = %q, want %q", text, got, want)
		}
		if got := r.Text(text); got != text {
			t.Errorf("Text(%q) = %q; want it unchanged (not cut)", text, got)
		}
	}
	if got := r.Cut("kept text"); got != "kept text" {
		t.Errorf("Cut of a text that ends with no start of a form = %q", got)
	}
	short := New("qzx7k")
	for text, want := range map[string]string{"a qzx": "a REDACTED", "aqzx": "aqzx", "a /qz": "a /REDACTED"} {
		if got := short.Cut(text); got != want {
			t.Errorf("short Cut(%q) = %q, want %q", text, got, want)
		}
	}
}

// adversarial returns n bytes of text made to make a redactor work: runs
// of escape characters, chains of escapes of escapes, alternating kinds,
// and starts of the credential's forms that never finish.
func adversarial(n int, cred string) string {
	unit := strings.Repeat(`\`, 63) + `%25%25%252` + `&amp;amp;amp;#x` + `\u0026#x5c;%5C\\&#92;` + cred[:len(cred)-1] + "+%2B&#43;\\u00" + jsonAll(cred[:len(cred)/2])
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(unit)
	}
	return b.String()[:n]
}

// escapeCredentials are credentials made of the characters that start
// escapes: the End User chooses the token the service quotes.
var escapeCredentials = []string{
	"Bearer " + strings.Repeat(`\`, 64),
	strings.Repeat(`%25`, 20),
	strings.Repeat(`&amp;`, 12),
	strings.Repeat(`\%&+`, 16),
	token,
	"aaaaaaaaaaaaaaaaaaaaaaaaab",
}

// redact is Redact that also says how many occurrences were found.
func (r *Redactor) redact(s string, cut bool) (steps, found int) {
	st := search{r: r, s: s, cut: cut}
	st.run()
	st.result()
	return st.steps, st.found
}

// manyCredentials returns n credentials of 24 random-looking characters,
// different from each other and from every escape credential.
func manyCredentials(n int) []string {
	const chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	out := make([]string, n)
	x := uint64(0x9e3779b97f4a7c15)
	for i := range out {
		var b [24]byte
		for k := range b {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			b[k] = chars[x%64]
		}
		out[i] = string(b[:])
	}
	return out
}

// The steps never exceed the bound (StepsPerByte × n, and PerOccurrence
// for each occurrence found), grow as n does, and do not grow with the
// number of credentials. With more of them, more bytes start a form, and
// the automaton steps where it skipped: the steps per byte rise to a
// ceiling, which 101 credentials reach (501 take as many, within 5%; 2
// take at most 25% fewer).
func TestStepsAreLinear(t *testing.T) {
	for _, cred := range escapeCredentials {
		var byCreds []float64
		for _, more := range []int{0, 9, 99, 499} {
			r := New(append([]string{cred, "Bearer " + cred}, manyCredentials(more)...)...)
			var perByte []float64
			sizes := []int{1 << 10, 1 << 12, 1 << 14}
			if more > 0 { // the number of credentials at one size
				sizes = sizes[1:2]
			}
			for _, n := range sizes {
				texts := []string{adversarial(n, cred)}
				if n < 1<<14 && more == 0 { // the bound is per byte: the other texts at the smaller sizes
					texts = append(texts, strings.Repeat(`\`, n), strings.Repeat(cred[:len(cred)-1], n/(len(cred)-1)+1)[:n], strings.Repeat("a", n))
				}
				for i, text := range texts {
					for _, cut := range []bool{false, true} {
						steps, found := r.redact(text, cut)
						if bound := r.bound(len(text), found); steps > bound {
							t.Errorf("credential %.20q, %d bytes: %d steps, more than the bound %d", cred, len(text), steps, bound)
						}
						if found > len(text) {
							t.Errorf("credential %.20q, %d bytes: %d occurrences", cred, len(text), found)
						}
						if i == 0 && cut {
							perByte = append(perByte, float64(steps)/float64(n))
						}
					}
				}
			}
			if more == 0 && perByte[2] > perByte[0]*1.1 {
				t.Errorf("credential %.20q: steps per byte %v grow with the text", cred, perByte)
			}
			byCreds = append(byCreds, perByte[len(perByte)/2])
		}
		if byCreds[3] > byCreds[2]*1.05 || byCreds[2] > byCreds[0]*1.25 {
			t.Errorf("credential %.20q: steps per byte %v with 2, 11, 101 and 501 credentials grow with their number", cred, byCreds)
		}
	}
}

// Each Span names the credential whose echo it is, by its index in the
// order given to New and With (an empty one counted).
func TestSpansNameTheirCredential(t *testing.T) {
	creds := manyCredentials(50)
	r := New(creds[:30]...).With(append([]string{""}, creds[30:]...)...)
	for _, i := range []int{0, 7, 29, 30, 49} {
		for _, enc := range encodings {
			text := "x " + enc.Encode(creds[i]) + " y"
			spans := r.Spans(text, false)
			want := i
			if i >= 30 {
				want++ // the empty one
			}
			if len(spans) != 1 || spans[0].Cred != want {
				t.Errorf("credential %d in %s: spans %v, want one of credential %d", i, enc.Name, spans, want)
			}
		}
		text := "cut " + creds[i][:12]
		if spans := r.Spans(text, true); len(spans) != 1 || spans[0].Cred != i+boolInt(i >= 30) {
			t.Errorf("credential %d cut: spans %v", i, spans)
		}
	}
}

// Echoes side by side are two spans, each named by its own credential;
// overlapping ones, one, named by the one that starts first.
func TestSpansOfNeighbours(t *testing.T) {
	r := New("token-aaaa-1111", "token-bbbb-2222")
	over := r.With("1111token-bbbb-2222x")
	for text, want := range map[string][]Span{
		"token-aaaa-1111token-bbbb-2222!":  {{0, 15, 0}, {15, 30, 1}},
		"token-aaaa-1111 token-bbbb-2222!": {{0, 15, 0}, {16, 31, 1}},
	} {
		if got := r.Spans(text, false); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("Spans(%q) = %v, want %v", text, got, want)
		}
	}
	for text, want := range map[string][]Span{
		"token-aaaa-1111token-bbbb-2222x": {{0, 31, 0}},
		"1111token-bbbb-2222x":            {{0, 20, 2}},
	} {
		if got := over.Spans(text, false); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("Spans(%q) = %v, want %v", text, got, want)
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Forms are deduplicated as the trie is made (not by a scan of the forms
// made before, quadratic in them): credentials given twice make as many
// forms as once, and are named by their first index.
func TestNewDedupesForms(t *testing.T) {
	creds := manyCredentials(500)
	r := New(append(creds, creds...)...)
	if one := New(creds[0]); r.Forms() != 500*one.Forms() {
		t.Errorf("%d forms for 500 credentials given twice, want %d", r.Forms(), 500*one.Forms())
	}
	if spans := r.Spans(creds[499], false); len(spans) != 1 || spans[0].Cred != 499 {
		t.Errorf("a credential given twice is named %v; want the first", spans)
	}
}

// Each echo in a long adversarial text is found.
func TestAdversarialTextStillRedacts(t *testing.T) {
	cred := "Bearer " + strings.Repeat(`\`, 64)
	r := New(cred)
	text := adversarial(1<<12, cred) + jsonString(cred) + adversarial(1<<10, cred)
	got := r.Text(text)
	if strings.Contains(got, jsonString(cred)) || !strings.Contains(got, Marker) {
		t.Errorf("the JSON echo survives")
	}
}

func TestWithKeepsTheOriginal(t *testing.T) {
	r := New(token)
	both := r.With("eu-echo-token-9")
	if got := r.Text("eu-echo-token-9"); got != "eu-echo-token-9" {
		t.Errorf("the original redactor changed: %q", got)
	}
	if got := both.Text(token + " eu-echo-token-9"); got != "REDACTED REDACTED" {
		t.Errorf("With: %q", got)
	}
}

func TestLongCredentialsAreBounded(t *testing.T) {
	long := strings.Repeat("k7Q", 5000)
	r := New(long)
	for _, f := range r.parts[0].forms {
		if len(f.s) > maxFormLen {
			t.Errorf("a form of %d bytes", len(f.s))
		}
	}
	if got := r.Text("x " + long + " y"); got != "x REDACTED y" {
		t.Errorf("the long credential is kept as %.40q; want it redacted whole", got)
	}
	if steps, found := r.redact(strings.Repeat(long, 3), false); steps > r.bound(3*len(long), found) {
		t.Errorf("%d steps for a periodic long credential", steps)
	}
	if got := r.Text("x " + base64.StdEncoding.EncodeToString([]byte(long)) + " y"); strings.Contains(got, base64.StdEncoding.EncodeToString([]byte(long))[:100]) {
		t.Errorf("the long credential's base64 survives: %.40q", got)
	}
}

// BenchmarkAdversarial is the time per byte of redacting adversarial text
// of 1 KiB, 64 KiB and 1 MiB: flat, as the work is linear; and the steps
// per byte, which do not depend on the machine.
func BenchmarkAdversarial(b *testing.B) {
	cred := "Bearer " + strings.Repeat(`\`, 64)
	creds := []string{cred, strings.Repeat(`\`, 64), "client-secret-value", "client-id:client-secret-value", "mgmt-token-value-1", "Bearer mgmt-token-value-1"}
	r := New(creds...)
	for _, n := range []int{1 << 10, 64 << 10, 1 << 20} {
		text := adversarial(n, cred)
		b.Run(fmt.Sprintf("bytes=%d", n), func(b *testing.B) {
			b.SetBytes(int64(n))
			b.ReportAllocs()
			var steps int
			for b.Loop() {
				_, steps = r.Redact(text, true)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/byte")
			b.ReportMetric(float64(steps)/float64(n), "steps/byte")
		})
	}
	// The same text with 1, 10 and 100 credentials of 24 characters
	// besides: the steps per byte do not depend on their number.
	text := adversarial(64<<10, cred)
	for _, n := range []int{1, 10, 100} {
		r := New(append(creds, manyCredentials(n)...)...)
		b.Run(fmt.Sprintf("credentials=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			var steps int
			for b.Loop() {
				_, steps = r.Redact(text, true)
			}
			b.ReportMetric(float64(steps)/float64(len(text)), "steps/byte")
		})
	}
}

// An echo whose first characters read as one escape with an escape
// character just before it is found too.
func TestEchoStartingInsideAnEscape(t *testing.T) {
	for cred, text := range map[string]string{
		"C5wQ7Q7Q7Q7 s":    `\0%C5wQ7Q7Q7Q7%20s0`,
		`n0t"okenvalue`:    `path\n0t\"okenvalue!`,
		"amp;token value":  "x&amp;token&#32;value",
		"4142token+/value": "100%4142token%2B%2Fvalue.",
	} {
		got := New(cred).Text(text)
		if !strings.Contains(got, Marker) || strings.Contains(got, cred[2:6]) {
			t.Errorf("%q in %q: %q", cred, text, got)
		}
	}
}

// BenchmarkPlain is the time per byte of redacting a service's ordinary
// answer: JSON without escapes, and with a few.
func BenchmarkPlain(b *testing.B) {
	r := New("client-secret-value", "client-id:client-secret-value", "mgmt-token-value-1", "Bearer mgmt-token-value-1", "Bearer eu-token-value-1", "eu-token-value-1")
	for name, unit := range map[string]string{
		"ascii":   `{"reason":"COMMON.ENTITY_NOT_FOUND","error_message":"User u-9 was not found"} `,
		"escapes": `{"reason":"COMMON.REQUEST_VALIDATION","error_message":"page \u003c1\u003e of /users?x=a%20b&amp;c"} `,
	} {
		text := strings.Repeat(unit, 4096/len(unit)+1)[:4096]
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				r.Text(text)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(text)), "ns/byte")
		})
	}
}

// A credential inside a longer text encoded whole in base64 (a header
// line, a JSON object) is found at every offset, in every base64 form:
// the run of characters that carry its bits is redacted, from the first
// to the last (with the padding that follows it), and nothing else.
func TestBase64LinesAtEveryAlignment(t *testing.T) {
	encodings := map[string]*base64.Encoding{
		"standard": base64.StdEncoding, "standard unpadded": base64.RawStdEncoding,
		"URL-safe": base64.URLEncoding, "URL-safe unpadded": base64.RawURLEncoding,
	}
	for _, cred := range []string{token, "Bearer " + token, "8bytes!!", "s3cr3t wïth ünïcode 😀", strings.Repeat("~?>", 11)} {
		r := New(cred)
		for _, prefix := range []string{"", "a", "ab", "abc", "Authorization: Bearer ", `{"secret":"`, "xyzw"} {
			for _, suffix := range []string{"", "\"", "\r\n", "\"}\n"} {
				line := prefix + cred + suffix
				p, n := len(prefix), len(cred)
				first, last := 8*p/6, (8*(p+n)-1)/6 // the characters that carry the credential's bits
				for name, enc := range encodings {
					echo := enc.EncodeToString([]byte(line))
					end := last + 1
					if suffix == "" {
						end = len(echo) // its padding too
					}
					text := "said: " + echo + " (echo)"
					want := "said: " + echo[:first] + Marker + echo[end:] + " (echo)"
					if got := r.Text(text); got != want {
						t.Errorf("%q at offset %d, %s:\n%q became\n%q, want\n%q", cred, p, name, text, got, want)
					}
				}
			}
		}
	}
}

// A credential too short for its base64 middles to span 2 whole groups of
// 4 characters is not searched for inside a longer base64 text, and the
// short-credential rule holds for its whole base64 forms: a text whose
// base64 happens to hold a few of the same characters is kept.
func TestBase64MiddlesOfShortCredentials(t *testing.T) {
	r := New("qzx7k1")
	for _, a := range []int{0, 1, 2} {
		if _, _, _, ok := middle("qzx7k1", a); ok != (a == 0) {
			t.Errorf("the middle of a 6-byte credential at alignment %d searched: %v", a, ok)
		}
	}
	line := base64.StdEncoding.EncodeToString([]byte("a qzx7k1 b"))
	if got := r.Text(line); got != line {
		t.Errorf("%q became %q; a 6-byte credential's middle at alignment 2 spans one group only", line, got)
	}
	for text, want := range map[string]string{
		"idcXp4N2s":            "idcXp4N2s",
		"id cXp4N2sx and more": "id cXp4N2sx and more",
		"id cXp4N2s and more":  "id REDACTED and more",
		"b=" + base64.StdEncoding.EncodeToString([]byte("qzx7k")): "b=REDACTED",
	} {
		if got := New("qzx7k").Text(text); got != want {
			t.Errorf("Text(%q) = %q, want %q", text, got, want)
		}
	}
}

// A cut text that ends inside a base64 echo of a credential, at any
// alignment, loses it from its first character that carries the
// credential's bits: at the first alignment from its first character, as
// the whole base64 forms did; at the others, from 4 characters of the
// middle on (a start that short is the end of too many texts).
func TestCutBase64Lines(t *testing.T) {
	r := New(token)
	for p := range 3 {
		echo := base64.StdEncoding.EncodeToString([]byte("Bearer "[:p] + token + " and more"))
		first := 8 * p / 6
		for _, cut := range []int{first + 5, first + 8, len(echo) - 14} {
			text := "kept; " + echo[:cut]
			if got, want := r.Cut(text), "kept; "+echo[:first]+Marker; got != want {
				t.Errorf("offset %d, cut at %d: Cut(%q) = %q, want %q", p, cut, text, got, want)
			}
		}
	}
	if got := r.Cut("kept text"); got != "kept text" {
		t.Errorf("Cut(%q) = %q", "kept text", got)
	}
	whole := base64.StdEncoding.EncodeToString([]byte(token))
	if got := r.Cut("kept; " + whole[:1]); got != "kept; "+Marker {
		t.Errorf("Cut(%q) = %q", "kept; "+whole[:1], got)
	}
}

// A credential that holds escapes of its own (a literal %7E, &amp;, \n),
// echoed under layers of JSON and HTML that leave them as they are, is
// found: decoding every kind at once would decode them too.
func TestCredentialsHoldingEscapes(t *testing.T) {
	jsonIn := func(s string) string { return jsonString(s) }
	for _, cred := range []string{`mgmt-token%7E"quoted"`, `eu<token>%7E&amp;x`, `back\slash%25&amp;"quote"`, "plus+and%2B<percent>", `nl\nand<lt>%41`} {
		r := New(cred)
		for name, echo := range map[string]string{
			"JSON in JSON":         jsonIn(jsonIn(cred)),
			"JSON three times":     jsonIn(jsonIn(jsonIn(cred))),
			"HTML in JSON":         jsonIn(html.EscapeString(cred)),
			"JSON in HTML":         html.EscapeString(jsonIn(cred)),
			"HTML in HTML":         html.EscapeString(html.EscapeString(cred)),
			"HTML in JSON in JSON": jsonIn(jsonIn(html.EscapeString(cred))),
		} {
			if name == "HTML in JSON in JSON" && strings.Contains(cred, `\`) {
				continue // three layers of two kinds: read all at once, which decodes a \n
			}
			text := `{"m":"saw ` + echo + ` here"}`
			if got, want := r.Text(text), `{"m":"saw REDACTED here"}`; got != want {
				t.Errorf("%q, %s: %q became %q, want %q", cred, name, text, got, want)
			}
		}
	}
}

// maxDecodings is every family's depths.
func TestFamilies(t *testing.T) {
	n := 0
	for _, f := range families {
		if len(f) == 0 || len(f) > maxDepth {
			t.Errorf("a family of %d decodings", len(f))
		}
		n += len(f)
	}
	if n != maxDecodings {
		t.Errorf("the families decode %d times; maxDecodings is %d", n, maxDecodings)
	}
}

// An echo encoded twice or three times whose first characters the first
// decoding took with an escape character just before it is found too.
func TestEncodedEchoStartingInsideAnEscape(t *testing.T) {
	q := url.QueryEscape
	for _, c := range []struct{ cred, before, echo string }{
		{`E3"quoted\value`, `\u00`, jsonString(jsonString(`E3"quoted\value`))},
		{"4Bxy z/token", "100%", q(q("4Bxy z/token"))},
		{"4Bxy z/token", "100%", q(q(q("4Bxy z/token")))},
		{"amp;token <v>", "x&", html.EscapeString(html.EscapeString("amp;token <v>"))},
		{`C5wQ7 "s"`, "50%", jsonString(q(`C5wQ7 "s"`))},
	} {
		text := "said " + c.before + c.echo + " here"
		got := New(c.cred).Text(text)
		if !strings.HasPrefix(got, "said ") || !strings.HasSuffix(got, Marker+" here") {
			t.Errorf("%q in %q: %q", c.cred, text, got)
		}
	}
}
