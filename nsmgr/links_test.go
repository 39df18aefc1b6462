package nsmgr

import (
	"bufio"
	"encoding/hex"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/nlemu/nlemu/netdev"
	"github.com/nlemu/nlemu/rtnl"
)

// kernelCapture is one message of testdata/lo-kernel-6.18.txt.
type kernelCapture struct {
	tstamp, reachable uint32
	msg               []byte
}

func loadKernelCaptures(t *testing.T) map[string]kernelCapture {
	t.Helper()
	f, err := os.Open("testdata/lo-kernel-6.18.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	caps := map[string]kernelCapture{}
	s := bufio.NewScanner(f)
	s.Buffer(nil, 1<<20)
	for s.Scan() {
		line := s.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fs := strings.Fields(line)
		if len(fs) != 4 {
			t.Fatalf("bad capture line %q", line)
		}
		ts, err1 := strconv.ParseUint(fs[1], 10, 32)
		rt, err2 := strconv.ParseUint(fs[2], 10, 32)
		msg, err3 := hex.DecodeString(fs[3])
		if err1 != nil || err2 != nil || err3 != nil {
			t.Fatalf("bad capture line %q", line)
		}
		caps[fs[0]] = kernelCapture{uint32(ts), uint32(rt), msg}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return caps
}

// hexRows renders b 16 bytes a row, for readable diffs.
func hexRows(b []byte) []string {
	var rows []string
	for i := 0; i < len(b); i += 16 {
		rows = append(rows, hex.EncodeToString(b[i:min(i+16, len(b))]))
	}
	return rows
}

// TestLoMessagesMatchKernelCapture encodes lo in each state the kernel
// was captured in (a fresh namespace; the RTM_NEWLINK notifications of
// `ip link set lo up` and `down`; addrconf's AF_INET6 ifinfo after up) and
// requires the captured bytes (rtnl_fill_ifinfo(), inet6_fill_ifinfo()).
// Only tstamp and reachable_time, which vary from run to run in the
// kernel, are taken from the capture. The live differential test is
// integration.TestLoOnTheWireMatchesKernel; this one runs without root.
func TestLoMessagesMatchKernelCapture(t *testing.T) {
	caps := loadKernelCaptures(t)
	const pid = 0x1ab8 // the capturing socket's port id
	d := netdev.New()
	fresh, _ := d.ByIndex(netdev.LoopbackIndex)
	up, ok := d.ChangeFlags(netdev.LoopbackIndex, netdev.IFF_UP)
	if !ok || up == nil {
		t.Fatalf("ChangeFlags(up) = %v, %v", up, ok)
	}
	down, ok := d.ChangeFlags(netdev.LoopbackIndex, 0)
	if !ok || down == nil {
		t.Fatalf("ChangeFlags(down) = %v, %v", down, ok)
	}
	cases := []struct {
		name   string
		link   netdev.Link
		encode func(m *rtnl.LinkMsg) []byte
	}{
		{"fresh-dump", fresh, func(m *rtnl.LinkMsg) []byte { return rtnl.AppendLink(nil, rtnl.NLM_F_MULTI, 1, pid, m, 0) }},
		{"fresh-get-skip-stats", fresh, func(m *rtnl.LinkMsg) []byte {
			return rtnl.AppendLink(nil, 0, 1, pid, m, 1|rtnl.RTEXT_FILTER_SKIP_STATS)
		}},
		{"up-notification", up.Notified, func(m *rtnl.LinkMsg) []byte {
			m.Change = up.Changed
			return rtnl.AppendLink(nil, 0, 0, 0, m, 0)
		}},
		{"up-inet6-ifinfo", up.After, func(m *rtnl.LinkMsg) []byte { return rtnl.AppendInet6Link(nil, 0, 0, 0, m) }},
		{"up-dump", up.After, func(m *rtnl.LinkMsg) []byte { return rtnl.AppendLink(nil, rtnl.NLM_F_MULTI, 1, pid, m, 0) }},
		{"down-notification", down.Notified, func(m *rtnl.LinkMsg) []byte {
			m.Change = down.Changed
			return rtnl.AppendLink(nil, 0, 0, 0, m, 0)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k, ok := caps[c.name]
			if !ok {
				t.Fatalf("no capture %q", c.name)
			}
			l := c.link
			l.Inet6.Tstamp, l.Inet6.ReachableTime = k.tstamp, k.reachable
			got := c.encode(linkMsg(l))
			if d := cmp.Diff(hexRows(k.msg), hexRows(got)); d != "" {
				t.Errorf("%d bytes, kernel %d (-kernel +nlemu):\n%s", len(got), len(k.msg), d)
			}
		})
	}
}

// recorder is a Listener that keeps what it receives.
type recorder struct{ got [][]byte }

func (r *recorder) Deliver(b []byte) { r.got = append(r.got, b) }

// msgSummary is what TestSetLoUpNotifies checks of each notification.
type msgSummary struct {
	Type   uint16
	Family uint8
	Flags  uint32 // ifi_flags
	Change uint32
	Seq    uint32
	PID    uint32
}

func summarize(t *testing.T, dgs [][]byte) []msgSummary {
	t.Helper()
	var out []msgSummary
	for _, dg := range dgs {
		for _, m := range rtnl.SplitDatagram(dg) {
			if len(m.Data) < rtnl.IfInfoLen {
				t.Fatalf("short notification % x", m.Raw)
			}
			q, _, err := rtnl.DecodeLinkRequest(&m, rtnl.LinkGet)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, msgSummary{uint16(m.Header.Type), q.Family, q.Flags, q.Change, m.Header.Sequence, m.Header.PID})
		}
	}
	return out
}

// TestSetLoUpNotifies drives RTM_NEWLINK / RTM_SETLINK through
// Namespace.Do as `ip link set lo up|down` sends them and checks the
// notifications per group, as the kernel sends them (dev_change_flags() →
// __dev_notify_flags() → rtmsg_ifinfo() to RTNLGRP_LINK, then for NETDEV_UP
// addrconf's inet6_ifinfo_notify() to RTNLGRP_IPV6_IFINFO): no requester
// in the header, ifi_change the bits that changed, nothing for a request
// that changes nothing.
func TestSetLoUpNotifies(t *testing.T) {
	m := NewManager(&rtnl.LockConfig{RTNL: &rtnl.RTNL{}})
	if err := m.Add("t"); err != nil {
		t.Fatal(err)
	}
	ns, _ := m.Get("t")
	link, inet6 := &recorder{}, &recorder{}
	ns.SetGroups(link, 1<<(rtnlgrpLink-1))
	ns.SetGroups(inet6, 1<<(rtnlgrpIPv6Ifinfo-1))
	const (
		up      = netdev.IFF_UP | netdev.IFF_LOOPBACK | netdev.IFF_RUNNING | netdev.IFF_LOWER_UP
		loDown  = netdev.IFF_LOOPBACK
		newLink = rtnl.RTM_NEWLINK
	)
	steps := []struct {
		name      string
		typ       uint16
		flags     uint32
		wantLink  []msgSummary
		wantInet6 []msgSummary
		wantOper  uint8
		wantQdisc string
	}{
		{"up", rtnl.RTM_NEWLINK, netdev.IFF_UP, []msgSummary{{newLink, 0, up, 1, 0, 0}}, []msgSummary{{newLink, 10, up, 0, 0, 0}}, netdev.OperUnknown, "noqueue"},
		{"up again", rtnl.RTM_NEWLINK, netdev.IFF_UP, nil, nil, netdev.OperUnknown, "noqueue"},
		{"down (setlink)", rtnl.RTM_SETLINK, 0, []msgSummary{{newLink, 0, loDown, 1, 0, 0}}, nil, netdev.OperDown, "noqueue"},
		{"up (setlink)", rtnl.RTM_SETLINK, netdev.IFF_UP, []msgSummary{{newLink, 0, up, 1, 0, 0}}, []msgSummary{{newLink, 10, up, 0, 0, 0}}, netdev.OperUnknown, "noqueue"},
	}
	for _, st := range steps {
		link.got, inet6.got = nil, nil
		var body [rtnl.IfInfoLen]byte
		body[4] = netdev.LoopbackIndex
		body[8] = byte(st.flags)
		body[12] = netdev.IFF_UP // ifi_change
		req := rtnl.AppendMessage(nil, st.typ, rtnl.NLM_F_REQUEST|rtnl.NLM_F_ACK|rtnl.NLM_F_ECHO, 77, 99, body[:])
		msg := rtnl.SplitDatagram(req)[0]
		self := &recorder{}
		if _, err := ns.Do(&Request{Msg: &msg, PortID: 99, Self: self}); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if len(self.got) != 0 {
			t.Errorf("%s: requester got %d messages; the kernel never echoes a link change", st.name, len(self.got))
		}
		if d := cmp.Diff(st.wantLink, summarize(t, link.got)); d != "" {
			t.Errorf("%s: RTNLGRP_LINK (-want +got):\n%s", st.name, d)
		}
		if d := cmp.Diff(st.wantInet6, summarize(t, inet6.got)); d != "" {
			t.Errorf("%s: RTNLGRP_IPV6_IFINFO (-want +got):\n%s", st.name, d)
		}
		l, _ := ns.devs.ByIndex(netdev.LoopbackIndex)
		if l.WireOperState() != st.wantOper || l.Qdisc != st.wantQdisc {
			t.Errorf("%s: operstate %d qdisc %q, want %d %q", st.name, l.WireOperState(), l.Qdisc, st.wantOper, st.wantQdisc)
		}
	}
}

// TestVethBridgeMessagesMatchKernelCapture builds a veth pair and a bridge
// as `ip link add v0 address 02:00:00:00:00:01 type veth peer name v1
// address 02:00:00:00:00:02` and `ip link add br0 address
// 02:00:00:00:00:10 type bridge` do, then `ip link set v0 mtu 1400 group 3
// txqueuelen 77` and `ip link set v0 master br0`, and requires each dump
// message to be the bytes captured from 6.18 (testdata/links-kernel-6.18.txt:
// IFLA_LINK, IFLA_MASTER, IFLA_LINKINFO with the bridge's IFLA_INFO_DATA and
// the port's IFLA_INFO_SLAVE_DATA, carrier counters, netns_immutable), and
// the port's AF_BRIDGE message. Only
// the inet6 tstamp and reachable_time come from the capture. The live
// comparison is integration.TestLinksOnTheWireMatchKernel.
func TestVethBridgeMessagesMatchKernelCapture(t *testing.T) {
	f, err := os.Open("testdata/links-kernel-6.18.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type capture struct {
		pid, tstamp, reachable uint32
		msg                    []byte
	}
	caps := map[string]capture{}
	s := bufio.NewScanner(f)
	s.Buffer(nil, 1<<20)
	for s.Scan() {
		fs := strings.Fields(s.Text())
		if len(fs) == 0 || strings.HasPrefix(fs[0], "#") {
			continue
		}
		var v [3]uint64
		for i := range v {
			if v[i], err = strconv.ParseUint(fs[1+i], 10, 32); err != nil {
				t.Fatal(err)
			}
		}
		msg, err := hex.DecodeString(fs[4])
		if err != nil {
			t.Fatal(err)
		}
		caps[fs[0]] = capture{uint32(v[0]), uint32(v[1]), uint32(v[2]), msg}
	}
	d := netdev.New()
	mac := func(b byte) []byte { return []byte{2, 0, 0, 0, 0, b} }
	if _, err := d.Create(netdev.KindVeth, &rtnl.LinkConf{Name: []byte("v0"), HasName: true, Address: mac(1),
		Peer: &rtnl.LinkConf{Name: []byte("v1"), HasName: true, Address: mac(2)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Create(netdev.KindBridge, &rtnl.LinkConf{Name: []byte("br0"), HasName: true, Address: mac(0x10)}); err != nil {
		t.Fatal(err)
	}
	check := func(name string, index int32) {
		t.Helper()
		k, ok := caps[name]
		if !ok {
			t.Fatalf("no capture %q", name)
		}
		l, ok := d.ByIndex(index)
		if !ok {
			t.Fatalf("%s: no device %d", name, index)
		}
		l.Inet6.Tstamp, l.Inet6.ReachableTime = k.tstamp, k.reachable
		got := rtnl.AppendLink(nil, rtnl.NLM_F_MULTI, 1, k.pid, linkMsg(l), 0)
		if d := cmp.Diff(hexRows(k.msg), hexRows(got)); d != "" {
			t.Errorf("%s: %d bytes, kernel %d (-kernel +nlemu):\n%s", name, len(got), len(k.msg), d)
		}
	}
	check("veth-peer", 2)
	check("veth", 3)
	check("bridge-addr-set", 4)
	if _, err := d.Set(3, &rtnl.LinkConf{Index: 3, MTU: 1400, HasMTU: true, Group: 3, HasGroup: true, TxQLen: 77, HasTxQLen: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Set(3, &rtnl.LinkConf{Index: 3, Master: 4, HasMaster: true}); err != nil {
		t.Fatal(err)
	}
	check("veth-port", 3)
	check("bridge-with-port", 4)
	// The AF_BRIDGE dump of the port (br_fill_ifinfo()): what `bridge
	// link show` prints.
	k := caps["afbridge-port"]
	l, _ := d.ByIndex(3)
	got := rtnl.AppendBridgeLink(nil, rtnl.NLM_F_MULTI, 1, k.pid, linkMsg(l), false)
	if d := cmp.Diff(hexRows(k.msg), hexRows(got)); d != "" {
		t.Errorf("afbridge-port: %d bytes, kernel %d (-kernel +nlemu):\n%s", len(got), len(k.msg), d)
	}
}
