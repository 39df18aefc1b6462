package rulesops

// chunkMax is the most rules one chunk holds. Inserting copies one chunk
// and the chunk index, so an insert costs O(chunkMax + n/chunkMax) instead of
// the kernel's O(n) list walk, and every published list stays immutable.
const chunkMax = 128

// list is an immutable, structurally shared rule list sorted by priority,
// ties in insertion order: the RCU-protected rules_list of a fib_rules_ops.
// Readers use a *list without locks; writers build a new one and publish
// it. Chunks hold rules by value and contain no pointers.
type list struct {
	chunks []*chunk // each non-empty, sorted
	n      int
	// extras holds the Extra of non-plain rules (Rule.xi - 1). It only
	// grows: a new list may append to the backing array beyond this list's
	// length, which no older list can see, so sharing it is safe.
	extras []*Extra
	// comp is the list's match program (compiled.go), set by compileList
	// before the list is published; nil: the general matcher.
	comp *compiled
}

// chunk is an immutable window of rules. Chunks that grow at one end
// (automatic priorities insert at the front, ascending explicit priorities
// at the back) keep spare room in their backing array: the writer puts the
// next rule into a slot no published window covers and publishes a window
// one larger, so that such inserts copy no rules at all.
type chunk struct {
	rules []Rule   // the published window: own.arr[off : off+len(rules)]
	own   *backing // nil for an exact-size chunk that is never grown in place
	off   int
}

// backing is a chunk array with spare room. lo and hi bound the slots any
// published window has ever covered; only the writer (under the ops mutex)
// reads or writes them.
type backing struct {
	arr    []Rule
	lo, hi int
}

var emptyList = &list{}

func newList(rules []Rule) *list {
	l := &list{n: len(rules)}
	for i := 0; i < len(rules); i += chunkMax {
		j := min(i+chunkMax, len(rules))
		l.chunks = append(l.chunks, &chunk{rules: append([]Rule(nil), rules[i:j]...)})
	}
	return l
}

// Len returns the number of rules.
func (l *list) Len() int { return l.n }

// ext returns r's Extra, or the shared defaults (read only) for a plain rule.
func (l *list) ext(r *Rule) *Extra {
	if r.xi == 0 {
		return &plainExtra
	}
	return l.extras[r.xi-1]
}

// pos is a rule's place: chunk c, offset o.
type pos struct{ c, o int }

// locate returns the position of global index i (0 <= i <= n).
func (l *list) locate(i int) pos {
	for c, ch := range l.chunks {
		if i < len(ch.rules) {
			return pos{c, i}
		}
		i -= len(ch.rules)
	}
	return pos{len(l.chunks), 0}
}

// At returns a pointer to rule i; it must not be modified. At(0) and At(1)
// are O(1) in practice; others walk the chunk index.
func (l *list) At(i int) *Rule {
	p := l.locate(i)
	return &l.chunks[p.c].rules[p.o]
}

// bound returns the position of the first rule with pref > p (upper) or
// pref >= p (!upper): binary searches over the chunks' last rules, then
// within one chunk (written out: this is on every insert).
func (l *list) bound(p uint32, upper bool) pos {
	before := func(x uint32) bool { return x < p || (upper && x == p) }
	lo, hi := 0, len(l.chunks)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		rs := l.chunks[m].rules
		if before(rs[len(rs)-1].Pref) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == len(l.chunks) {
		return pos{lo, 0}
	}
	rs := l.chunks[lo].rules
	i, j := 0, len(rs)
	for i < j {
		m := int(uint(i+j) >> 1)
		if before(rs[m].Pref) {
			i = m + 1
		} else {
			j = m
		}
	}
	return pos{lo, i}
}

func (l *list) valid(p pos) bool { return p.c < len(l.chunks) }

func (l *list) rule(p pos) *Rule { return &l.chunks[p.c].rules[p.o] }

func (l *list) next(p pos) pos {
	if p.o+1 < len(l.chunks[p.c].rules) {
		return pos{p.c, p.o + 1}
	}
	return pos{p.c + 1, 0}
}

// hasPref reports whether some rule has priority p: whether a goto to p is
// resolved (see Change.Msg for why that is the kernel's state exactly).
func (l *list) hasPref(p uint32) bool {
	q := l.bound(p, false)
	return l.valid(q) && l.rule(q).Pref == p
}

// prepend returns a chunk with r in front of ch, in place when ch's backing
// has free room there, else nil.
func (ch *chunk) prepend(r Rule) *chunk {
	b := ch.own
	if b == nil || ch.off == 0 || b.lo != ch.off {
		return nil
	}
	b.lo--
	b.arr[b.lo] = r
	return &chunk{rules: b.arr[b.lo : ch.off+len(ch.rules) : ch.off+len(ch.rules)], own: b, off: b.lo}
}

// appendRule returns a chunk with r after ch, in place when ch's backing has
// free room there, else nil.
func (ch *chunk) appendRule(r Rule) *chunk {
	b := ch.own
	end := ch.off + len(ch.rules)
	if b == nil || end == len(b.arr) || b.hi != end {
		return nil
	}
	b.arr[end] = r
	b.hi++
	return &chunk{rules: b.arr[ch.off : end+1 : end+1], own: b, off: ch.off}
}

// growable returns a chunk holding rules in a backing array of chunkMax
// slots, with the free room in front (atFront) or behind, where the next
// inserts are expected.
func growable(rules []Rule, atFront bool) *chunk {
	b := &backing{arr: make([]Rule, chunkMax)}
	i := 0
	if atFront {
		i = chunkMax - len(rules)
	}
	copy(b.arr[i:], rules)
	b.lo, b.hi = i, i+len(rules)
	return &chunk{rules: b.arr[b.lo:b.hi:b.hi], own: b, off: i}
}

// insert returns a new list with r inserted after every rule whose priority
// is <= r.Pref (fib_newrule()'s list_add_rcu after the last such rule).
func (l *list) insert(r Rule, extras []*Extra) *list {
	if l.n == 0 {
		nl := newList([]Rule{r})
		nl.extras = extras
		return nl
	}
	p := l.bound(r.Pref, true)
	if !l.valid(p) {
		p = pos{len(l.chunks) - 1, len(l.chunks[len(l.chunks)-1].rules)}
	}
	cur := l.chunks[p.c]
	// A rule equal in priority to the one before it continues a run that
	// grows behind (ties keep insertion order); otherwise, automatic
	// priorities count down and the list grows in front of the new rule.
	var before *Rule
	switch {
	case p.o > 0:
		before = &cur.rules[p.o-1]
	case p.c > 0:
		before = &l.chunks[p.c-1].rules[len(l.chunks[p.c-1].rules)-1]
	}
	behind := before != nil && before.Pref == r.Pref
	// The cheap cases: the rule goes at a chunk edge.
	if p.o == 0 {
		if !behind {
			if nc := cur.prepend(r); nc != nil {
				return l.replace(p.c, []*chunk{nc}, 1, extras)
			}
		}
		if p.c > 0 {
			if nc := l.chunks[p.c-1].appendRule(r); nc != nil {
				return l.replace(p.c-1, []*chunk{nc}, 1, extras)
			}
		}
		if behind {
			if nc := cur.prepend(r); nc != nil {
				return l.replace(p.c, []*chunk{nc}, 1, extras)
			}
		}
		if len(cur.rules) == chunkMax {
			return l.replace(p.c, []*chunk{growable([]Rule{r}, !behind), cur}, 1, extras)
		}
		if p.c > 0 && len(cur.rules) <= 4 {
			// Ascending priorities below a short tail (main and default
			// stay last): start a chunk that grows behind.
			return l.replace(p.c, []*chunk{growable([]Rule{r}, false), cur}, 1, extras)
		}
	}
	if p.o == len(cur.rules) {
		if nc := cur.appendRule(r); nc != nil {
			return l.replace(p.c, []*chunk{nc}, 1, extras)
		}
		if len(cur.rules) == chunkMax {
			return l.replace(p.c, []*chunk{cur, growable([]Rule{r}, false)}, 1, extras)
		}
	}
	old := cur.rules
	nr := make([]Rule, 0, len(old)+1)
	nr = append(nr, old[:p.o]...)
	nr = append(nr, r)
	nr = append(nr, old[p.o:]...)
	if len(nr) <= chunkMax && !(p.c == 0 && p.o > 0 && p.o < 4 && len(nr) > 4) {
		return l.replace(p.c, []*chunk{{rules: nr}}, 1, extras)
	}
	// Split where the inserts are going, leaving room on the side they will
	// come to, so that the next ones go in place:
	//   - near the start: the new rule starts a chunk that can grow in front
	//     (automatic priorities insert just after the local rule, each new
	//     one before the previous), and the part before it can grow behind
	//     (rules appended after a run of equal priorities, e.g. priority 0);
	//   - near the end: the part after the new rule can grow behind
	//     (ascending explicit priorities);
	//   - elsewhere: two exact halves.
	switch {
	case p.o < 4:
		h := p.o // the new rule starts the part that grows in front
		if behind || h == 0 {
			h = p.o + 1 // or ends the part that grows behind
		}
		if len(nr)-h > chunkMax {
			h = len(nr) - chunkMax
		}
		return l.replace(p.c, []*chunk{growable(nr[:h], false), growable(nr[h:], true)}, 1, extras)
	case p.o > len(nr)-4:
		h := min(p.o, len(nr)-1)
		return l.replace(p.c, []*chunk{{rules: nr[:h:h]}, growable(nr[h:], false)}, 1, extras)
	}
	h := len(nr) / 2
	return l.replace(p.c, []*chunk{{rules: nr[:h:h]}, {rules: nr[h:]}}, 1, extras)
}

// remove returns a new list without the rule at p.
func (l *list) remove(p pos) *list {
	old := l.chunks[p.c].rules
	if len(old) == 1 {
		return l.replace(p.c, nil, -1, l.extras)
	}
	nr := make([]Rule, 0, len(old)-1)
	nr = append(nr, old[:p.o]...)
	nr = append(nr, old[p.o+1:]...)
	return l.replace(p.c, []*chunk{{rules: nr}}, -1, l.extras)
}

// replace builds a list with chunk c replaced by repl; delta is the change
// in rule count.
func (l *list) replace(c int, repl []*chunk, delta int, extras []*Extra) *list {
	nl := allocList(len(l.chunks) + len(repl) - 1)
	nl.n, nl.extras = l.n+delta, extras
	nl.chunks = append(nl.chunks, l.chunks[:c]...)
	nl.chunks = append(nl.chunks, repl...)
	nl.chunks = append(nl.chunks, l.chunks[c+1:]...)
	return nl
}

// From calls fn for rules from position p on, with their global index
// starting at i, until fn returns false.
func (l *list) from(p pos, i int, fn func(i int, r *Rule) bool) {
	for ; p.c < len(l.chunks); p = (pos{p.c + 1, 0}) {
		rs := l.chunks[p.c].rules
		for ; p.o < len(rs); p.o++ {
			if !fn(i, &rs[p.o]) {
				return
			}
			i++
		}
	}
}

// All calls fn for each rule in order until fn returns false.
func (l *list) All(fn func(i int, r *Rule) bool) { l.from(pos{}, 0, fn) }

// allocList returns a list whose chunk index has room for n chunks, in one
// allocation for the sizes most namespaces have (publishing a list is the
// hot path of every rule change).
func allocList(n int) *list {
	switch {
	case n <= 8:
		x := &struct {
			l list
			a [8]*chunk
		}{}
		x.l.chunks = x.a[:0:n]
		return &x.l
	case n <= 16:
		x := &struct {
			l list
			a [16]*chunk
		}{}
		x.l.chunks = x.a[:0:n]
		return &x.l
	case n <= 32:
		x := &struct {
			l list
			a [32]*chunk
		}{}
		x.l.chunks = x.a[:0:n]
		return &x.l
	}
	return &list{chunks: make([]*chunk, 0, n)}
}
