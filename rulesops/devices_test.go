package rulesops

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/nlemu/nlemu/rtnl"
	rt "github.com/nlemu/nlemu/rtnl/rtnltest"
)

// bindings lists each rule's (pref, iif index, oif index): 0 none, -1
// detached.
func bindings(o *Ops) [][3]int32 {
	var out [][3]int32
	s := o.Snapshot()
	for i := range s.Len() {
		r, x := s.Rule(i)
		if x.IIFName[0] != 0 || x.OIFName[0] != 0 || x.IIFIndex() != 0 || x.OIFIndex() != 0 {
			out = append(out, [3]int32{int32(r.Pref), x.IIFIndex(), x.OIFIndex()})
		}
	}
	return out
}

// TestDeviceEventsAttachDetach is fib_rules_event(): NETDEV_REGISTER
// attaches the detached rules naming the device (attach_rules()),
// NETDEV_UNREGISTER detaches the rules bound to its index whatever name
// they store (detach_rules()), NETDEV_CHANGENAME does both; a rule with an
// empty name (index -1, nothing to compare) never attaches (RULES-SPEC
// §9, verified A22).
func TestDeviceEventsAttachDetach(t *testing.T) {
	o := newTestOps(t, rtnl.AF_INET) // devices: lo=1, v0=3
	addRule(t, o, rt.Body(rt.V4(0), rt.Pref(10), rt.Table(10), rt.Str(rtnl.FRA_IIFNAME, "v0")))
	addRule(t, o, rt.Body(rt.V4(0), rt.Pref(11), rt.Table(11), rt.Str(rtnl.FRA_IIFNAME, "w0"), rt.Str(rtnl.FRA_OIFNAME, "v0")))
	addRule(t, o, rt.Body(rt.V4(0), rt.Pref(12), rt.Table(12), rt.Str(rtnl.FRA_OIFNAME, "")))
	steps := []struct {
		name string
		do   func()
		want [][3]int32
	}{
		{"added", func() {}, [][3]int32{{10, 3, 0}, {11, -1, 3}, {12, 0, -1}}},
		{"w0 registers as 7", func() { o.DevRegistered([]byte("w0"), 7) }, [][3]int32{{10, 3, 0}, {11, 7, 3}, {12, 0, -1}}},
		{"v0 (3) renamed x0", func() { o.DevRenamed([]byte("x0"), 3) }, [][3]int32{{10, -1, 0}, {11, 7, -1}, {12, 0, -1}}},
		{"w0 (7) renamed v0", func() { o.DevRenamed([]byte("v0"), 7) }, [][3]int32{{10, 7, 0}, {11, -1, 7}, {12, 0, -1}}},
		{"an empty name never attaches", func() { o.DevRegistered(nil, 9) }, [][3]int32{{10, 7, 0}, {11, -1, 7}, {12, 0, -1}}},
		{"7 unregisters", func() { o.DevUnregistered(7) }, [][3]int32{{10, -1, 0}, {11, -1, -1}, {12, 0, -1}}},
		{"w0 comes back as 8", func() { o.DevRegistered([]byte("w0"), 8) }, [][3]int32{{10, -1, 0}, {11, 8, -1}, {12, 0, -1}}},
	}
	for _, st := range steps {
		st.do()
		if d := cmp.Diff(st.want, bindings(o)); d != "" {
			t.Errorf("%s (-want +got):\n%s", st.name, d)
		}
	}
	// The dump shows exactly the detached ones.
	var flags []uint32
	o.Snapshot().Each(0, func(_ int, m *rtnl.RuleMsg) bool {
		if m.Priority >= 10 && m.Priority <= 12 {
			flags = append(flags, m.Flags&(rtnl.FIB_RULE_IIF_DETACHED|rtnl.FIB_RULE_OIF_DETACHED))
		}
		return true
	})
	if d := cmp.Diff([]uint32{rtnl.FIB_RULE_IIF_DETACHED, rtnl.FIB_RULE_OIF_DETACHED, 0}, flags); d != "" {
		t.Errorf("dump flags (-want +got):\n%s", d)
	}
}
