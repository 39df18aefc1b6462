package nsmgr

import (
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/nlemu/nlemu/rtnl"
)

// TestDispatchFallsBackToUnspecLikeRtnetlinkRcvMsg: a family without its
// own row for a type reaches the AF_UNSPEC row (rtnl_get_link() then
// PF_UNSPEC); a type whose only rows are other families' is EOPNOTSUPP.
func TestDispatchFallsBackToUnspecLikeRtnetlinkRcvMsg(t *testing.T) {
	ns := startupNS(t)
	for _, tc := range []struct {
		name   string
		typ    uint16
		dump   bool
		family uint8
		want   syscall.Errno
	}{
		// ip6addrlbl_dump is registered for PF_INET6 only.
		{"addrlabel dump of AF_INET", rtnl.RTM_GETADDRLABEL, true, rtnl.AF_INET, syscall.EOPNOTSUPP},
		{"addrlabel dump of AF_INET6", rtnl.RTM_GETADDRLABEL, true, rtnl.AF_INET6, 0},
		// rtnl_getlink / rtnl_dump_ifinfo are PF_UNSPEC: every family gets them.
		{"link dump of family 77", rtnl.RTM_GETLINK, true, 77, 0},
		// RTM_GETNSID has a PF_UNSPEC doit.
		{"nsid get of AF_INET6", rtnl.RTM_GETNSID, false, rtnl.AF_INET6, 0},
		// No handler at all for type 0x7f+3.
		{"unregistered type", rtnl.RTM_MAX - 1, false, rtnl.AF_INET, syscall.EOPNOTSUPP},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := make([]byte, 16)
			body[0] = tc.family
			o := runStartup(t, ns, tc.typ, tc.dump, false, body)
			if o.Errno != tc.want {
				t.Errorf("errno %v, want %v", o.Errno, tc.want)
			}
		})
	}
}

// TestLinkChangeRunsUnderRTNL: a row without RTNL_FLAG_DOIT_UNLOCKED
// (rtnl_setlink, rtnl_newlink) runs with RTNL held by the dispatcher, and
// a rule change (unlocked row) takes RTNL only when its ops says so.
func TestLinkChangeRunsUnderRTNL(t *testing.T) {
	ns := startupNS(t)
	held := false
	probe := row{family: 99, typ: rtnl.RTM_SETLINK, flags: lockRTNL,
		doit: func(ns *Namespace, _ *Request) *rtnl.Error { held = ns.cfg.RTNL.Held(); return nil }}
	old, oldIndex := dispatch, dispatchByType
	defer func() { dispatch, dispatchByType = old, oldIndex }()
	dispatch = buildDispatch(append(append([]row{}, rtnlTable...), append(startupRows(), probe)...))
	dispatchByType = indexDispatch(dispatch)
	body := make([]byte, 16)
	body[0] = 99
	before := ns.cfg.RTNL.Stats().Acquisitions
	if o := runStartup(t, ns, rtnl.RTM_SETLINK, false, false, body); o.Errno != 0 {
		t.Fatalf("errno %v", o.Errno)
	}
	if !held {
		t.Error("RTNL was not held during a lockRTNL doit")
	}
	if got := ns.cfg.RTNL.Stats().Acquisitions - before; got != 1 {
		t.Errorf("RTNL acquisitions %d, want 1", got)
	}
	if ns.cfg.RTNL.Held() {
		t.Error("RTNL still held after the doit")
	}
}

// TestDumpAllResumesAcrossDatagrams: rtnl_dump_all() over several families
// yields, filled one small datagram at a time, the same messages as in one
// large one.
func TestDumpAllResumesAcrossDatagrams(t *testing.T) {
	ns := startupNS(t)
	body := make([]byte, 8) // struct netconfmsg + padding, AF_UNSPEC
	fill := func(limit int) []string {
		d, err := ns.Do(&Request{Msg: startupReq(rtnl.RTM_GETNETCONF, rtnl.NLM_F_DUMP, body), Self: &recorder{}})
		if err != nil {
			t.Fatal(err)
		}
		var msgs []string
		for done := false; !done; {
			var b []byte
			b, done = d.Fill(nil, limit)
			for _, m := range rtnl.SplitDatagram(b) {
				msgs = append(msgs, string(m.Raw))
			}
		}
		if err := d.Err(); err != nil {
			t.Fatal(err)
		}
		return msgs
	}
	big, small := fill(1<<20), fill(1)
	if len(big) < 6 { // lo, all, default for AF_INET and AF_INET6
		t.Fatalf("only %d netconf messages", len(big))
	}
	if diff := cmp.Diff(big, small); diff != "" {
		t.Errorf("one message per datagram differs (-big +small):\n%s", diff)
	}
}
