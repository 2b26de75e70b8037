package redact

// An echo may start inside an escape of the text, when what comes before
// it ends with an escape character that reads as one with the echo's
// first characters: "100%" before "C5..." reads "%C5", `\u00` before
// "E3..." reads `\u00E3`. The decoding that takes the escape takes the
// echo's first characters with it, and so do the decodings after it, of
// an echo encoded more times than once: the escape is decoded by the
// first, the echo by the last.
//
// A straddle is such a place in a reading: the characters of an escape
// after its first, as they stood before the decoding that took the escape,
// and decoded since by each decoding after it, and the byte of the reading
// where the echo would go on after them. find runs a second search from
// each (b): the characters, then the reading from there on.

// straddle is one such place: at, the byte of the reading after the
// escape; its characters straddles.pre[start:end], their places in st.s
// straddles.from[start:end].
type straddle struct{ at, start, end int32 }

// straddles are those of a reading, in the order of at.
type straddles struct {
	list []straddle
	pre  []byte
	from []int32
}

func (x *straddles) reset() {
	x.list, x.pre, x.from = x.list[:0], x.pre[:0], x.from[:0]
}

// escape is an escape of more than one character that a decoding took:
// where it was in the text decoded (in, end), and the first byte of the
// reading after what it gave (next).
type escape struct{ in, end, next int32 }

// carry makes st.cur the straddles of the reading just decoded from
// st.input by kinds k (from maps its bytes to st.s): those of the reading
// it was decoded from, their characters decoded by k and their at moved to
// the byte of the new reading that comes from the same place of st.s, and
// one for each escape the decoding took. Their number is at most the
// number of escapes the readings of the family decoded, and each has at
// most maxEscape-1 characters: at most maxDepth × n / 2 of them, each
// decoded at most maxDepth-1 times.
func (st *search) carry(k kind, from []int32) {
	old, nw := &st.cur, &st.prev
	nw.reset()
	xs, own := old.list, st.escapes
	if len(xs)+len(own) == 0 {
		st.cur, st.prev = st.prev, st.cur
		return
	}
	// Room for them all: a decoding never lengthens the characters.
	chars := len(old.pre)
	for _, e := range own {
		chars += int(e.end - e.in - 1)
	}
	st.steps += len(own)
	nw.grow(len(xs)+len(own), chars)
	j := 0 // the first byte of the new reading from the place of xs[0] or after
	moved := false
	for len(xs) > 0 || len(own) > 0 {
		if len(xs) > 0 && !moved {
			place := len(st.s)
			if at := int(xs[0].at); at < len(st.input) {
				place = orig(st.inputFrom, at)
			}
			for j < len(from) && int(from[j]) < place {
				j++
				st.steps++
			}
			moved = true
		}
		if len(xs) > 0 && (len(own) == 0 || j <= int(own[0].next)) {
			x := xs[0]
			xs, moved = xs[1:], false
			if j < len(from) {
				a := len(nw.pre)
				st.decodeChars(old, x, k)
				nw.list = append(nw.list, straddle{at: int32(j), start: int32(a), end: int32(len(nw.pre))})
			}
			continue
		}
		e := own[0]
		own = own[1:]
		if int(e.next) < len(from) {
			a := len(nw.pre)
			nw.pre = append(nw.pre, st.input[e.in+1:e.end]...)
			for i := e.in + 1; i < e.end; i++ {
				nw.from = append(nw.from, int32(orig(st.inputFrom, int(i))))
			}
			st.steps += int(e.end - e.in - 1)
			nw.list = append(nw.list, straddle{at: e.next, start: int32(a), end: int32(len(nw.pre))})
		}
	}
	st.cur, st.prev = st.prev, st.cur
}

// decodeChars appends to st.prev the characters of straddle x of old,
// decoded by kinds k.
func (st *search) decodeChars(old *straddles, x straddle, k kind) {
	nw := &st.prev
	chars, from := old.pre[x.start:x.end], old.from[x.start:x.end]
	st.steps += len(chars)
	for _, c := range chars {
		if startKind[c]&k != 0 {
			nw.pre, nw.from, _, _ = st.decode(string(chars), from, k, nw.pre, nw.from, false)
			return
		}
	}
	nw.pre, nw.from = append(nw.pre, chars...), append(nw.from, from...)
}

// grow makes room in x for n straddles of chars characters in all.
func (x *straddles) grow(n, chars int) {
	if cap(x.list) < n {
		x.list = make([]straddle, 0, 2*n)
	}
	if cap(x.pre) < chars {
		x.pre, x.from = make([]byte, 0, 2*chars), make([]int32, 0, 2*chars)
	}
}

// enter reads the characters of straddle x with the automaton: it
// returns the search from x, and false when no start of a form ends them.
// A form whole in them is not reported: the text before has it.
func (st *search) enter(x straddle) (active, bool) {
	a := &st.p.a
	pre := st.cur.pre[x.start:x.end]
	u, steps := int32(0), len(pre)
	for _, c := range pre {
		var n int
		u, n = a.step(u, c)
		steps += n
	}
	st.steps += steps
	return active{u: u, end: x.end}, u != 0
}
