package integration

// The loopback device on the wire: the RTM_NEWLINK nlemu sends for `lo`
// (dumps, gets and the RTNLGRP_LINK notification of a flag change) must be
// the bytes a fresh kernel namespace sends, before and after
// `ip link set lo up`, and `ip link show lo` must print the same text.
//
// Two values of the message are not reproducible and are masked (zeroed on
// both sides before the comparison), each then checked on its own:
//
//   - IFLA_AF_SPEC/AF_INET6/IFLA_INET6_CACHEINFO.tstamp: the time of the
//     inet6_dev's last up/down in 1/100 s since boot (cstamp_delta() of
//     idev->tstamp); nlemu's must lie between CLOCK_MONOTONIC readings
//     taken before the namespace was created and after the message arrived.
//   - IFLA_INET6_CACHEINFO.reachable_time: neigh_rand_reach_time() draws it
//     at random from [base/2, 3*base/2) of BASE_REACHABLE_TIME (30 s); both
//     sides must lie in that range.
//
// The nlmsg_pid of unicast replies (each side's own port id) is normalized
// to 0 by Exchange, as in the rule differential tests.
//
// Not masked, on purpose: IFLA_AF_SPEC/AF_INET/IFLA_INET_CONF. A new kernel
// namespace copies the host's net.ipv4.conf.default
// (net.core.devconf_inherit_init_net = 0), while nlemu reports the kernel's
// built-in defaults; on a host whose defaults were tuned (rp_filter,
// forwarding, ...) that block differs, and the test says so.

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

const (
	rtmNewLink      = 16
	rtmGetLink      = 18
	rtmSetLink      = 19
	iflaIfname      = 3
	iflaProtinfo    = 12
	iflaAFSpec      = 26
	iflaExtMask     = 29
	iflaInet6Cache  = 5
	rtextFilterVF   = 1 << 0
	rtextSkipStats  = 1 << 3
	iffUp           = 0x1
	rtnlgrpLinkMask = 1 << (1 - 1) // RTNLGRP_LINK
	// IPv6 ifinfo group (RTNLGRP_IPV6_IFINFO = 12): addrconf's
	// inet6_ifinfo_notify() announces lo there when it comes up.
	rtnlgrpIPv6IfinfoMask = 1 << (12 - 1)
)

// ifinfo returns a struct ifinfomsg.
func ifinfo(family uint8, index int32, flags, change uint32) []byte {
	b := make([]byte, 16)
	b[0] = family
	ne := binary.NativeEndian
	ne.PutUint32(b[4:], uint32(index))
	ne.PutUint32(b[8:], flags)
	ne.PutUint32(b[12:], change)
	return b
}

// nlAttr appends one netlink attribute, padded.
func nlAttr(b []byte, typ uint16, data []byte) []byte {
	var h [4]byte
	binary.NativeEndian.PutUint16(h[:], uint16(4+len(data)))
	binary.NativeEndian.PutUint16(h[2:], typ)
	b = append(append(b, h[:]...), data...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

func u32Bytes(v uint32) []byte { return binary.NativeEndian.AppendUint32(nil, v) }

// cacheinfo is what loMask took out of one message.
type cacheinfo struct {
	msg               string
	tstamp, reachable uint32
}

// loMask zeroes IFLA_INET6_CACHEINFO.tstamp and .reachable_time in every
// RTM_NEWLINK of d (inside IFLA_AF_SPEC/AF_INET6 for AF_UNSPEC messages,
// inside IFLA_PROTINFO for the AF_INET6 ifinfo of addrconf) and returns
// what it zeroed.
func loMask(d []byte) ([]byte, []cacheinfo) {
	out := append([]byte(nil), d...)
	var got []cacheinfo
	ne := binary.NativeEndian
	mask := func(inet6 []byte, what string) {
		for _, a := range loAttrs(inet6) {
			if a.typ == iflaInet6Cache && len(a.data) >= 16 {
				got = append(got, cacheinfo{what, ne.Uint32(a.data[4:]), ne.Uint32(a.data[8:])})
				clear(a.data[4:12])
			}
		}
	}
	for off := 0; off+16 <= len(out); {
		l := int(ne.Uint32(out[off:]))
		if l < 16 || off+l > len(out) {
			break
		}
		m := out[off : off+l]
		if ne.Uint16(m[4:]) == rtmNewLink && len(m) >= 32 {
			what := fmt.Sprintf("message at %d (family %d)", off, m[16])
			for _, a := range loAttrs(m[32:]) {
				switch {
				case a.typ == iflaAFSpec:
					for _, f := range loAttrs(a.data) {
						if f.typ == 10 { // AF_INET6
							mask(f.data, what)
						}
					}
				case a.typ == iflaProtinfo && m[16] == 10:
					mask(a.data, what)
				}
			}
		}
		off += nlmsgAlign(l)
	}
	return out, got
}

type loAttr struct {
	typ  uint16
	data []byte // aliases the message
}

func loAttrs(b []byte) []loAttr {
	var as []loAttr
	ne := binary.NativeEndian
	for off := 0; off+4 <= len(b); {
		l := int(ne.Uint16(b[off:]))
		if l < 4 || off+l > len(b) {
			break
		}
		as = append(as, loAttr{ne.Uint16(b[off+2:]) & 0x3fff, b[off+4 : off+l]})
		off += nlmsgAlign(l)
	}
	return as
}

// loRender shows d as one line per message header and one line per
// attribute (nested AF_SPEC / PROTINFO attributes indented), so that a
// difference names the attribute.
func loRender(d []byte) []string {
	var lines []string
	ne := binary.NativeEndian
	var walk func(ind string, b []byte, depth int)
	walk = func(ind string, b []byte, depth int) {
		for _, a := range loAttrs(b) {
			lines = append(lines, fmt.Sprintf("%sattr %d len %d: %x", ind, a.typ, len(a.data), a.data))
			if depth < 2 && (a.typ == iflaAFSpec || a.typ == iflaProtinfo || depth == 1) && len(a.data) >= 4 {
				walk(ind+"  ", a.data, depth+1)
			}
		}
	}
	for off := 0; off+16 <= len(d); {
		l := int(ne.Uint32(d[off:]))
		if l < 16 || off+l > len(d) {
			lines = append(lines, fmt.Sprintf("bad message at %d: %x", off, d[off:]))
			break
		}
		m := d[off : off+l]
		lines = append(lines, fmt.Sprintf("msg len %d type %d flags %#x seq %d pid %d", l,
			ne.Uint16(m[4:]), ne.Uint16(m[6:]), ne.Uint32(m[8:]), ne.Uint32(m[12:])))
		if ne.Uint16(m[4:]) == rtmNewLink && l >= 32 {
			lines = append(lines, fmt.Sprintf("  ifinfomsg %x", m[16:32]))
			walk("  ", m[32:], 0)
		} else {
			lines = append(lines, fmt.Sprintf("  body %x", m[16:]))
		}
		off += nlmsgAlign(l)
	}
	return lines
}

func monotonicCentis(t *testing.T) uint32 {
	t.Helper()
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		t.Fatal(err)
	}
	return uint32(ts.Sec*100 + ts.Nsec/10_000_000)
}

// TestLoOnTheWireMatchesKernel compares lo's RTM_NEWLINK byte for byte
// (rtnl_fill_ifinfo()) in a fresh kernel namespace and a fresh nlemu
// namespace: dumps and gets with and without IFLA_EXT_MASK, by index and by
// name, before and after RTM_NEWLINK sets IFF_UP (what `ip link set lo up`
// sends), after a repeated up (no change: no notification), after down and
// up again; plus the ACKs of those requests and what RTNLGRP_LINK and
// RTNLGRP_IPV6_IFINFO listeners receive.
func TestLoOnTheWireMatchesKernel(t *testing.T) {
	requireKernelNS(t)
	before := monotonicCentis(t)
	sides := []*Side{kernelSide(t, "kernel"), nlemuSide(t, "nlemu")}
	type open struct {
		main, mon Socket
		rmain     *Receiver
		rmon      *Receiver
	}
	var socks [2]open
	for i, s := range sides {
		m, err := s.Dial(SockSpec{Name: "main", ExtAck: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		l, err := s.Dial(SockSpec{Name: "mon", Groups: rtnlgrpLinkMask | rtnlgrpIPv6IfinfoMask})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		socks[i] = open{m, l, NewReceiver(m), NewReceiver(l)}
	}

	setFlags := func(typ uint16, extra uint16, flags uint32) func(seq uint32) []byte {
		return func(seq uint32) []byte {
			return Msg(typ, nlmFRequest|nlmFAck|extra, seq, 0, ifinfo(0, 1, flags, iffUp))
		}
	}
	const nlmFEcho = 0x8
	get := func(flags uint16, body []byte) func(seq uint32) []byte {
		return func(seq uint32) []byte { return Msg(rtmGetLink, flags, seq, 0, body) }
	}
	mask := func(m uint32) []byte { return nlAttr(nil, iflaExtMask, u32Bytes(m)) }
	queries := []struct {
		name  string
		build func(seq uint32) []byte
	}{
		{"dump", get(nlmFRequest|nlmFDump, ifinfo(0, 0, 0, 0))},
		{"dump rtgenmsg", get(nlmFRequest|nlmFDump, []byte{0, 0, 0, 0})},
		{"dump ext_mask VF", get(nlmFRequest|nlmFDump, append(ifinfo(0, 0, 0, 0), mask(rtextFilterVF)...))},
		{"dump ext_mask VF|SKIP_STATS", get(nlmFRequest|nlmFDump, append(ifinfo(17, 0, 0, 0), mask(rtextFilterVF|rtextSkipStats)...))},
		{"dump AF_INET6 (inet6_dump_ifinfo)", get(nlmFRequest|nlmFDump, ifinfo(10, 0, 0, 0))},
		{"dump AF_BRIDGE (rtnl_bridge_getlink)", get(nlmFRequest|nlmFDump, ifinfo(7, 0, 0, 0))},
		{"get index 1", get(nlmFRequest, ifinfo(0, 1, 0, 0))},
		{"get name lo ext_mask SKIP_STATS", get(nlmFRequest, nlAttr(append(ifinfo(0, 0, 0, 0), mask(rtextSkipStats)...), iflaIfname, []byte("lo\x00")))},
	}
	phases := []struct {
		name   string
		change func(seq uint32) []byte
	}{
		{"fresh", nil},
		{"set up", setFlags(rtmNewLink, 0, iffUp)},
		{"set up again", setFlags(rtmNewLink, 0, iffUp)},
		{"set down", setFlags(rtmNewLink, 0, 0)},
		{"set up after down", setFlags(rtmNewLink, 0, iffUp)},
		// The kernel never echoes a flag change (__dev_notify_flags() has
		// no requester), NLM_F_ECHO or not.
		{"RTM_SETLINK down with NLM_F_ECHO", setFlags(rtmSetLink, nlmFEcho, 0)},
		{"RTM_NEWLINK up with NLM_F_ECHO", setFlags(rtmNewLink, nlmFEcho, iffUp)},
	}
	var all [2][]cacheinfo
	seq := uint32(100)
	compare := func(what string, reps [2]Reply) {
		t.Helper()
		var r [2][]string
		for i, rep := range reps {
			b, ci := loMask(rep.Bytes())
			all[i] = append(all[i], ci...)
			r[i] = loRender(b)
			if rep.Problem != "" {
				r[i] = append(r[i], "problem: "+rep.Problem)
			}
		}
		if d := cmp.Diff(r[0], r[1]); d != "" {
			t.Errorf("%s differs (-kernel +nlemu):\n%s", what, d)
		}
	}
	for _, ph := range phases {
		if ph.change != nil {
			seq++
			var acks, notes [2]Reply
			for i, s := range sides {
				acks[i] = Exchange(socks[i].main, socks[i].rmain, ph.change(seq), s.Timing)
				notes[i] = Collect(socks[i].rmon, 0, s.Timing)
			}
			compare(ph.name+": ACK", acks)
			compare(ph.name+": notifications", notes)
		}
		for _, q := range queries {
			seq++
			var reps [2]Reply
			for i, s := range sides {
				reps[i] = Exchange(socks[i].main, socks[i].rmain, q.build(seq), s.Timing)
			}
			compare(ph.name+": "+q.name, reps)
		}
	}
	after := monotonicCentis(t)
	for i, cis := range all {
		if len(cis) == 0 {
			t.Errorf("%s: no IFLA_INET6_CACHEINFO seen", sides[i].Name)
		}
		for _, ci := range cis {
			if ci.reachable < 15000 || ci.reachable >= 45000 {
				t.Errorf("%s: %s: reachable_time %d ms, want within [15000, 45000) (neigh_rand_reach_time of 30 s)", sides[i].Name, ci.msg, ci.reachable)
			}
			if i == 1 && (ci.tstamp < before || ci.tstamp > after) {
				t.Errorf("nlemu: %s: tstamp %d, want within [%d, %d] (1/100 s since boot)", ci.msg, ci.tstamp, before, after)
			}
		}
	}
}

// TestLoIPLinkShowMatchesKernel runs `ip link show` on lo through the real
// iproute2 on both sides, before and after `ip link set lo up` and down:
// state DOWN / UNKNOWN, flags, qdisc, and with -d the details from the
// attributes (gso/gro/tso limits, addrgenmode, ...).
func TestLoIPLinkShowMatchesKernel(t *testing.T) {
	env := newIPCEnv(t)
	k, n := env.pair(t)
	shows := [][]string{
		{"link", "show", "lo"},
		{"link", "show"},
		{"-d", "link", "show", "lo"},
		{"-s", "-s", "link", "show", "lo"},
		{"-d", "-j", "link", "show"},
		{"-o", "link"},
		{"-br", "link"},
		{"link", "show", "up"},
		{"-d", "link", "show", "dev", "lo", "type", "dummy"},
	}
	for _, step := range [][]string{nil, {"link", "set", "lo", "up"}, {"link", "set", "lo", "up"}, {"link", "set", "dev", "lo", "down"}, {"link", "set", "lo", "up"}} {
		label := "fresh"
		if step != nil {
			label = strings.Join(step, " ")
			ipcCompare(t, label, k.run(nil, step...), n.run(nil, step...), nil)
		}
		for _, s := range shows {
			render := ipcLines
			if s[1] == "-j" {
				render = ipcJSONLines
			}
			ipcCompare(t, strings.Join(s, " ")+" (after "+label+")", k.run(nil, s...), n.run(nil, s...), render)
		}
	}
}

// TestLinkRequestErrorsMatchKernel compares the ACKs of link requests that
// fail (or succeed without changing anything) with the kernel's: errno,
// extack text and offset, policy nest. The first case is the probe of
// iproute2's iplink_have_newlink(): an RTM_NEWLINK naming no device must
// get ENODEV (rtnl_newlink()), because EOPNOTSUPP makes `ip link set` fall
// back to SIOCSIFFLAGS ioctls, which the shim did not redirect before
// issue 8: they changed the host's devices (now the shim answers them from
// nlemu, TestNothingEscapesToHost).
func TestLinkRequestErrorsMatchKernel(t *testing.T) {
	requireKernelNS(t)
	sides := []*Side{kernelSide(t, "kernel"), nlemuSide(t, "nlemu")}
	name := func(b []byte, n string) []byte { return nlAttr(b, iflaIfname, append([]byte(n), 0)) }
	const (
		create  = 0x400
		excl    = 0x200
		replace = 0x100
	)
	cases := []struct {
		name  string
		typ   uint16
		flags uint16
		body  []byte
	}{
		{"iplink_have_newlink probe", rtmNewLink, 0, ifinfo(0, 0, 0, 0)},
		{"newlink short header", rtmNewLink, 0, []byte{0, 0, 0, 0}},
		{"newlink unknown index", rtmNewLink, 0, ifinfo(0, 9, iffUp, iffUp)},
		{"newlink unknown name", rtmNewLink, 0, name(ifinfo(0, 0, iffUp, iffUp), "nope")},
		{"newlink negative index", rtmNewLink, 0, ifinfo(0, -1, 0, iffUp)},
		{"newlink name too long", rtmNewLink, 0, name(ifinfo(0, 0, 0, iffUp), strings.Repeat("x", 20))},
		{"newlink excl on lo", rtmNewLink, excl, ifinfo(0, 1, iffUp, iffUp)},
		{"newlink replace on lo", rtmNewLink, replace, ifinfo(0, 1, iffUp, iffUp)},
		{"newlink create of unknown kind", rtmNewLink, create, name(ifinfo(0, 0, iffUp, iffUp), "nope")},
		{"newlink create on lo changes it", rtmNewLink, create, ifinfo(0, 1, 0, iffUp)},
		{"newlink by name, family inet6", rtmNewLink, 0, name(ifinfo(10, 0, 0, iffUp), "lo")},
		{"newlink no flags no change", rtmNewLink, 0, ifinfo(0, 1, 0, 0)},
		{"setlink short header", rtmSetLink, 0, []byte{0, 0, 0, 0}},
		{"setlink unknown index", rtmSetLink, 0, ifinfo(0, 9, iffUp, iffUp)},
		{"setlink no index no name", rtmSetLink, 0, ifinfo(0, 0, iffUp, iffUp)},
		{"setlink unknown name", rtmSetLink, 0, name(ifinfo(0, 0, iffUp, iffUp), "nope")},
		{"setlink lo down", rtmSetLink, 0, ifinfo(0, 1, 0, iffUp)},
		{"getlink short header", rtmGetLink, 0, []byte{0, 0, 0, 0}},
		{"getlink no index no name", rtmGetLink, 0, ifinfo(0, 0, 0, 0)},
		{"getlink unknown index", rtmGetLink, 0, ifinfo(0, 9, 0, 0)},
		{"getlink unknown name", rtmGetLink, 0, name(ifinfo(0, 0, 0, 0), "nope")},
		{"getlink name too long", rtmGetLink, 0, name(ifinfo(0, 0, 0, 0), strings.Repeat("x", 16))},
	}
	var socks [2]Socket
	var rcv [2]*Receiver
	for i, s := range sides {
		m, err := s.Dial(SockSpec{Name: "main", ExtAck: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		socks[i], rcv[i] = m, NewReceiver(m)
	}
	for i, c := range cases {
		var got [2][]string
		for j, s := range sides {
			req := Msg(c.typ, nlmFRequest|nlmFAck|c.flags, uint32(10+i), 0, c.body)
			r := Exchange(socks[j], rcv[j], req, s.Timing)
			got[j] = RenderReply(r, true)
		}
		if d := cmp.Diff(got[0], got[1]); d != "" {
			t.Errorf("%s: reply differs (-kernel +nlemu):\n%s", c.name, d)
		}
	}
}

// TestLinkDumpChecksMatchKernel compares RTM_GETLINK dumps that filter or
// fail: with NETLINK_GET_STRICT_CHK, rtnl_valid_dump_ifinfo_req() and
// rtnl_dump_ifinfo() (AF_UNSPEC) and inet6_valid_dump_ifinfo() (AF_INET6)
// refuse bad headers and attributes in the NLMSG_DONE; without it, any
// request dumps, and IFLA_MASTER filters lo out (link_master_filtered()).
func TestLinkDumpChecksMatchKernel(t *testing.T) {
	requireKernelNS(t)
	sides := []*Side{kernelSide(t, "kernel"), nlemuSide(t, "nlemu")}
	u32 := func(b []byte, typ uint16, v uint32) []byte { return nlAttr(b, typ, u32Bytes(v)) }
	const iflaMaster = 10
	cases := []struct {
		name   string
		strict bool
		body   []byte
	}{
		{"master 5", false, u32(ifinfo(0, 0, 0, 0), iflaMaster, 5)},
		{"master 0", false, u32(ifinfo(0, 0, 0, 0), iflaMaster, 0)},
		{"ext_mask too short drops all attributes", false, nlAttr(u32(ifinfo(0, 0, 0, 0), iflaMaster, 5), iflaExtMask, []byte{1, 0})},
		{"index, not strict", false, ifinfo(0, 1, 0, 0)},
		{"inet6 master 5", false, u32(ifinfo(10, 0, 0, 0), iflaMaster, 5)},
		{"strict short", true, []byte{0, 0, 0, 0}},
		{"strict index", true, ifinfo(0, 1, 0, 0)},
		{"strict flags", true, ifinfo(0, 0, 1, 0)},
		{"strict ifname", true, nlAttr(ifinfo(0, 0, 0, 0), iflaIfname, []byte("lo\x00"))},
		{"strict ext_mask", true, u32(ifinfo(0, 0, 0, 0), iflaExtMask, rtextFilterVF|rtextSkipStats)},
		{"strict master 5", true, u32(ifinfo(0, 0, 0, 0), iflaMaster, 5)},
		{"strict inet6 short", true, []byte{10, 0, 0, 0}},
		{"strict inet6 index", true, ifinfo(10, 1, 0, 0)},
		{"strict inet6 ext_mask", true, u32(ifinfo(10, 0, 0, 0), iflaExtMask, 1)},
		{"strict inet6", true, ifinfo(10, 0, 0, 0)},
	}
	var socks [2][2]Socket // [side][strict]
	var rcv [2][2]*Receiver
	for i, s := range sides {
		for j, strict := range []bool{false, true} {
			m, err := s.Dial(SockSpec{Name: "main", ExtAck: true, StrictCheck: strict})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { m.Close() })
			socks[i][j], rcv[i][j] = m, NewReceiver(m)
		}
	}
	for i, c := range cases {
		j := 0
		if c.strict {
			j = 1
		}
		var got [2][]string
		for k, s := range sides {
			req := Msg(rtmGetLink, nlmFRequest|nlmFDump, uint32(10+i), 0, c.body)
			r := Exchange(socks[k][j], rcv[k][j], req, s.Timing)
			b, _ := loMask(r.Bytes())
			got[k] = loRender(b)
			if r.Problem != "" {
				got[k] = append(got[k], "problem: "+r.Problem)
			}
		}
		if d := cmp.Diff(got[0], got[1]); d != "" {
			t.Errorf("%s: reply differs (-kernel +nlemu):\n%s", c.name, d)
		}
	}
}
