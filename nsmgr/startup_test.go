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

// Request types, spelled out so that the test builds against any tree.
const (
	rtmGetNeigh     = 30
	rtmGetAddrLabel = 74
	rtmGetNetconf   = 82
)

// startupNS returns a fresh namespace, as `ip netns add` makes one.
func startupNS(t *testing.T) *Namespace {
	t.Helper()
	m := NewManager(&rtnl.LockConfig{RTNL: &rtnl.RTNL{}})
	if err := m.Add("t"); err != nil {
		t.Fatal(err)
	}
	ns, _ := m.Get("t")
	return ns
}

// startupReq builds one request message (seq 7, port 0).
func startupReq(typ, flags uint16, body []byte) *rtnl.Message {
	b := rtnl.AppendMessage(nil, typ, rtnl.NLM_F_REQUEST|flags, 7, 0, body)
	return &rtnl.Message{
		Header: rtnl.SplitDatagram(b)[0].Header,
		Data:   b[rtnl.NLMSG_HDRLEN:binary.NativeEndian.Uint32(b)],
		Raw:    b,
	}
}

// outcome is what a request produced: the messages before the terminator
// (a dump's batches, a get's unicast reply) and the terminator's errno and
// extack text.
type outcome struct {
	Msgs  []string // hex, one per message
	Errno syscall.Errno
	Msg   string
}

func runStartup(t *testing.T, ns *Namespace, typ uint16, dump, strict bool, body []byte) outcome {
	t.Helper()
	var flags uint16
	if dump {
		flags = rtnl.NLM_F_DUMP
	}
	self := &recorder{}
	d, err := ns.Do(&Request{Msg: startupReq(typ, flags, body), Strict: strict, Self: self})
	var o outcome
	var out []byte
	for _, b := range self.got {
		out = append(out, b...)
	}
	if d != nil {
		for done := false; !done; {
			out, done = d.Fill(out, 4096)
		}
		err = d.Err()
	}
	for _, m := range rtnl.SplitDatagram(out) {
		o.Msgs = append(o.Msgs, fmt.Sprintf("%x", m.Raw))
	}
	if err != nil {
		o.Errno, o.Msg = err.Errno, err.Msg
	}
	return o
}

// TestNeighDumpIsEmptyNotEOPNOTSUPP: neighbour dumps of every family, the
// AF_BRIDGE fdb dump (`bridge fdb`) and the proxy dump end with an empty
// NLMSG_DONE as on the kernel (neigh_dump_info(), rtnl_fdb_dump(): lo has no
// entry). They were EOPNOTSUPP, and pyroute2's startup retried its
// neighbour dump forever. The kernel's refusals under strict checking are
// kept (neigh_valid_dump_req(), valid_fdb_dump_strict()).
func TestNeighDumpIsEmptyNotEOPNOTSUPP(t *testing.T) {
	ns := startupNS(t)
	ndmsg := func(family uint8, ifindex uint32, state uint16, flags uint8) []byte {
		b := make([]byte, 12)
		b[0] = family
		binary.NativeEndian.PutUint32(b[4:], ifindex)
		binary.NativeEndian.PutUint16(b[8:], state)
		b[10] = flags
		return b
	}
	cases := []struct {
		name   string
		strict bool
		body   []byte
		want   outcome
	}{
		{"unspec", false, ndmsg(0, 0, 0, 0), outcome{}},
		{"inet", false, ndmsg(2, 0, 0, 0), outcome{}},
		{"inet6", false, ndmsg(10, 0, 0, 0), outcome{}},
		{"inet6 proxy", true, ndmsg(10, 0, 0, 0x08), outcome{}},
		{"bridge (fdb)", false, ndmsg(7, 0, 0, 0), outcome{}},
		{"bridge strict", true, ndmsg(7, 0, 0, 0), outcome{}},
		// Measured: the non-strict parse fails but the dump goes on and the
		// NLMSG_DONE carries the warning.
		{"rtgenmsg", false, []byte{0, 0, 0, 0}, outcome{Msg: "Invalid header length"}},
		{"rtgenmsg strict", true, []byte{0, 0, 0, 0}, outcome{Errno: syscall.EINVAL, Msg: "Invalid header for neighbor dump request"}},
		{"inet state strict", true, ndmsg(2, 0, 0x80, 0), outcome{Errno: syscall.EINVAL, Msg: "Invalid values in header for neighbor dump request"}},
		{"inet state", false, ndmsg(2, 0, 0x80, 0), outcome{}},
	}
	for _, c := range cases {
		got := runStartup(t, ns, rtmGetNeigh, true, c.strict, c.body)
		if d := cmp.Diff(c.want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, d)
		}
	}
}

// TestNetconfMatchesKernel: RTM_GETNETCONF dumps list lo, "all" and
// "default" per family, AF_UNSPEC both families (rtnl_dump_all()), with the
// bytes a fresh Linux 6.18 namespace sends (inet_netconf_fill_devconf(),
// inet6_netconf_fill_devconf(), captured); gets answer one of them, or the
// kernel's errno.
func TestNetconfMatchesKernel(t *testing.T) {
	ns := startupNS(t)
	// Captured from a fresh kernel namespace (seq 7, port 0).
	v4 := func(flags string, idx string) string {
		return "4c000000" + "5000" + flags + "0700000000000000" + "02000000" + "08000100" + idx +
			"0800020000000000" + "0800030000000000" + "0800040000000000" + "0800080000000000" +
			"0800050000000000" + "0800060000000000"
	}
	v6 := func(flags string, idx string) string {
		return "3c000000" + "5000" + flags + "0700000000000000" + "0a000000" + "08000100" + idx +
			"0800020000000000" + "0800040000000000" + "0800050000000000" + "0800060000000000"
	}
	const lo, all, dflt = "01000000", "ffffffff", "feffffff"
	ifindex := func(family uint8, idx int32) []byte {
		b := []byte{family, 0, 0, 0, 8, 0, 1, 0}
		return binary.NativeEndian.AppendUint32(b, uint32(idx))
	}
	cases := []struct {
		name   string
		dump   bool
		strict bool
		body   []byte
		want   outcome
	}{
		{"dump inet", true, false, []byte{2, 0, 0, 0}, outcome{Msgs: []string{v4("0200", lo), v4("0200", all), v4("0200", dflt)}}},
		{"dump inet6", true, false, []byte{10, 0, 0, 0}, outcome{Msgs: []string{v6("0200", lo), v6("0200", all), v6("0200", dflt)}}},
		{"dump unspec", true, true, []byte{0, 0, 0, 0}, outcome{Msgs: []string{
			v4("0200", lo), v4("0200", all), v4("0200", dflt), v6("0200", lo), v6("0200", all), v6("0200", dflt)}}},
		{"dump inet6 attribute strict", true, true, ifindex(10, 1), outcome{Errno: syscall.EINVAL, Msg: "ipv6: Invalid data after header in netconf dump request"}},
		{"get inet lo", false, false, ifindex(2, 1), outcome{Msgs: []string{v4("0000", lo)}}},
		{"get inet6 default", false, true, ifindex(10, -2), outcome{Msgs: []string{v6("0000", dflt)}}},
		{"get inet unknown", false, false, ifindex(2, 7), outcome{Errno: syscall.ENODEV}},
		{"get inet6 unknown", false, false, ifindex(10, 7), outcome{Errno: syscall.EINVAL}},
		{"get inet no ifindex", false, false, []byte{2, 0, 0, 0}, outcome{Errno: syscall.EINVAL}},
		{"get unspec", false, false, ifindex(0, 1), outcome{Errno: syscall.EOPNOTSUPP}},
	}
	for _, c := range cases {
		got := runStartup(t, ns, rtmGetNetconf, c.dump, c.strict, c.body)
		if d := cmp.Diff(c.want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, d)
		}
	}
}

// TestAddrLabelDefaultsMatchKernel: `ip addrlabel list` on a fresh kernel
// namespace lists the ten default entries of ip6addrlbl_init_table(), each
// with the table's sequence number 10; nlemu listed nothing (EOPNOTSUPP).
// A get for ::1 answers ::/96's label 3: the ::1/128 entry never matches
// (its address type is IPV6_ADDR_LOOPBACK, ::1's is more), as measured.
func TestAddrLabelDefaultsMatchKernel(t *testing.T) {
	ns := startupNS(t)
	got := runStartup(t, ns, rtmGetAddrLabel, true, true, make([]byte, 12))
	if got.Errno != syscall.EOPNOTSUPP {
		// The family is the one thing a dump must name: AF_UNSPEC has no
		// handler.
		t.Errorf("AF_UNSPEC dump: %v, want EOPNOTSUPP", got)
	}
	body := []byte{10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	got = runStartup(t, ns, rtmGetAddrLabel, true, true, body)
	var labels []string
	for _, m := range got.Msgs {
		// ifaddrlblmsg at 16, IFAL_ADDRESS at 28, IFAL_LABEL at 48.
		labels = append(labels, fmt.Sprintf("%s/%s label %s seq %s", m[64:96], m[36:38], m[104:106], m[48:50]))
	}
	want := []string{
		"00000000000000000000000000000001/80 label 00 seq 0a",
		"00000000000000000000000000000000/60 label 03 seq 0a",
		"00000000000000000000ffff00000000/60 label 04 seq 0a",
		"20010000000000000000000000000000/20 label 06 seq 0a",
		"20010010000000000000000000000000/1c label 07 seq 0a",
		"3ffe0000000000000000000000000000/10 label 0c seq 0a",
		"20020000000000000000000000000000/10 label 02 seq 0a",
		"fec00000000000000000000000000000/0a label 0b seq 0a",
		"fc000000000000000000000000000000/07 label 05 seq 0a",
		"00000000000000000000000000000000/00 label 01 seq 0a",
	}
	if d := cmp.Diff(want, labels); d != "" || got.Errno != 0 {
		t.Errorf("dump: %v (-kernel +nlemu):\n%s", got.Errno, d)
	}
	get := append(append([]byte(nil), body...), 20, 0, 1, 0)
	get[2] = 128
	get = append(get, make([]byte, 15)...)
	get = append(get, 1)
	got = runStartup(t, ns, rtmGetAddrLabel, false, false, get)
	if len(got.Msgs) != 1 || !strings.HasPrefix(got.Msgs[0][32:], "0a006000") || got.Msgs[0][104:106] != "03" {
		t.Errorf("get ::1 = %v, want ::/96 label 3", got)
	}
}

// TestStartupRequestsSurviveTruncation sends every startup request type,
// dump and get, strict and not, with every body length up to 48 bytes of
// a pattern that sets every header field: each must get an answer (a dump
// or an error) without a panic, as the kernel's parsers cope with any
// request.
func TestStartupRequestsSurviveTruncation(t *testing.T) {
	ns := startupNS(t)
	types := []uint16{22, 26, 30, 38, 42, 46, 50, 58, 62, 74, 82, 86, 90, 94, 102, 106, 118}
	pattern := make([]byte, 48)
	for i := range pattern {
		pattern[i] = byte(i*37 + 1)
	}
	var bodies [][]byte
	for n := 1; n <= len(pattern); n++ {
		bodies = append(bodies, pattern[:n], make([]byte, n))
	}
	// A clean header of each size, then one attribute of each type, of
	// lengths 4 to 9 (short, exact and padded values).
	for _, h := range []int{4, 8, 12, 16, 20} {
		for at := uint16(0); at < 20; at++ {
			for l := 4; l <= 9; l++ {
				b := make([]byte, h, h+12)
				b = binary.NativeEndian.AppendUint16(b, uint16(l))
				b = binary.NativeEndian.AppendUint16(b, at)
				b = append(b, pattern[:l-4]...)
				bodies = append(bodies, b)
			}
		}
	}
	for _, typ := range types {
		for _, b := range bodies {
			for _, fam := range []byte{0, 2, 7, 10, 128} {
				body := append([]byte{fam}, b[1:]...)
				for _, dump := range []bool{false, true} {
					for _, strict := range []bool{false, true} {
						runStartup(t, ns, typ, dump, strict, body)
					}
				}
			}
		}
	}
}
