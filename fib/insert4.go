package fib

import (
	"syscall"

	"github.com/nlemu/nlemu/rtnl"
)

// sameInfo4 reports whether a and b share one fib_info: every stored
// attribute but tos and type (fib_find_info() compares them all; the
// alias keeps tos and type).
func sameInfo4(a, b *Route) bool {
	x, y := *a, *b
	x.Tos, y.Tos, x.Type, y.Type = 0, 0, 0, 0
	return internKey(&x) == internKey(&y)
}

// findAlias4 mirrors fib_find_alias(): the index of the first entry of
// table id with tos < tos, or tos == tos and priority >= prio; the entries
// of a leaf are ordered table id descending (merged local before main),
// tos descending, priority ascending. When none qualifies it returns the
// index after the table's entries and false.
func findAlias4(s []*attrs, id uint32, tos uint8, prio uint32) (int, bool) {
	i := 0
	for ; i < len(s); i++ {
		r := &s[i].r
		if r.Table > id {
			continue
		}
		if r.Table != id {
			break
		}
		if r.Tos > tos {
			continue
		}
		if r.Priority >= prio || r.Tos < tos {
			return i, true
		}
	}
	return i, false
}

// insert4 is fib_table_insert() on the leaf of r.Dst (mu held), appending
// the change to *c.
func (t *Tables) insert4(c *Change, r Route, nlFlags uint16) *rtnl.Error {
	s := t.getLeaf(r.Table, r.Dst).slice()
	fa, found := findAlias4(s, r.Table, r.Tos, r.Priority)
	notify := uint16(rtnl.NLM_F_EXCL)
	pos := fa
	if found && s[fa].r.Tos == r.Tos && s[fa].r.Priority == r.Priority {
		if nlFlags&rtnl.NLM_F_EXCL != 0 {
			return rtnl.Errno(syscall.EEXIST)
		}
		notify &^= rtnl.NLM_F_EXCL
		first, match := fa, -1
		j := fa
		for ; j < len(s); j++ {
			e := &s[j].r
			if e.Table != r.Table || e.Tos != r.Tos || e.Priority != r.Priority {
				break
			}
			if e.Type == r.Type && sameInfo4(e, &r) {
				match = j
				break
			}
		}
		if nlFlags&rtnl.NLM_F_REPLACE != 0 {
			if match >= 0 {
				if match == first {
					// Replacing a route with itself: success, nothing
					// changes and nothing is notified.
					return nil
				}
				return rtnl.Errno(syscall.EEXIST)
			}
			old := s[first]
			s[first] = t.intern(r)
			t.setLeaf(r.Table, r.Dst, s)
			c.add(rtnl.RTM_NEWROUTE, notify|rtnl.NLM_F_REPLACE, r)
			old0 := old.r
			old0.Dst = r.Dst
			c.Replaced = append(c.Replaced, old0)
			t.release(old)
			return nil
		}
		if match >= 0 {
			return rtnl.Errno(syscall.EEXIST)
		}
		if nlFlags&rtnl.NLM_F_APPEND != 0 {
			notify |= rtnl.NLM_F_APPEND
			pos = j
		} else {
			pos = first
		}
	}
	if nlFlags&rtnl.NLM_F_CREATE == 0 {
		return rtnl.Errno(syscall.ENOENT)
	}
	notify |= rtnl.NLM_F_CREATE
	s = append(s, nil)
	copy(s[pos+1:], s[pos:])
	s[pos] = t.intern(r)
	t.setLeaf(r.Table, r.Dst, s)
	t.routes.Add(1)
	c.add(rtnl.RTM_NEWROUTE, notify, r)
	return nil
}

// nhMatch4 mirrors fib_nh_match(): whether the request's nexthop fields
// select route e.
func nhMatch4(m *Match, e *Route) bool {
	if m.Priority != 0 && m.Priority != e.Priority {
		return false
	}
	if m.NhID != 0 {
		return e.NhID == m.NhID
	}
	if e.NhID != 0 {
		return m.Oif == 0 && !m.Gateway.IsValid() && m.Multipath == nil
	}
	if m.Oif != 0 || m.Gateway.IsValid() {
		if len(e.Nexthops) == 0 {
			return false
		}
		nh := &e.Nexthops[0]
		if m.Realm != 0 && m.Realm != nh.Realm {
			return false
		}
		if m.Oif != 0 && m.Oif != nh.Dev {
			return false
		}
		if m.Gateway.IsValid() && m.Gateway != nh.Gateway {
			return false
		}
		if !m.Encap.IsZero() && m.Encap != nh.Encap {
			return false // fib_encap_match() / lwtunnel_cmp_encap()
		}
		return true
	}
	if m.Multipath == nil {
		return true
	}
	// Hop by hop; a request with fewer hops than the route fails
	// rtnh_ok() (no match), extra request hops are ignored.
	if len(m.Multipath) < len(e.Nexthops) {
		return false
	}
	for i := range e.Nexthops {
		q, nh := &m.Multipath[i], &e.Nexthops[i]
		if q.Dev != 0 && q.Dev != nh.Dev {
			return false
		}
		if q.Gateway.IsValid() && q.Gateway != nh.Gateway {
			return false
		}
		if q.Realm != 0 && q.Realm != nh.Realm {
			return false
		}
	}
	return true
}

// metricsMatch4 mirrors fib_metrics_match(): every metric given must be
// stored with the same value.
func metricsMatch4(m *Match, e *Route) bool {
	for i := range m.Metrics.Len() {
		typ, v := m.Metrics.At(i)
		if got, ok := e.Metrics.Get(typ); !ok || got != v {
			return false
		}
	}
	return true
}

// delete4 is fib_table_delete() (mu held).
func (t *Tables) delete4(m Match) (Change, *rtnl.Error) {
	dst := m.Dst.Masked()
	l := t.getLeaf(m.Table, dst)
	if l.len() == 0 {
		return Change{}, rtnl.Errno(syscall.ESRCH)
	}
	s := l.slice()
	fa, found := findAlias4(s, m.Table, m.Tos, 0)
	if !found {
		return Change{}, rtnl.Errno(syscall.ESRCH)
	}
	for j := fa; j < len(s); j++ {
		e := &s[j].r
		if e.Table != m.Table || e.Tos != m.Tos {
			break
		}
		if (m.Type == 0 || e.Type == m.Type) &&
			(m.Scope == rtnl.RT_SCOPE_NOWHERE || e.Scope == m.Scope) &&
			(!m.Prefsrc.IsValid() || e.Prefsrc == m.Prefsrc) &&
			(m.Protocol == 0 || e.Protocol == m.Protocol) &&
			nhMatch4(&m, e) && metricsMatch4(&m, e) {
			a := s[j]
			s = append(s[:j], s[j+1:]...)
			t.setLeaf(m.Table, dst, s)
			t.routes.Add(-1)
			r := a.r
			r.Dst = dst
			t.release(a)
			var c Change
			c.add(rtnl.RTM_DELROUTE, 0, r)
			return c, nil
		}
	}
	return Change{}, rtnl.Errno(syscall.ESRCH)
}
