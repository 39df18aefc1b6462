package server_test

import (
	"errors"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nlemu/nlemu/rtnl"
	T "github.com/nlemu/nlemu/rtnl/rtnltest"
	"github.com/nlemu/nlemu/server"
)

// drain returns every notification queued for c within a short wait,
// rendered as "TYPE seq=N pid=P flags=F <rule>".
func drain(t *testing.T, c *server.Client, requester uint32) []string {
	t.Helper()
	c.SetRecvTimeout(50 * time.Millisecond)
	defer c.SetRecvTimeout(5 * time.Second)
	var out []string
	for {
		b, err := c.Recv()
		if errors.Is(err, server.ErrTimeout) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range rtnl.SplitDatagram(b) {
			pid := "requester"
			if m.Header.PID != requester {
				pid = "other"
			}
			out = append(out, T.RenderSpec(m)+" pid="+pid+" nlflags="+itoa(int(m.Header.Flags)))
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestQuirkNotificationsGroupsSeqPidAndEcho pins RULES-SPEC §5 / A13: groups
// 8 and 19 (IPMR shares 8, IP6MR 19), nlmsg_pid = the changer's port id,
// flags 0, no notification for failures, NLM_F_ECHO answered with a unicast
// copy before the ACK and not broadcast back to the requester.
func TestQuirkNotificationsGroupsSeqPidAndEcho(t *testing.T) {
	srv := server.New(server.Config{})
	defer srv.Close()
	mon := newSess(t, srv, optsExtAck)
	mon.c.Bind(1 << (rtnl.RTNLGRP_IPV4_RULE - 1))
	mon.c.SetSockopt(rtnl.SOL_NETLINK, rtnl.NETLINK_ADD_MEMBERSHIP, rtnl.RTNLGRP_IPV6_RULE)
	mon4 := newSess(t, srv, optsExtAck)
	mon4.c.SetSockopt(rtnl.SOL_NETLINK, rtnl.NETLINK_ADD_MEMBERSHIP, rtnl.RTNLGRP_IPV4_RULE)
	s := newSess(t, srv, optsExtAck)
	pid := s.c.PortID()

	run(t, s, []step{
		add(gotoRule(100, 200)),
		add(v4(100, T.Pref(200))),
		addErr(v4(100, T.Pref(200)), syscall.EEXIST, ""),
		del(delHdr(rtnl.AF_INET, T.Pref(200))),
		del(delHdr(rtnl.AF_INET, T.Pref(100))),
		delErr(delHdr(rtnl.AF_INET, T.Pref(12345)), syscall.ENOENT, ""),
		add(v6(100, T.Pref(100))),
		add(T.Body(T.Hdr{Family: rtnl.RTNL_FAMILY_IPMR, Table: 253, Action: 1}, T.Pref(100))),
		add(T.Body(T.Hdr{Family: rtnl.RTNL_FAMILY_IP6MR, Table: 254, Action: 1}, T.Pref(100))),
	})
	want := []string{
		"NEWRULE {'family': 2, 'dst_len': 0, 'src_len': 0, 'tos': 0, 'table': 0, 'res1': 0, 'res2': 0, 'action': 2, 'flags': '0x4'} [('TABLE', 0), ('SUPPRESS_PREFIXLEN', -1), ('PROTOCOL', 0), ('PRIORITY', 100), ('GOTO', 200)] pid=requester nlflags=0",
		"NEWRULE {'family': 2, 'dst_len': 0, 'src_len': 0, 'tos': 0, 'table': 100, 'res1': 0, 'res2': 0, 'action': 1, 'flags': '0x0'} [('TABLE', 100), ('SUPPRESS_PREFIXLEN', -1), ('PROTOCOL', 0), ('PRIORITY', 200)] pid=requester nlflags=0",
		"DELRULE {'family': 2, 'dst_len': 0, 'src_len': 0, 'tos': 0, 'table': 100, 'res1': 0, 'res2': 0, 'action': 1, 'flags': '0x0'} [('TABLE', 100), ('SUPPRESS_PREFIXLEN', -1), ('PROTOCOL', 0), ('PRIORITY', 200)] pid=requester nlflags=0",
		"DELRULE {'family': 2, 'dst_len': 0, 'src_len': 0, 'tos': 0, 'table': 0, 'res1': 0, 'res2': 0, 'action': 2, 'flags': '0x4'} [('TABLE', 0), ('SUPPRESS_PREFIXLEN', -1), ('PROTOCOL', 0), ('PRIORITY', 100), ('GOTO', 200)] pid=requester nlflags=0",
		"NEWRULE {'family': 10, 'dst_len': 0, 'src_len': 0, 'tos': 0, 'table': 100, 'res1': 0, 'res2': 0, 'action': 1, 'flags': '0x0'} [('TABLE', 100), ('SUPPRESS_PREFIXLEN', -1), ('PROTOCOL', 0), ('PRIORITY', 100)] pid=requester nlflags=0",
		"NEWRULE {'family': 128, 'dst_len': 0, 'src_len': 0, 'tos': 0, 'table': 253, 'res1': 0, 'res2': 0, 'action': 1, 'flags': '0x0'} [('TABLE', 253), ('SUPPRESS_PREFIXLEN', -1), ('PROTOCOL', 0), ('PRIORITY', 100)] pid=requester nlflags=0",
		"NEWRULE {'family': 129, 'dst_len': 0, 'src_len': 0, 'tos': 0, 'table': 254, 'res1': 0, 'res2': 0, 'action': 1, 'flags': '0x0'} [('TABLE', 254), ('SUPPRESS_PREFIXLEN', -1), ('PROTOCOL', 0), ('PRIORITY', 100)] pid=requester nlflags=0",
	}
	if d := cmp.Diff(want, drain(t, mon.c, pid)); d != "" {
		t.Errorf("groups 8+19 listener (-kernel +nlemu):\n%s", d)
	}
	got4 := drain(t, mon4.c, pid)
	if len(got4) != 5 { // four IPv4 changes + IPMR; IPv6 and IP6MR go to group 19 only
		t.Errorf("group 8 listener got %d notifications, want 5: %v", len(got4), got4)
	}

	// NLM_F_ECHO: the requester (also a group-8 listener) gets exactly one
	// copy, unicast, before its ACK; other listeners get the broadcast.
	echo := newSess(t, srv, optsExtAck)
	echo.c.SetSockopt(rtnl.SOL_NETLINK, rtnl.NETLINK_ADD_MEMBERSHIP, rtnl.RTNLGRP_IPV4_RULE)
	a, before := echo.request(rtnl.RTM_NEWRULE, rtnl.NLM_F_CREATE|rtnl.NLM_F_ECHO, v4(100, T.Pref(300)))
	if a.Errno != 0 || len(before) != 1 || before[0].Header.Type != rtnl.RTM_NEWRULE || before[0].Header.Flags != 0 {
		t.Fatalf("echo: ack %v, before ack %v", a, before)
	}
	if extra := drain(t, echo.c, echo.c.PortID()); len(extra) != 0 {
		t.Errorf("requester got the broadcast too: %v", extra)
	}
	if got := drain(t, mon.c, echo.c.PortID()); len(got) != 1 {
		t.Errorf("listener after echo: %v", got)
	}
}

// TestQuirkSlowListenerGetsENOBUFS: a listener that never reads loses
// notifications once its receive buffer is full (and every later one until
// it has drained its queue: NETLINK_S_CONGESTED), sees ENOBUFS exactly once
// at its next receive, before the queued ones (skb_recv_datagram() checks
// sk_err first), and the server's memory for it stays bounded. The kernel
// queues exactly 256: 212992 / 832, the truesize of a rule notification
// (see TestENOBUFSAtKernelTruesizeCount).
func TestQuirkSlowListenerGetsENOBUFS(t *testing.T) {
	srv := server.New(server.Config{})
	defer srv.Close()
	mon := newSess(t, srv, optsExtAck)
	mon.c.SetSockopt(rtnl.SOL_NETLINK, rtnl.NETLINK_ADD_MEMBERSHIP, rtnl.RTNLGRP_IPV4_RULE)
	// sk_rcvbuf 212992 (rmem_default here) whatever this machine's default.
	mon.c.SetSockopt(rtnl.SOL_SOCKET, rtnl.SO_RCVBUF, 106496)
	s := newSess(t, srv, optsExtAck)
	const n = 20000 // 16.6 MB of truesize against a 208 KiB buffer
	for i := 0; i < n; i++ {
		s.c.Send(T.Msg(rtnl.RTM_NEWRULE, rtnl.NLM_F_REQUEST|rtnl.NLM_F_CREATE, uint32(i), v4(100, T.Pref(uint32(1000+i)))))
	}
	got, errs := 0, 0
	mon.c.SetRecvTimeout(100 * time.Millisecond)
	for {
		_, err := mon.c.Recv()
		if errors.Is(err, server.ErrTimeout) {
			break
		}
		if errors.Is(err, syscall.ENOBUFS) {
			if got != 0 {
				t.Error("ENOBUFS after queued notifications")
			}
			errs++
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		got++
	}
	if errs != 1 || got != 256 {
		t.Errorf("received %d of %d notifications, ENOBUFS %d times; kernel: 256, once", got, n, errs)
	}
	// The socket keeps working afterwards.
	s.add(v4(100, T.Pref(7)))
	if len(drain(t, mon.c, 0)) != 1 {
		t.Error("listener dead after overrun")
	}
}

// TestDeletedNamespaceLivesWhileSocketHoldsIt mirrors `ip netns del` while
// a process still has a socket in the namespace.
func TestDeletedNamespaceLivesWhileSocketHoldsIt(t *testing.T) {
	srv := server.New(server.Config{})
	defer srv.Close()
	if err := srv.Namespaces().Add("gone"); err != nil {
		t.Fatal(err)
	}
	s := newSess(t, srv, server.Options{Namespace: "gone", ExtAck: true})
	if err := srv.Namespaces().Del("gone"); err != nil {
		t.Fatal(err)
	}
	if a := s.add(v4(100, T.Pref(5))); a.Errno != 0 {
		t.Fatalf("add in deleted namespace: %v", a)
	}
	if got := short(s, rtnl.AF_INET); len(got) != 4 {
		t.Errorf("rules: %v", got)
	}
	if _, err := srv.Dial(server.Options{Namespace: "gone"}); !errors.Is(err, server.ErrNoNamespace) {
		t.Errorf("new socket in deleted namespace: %v", err)
	}
	if err := srv.Namespaces().Add("gone"); err != nil {
		t.Fatal(err)
	}
	fresh := newSess(t, srv, server.Options{Namespace: "gone"})
	if got := short(fresh, rtnl.AF_INET); len(got) != 3 {
		t.Errorf("re-created namespace is not fresh: %v", got)
	}
}

// TestNamespacesAreIsolated: a change in one namespace is invisible in
// another, and notifications stay in their namespace.
func TestNamespacesAreIsolated(t *testing.T) {
	srv := server.New(server.Config{})
	defer srv.Close()
	srv.Namespaces().Add("a")
	srv.Namespaces().Add("b")
	sa := newSess(t, srv, server.Options{Namespace: "a"})
	sb := newSess(t, srv, server.Options{Namespace: "b"})
	sb.c.SetSockopt(rtnl.SOL_NETLINK, rtnl.NETLINK_ADD_MEMBERSHIP, rtnl.RTNLGRP_IPV4_RULE)
	sa.add(v4(100, T.Pref(5)))
	if got := short(sb, rtnl.AF_INET); len(got) != 3 {
		t.Errorf("b sees a's rule: %v", got)
	}
	if n := drain(t, sb.c, 0); len(n) != 0 {
		t.Errorf("b got a's notification: %v", n)
	}
}
