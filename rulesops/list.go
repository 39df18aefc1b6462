package rulesops

import "sort"

// chunkMax is the most rules one chunk holds. Inserting copies one chunk
// and the chunk index, so an insert costs O(chunkMax + n/chunkMax) instead of
// the kernel's O(n) list walk, and every published list stays immutable.
const chunkMax = 64

// chunk is an immutable run of rules sorted by priority.
type chunk struct {
	rules []Rule
}

// list is an immutable, structurally shared rule list sorted by priority,
// ties in insertion order: the RCU-protected rules_list of a fib_rules_ops.
// Readers use a *list without locks; writers build a new one and publish it.
type list struct {
	chunks []*chunk
	starts []int // starts[i] = index of chunks[i].rules[0]
	n      int
}

var emptyList = &list{}

func newList(rules []Rule) *list {
	l := &list{}
	for i := 0; i < len(rules); i += chunkMax {
		j := min(i+chunkMax, len(rules))
		l.chunks = append(l.chunks, &chunk{rules: append([]Rule(nil), rules[i:j]...)})
		l.starts = append(l.starts, i)
	}
	l.n = len(rules)
	return l
}

// Len returns the number of rules.
func (l *list) Len() int { return l.n }

// locate returns the chunk and offset holding index i (0 <= i < n).
func (l *list) locate(i int) (int, int) {
	c := sort.Search(len(l.starts), func(k int) bool { return l.starts[k] > i }) - 1
	return c, i - l.starts[c]
}

// At returns a pointer to rule i; it must not be modified.
func (l *list) At(i int) *Rule {
	c, o := l.locate(i)
	return &l.chunks[c].rules[o]
}

// upperBound returns the index of the first rule with pref > p, i.e. where
// fib_newrule() inserts a rule of priority p (after every rule <= p).
func (l *list) upperBound(p uint32) int {
	c := sort.Search(len(l.chunks), func(k int) bool {
		rs := l.chunks[k].rules
		return rs[len(rs)-1].Pref > p
	})
	if c == len(l.chunks) {
		return l.n
	}
	rs := l.chunks[c].rules
	return l.starts[c] + sort.Search(len(rs), func(k int) bool { return rs[k].Pref > p })
}

// lowerBound returns the index of the first rule with pref >= p.
func (l *list) lowerBound(p uint32) int {
	c := sort.Search(len(l.chunks), func(k int) bool {
		rs := l.chunks[k].rules
		return rs[len(rs)-1].Pref >= p
	})
	if c == len(l.chunks) {
		return l.n
	}
	rs := l.chunks[c].rules
	return l.starts[c] + sort.Search(len(rs), func(k int) bool { return rs[k].Pref >= p })
}

// FirstWithPref returns the index of the first rule whose priority is p, or
// -1: the target a goto to p resolves to.
func (l *list) FirstWithPref(p uint32) int {
	i := l.lowerBound(p)
	if i < l.n && l.At(i).Pref == p {
		return i
	}
	return -1
}

// insert returns a new list with r inserted after every rule whose priority
// is <= r.Pref.
func (l *list) insert(r Rule) *list {
	i := l.upperBound(r.Pref)
	if l.n == 0 {
		return newList([]Rule{r})
	}
	var c, o int
	if i == l.n {
		c = len(l.chunks) - 1
		o = len(l.chunks[c].rules)
	} else {
		c, o = l.locate(i)
	}
	old := l.chunks[c].rules
	nr := make([]Rule, 0, len(old)+1)
	nr = append(nr, old[:o]...)
	nr = append(nr, r)
	nr = append(nr, old[o:]...)
	var repl []*chunk
	if len(nr) > chunkMax {
		h := len(nr) / 2
		repl = []*chunk{{rules: nr[:h:h]}, {rules: nr[h:]}}
	} else {
		repl = []*chunk{{rules: nr}}
	}
	return l.replace(c, repl, 1)
}

// remove returns a new list without rule i.
func (l *list) remove(i int) *list {
	c, o := l.locate(i)
	old := l.chunks[c].rules
	if len(old) == 1 {
		return l.replace(c, nil, -1)
	}
	nr := make([]Rule, 0, len(old)-1)
	nr = append(nr, old[:o]...)
	nr = append(nr, old[o+1:]...)
	return l.replace(c, []*chunk{{rules: nr}}, -1)
}

// replace builds a list with chunk c replaced by repl; delta is the change
// in rule count.
func (l *list) replace(c int, repl []*chunk, delta int) *list {
	nl := &list{n: l.n + delta}
	nl.chunks = make([]*chunk, 0, len(l.chunks)+len(repl)-1)
	nl.chunks = append(nl.chunks, l.chunks[:c]...)
	nl.chunks = append(nl.chunks, repl...)
	nl.chunks = append(nl.chunks, l.chunks[c+1:]...)
	nl.starts = make([]int, len(nl.chunks))
	// Starts before c are unchanged; recompute from c on.
	copy(nl.starts, l.starts[:c])
	s := 0
	if c > 0 {
		s = l.starts[c-1] + len(l.chunks[c-1].rules)
	}
	for k := c; k < len(nl.chunks); k++ {
		nl.starts[k] = s
		s += len(nl.chunks[k].rules)
	}
	return nl
}

// All calls fn for each rule in order until fn returns false.
func (l *list) All(fn func(i int, r *Rule) bool) {
	i := 0
	for _, c := range l.chunks {
		for k := range c.rules {
			if !fn(i, &c.rules[k]) {
				return
			}
			i++
		}
	}
}

// From calls fn for rules from index i on, until fn returns false.
func (l *list) From(i int, fn func(i int, r *Rule) bool) {
	if i >= l.n {
		return
	}
	c, o := l.locate(i)
	for ; c < len(l.chunks); c++ {
		rs := l.chunks[c].rules
		for ; o < len(rs); o++ {
			if !fn(i, &rs[o]) {
				return
			}
			i++
		}
		o = 0
	}
}
