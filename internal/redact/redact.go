// Package redact finds credentials in texts and replaces them with
// Marker, whatever form an echo of them takes, in time linear in the
// text's length. The SDK passes every text that came from outside through
// it (the root package's redact.go binds it to a Client's credentials);
// whatever else must hold no credential (a recording of answers) can use
// it too.
//
// A credential is searched for as it is and in base64, standard and
// URL-safe, padded or not, also where it is a part of a longer text
// encoded whole, at any of the three alignments with base64's groups (see
// spellings). A text is searched in every reading an echo may need: as
// written, and decoded by families of escapes (JSON string escapes; HTML
// character references; percent-encoding, with and without '+' for a
// space), up to three times over, so that escapes applied twice or three
// times (%252B, \u0026#x2B;) are read too, and so that a credential's own
// escapes (a token holding %7E) are left as they are where the layers
// around it did not escape them (see families).
//
// Each reading is decoded in one pass that notes, for each byte, where the
// escape it came from starts in the text, and every form of every
// credential is found in it at once by one automaton (automaton.go):
// nothing backtracks, the work does not grow with the number of
// credentials, and a reading that an earlier one already was (the same
// escapes decoded, or the same text) is not searched again. A Redactor
// counts its steps (the bytes it examines over all readings), and they
// never exceed StepsPerByte × len(text), but for the occurrences found
// (see StepsPerByte).
//
// An echo may start inside an escape, when the text before it ends with an
// escape character that reads as one with the echo's first characters
// ("100%" before "C5..." reads "%C5"): a second search starts in each
// escape a reading decodes and, for an echo encoded more than once, in
// each escape the decodings before it took (see straddle.go).
package redact

import (
	"encoding/base64"
	"hash/maphash"
	"slices"
	"strings"
)

// Marker replaces each credential found.
const Marker = "REDACTED"

// MinLen is the length from which a form is found wherever it appears. A
// shorter one (a test's token "tok-1") would also match inside words and
// identifiers: it is found only where neither neighbour, in the reading
// where it is found, is an ASCII letter or digit. Where that is wrong, it
// is wrong by redacting more.
const MinLen = 8

// maxFormLen bounds a form: a longer credential is searched for by its
// first maxFormLen bytes, and what follows them in the text is redacted
// with them as far as it goes on like the credential; its base64 forms are
// searched for by the encoding of its first maxFormLen/4*3 bytes, which is
// the start of the whole one's, and redacted that far. (The SDK's texts are
// shorter than that: a longer form could only be found cut.)
const maxFormLen = 4096

// maxDepth is how many times over a family of escapes decodes a text.
const maxDepth = 3

// maxEscape is the longest escape read, `\uXXXX\uXXXX`: a text cut at
// most this far after the start of an escape may have split it.
const maxEscape = 12

// The escapes a reading decodes, and the characters that start them.
type kind uint8

const (
	kJSON    kind = 1 << iota // `\"`, `\\`, `\/`, `\b` ... `\uXXXX`
	kHTML                     // `&amp;`, `&#43;`, `&#x2B;` ...
	kPercent                  // `%2B`
	kPlus                     // `+` for a space, as forms and query strings write it
)

// families are the escapes of the readings: for each, the kinds its
// first, second and third decoding decode.
//
// All kinds at once, up to maxDepth times over, read escapes applied
// twice or three times, of one kind or of several (%252B, \u0026#x2B;).
// But decoding all kinds also decodes a credential's own characters where
// no layer around them escaped them: a token holding `%7E`, quoted in JSON
// twice, loses its `%7E` to the percent-decoding. So the kinds are also
// read alone (JSON and HTML up to maxDepth times over, percent-encoding
// once: a layer of it escapes every other kind's characters), JSON and
// HTML together without percent-encoding up to maxDepth times, and JSON
// then HTML and HTML then JSON, one layer of each: HTML quoted in JSON and
// JSON in HTML, whatever the credential holds.
var families = [...][]kind{
	{kJSON, kJSON, kJSON}, {kHTML, kHTML, kHTML}, {kPercent}, {kPercent | kPlus},
	{kJSON, kHTML}, {kHTML, kJSON},
	{kJSON | kHTML, kJSON | kHTML, kJSON | kHTML},
	{kJSON | kHTML | kPercent, kJSON | kHTML | kPercent, kJSON | kHTML | kPercent},
	{kJSON | kHTML | kPercent | kPlus, kJSON | kHTML | kPercent | kPlus, kJSON | kHTML | kPercent | kPlus},
}

// maxDecodings is the most decodings of one text: each family's, each
// depth once (TestFamilies checks it), and maxReadings the most readings
// searched: these and the text as written.
const (
	maxDecodings = 5*maxDepth + 1 + 1 + 2*2
	maxReadings  = 1 + maxDecodings
)

// StepsPerByte and PerOccurrence are the c and o of the bound on a
// Redactor's work: redacting a text of n bytes in which m occurrences of
// forms are found takes at most (c + L) × n steps for each of its automata
// (New and Join make one, and With adds one), and o × m more (n taken as
// at least 1), L the automaton's forms of credentials longer than
// maxFormLen. The number of credentials is not in it. Per reading:
//   - decoding examines each byte once and, at the start of a possible
//     escape, at most maxEscape more; its hash and the check for escape
//     characters examine each byte once more;
//   - carrying the straddles (see carry) examines the escapes, the new
//     reading and the characters of the new straddles once each; the
//     straddles carried have at most (maxDepth-1) × n characters, each
//     examined once and decoded again (1 + maxEscape);
//   - the automaton takes each byte once and falls back at most as often;
//     the searches from the straddles read the straddles' characters
//     (maxDepth × n in all) and fall back as often at most, and each byte
//     twice for each of the maxActive searches; at the end of a cut text,
//     the last bytes once more, twice, and at most 1 + maxEscape places
//     each look along a failure chain no longer than the text;
//   - a long form's rest is compared with each byte at most once.
//
// Each occurrence found takes a step, and at most 7 more for the base64
// characters around a middle and the escape it ends in.
const (
	StepsPerByte = maxReadings*((1+maxEscape)+2+
		(3+(2+maxEscape)*(maxDepth-1))+
		2+2*maxDepth+2*maxActive+(1+2+(1+maxEscape))) + 1
	PerOccurrence = 8
)

// A Redactor replaces credentials in texts. It is safe for concurrent use.
//
// Its forms are in one automaton, and a Redactor made by With adds one
// more for the credentials it adds, rather than make all again: the SDK
// adds an End User's credential to the Client's for each check, and a
// text is then searched by two automata.
type Redactor struct {
	creds []string // as given to New and With, for With and Join
	parts []*part
}

// part is some of a Redactor's forms, with their automaton.
type part struct {
	forms []form
	a     automaton
	longs int // the forms with a rest
}

// form is one spelling of a credential.
type form struct {
	s     string
	rest  string // what follows s in a credential longer than maxFormLen
	short bool   // shorter than MinLen: found between non-alphanumeric neighbours only
	// A base64 middle (see spellings) is redacted with the characters
	// that carry bits of the credential and of its neighbours in the
	// encoded stream: lead, the one before it; trail, the one after it and
	// the padding after that; each only when it is a base64 character. At
	// the end of a cut text, a start of a middle with a lead (at the second
	// or third alignment) is taken for an echo from one group of 4
	// characters on (3 bytes of the credential): a shorter one is the end
	// of too many texts. The first alignment's middle starts the whole
	// base64 forms, whose starts count from their first character.
	lead, trail bool
	cred        int32 // the credential's index in the order given
	next        int32 // 1 + the next form with the same text, 0 for none
	long        int32 // 1 + its index among the forms with a rest
}

// New returns a Redactor of creds (each trimmed of white space; empty ones
// are ignored). Making it takes time linear in their total length.
func New(creds ...string) *Redactor {
	return &Redactor{creds: creds, parts: []*part{newPart(spelled(creds, 0))}}
}

// spelled returns the forms of creds, the first of index first.
func spelled(creds []string, first int) []form {
	var forms []form
	for i, c := range creds {
		if c = strings.TrimSpace(c); c != "" {
			for _, f := range spellings(c) {
				f.cred = int32(first + i)
				forms = append(forms, f)
			}
		}
	}
	return forms
}

// newPart returns the part of forms, each once.
func newPart(forms ...[]form) *part {
	size, n := 0, 0
	for _, fs := range forms {
		n += len(fs)
		for _, f := range fs {
			size += len(f.s)
		}
	}
	p := &part{forms: make([]form, 0, n), a: newAutomaton(size, n)}
	for _, fs := range forms {
		for _, f := range fs {
			p.add(f)
		}
	}
	p.a.link()
	return p
}

// add adds f unless p has it already.
func (p *part) add(f form) {
	f.short, f.next, f.long = len(f.s) < MinLen, 0, 0
	p.forms = append(p.forms, f)
	if !p.a.insert(p.forms, len(p.forms)-1) {
		p.forms = p.forms[:len(p.forms)-1]
		return
	}
	if f.rest != "" {
		p.longs++
		p.forms[len(p.forms)-1].long = int32(p.longs)
	}
}

// With returns a Redactor of r's credentials and creds, which follow r's
// in the order that Span.Cred counts; r is unchanged. It shares r's
// automata and adds one of creds: making it takes time linear in their
// length, and searching a text with it one more pass.
func (r *Redactor) With(creds ...string) *Redactor {
	out := &Redactor{creds: append(r.creds[:len(r.creds):len(r.creds)], creds...), parts: r.parts[:len(r.parts):len(r.parts)]}
	if forms := spelled(creds, len(r.creds)); len(forms) > 0 {
		out.parts = append(out.parts, newPart(forms))
	}
	return out
}

// Join returns a Redactor of r's credentials and o's, which follow r's in
// the order that Span.Cred counts, in one automaton; r and o are
// unchanged. It is made from their forms, without spelling their
// credentials again, in time linear in their total length.
func (r *Redactor) Join(o *Redactor) *Redactor {
	var forms [][]form
	for _, p := range r.parts {
		forms = append(forms, p.forms)
	}
	for _, p := range o.parts {
		fs := slices.Clone(p.forms)
		for i := range fs {
			fs[i].cred += int32(len(r.creds))
		}
		forms = append(forms, fs)
	}
	return &Redactor{creds: append(r.creds[:len(r.creds):len(r.creds)], o.creds...), parts: []*part{newPart(forms...)}}
}

// Forms is the number of forms searched for.
func (r *Redactor) Forms() int {
	n := 0
	for _, p := range r.parts {
		n += len(p.forms)
	}
	return n
}

// bound is the most steps redacting a text of n bytes may take, when m
// occurrences are found in it.
func (r *Redactor) bound(n, m int) int {
	c := 0
	for _, p := range r.parts {
		c += StepsPerByte + p.longs
	}
	return c*max(n, 1) + PerOccurrence*m
}

// spellings returns the forms of credential c: c itself (its first
// maxFormLen bytes, and the rest to follow), and its base64 forms.
//
// In a longer base64 text (a whole line encoded, "Authorization: Bearer
// <token>"), c may start at any byte, so at any of three alignments with
// the groups of 3 bytes that base64 writes as 4 characters. At each, the
// characters of the encoding that depend on c's bytes alone are the same
// whatever comes before and after: c's middle at that alignment. It is
// searched for where it spans at least 2 whole groups of 4 characters, and
// redacted with the characters before and after it that mix c's bits with
// its neighbours' (lead and trail). A credential too short for that at
// the first alignment is searched for by its whole base64 forms, padded or
// not, and the short-credential rule (MinLen) holds for them: so that a
// service's message is never cut for a few characters that happen to
// spell a short credential's middle.
func spellings(c string) []form {
	forms := []form{{s: c[:min(len(c), maxFormLen)], rest: c[min(len(c), maxFormLen):]}}
	b := c[:min(len(c), maxFormLen/4*3)]
	for a := range 3 {
		m, lead, trail, ok := middle(b, a)
		if !ok {
			if a == 0 {
				forms = append(forms, whole(b)...)
			}
			continue
		}
		forms = append(forms, form{s: m, lead: lead, trail: trail},
			form{s: urlSafe.Replace(m), lead: lead, trail: trail})
	}
	return forms
}

// groupChars is the length of a group of base64 characters (3 bytes).
const groupChars = 4

// urlSafe turns standard base64 into URL-safe base64.
var urlSafe = strings.NewReplacer("+", "-", "/", "_")

// middle returns the middle of the base64 encoding (standard) of b
// preceded by a bytes (0, 1 or 2) and followed by any: the characters
// whose 6 bits all come from b. lead says that the character before it
// mixes bits of b with bits of the bytes before; trail, that the one
// after it mixes them with the bytes after. ok is false when the middle
// spans fewer than 2 whole groups of 4 characters.
func middle(b string, a int) (m string, lead, trail, ok bool) {
	start := (8*a + 5) / 6      // the first character past the a bytes' bits: 0, 2 or 3
	end := 8 * (a + len(b)) / 6 // the characters before end have no bit of the bytes after
	if end/groupChars-(start+groupChars-1)/groupChars < 2 {
		return "", false, false, false
	}
	enc := base64.RawStdEncoding.EncodeToString(append(make([]byte, a, a+len(b)), b...))
	return enc[start:end], a > 0, 8*(a+len(b))%6 != 0, true
}

// whole returns the four base64 forms of b: standard and URL-safe, padded
// and not.
func whole(b string) []form {
	var forms []form
	for _, enc := range [...]*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		f := enc.EncodeToString([]byte(b))
		forms = append(forms, form{s: f[:min(len(f), maxFormLen)]})
	}
	return forms
}

// Text returns s with every form found in any reading of it replaced by
// Marker.
func (r *Redactor) Text(s string) string {
	out, _ := r.Redact(s, false)
	return out
}

// Cut is Text for a text that ended early, cut at a limit or by a read
// that failed: a start of a form at its end is replaced too, also one
// followed by what may be the start of an escape that the cut split
// (`%2`, `\u00`, `&#x4`).
func (r *Redactor) Cut(s string) string {
	out, _ := r.Redact(s, true)
	return out
}

// Redact is Text, or Cut when cut, that also says how many steps it took.
func (r *Redactor) Redact(s string, cut bool) (string, int) {
	if r.Forms() == 0 || s == "" {
		return s, 0
	}
	st := search{r: r, s: s, cut: cut} // on the stack: no allocation without a match
	st.run()
	return st.result(), st.steps
}

// A Span is a run of a text, text[Start:End], that Redact replaces
// (with other runs next to it, when they touch, by one Marker), and Cred
// the credential it is an echo of: its index in the order given to New
// and then to With.
type Span struct{ Start, End, Cred int }

// Spans returns the runs of s that Redact(s, cut) replaces, in order and
// disjoint, each named by its credential. Where echoes overlap, the run
// goes to the one that starts first (the longer when two start together,
// the one found first when they are as long): runs next to each other are
// of different credentials. It is for whatever replaces an echo by
// something else than Marker (a recording's placeholder, which names the
// credential).
func (r *Redactor) Spans(s string, cut bool) []Span {
	if r.Forms() == 0 || s == "" {
		return nil
	}
	st := search{r: r, s: s, cut: cut, named: true}
	st.run()
	if st.delta == nil {
		return nil
	}
	var spans []Span
	cur := Span{Start: -1}
	for i, end := range st.far {
		end := int(end)
		switch {
		case end == 0:
		case cur.Start >= 0 && i < cur.End:
			cur.End = max(cur.End, end)
		case cur.Start >= 0 && i == cur.End && int(st.who[i])-1 == cur.Cred:
			cur.End = end
		default:
			if cur.Start >= 0 {
				spans = append(spans, cur)
			}
			cur = Span{Start: i, End: end, Cred: int(st.who[i]) - 1}
		}
	}
	return append(spans, cur)
}

// run searches st.s, in every reading, for every form.
//
// A reading is the same whichever family gets it when the kinds each of
// its decodings decoded are the same once those the text did not hold are
// left out (a text without '%' reads the same with and without
// percent-decoding): such a reading is neither decoded nor searched again.
// A family whose reading at some depth is new decodes its depths up to it.
func (st *search) run() {
	s := st.s
	present := st.escapesIn(s)
	st.reading(s, nil)
	var out []byte
	var maps [2][]int32
	for _, fam := range families {
		var p path
		holds := present
		text, from, have := s, []int32(nil), 0 // the reading of p's first have decodings
		st.cur.reset()
		for d, k := range fam {
			if holds&k == 0 {
				break // nothing to decode: the reading would be the last one
			}
			p.kinds[d], p.depth = holds&k, uint8(d+1)
			if e := st.known(p); e != nil {
				if !e.changed {
					break
				}
				holds = e.holds
				continue
			}
			if out == nil {
				// A reading is never longer than the text: one allocation each.
				out, maps[0], maps[1] = make([]byte, 0, len(s)), make([]int32, 0, len(s)), make([]int32, 0, len(s))
			}
			if have < d { // another family had the depths before: decode them again
				text, from, have = s, nil, 0
				st.cur.reset()
			}
			var changed bool
			for ; have <= d; have++ {
				st.escapes = st.escapes[:0]
				st.input, st.inputFrom = text, from
				out, maps[have%2], holds, changed = st.decode(text, from, p.kinds[have], out[:0], maps[have%2][:0], true)
				st.carry(p.kinds[have], maps[have%2])
				text, from = string(out), maps[have%2]
			}
			st.decoded[st.ndecoded] = decoded{path: p, holds: holds, changed: changed}
			st.ndecoded++
			if !changed {
				break
			}
			if st.seen(text) {
				continue
			}
			st.reading(text, from)
		}
	}
}

// known returns what decoding the reading p found, nil when it was not
// decoded yet.
func (st *search) known(p path) *decoded {
	for i := range st.decoded[:st.ndecoded] {
		if st.decoded[i].path == p {
			return &st.decoded[i]
		}
	}
	return nil
}

// path names a reading by the kinds each of its decodings decoded.
type path struct {
	kinds [maxDepth]kind
	depth uint8
}

// decoded is what a reading's decoding found: the kinds of escape its
// characters could start, and whether it decoded any escape.
type decoded struct {
	path    path
	holds   kind
	changed bool
}

// search is one text being redacted.
type search struct {
	r     *Redactor
	p     *part  // the part being searched for
	s     string // the text
	cut   bool
	named bool // the spans are named (Spans): who is kept
	steps int
	found int     // occurrences
	delta []int32 // nil until a span is found: +1 where one starts, -1 where it ends
	who   []int32 // with delta, when named: for each byte, 1 + the credential of the longest span that starts there
	far   []int32 // and where it ends
	exts  []int   // in a search of a reading by st.p, for each form with a rest, where its last match followed it to
	// The escapes the last decoding decoded, in order, and the text it
	// decoded (a reading, or st.s) with its map to st.s; the straddles of
	// the reading it made, and of the one before.
	escapes   []escape
	input     string
	inputFrom []int32
	cur, prev straddles
	hashes    [maxReadings]uint64 // of the decoded readings searched
	nhashes   int
	decoded   [maxDecodings]decoded // the readings decoded, by path
	ndecoded  int
}

// seed hashes readings, to tell one already searched.
var seed = maphash.MakeSeed()

// seen reports whether a reading of the same text was searched already,
// and notes this one.
func (st *search) seen(text string) bool {
	st.steps += len(text)
	h := maphash.String(seed, text)
	for _, v := range st.hashes[:st.nhashes] {
		if v == h {
			return true
		}
	}
	st.hashes[st.nhashes] = h
	st.nhashes++
	return false
}

// escapesIn returns the kinds of escape whose starting character s holds.
func (st *search) escapesIn(s string) kind {
	st.steps += len(s)
	var k kind
	for i := range len(s) {
		k |= starts(s[i])
	}
	return k
}

// starts returns the kind of escape that c starts, 0 for none.
func starts(c byte) kind { return startKind[c] }

// startKind is the kind of escape each byte starts.
var startKind = [256]kind{'\\': kJSON, '&': kHTML, '%': kPercent, '+': kPlus}

// orig is where, in the text, the escape that gave byte i of a reading
// starts; from maps the reading's bytes, nil for the text itself.
func orig(from []int32, i int) int {
	if from == nil {
		return i
	}
	return int(from[i])
}

// reading searches text, a reading of st.s, for every form, with each
// automaton.
func (st *search) reading(text string, from []int32) {
	for _, p := range st.r.parts {
		st.p, st.exts = p, nil
		st.find(text, from)
		if st.cut {
			st.tail(text, from)
		}
	}
}

// maxActive is the most searches from straddles that go on at once (see
// find).
const maxActive = 4

// active is a search from a straddle: its node, the bytes of the reading
// it has read since the straddle (k), and the end of the straddle's
// characters in st.cur.
type active struct{ u, k, end int32 }

// find adds a span for each occurrence of a form in text: one pass of the
// automaton, and, where it is at its root, a skip to the next byte that
// starts a form. At each straddle of the reading, a second search reads
// the straddle's characters, then goes on with the reading after it for
// as long as what it has read may be the start of a form that starts in
// the straddle; up to maxActive such searches at a time (a straddle met
// while as many go on is not searched from).
func (st *search) find(text string, from []int32) {
	a := &st.p.a
	nodes := a.nodes
	root := &a.dense[0]
	u := int32(0)
	steps := 0 // added to st.steps at the end: a local counts faster
	var bs [maxActive]active
	nb := 0
	xs := st.cur.list
	for i := 0; i < len(text); {
		for len(xs) > 0 && int(xs[0].at) == i {
			if nb < maxActive {
				if b, ok := st.enter(xs[0]); ok {
					bs[nb] = b
					nb++
				}
			}
			xs = xs[1:]
		}
		if u == 0 && nb == 0 {
			next := len(text)
			if len(xs) > 0 {
				next = int(xs[0].at)
			}
			j := i
			for j < next && root[text[j]] == 0 {
				j++
			}
			steps += j - i
			if i = j; i == next {
				continue
			}
		}
		c := text[i]
		var n int
		u, n = a.step(u, c)
		steps += 1 + n
		if o := nodes[u].out; o != 0 {
			steps += st.outputs(text, from, i, o)
		}
		for k := 0; k < nb; {
			b := &bs[k]
			b.u, n = a.step(b.u, c)
			b.k++
			steps += 1 + n
			if nodes[b.u].depth <= b.k { // all of it in the reading: the first search has it
				nb--
				bs[k] = bs[nb]
				continue
			}
			steps += st.straddled(text, from, i, b)
			k++
		}
		i++
	}
	st.steps += steps
}

// outputs adds the spans of the forms that end at byte i of text, from
// node o on along the output links; it returns the steps taken.
func (st *search) outputs(text string, from []int32, i int, o int32) int {
	nodes, forms := st.p.a.nodes, st.p.forms
	steps := 0
	for ; o != 0; o = nodes[nodes[o].fail].out {
		for g := nodes[o].form; g != 0; g = forms[g-1].next {
			f := &forms[g-1]
			steps++
			st.found++
			a, b := i+1-len(f.s), i+1
			if f.rest != "" {
				if st.exts == nil {
					st.exts = make([]int, st.p.longs)
				}
				// Each byte is compared with the rest once: a match
				// starting inside the last one followed is not followed.
				if ext := &st.exts[f.long-1]; a >= *ext {
					for k := 0; b < len(text) && k < len(f.rest) && text[b] == f.rest[k]; k++ {
						b++
						steps++
					}
					*ext = b
				}
			}
			st.match(text, from, a, b, f)
		}
	}
	return steps
}

// straddled adds the spans of the forms that end at byte i of text and
// start in the characters of b's straddle; it returns the steps taken.
func (st *search) straddled(text string, from []int32, i int, b *active) int {
	nodes, forms := st.p.a.nodes, st.p.forms
	steps := 0
	for o := nodes[b.u].out; o != 0 && nodes[o].depth > b.k; o = nodes[nodes[o].fail].out {
		start := int(st.cur.from[b.end-(nodes[o].depth-b.k)])
		for g := nodes[o].form; g != 0; g = forms[g-1].next {
			f := &forms[g-1]
			steps++
			st.found++
			if !(f.short && ((start > 0 && alnum(st.s[start-1])) || (i+1 < len(text) && alnum(text[i+1])))) {
				st.span(start, st.end(text, from, i+1), f.cred)
			}
		}
	}
	return steps
}

// match adds the span of the occurrence text[a:b] of form f, with the
// characters of a base64 echo that carry some of the credential's bits
// around a middle (f.lead, f.trail).
func (st *search) match(text string, from []int32, a, b int, f *form) {
	if f.short && ((a > 0 && alnum(text[a-1])) || (b < len(text) && alnum(text[b]))) {
		return
	}
	a = st.lead(text, a, f.lead)
	if f.trail && b < len(text) && base64Char(text[b]) {
		b++
		for k := 0; k < 2 && b < len(text) && text[b] == '='; k++ {
			b++
		}
		st.steps += 3
	}
	st.span(orig(from, a), st.end(text, from, b), f.cred)
}

// lead is where an occurrence at a starts once the base64 character
// before it that mixes the credential's bits with the text's is taken too,
// for a form with a lead.
func (st *search) lead(text string, a int, lead bool) int {
	st.steps++
	if lead && a > 0 && base64Char(text[a-1]) {
		return a - 1
	}
	return a
}

// base64Char reports whether c is a character of standard or URL-safe base64.
func base64Char(c byte) bool { return alnum(c) || c == '+' || c == '/' || c == '-' || c == '_' }

// end is where, in st.s, the escape that gave byte b-1 of a reading ends.
func (st *search) end(text string, from []int32, b int) int {
	if from == nil {
		return b
	}
	// The bytes of one escape (a rune of up to 4 bytes) share their start.
	for ; b < len(text) && from[b] == from[b-1]; b++ {
		st.steps++
	}
	if b == len(text) {
		return len(st.s)
	}
	return int(from[b])
}

// tail adds a span from a start of a form at the end of text, a reading of
// a cut text, to the end: a start that ends the reading, or that is
// followed by a possible escape that starts in the last maxEscape bytes of
// st.s. The automaton reads the text from the longest form's length before
// those bytes; at each place where a start may end, the nodes on the
// failure chain are the starts of forms that end there, the deepest first:
// the first that is the start of a form it may be taken for is the
// earliest start there.
func (st *search) tail(text string, from []int32) {
	a := &st.p.a
	nodes := a.nodes
	n := len(text)
	lo := n // the first byte of the reading from the last maxEscape bytes of st.s
	for lo > 0 && orig(from, lo-1) >= len(st.s)-maxEscape {
		lo--
		st.steps++
	}
	u, best, via, lead := int32(0), -1, int32(0), false
	for i := max(0, lo-a.maxLen); ; i++ {
		if i >= lo && u != 0 && (i == n || starts(st.s[orig(from, i)])&(kJSON|kHTML|kPercent) != 0) {
			for v := u; v != 0; v = nodes[v].fail {
				st.steps++
				d, p := int(nodes[v].depth), nodes[v].pre
				s := i - d
				if best >= 0 && s >= best {
					break
				}
				longLead := p&preLead != 0 && d >= groupChars
				if p&preLong != 0 || longLead || (p&preShort != 0 && !(s > 0 && alnum(text[s-1]))) {
					best, via, lead = s, nodes[v].via, longLead
					break
				}
			}
		}
		if i == n {
			break
		}
		var k int
		u, k = a.step(u, text[i])
		st.steps += 1 + k
	}
	if best >= 0 {
		st.found++
		st.span(orig(from, st.lead(text, best, lead)), len(st.s), st.p.forms[via-1].cred)
	}
}

func alnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// span notes that st.s[a:b] is to be replaced, for credential cred.
func (st *search) span(a, b int, cred int32) {
	if a >= b {
		return
	}
	if st.delta == nil {
		st.delta = make([]int32, len(st.s)+1)
		if st.named {
			st.who, st.far = make([]int32, len(st.s)), make([]int32, len(st.s))
		}
	}
	st.delta[a]++
	st.delta[b]--
	if st.named && int32(b) > st.far[a] {
		st.who[a], st.far[a] = cred+1, int32(b)
	}
}

// result is st.s with each run of bytes that spans cover replaced by one
// Marker.
func (st *search) result() string {
	if st.delta == nil {
		return st.s
	}
	var b strings.Builder
	b.Grow(len(st.s))
	at := 0
	st.runs(func(start, end int) {
		b.WriteString(st.s[at:start])
		b.WriteString(Marker)
		at = end
	})
	b.WriteString(st.s[at:])
	return b.String()
}

// runs calls f with each run of bytes that spans cover, in order.
func (st *search) runs(f func(start, end int)) {
	if st.delta == nil {
		return
	}
	st.steps += len(st.s)
	start, depth := 0, int32(0)
	for i, d := range st.delta {
		next := depth + d
		switch {
		case depth == 0 && next > 0:
			start = i
		case depth > 0 && next == 0:
			f(start, i)
		}
		depth = next
	}
}
