package rulesops

import "sort"

// chunkMax is the most rules one chunk holds. Inserting copies one chunk
// and the chunk index, so an insert costs O(chunkMax + n/chunkMax) instead of
// the kernel's O(n) list walk, and every published list stays immutable.
const chunkMax = 64

// list is an immutable, structurally shared rule list sorted by priority,
// ties in insertion order: the RCU-protected rules_list of a fib_rules_ops.
// Readers use a *list without locks; writers build a new one and publish
// it. Chunks hold rules by value and contain no pointers.
type list struct {
	chunks [][]Rule // each non-empty, sorted
	n      int
	// extras holds the Extra of non-plain rules (Rule.xi - 1). It only
	// grows: a new list may append to the backing array beyond this list's
	// length, which no older list can see, so sharing it is safe.
	extras []*Extra
}

var emptyList = &list{}

func newList(rules []Rule) *list {
	l := &list{n: len(rules)}
	for i := 0; i < len(rules); i += chunkMax {
		j := min(i+chunkMax, len(rules))
		l.chunks = append(l.chunks, append([]Rule(nil), rules[i:j]...))
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
		if i < len(ch) {
			return pos{c, i}
		}
		i -= len(ch)
	}
	return pos{len(l.chunks), 0}
}

// At returns a pointer to rule i; it must not be modified. At(0) and At(1)
// are O(1); others walk the chunk index.
func (l *list) At(i int) *Rule {
	p := l.locate(i)
	return &l.chunks[p.c][p.o]
}

// bound returns the position of the first rule with pref > p (upper) or
// pref >= p (!upper).
func (l *list) bound(p uint32, upper bool) pos {
	less := func(x uint32) bool { return x < p || (upper && x == p) }
	c := sort.Search(len(l.chunks), func(k int) bool { return !less(l.chunks[k][len(l.chunks[k])-1].Pref) })
	if c == len(l.chunks) {
		return pos{c, 0}
	}
	rs := l.chunks[c]
	return pos{c, sort.Search(len(rs), func(k int) bool { return !less(rs[k].Pref) })}
}

func (l *list) valid(p pos) bool { return p.c < len(l.chunks) }

func (l *list) rule(p pos) *Rule { return &l.chunks[p.c][p.o] }

func (l *list) next(p pos) pos {
	if p.o+1 < len(l.chunks[p.c]) {
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
		p = pos{len(l.chunks) - 1, len(l.chunks[len(l.chunks)-1])}
	}
	old := l.chunks[p.c]
	nr := make([]Rule, 0, len(old)+1)
	nr = append(nr, old[:p.o]...)
	nr = append(nr, r)
	nr = append(nr, old[p.o:]...)
	var repl [][]Rule
	if len(nr) > chunkMax {
		// Split where the inserts are going: right after the new rule when
		// it is near the start (automatic priorities insert right after
		// the local rule), right before it near the end (ascending
		// priorities append), in the middle otherwise. The chunk that takes
		// the next inserts then starts small and stays cheap to copy.
		h := len(nr) / 2
		switch {
		case p.o < 4:
			h = p.o + 1
		case p.o > len(nr)-4:
			h = p.o
		}
		repl = [][]Rule{nr[:h:h], nr[h:]}
	} else {
		repl = [][]Rule{nr}
	}
	return l.replace(p.c, repl, 1, extras)
}

// remove returns a new list without the rule at p.
func (l *list) remove(p pos) *list {
	old := l.chunks[p.c]
	if len(old) == 1 {
		return l.replace(p.c, nil, -1, l.extras)
	}
	nr := make([]Rule, 0, len(old)-1)
	nr = append(nr, old[:p.o]...)
	nr = append(nr, old[p.o+1:]...)
	return l.replace(p.c, [][]Rule{nr}, -1, l.extras)
}

// replace builds a list with chunk c replaced by repl; delta is the change
// in rule count.
func (l *list) replace(c int, repl [][]Rule, delta int, extras []*Extra) *list {
	chunks := make([][]Rule, 0, len(l.chunks)+len(repl)-1)
	chunks = append(chunks, l.chunks[:c]...)
	chunks = append(chunks, repl...)
	chunks = append(chunks, l.chunks[c+1:]...)
	return &list{chunks: chunks, n: l.n + delta, extras: extras}
}

// From calls fn for rules from position p on, with their global index
// starting at i, until fn returns false.
func (l *list) from(p pos, i int, fn func(i int, r *Rule) bool) {
	for ; p.c < len(l.chunks); p = (pos{p.c + 1, 0}) {
		rs := l.chunks[p.c]
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
