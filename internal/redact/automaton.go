package redact

// The forms of all credentials are searched for at once, by one automaton
// (Aho and Corasick's): a trie of the forms, each node a text that starts
// some form, with, for each node, its failure link (the node of its
// longest proper suffix that is also a node) and its output link (the
// deepest node on the failure chain, itself included, where a form ends).
// A search takes one transition per byte of the text, and falls back along
// failure links at most as often as it advanced: its work does not depend
// on the number of forms, but for the occurrences it reports.
//
// A node's children are kept in one of three ways, so that a trie of
// thousands of credentials stays small and every lookup takes a bounded
// number of steps: the child made right after the node (the next byte of
// the form that made it) by its byte alone; up to maxList others in a
// list; and a node with more (the root always) in a table by byte.

// maxList is the most children a node keeps in a list, beside its chain.
const maxList = 8

// The kinds of form a node is a proper prefix of, for tail.
const (
	preLong  uint8 = 1 << iota // a form found wherever it appears, without lead
	preShort                   // a form shorter than MinLen
	preLead                    // a base64 middle with a lead character
)

type node struct {
	fail  int32 // the node of the longest proper suffix that is a node
	out   int32 // the deepest node on the failure chain, itself included, where a form ends; 0 for none
	form  int32 // 1 + the first form ending here, 0 for none (the others follow form.next)
	via   int32 // 1 + the first form this node is a proper prefix of
	depth int32
	first int32 // 1 + the first of the node's edges in the list, 0 for none
	dense int32 // 1 + the node's table, 0 for none
	label byte  // the byte that leads to the node made right after this one, when chain
	chain bool
	kids  uint8 // the edges in the list
	pre   uint8 // the kinds of form this node is a proper prefix of
}

type edge struct {
	to, next int32
	c        byte
}

type automaton struct {
	nodes  []node
	edges  []edge
	dense  [][256]int32
	maxLen int // the longest form
}

// newAutomaton returns an automaton with room for size nodes and the
// branches of forms forms (each form branches off the trie once).
func newAutomaton(size, forms int) automaton {
	a := automaton{
		nodes: make([]node, 1, size+1),
		edges: make([]edge, 0, forms),
		dense: make([][256]int32, 1),
	}
	a.nodes[0].dense = 1
	return a
}

// child returns the child of u by c, 0 for none.
func (a *automaton) child(u int32, c byte) int32 {
	n := &a.nodes[u]
	if n.chain && n.label == c {
		return u + 1
	}
	if n.dense != 0 {
		return a.dense[n.dense-1][c]
	}
	for e := n.first; e != 0; {
		ed := &a.edges[e-1]
		if ed.c == c {
			return ed.to
		}
		e = ed.next
	}
	return 0
}

// addChild makes a new node, the child of u by c, and returns it.
func (a *automaton) addChild(u int32, c byte) int32 {
	v := int32(len(a.nodes))
	a.nodes = append(a.nodes, node{depth: a.nodes[u].depth + 1})
	n := &a.nodes[u]
	switch {
	case n.dense != 0:
		a.dense[n.dense-1][c] = v
	case v == u+1 && !n.chain:
		n.chain, n.label = true, c
	case n.kids < maxList:
		a.edges = append(a.edges, edge{to: v, next: n.first, c: c})
		n.first, n.kids = int32(len(a.edges)), n.kids+1
	default:
		var t [256]int32
		for e := n.first; e != 0; e = a.edges[e-1].next {
			t[a.edges[e-1].c] = a.edges[e-1].to
		}
		if n.chain {
			t[n.label] = u + 1
		}
		t[c] = v
		a.dense = append(a.dense, t)
		n.dense, n.first, n.kids = int32(len(a.dense)), 0, 0
	}
	return v
}

// insert adds form i (of forms) to the trie, and reports whether it is
// new: a form with the same text and the same rest, lead and trail is
// searched for once, as the credential given first.
func (a *automaton) insert(forms []form, i int) bool {
	f := &forms[i]
	kind := preLong
	switch {
	case f.short:
		kind = preShort
	case f.lead:
		kind = preLead
	}
	u := int32(0)
	for k := 0; k < len(f.s); k++ {
		if k > 0 {
			a.nodes[u].pre |= kind
			if a.nodes[u].via == 0 {
				a.nodes[u].via = int32(i + 1)
			}
		}
		v := a.child(u, f.s[k])
		if v == 0 {
			v = a.addChild(u, f.s[k])
		}
		u = v
	}
	for g := a.nodes[u].form; g != 0; g = forms[g-1].next {
		if h := &forms[g-1]; h.rest == f.rest && h.lead == f.lead && h.trail == f.trail {
			return false
		}
	}
	f.next, a.nodes[u].form = a.nodes[u].form, int32(i+1)
	a.maxLen = max(a.maxLen, len(f.s))
	return true
}

// link sets the failure and output links, the nodes taken breadth first,
// so that a node's links are set after those of every shallower one.
// Along each form, a node's failure is at most one deeper than its
// parent's, and each step back makes it shallower: the work is linear in
// the forms' total length.
func (a *automaton) link() {
	queue := make([]int32, 1, len(a.nodes))
	for h := 0; h < len(queue); h++ {
		u := queue[h]
		a.children(u, func(c byte, v int32) {
			f := int32(0)
			if u != 0 {
				for w := a.nodes[u].fail; ; w = a.nodes[w].fail {
					if x := a.child(w, c); x != 0 {
						f = x
						break
					}
					if w == 0 {
						break
					}
				}
			}
			n := &a.nodes[v]
			n.fail = f
			if n.form != 0 {
				n.out = v
			} else {
				n.out = a.nodes[f].out
			}
			queue = append(queue, v)
		})
	}
}

// children calls f with each child of u and the byte to it.
func (a *automaton) children(u int32, f func(c byte, v int32)) {
	n := a.nodes[u]
	if n.chain {
		f(n.label, u+1)
	}
	if n.dense != 0 {
		t := &a.dense[n.dense-1]
		for c, v := range t {
			if v != 0 && !(n.chain && byte(c) == n.label) {
				f(byte(c), v)
			}
		}
		return
	}
	for e := n.first; e != 0; e = a.edges[e-1].next {
		f(a.edges[e-1].c, a.edges[e-1].to)
	}
}

// step is the transition from u by c: the new node, and the failure links
// it followed.
func (a *automaton) step(u int32, c byte) (int32, int) {
	n := 0
	for {
		if v := a.child(u, c); v != 0 {
			return v, n
		}
		if u == 0 {
			return 0, n
		}
		u = a.nodes[u].fail
		n++
	}
}
