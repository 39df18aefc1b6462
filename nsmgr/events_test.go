package nsmgr

import (
	"encoding/binary"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/nlemu/nlemu/rtnl"
)

// lnla appends one attribute.
func lnla(b []byte, t uint16, data []byte) []byte {
	b = binary.NativeEndian.AppendUint16(b, uint16(4+len(data)))
	b = binary.NativeEndian.AppendUint16(b, t)
	b = append(b, data...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

func ifinfoBody(index int32, flags, change uint32, attrs ...[]byte) []byte {
	b := make([]byte, rtnl.IfInfoLen)
	binary.NativeEndian.PutUint32(b[4:], uint32(index))
	binary.NativeEndian.PutUint32(b[8:], flags)
	binary.NativeEndian.PutUint32(b[12:], change)
	for _, a := range attrs {
		b = append(b, a...)
	}
	return b
}

func nameAttr(n string) []byte { return lnla(nil, rtnl.IFLA_IFNAME, []byte(n+"\x00")) }

// vethReq is `ip link add NAME type veth peer name PEER`.
func vethReq(name, peer string) []byte {
	p := ifinfoBody(0, 0, 0, nameAttr(peer))
	li := lnla(lnla(nil, rtnl.IFLA_INFO_KIND, []byte("veth\x00")), rtnl.IFLA_INFO_DATA|0x8000, lnla(nil, rtnl.VETH_INFO_PEER, p))
	return ifinfoBody(0, 0, 0, nameAttr(name), lnla(nil, rtnl.IFLA_LINKINFO|0x8000, li))
}

func kindReq(name, kind string) []byte {
	return ifinfoBody(0, 0, 0, nameAttr(name), lnla(nil, rtnl.IFLA_LINKINFO|0x8000, lnla(nil, rtnl.IFLA_INFO_KIND, []byte(kind+"\x00"))))
}

const createFlags = rtnl.NLM_F_REQUEST | rtnl.NLM_F_ACK | rtnl.NLM_F_EXCL | rtnl.NLM_F_CREATE

func newTestNS(t *testing.T) *Namespace {
	t.Helper()
	m := NewManager(&rtnl.LockConfig{RTNL: &rtnl.RTNL{}})
	if err := m.Add("t"); err != nil {
		t.Fatal(err)
	}
	ns, _ := m.Get("t")
	return ns
}

// do runs one request through the dispatch table and returns its error
// text ("" on success).
func do(t *testing.T, ns *Namespace, typ, flags uint16, body []byte) string {
	t.Helper()
	msg := rtnl.SplitDatagram(rtnl.AppendMessage(nil, typ, flags, 1, 9, body))[0]
	d, err := ns.Do(&Request{Msg: &msg, PortID: 9, Self: &recorder{}})
	if d != nil {
		t.Fatalf("request type %d started a dump", typ)
	}
	if err == nil || err.Errno == 0 {
		return ""
	}
	s := err.Errno.Error()
	if err.Msg != "" {
		s += ": " + err.Msg
	}
	return s
}

// ruleShow renders the IPv4 rules as `ip rule show` marks them: name and
// [detached] flags.
func ruleShow(ns *Namespace) []string {
	var out []string
	ns.Rules(rtnl.AF_INET).Snapshot().Each(0, func(_ int, m *rtnl.RuleMsg) bool {
		var b strings.Builder
		if len(m.IIFName) > 0 {
			b.WriteString("iif " + string(m.IIFName))
			if m.Flags&rtnl.FIB_RULE_IIF_DETACHED != 0 {
				b.WriteString(" [detached]")
			}
		}
		if len(m.OIFName) > 0 {
			b.WriteString(" oif " + string(m.OIFName))
			if m.Flags&rtnl.FIB_RULE_OIF_DETACHED != 0 {
				b.WriteString(" [detached]")
			}
		}
		if b.Len() > 0 {
			out = append(out, strings.TrimSpace(b.String()))
		}
		return true
	})
	return out
}

func ruleReq(iif, oif string, table uint8) []byte {
	h := []byte{rtnl.AF_INET, 0, 0, 0, table, 0, 0, rtnl.FR_ACT_TO_TBL, 0, 0, 0, 0}
	if iif != "" {
		h = lnla(h, rtnl.FRA_IIFNAME, []byte(iif+"\x00"))
	}
	if oif != "" {
		h = lnla(h, rtnl.FRA_OIFNAME, []byte(oif+"\x00"))
	}
	return h
}

// TestRulesAttachAndDetachLive: fib_rules_event() through real requests:
// rules naming a device that does not exist are [detached]; creating it
// attaches them (NETDEV_REGISTER), renaming detaches those bound to its
// index and attaches those naming the new name (NETDEV_CHANGENAME),
// deleting detaches (NETDEV_UNREGISTER). The live differential version is
// integration/testdata/ipcases/link_rules_detached_lifecycle.batch.
func TestRulesAttachAndDetachLive(t *testing.T) {
	ns := newTestNS(t)
	steps := []struct {
		name       string
		typ, flags uint16
		body       []byte
		want       []string
	}{
		{"rules first", rtnl.RTM_NEWRULE, createFlags, ruleReq("v0", "", 10), []string{"iif v0 [detached]"}},
		{"second rule", rtnl.RTM_NEWRULE, createFlags, ruleReq("v0", "v1", 11), []string{"iif v0 [detached] oif v1 [detached]", "iif v0 [detached]"}},
		{"veth v0/v1 attaches both", rtnl.RTM_NEWLINK, createFlags, vethReq("v0", "v1"), []string{"iif v0 oif v1", "iif v0"}},
		{"rename v0 → w0 detaches v0", rtnl.RTM_NEWLINK, rtnl.NLM_F_REQUEST | rtnl.NLM_F_ACK, ifinfoBody(3, 0, 0, nameAttr("w0")), []string{"iif v0 [detached] oif v1", "iif v0 [detached]"}},
		{"rename v1 → v0 moves both names", rtnl.RTM_NEWLINK, rtnl.NLM_F_REQUEST | rtnl.NLM_F_ACK, ifinfoBody(2, 0, 0, nameAttr("v0")), []string{"iif v0 oif v1 [detached]", "iif v0"}},
		{"delete w0 takes v0 too", rtnl.RTM_DELLINK, rtnl.NLM_F_REQUEST | rtnl.NLM_F_ACK, ifinfoBody(0, 0, 0, nameAttr("w0")), []string{"iif v0 [detached] oif v1 [detached]", "iif v0 [detached]"}},
		{"a bridge named v1", rtnl.RTM_NEWLINK, createFlags, kindReq("v1", "bridge"), []string{"iif v0 [detached] oif v1", "iif v0 [detached]"}},
	}
	for _, st := range steps {
		if got := do(t, ns, st.typ, st.flags, st.body); got != "" {
			t.Fatalf("%s: %s", st.name, got)
		}
		// Rules are listed by priority: the later rule (lower automatic
		// priority) first.
		if d := cmp.Diff(st.want, ruleShow(ns)); d != "" {
			t.Errorf("%s (-want +got):\n%s", st.name, d)
		}
	}
}

// TestNewlinkHandlerErrors: rtnl_newlink() / rtnl_setlink() /
// rtnl_dellink() answers that depend on which device the request names.
func TestNewlinkHandlerErrors(t *testing.T) {
	ns := newTestNS(t)
	if got := do(t, ns, rtnl.RTM_NEWLINK, createFlags, vethReq("v0", "v1")); got != "" {
		t.Fatal(got)
	}
	const req = rtnl.NLM_F_REQUEST | rtnl.NLM_F_ACK
	cases := []struct {
		name       string
		typ, flags uint16
		body       []byte
		want       string
	}{
		{"iplink_have_newlink probe", rtnl.RTM_NEWLINK, req, ifinfoBody(0, 0, 0), syscall.ENODEV.Error()},
		{"newlink of a missing name without create", rtnl.RTM_NEWLINK, req, ifinfoBody(0, 0, 0, nameAttr("zz")), syscall.ENODEV.Error()},
		{"create without kind", rtnl.RTM_NEWLINK, createFlags, ifinfoBody(0, 0, 0, nameAttr("zz")), syscall.EOPNOTSUPP.Error() + ": Unknown device type"},
		{"unknown kind", rtnl.RTM_NEWLINK, createFlags, kindReq("zz", "vxlan"), syscall.EOPNOTSUPP.Error() + ": Unknown device type"},
		{"existing with NLM_F_EXCL", rtnl.RTM_NEWLINK, createFlags, kindReq("v0", "bridge"), syscall.EEXIST.Error()},
		{"existing with NLM_F_REPLACE", rtnl.RTM_NEWLINK, req | rtnl.NLM_F_REPLACE, ifinfoBody(3, 0, 0), syscall.EOPNOTSUPP.Error()},
		{"negative index", rtnl.RTM_NEWLINK, req, ifinfoBody(-1, 0, 0), syscall.EINVAL.Error() + ": ifindex can't be negative"},
		{"setlink naming nothing", rtnl.RTM_SETLINK, req, ifinfoBody(0, 0, 0), syscall.EINVAL.Error()},
		{"setlink missing index", rtnl.RTM_SETLINK, req, ifinfoBody(77, 0, 0), syscall.ENODEV.Error()},
		{"dellink naming nothing", rtnl.RTM_DELLINK, req, ifinfoBody(0, 0, 0), syscall.EINVAL.Error()},
		{"dellink missing name", rtnl.RTM_DELLINK, req, ifinfoBody(0, 0, 0, nameAttr("zz")), syscall.ENODEV.Error()},
		{"dellink lo", rtnl.RTM_DELLINK, req, ifinfoBody(1, 0, 0), syscall.EOPNOTSUPP.Error()},
		{"unimplemented attribute", rtnl.RTM_SETLINK, req, ifinfoBody(3, 0, 0, lnla(nil, 19 /* IFLA_NET_NS_PID */, binary.NativeEndian.AppendUint32(nil, 1))), syscall.EOPNOTSUPP.Error() + ": nlemu: this link attribute is not supported yet"},
		{"mtu by name through newlink", rtnl.RTM_NEWLINK, req, ifinfoBody(0, 0, 0, nameAttr("v0"), lnla(nil, rtnl.IFLA_MTU, binary.NativeEndian.AppendUint32(nil, 9000))), ""},
	}
	for _, c := range cases {
		if got := do(t, ns, c.typ, c.flags, c.body); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	if l, _ := ns.devs.ByIndex(3); l.MTU != 9000 {
		t.Errorf("v0 mtu %d after the by-name change, want 9000", l.MTU)
	}
}

// TestLinkDumpFilters: rtnl_dump_ifinfo()'s IFLA_MASTER and IFLA_LINKINFO
// filters (link_master_filtered(), link_kind_filtered()): master -1 means
// "no master", a kind without rtnl_link_ops filters nothing, and a filtered
// dump marks its messages NLM_F_DUMP_FILTERED (measured: not its
// NLMSG_DONE).
func TestLinkDumpFilters(t *testing.T) {
	ns := newTestNS(t)
	for _, b := range [][]byte{vethReq("v0", "v1"), kindReq("br0", "bridge")} {
		if got := do(t, ns, rtnl.RTM_NEWLINK, createFlags, b); got != "" {
			t.Fatal(got)
		}
	}
	if got := do(t, ns, rtnl.RTM_SETLINK, rtnl.NLM_F_REQUEST|rtnl.NLM_F_ACK, ifinfoBody(3, 0, 0, lnla(nil, rtnl.IFLA_MASTER, binary.NativeEndian.AppendUint32(nil, 4)))); got != "" {
		t.Fatal(got)
	}
	kind := func(k string) []byte {
		return lnla(nil, rtnl.IFLA_LINKINFO|0x8000, lnla(nil, rtnl.IFLA_INFO_KIND, []byte(k+"\x00")))
	}
	master := func(i int32) []byte {
		return lnla(nil, rtnl.IFLA_MASTER, binary.NativeEndian.AppendUint32(nil, uint32(i)))
	}
	type entry struct {
		Index    int32
		Filtered bool
	}
	cases := []struct {
		name string
		attr []byte
		want []entry
	}{
		{"no filter", nil, []entry{{1, false}, {2, false}, {3, false}, {4, false}}},
		{"master 4", master(4), []entry{{3, true}}},
		{"master -1", master(-1), []entry{{1, true}, {2, true}, {4, true}}},
		{"master 99", master(99), nil},
		{"kind veth", kind("veth"), []entry{{2, true}, {3, true}}},
		{"kind foo", kind("foo"), []entry{{1, false}, {2, false}, {3, false}, {4, false}}},
	}
	for _, c := range cases {
		for _, strict := range []bool{false, true} {
			msg := rtnl.SplitDatagram(rtnl.AppendMessage(nil, rtnl.RTM_GETLINK, rtnl.NLM_F_REQUEST|rtnl.NLM_F_DUMP, 1, 9, ifinfoBody(0, 0, 0, c.attr)))[0]
			d, err := ns.Do(&Request{Msg: &msg, PortID: 9, Strict: strict})
			if err != nil || d == nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			b, done := d.Fill(nil, 1<<20)
			if !done || d.Err() != nil {
				t.Fatalf("%s: done %v err %v", c.name, done, d.Err())
			}
			var got []entry
			for _, m := range rtnl.SplitDatagram(b) {
				got = append(got, entry{int32(binary.NativeEndian.Uint32(m.Data[4:])), uint16(m.Header.Flags)&rtnl.NLM_F_DUMP_FILTERED != 0})
			}
			if d := cmp.Diff(c.want, got); d != "" {
				t.Errorf("%s (strict %v) (-want +got):\n%s", c.name, strict, d)
			}
		}
	}
}

// heldRecorder records whether RTNL was held when each notification came.
type heldRecorder struct {
	lock *rtnl.RTNL
	held []bool
}

func (r *heldRecorder) Deliver([]byte) { r.held = append(r.held, r.lock.Held()) }

// TestLinkChangesHoldRTNL: rtnl_newlink(), rtnl_setlink() and
// rtnl_dellink() run under RTNL (their dispatch rows have lockRTNL), and
// so does everything their events do: the RTNLGRP_LINK notifications and
// the rule and address updates go out before RTNL is released, as the
// kernel's notifier chain runs under it. Each request takes RTNL once.
func TestLinkChangesHoldRTNL(t *testing.T) {
	lock := &rtnl.RTNL{}
	m := NewManager(&rtnl.LockConfig{RTNL: lock})
	if err := m.Add("t"); err != nil {
		t.Fatal(err)
	}
	ns, _ := m.Get("t")
	rec := &heldRecorder{lock: lock}
	ns.SetGroups(rec, 1<<(rtnlgrpLink-1))
	const req = rtnl.NLM_F_REQUEST | rtnl.NLM_F_ACK
	reqs := []struct {
		typ, flags uint16
		body       []byte
	}{
		{rtnl.RTM_NEWLINK, createFlags, vethReq("v0", "v1")},
		{rtnl.RTM_SETLINK, req, ifinfoBody(3, 1, 1)},
		{rtnl.RTM_NEWLINK, req, ifinfoBody(2, 1, 1)},
		{rtnl.RTM_DELLINK, req, ifinfoBody(3, 0, 0)},
	}
	for i, r := range reqs {
		before := lock.Stats().Acquisitions
		if got := do(t, ns, r.typ, r.flags, r.body); got != "" {
			t.Fatalf("request %d: %s", i, got)
		}
		if n := lock.Stats().Acquisitions - before; n != 1 {
			t.Errorf("request %d took RTNL %d times, want 1", i, n)
		}
	}
	if len(rec.held) < 8 {
		t.Fatalf("%d notifications, want the create, up, linkwatch and delete ones", len(rec.held))
	}
	for i, h := range rec.held {
		if !h {
			t.Errorf("notification %d sent without RTNL", i)
		}
	}
	if lock.Held() {
		t.Error("RTNL still held")
	}
}

// TestRulesAttachRaceFree: IPv6 rule adds (which take no RTNL) racing
// with the creation of the devices they name must end with every rule
// attached: a rule added before its device registered is attached by the
// device's NETDEV_REGISTER, one added after resolves the name itself
// (rulesops takes its ops mutex for both, so none falls between).
func TestRulesAttachRaceFree(t *testing.T) {
	ns := newTestNS(t)
	const n = 60
	done := make(chan string, 2)
	go func() {
		for i := range n {
			h := []byte{rtnl.AF_INET6, 0, 0, 0, 10, 0, 0, rtnl.FR_ACT_TO_TBL, 0, 0, 0, 0}
			h = lnla(h, rtnl.FRA_IIFNAME, []byte(fmt.Sprintf("d%d\x00", i)))
			if got := do(t, ns, rtnl.RTM_NEWRULE, createFlags, h); got != "" {
				done <- got
				return
			}
		}
		done <- ""
	}()
	go func() {
		for i := range n {
			if got := do(t, ns, rtnl.RTM_NEWLINK, createFlags, kindReq(fmt.Sprintf("d%d", i), "bridge")); got != "" {
				done <- got
				return
			}
		}
		done <- ""
	}()
	for range 2 {
		if e := <-done; e != "" {
			t.Fatal(e)
		}
	}
	detached := 0
	ns.Rules(rtnl.AF_INET6).Snapshot().Each(0, func(_ int, m *rtnl.RuleMsg) bool {
		if m.Flags&rtnl.FIB_RULE_IIF_DETACHED != 0 {
			detached++
		}
		return true
	})
	if detached != 0 {
		t.Errorf("%d of %d rules left detached although every device exists", detached, n)
	}
}
