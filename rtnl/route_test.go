package rtnl

import (
	"bufio"
	"encoding/hex"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// ipRequest is one route request iproute2 6.1 sent, recorded by
// testdata/capture_ip_requests.sh.
type ipRequest struct {
	cmd string
	msg Message
}

func loadIPRequests(t testing.TB) []ipRequest {
	t.Helper()
	f, err := os.Open("testdata/ip_requests.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []ipRequest
	cmd := ""
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), " ")
		switch k {
		case "cmd":
			cmd = v
		case "raw":
			b, err := hex.DecodeString(v)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range SplitDatagram(b) {
				if typ := m.Header.Type; typ >= RTM_NEWROUTE && typ <= RTM_GETROUTE {
					out = append(out, ipRequest{cmd, m})
				}
			}
		}
	}
	return out
}

// decodeAny decodes a route request with the decoder its kind uses, on a
// strict-checking socket as iproute2's.
func decodeAny(m *Message) (*RouteMsg, *RouteDump, *Error) {
	switch {
	case m.Header.Type == RTM_GETROUTE && m.Header.Flags&NLM_F_DUMP == NLM_F_DUMP:
		d, err := DecodeRouteDump(m, true)
		return nil, &d, err
	case m.Header.Type == RTM_GETROUTE:
		r, err := DecodeRouteGet(m, true)
		return r, nil, err
	}
	r, err := DecodeRouteRequest(m)
	return r, nil, err
}

// TestRouteIPRequests decodes every route request iproute2 sent for the
// commands of capture_ip_requests.sh (add/replace/append/prepend/change/
// test/del of every type, multipath, metrics, via, nhid, dumps with
// filters, route get with every flow key, flush, save): none may fail, none
// may leave a warning, and the typed values of a selection must be what
// the command line said.
func TestRouteIPRequests(t *testing.T) {
	reqs := loadIPRequests(t)
	if len(reqs) < 40 {
		t.Fatalf("only %d requests", len(reqs))
	}
	type view struct {
		Family, DstLen, SrcLen, Tos, Table, Protocol, Scope, Type uint8
		Flags                                                     uint32
		Dst, Src, Gateway, PrefSrc, Via                           string
		OIF, IIF, Priority, Table32, Mark, UID, Flow, NHID        uint32
		IPProto                                                   uint8
		Sport, Dport                                              uint16
		Pref                                                      uint8
		Expires                                                   uint32
		Metrics                                                   map[int]uint32
		CC                                                        string
		Hops                                                      []string
	}
	str := func(a netip.Addr) string {
		if !a.IsValid() {
			return ""
		}
		return a.String()
	}
	project := func(r *RouteMsg) view {
		v := view{Family: r.Family, DstLen: r.DstLen, SrcLen: r.SrcLen, Tos: r.Tos, Table: r.Table,
			Protocol: r.Protocol, Scope: r.Scope, Type: r.Type, Flags: r.Flags,
			OIF: r.OIF, IIF: r.IIF, Priority: r.Priority, Table32: r.Table32, Mark: r.Mark,
			UID: r.UID, Flow: r.Flow, NHID: r.NHID, IPProto: r.IPProto, Sport: r.Sport,
			Dport: r.Dport, Pref: r.Pref, Expires: r.Expires, CC: r.Metrics.CCAlgo}
		if r.Has(RTA_DST) {
			v.Dst = str(r.Dst)
		}
		if r.Has(RTA_SRC) {
			v.Src = str(r.Src)
		}
		if r.Has(RTA_GATEWAY) {
			v.Gateway = str(r.Gateway)
		}
		if r.Has(RTA_PREFSRC) {
			v.PrefSrc = str(r.PrefSrc)
		}
		if r.Has(RTA_VIA) {
			v.Via = str(r.ViaAddr)
		}
		for x := 1; x <= RTAX_MAX; x++ {
			if r.Metrics.Has(x) && x != RTAX_CC_ALGO {
				if v.Metrics == nil {
					v.Metrics = map[int]uint32{}
				}
				v.Metrics[x] = r.Metrics.Val[x]
			}
		}
		for _, h := range r.Multipath {
			s := str(h.Gateway)
			v.Hops = append(v.Hops, strings.TrimSpace(strings.Join([]string{
				"if=" + itoa(int(h.IfIndex)), "w=" + itoa(int(h.Hops)+1), "gw=" + s, "flow=" + itoa(int(h.Flow)),
			}, " ")))
		}
		return v
	}
	want := map[string]view{
		"ip route add 10.5.0.0/16 via 10.0.0.2 metric 5 mtu 1400 advmss 1360 realm 3 src 10.0.0.1 proto static": {
			Family: AF_INET, DstLen: 16, Table: 254, Protocol: RTPROT_STATIC, Type: RTN_UNICAST,
			Dst: "10.5.0.0", Gateway: "10.0.0.2", Priority: 5, Flow: 3, PrefSrc: "10.0.0.1",
			Metrics: map[int]uint32{RTAX_MTU: 1400, RTAX_ADVMSS: 1360},
		},
		"ip route add 10.7.0.0/16 via 10.0.0.2 table 100000": {
			Family: AF_INET, DstLen: 16, Protocol: RTPROT_BOOT, Type: RTN_UNICAST,
			Dst: "10.7.0.0", Gateway: "10.0.0.2", Table32: 100000,
		},
		"ip route add 10.13.0.0/16 nexthop via 10.0.0.2 weight 2 nexthop via 10.0.0.3 realm 7 nexthop dev v1": {
			Family: AF_INET, DstLen: 16, Table: 254, Protocol: RTPROT_BOOT, Type: RTN_UNICAST, Dst: "10.13.0.0",
			Hops: []string{"if=0 w=2 gw=10.0.0.2 flow=0", "if=0 w=1 gw=10.0.0.3 flow=7", "if=2 w=1 gw= flow=0"},
		},
		"ip route add 10.14.0.0/16 via 10.99.0.1 dev v0 onlink": {
			Family: AF_INET, DstLen: 16, Table: 254, Protocol: RTPROT_BOOT, Type: RTN_UNICAST, Flags: RTNH_F_ONLINK,
			Dst: "10.14.0.0", Gateway: "10.99.0.1", OIF: 3,
		},
		"ip route add 10.15.0.0/16 via inet6 2001:db8::2 dev v0": {
			Family: AF_INET, DstLen: 16, Table: 254, Protocol: RTPROT_BOOT, Type: RTN_UNICAST,
			Dst: "10.15.0.0", Via: "2001:db8::2", OIF: 3,
		},
		"ip route add 10.17.0.0/16 nhid 5": {
			Family: AF_INET, DstLen: 16, Table: 254, Protocol: RTPROT_BOOT, Type: RTN_UNICAST, Dst: "10.17.0.0", NHID: 5,
		},
		"ip route get 10.5.1.1 from 10.0.0.1 mark 16 uid 1000 tos 0x10 ipproto tcp sport 1000 dport 80": {
			Family: AF_INET, DstLen: 32, SrcLen: 32, Tos: 0x10, Flags: RTM_F_LOOKUP_TABLE,
			Dst: "10.5.1.1", Src: "10.0.0.1", Mark: 16, UID: 1000, IPProto: syscall.IPPROTO_TCP, Sport: 1000, Dport: 80,
		},
		"ip route get 10.5.1.1 from 10.0.0.9 iif v0": {
			Family: AF_INET, DstLen: 32, SrcLen: 32, Flags: RTM_F_LOOKUP_TABLE, Dst: "10.5.1.1", Src: "10.0.0.9", IIF: 3,
		},
		"ip route get fibmatch 10.5.1.1": {
			Family: AF_INET, DstLen: 32, Flags: RTM_F_LOOKUP_TABLE | RTM_F_FIB_MATCH, Dst: "10.5.1.1",
		},
		"ip -6 route add 2001:db8:1::/64 via 2001:db8::2 metric 100 mtu 1300 pref high": {
			Family: AF_INET6, DstLen: 64, Table: 254, Protocol: RTPROT_BOOT, Type: RTN_UNICAST,
			Dst: "2001:db8:1::", Gateway: "2001:db8::2", Priority: 100, Pref: 1,
			Metrics: map[int]uint32{RTAX_MTU: 1300},
		},
		"ip -6 route add 2001:db8:2::/64 dev v0 expires 300": {
			Family: AF_INET6, DstLen: 64, Table: 254, Protocol: RTPROT_BOOT, Type: RTN_UNICAST,
			Dst: "2001:db8:2::", OIF: 3, Expires: 300,
		},
		"ip -6 route add 2001:db8:4::/64 from 2001:db8:aa::/64 dev v0": {
			Family: AF_INET6, DstLen: 64, SrcLen: 64, Table: 254, Protocol: RTPROT_BOOT, Type: RTN_UNICAST,
			Dst: "2001:db8:4::", Src: "2001:db8:aa::", OIF: 3,
		},
		"ip -6 route add 2001:db8:9::/64 via 2001:db8::2 src 2001:db8::1 hoplimit 9 congctl reno table 300": {
			Family: AF_INET6, DstLen: 64, Table: RT_TABLE_UNSPEC, Protocol: RTPROT_BOOT, Type: RTN_UNICAST,
			Dst: "2001:db8:9::", Gateway: "2001:db8::2", PrefSrc: "2001:db8::1", Table32: 300,
			Metrics: map[int]uint32{RTAX_HOPLIMIT: 9}, CC: "reno",
		},
		"ip -6 route get 2001:db8:1::5 from 2001:db8::1 oif v0 mark 3 uid 7 ipproto udp sport 53 dport 53": {
			Family: AF_INET6, DstLen: 128, SrcLen: 128, Dst: "2001:db8:1::5", Src: "2001:db8::1", OIF: 3,
			Mark: 3, UID: 7, IPProto: syscall.IPPROTO_UDP, Sport: 53, Dport: 53,
		},
	}
	seen := map[string]bool{}
	for _, q := range reqs {
		r, d, err := decodeAny(&q.msg)
		if err != nil {
			t.Errorf("%s: %v", q.cmd, err)
			continue
		}
		if r != nil && r.Warning != "" {
			t.Errorf("%s: warning %q", q.cmd, r.Warning)
		}
		if d != nil {
			if !d.Strict || d.Routes == d.Exceptions {
				t.Errorf("%s: dump %+v", q.cmd, d)
			}
			continue
		}
		w, ok := want[q.cmd]
		if !ok || seen[q.cmd] {
			continue
		}
		seen[q.cmd] = true
		if diff := cmp.Diff(w, project(r)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", q.cmd, diff)
		}
	}
	for c := range want {
		if !seen[c] {
			t.Errorf("no request recorded for %q", c)
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// rtReq builds a route request: header fields then raw attributes.
func rtReq(typ uint16, flags uint16, hdr [8]uint8, rtmFlags uint32, attrs ...[]byte) *Message {
	body := append([]byte{}, hdr[:]...)
	body = ne.AppendUint32(body, rtmFlags)
	for _, a := range attrs {
		body = append(body, a...)
	}
	b := AppendMessage(nil, typ, flags, 9, 0, body)
	return &SplitDatagram(b)[0]
}

func rtAttr(t uint16, payload ...byte) []byte {
	b := appendAttrHdr(nil, t, len(payload))
	b = append(b, payload...)
	return appendPad(b, len(payload))
}

func u32b(v uint32) []byte { return ne.AppendUint32(nil, v) }

var hdr4 = [8]uint8{AF_INET, 16, 0, 0, 254, 3, 253, 1}
var hdr6 = [8]uint8{AF_INET6, 64, 0, 0, 254, 3, 0, 1}

// TestRouteLastAttributeWinsQuirk: rtm_to_fib_config() walks every
// attribute and nla_parse() overwrites tb[type], so of two RTA_DST the
// last counts, and its offset is the one errors point at.
func TestRouteLastAttributeWinsQuirk(t *testing.T) {
	for _, h := range [][8]uint8{hdr4, hdr6} {
		var a1, a2 []byte
		if h[0] == AF_INET {
			a1, a2 = []byte{10, 1, 0, 0}, []byte{10, 2, 0, 0}
		} else {
			a1 = netip.MustParseAddr("2001:db8:1::").AsSlice()
			a2 = netip.MustParseAddr("2001:db8:2::").AsSlice()
		}
		m := rtReq(RTM_NEWROUTE, NLM_F_REQUEST|NLM_F_CREATE, h, 0, rtAttr(RTA_DST, a1...), rtAttr(RTA_DST, a2...))
		r, err := DecodeRouteRequest(m)
		if err != nil {
			t.Fatal(err)
		}
		want := netip.AddrFrom16([16]byte(append(make([]byte, 16-len(a2)), a2...)))
		if len(a2) == 4 {
			want = netip.AddrFrom4([4]byte(a2))
		}
		if r.Dst != want || r.Off(RTA_DST) != uint32(routeAttrBase+len(rtAttr(RTA_DST, a1...))) {
			t.Errorf("family %d: dst %v at %d", h[0], r.Dst, r.Off(RTA_DST))
		}
	}
}

// TestNexthopFirstAttributeWinsQuirk: inside an rtnexthop the kernel reads
// RTA_GATEWAY and RTA_FLOW with nla_find(), which returns the first.
func TestNexthopFirstAttributeWinsQuirk(t *testing.T) {
	hop := append([]byte{0, 0, 0, 1}, u32b(3)...)
	hop = append(hop, rtAttr(RTA_GATEWAY, 10, 0, 0, 2)...)
	hop = append(hop, rtAttr(RTA_GATEWAY, 10, 0, 0, 3)...)
	hop = append(hop, rtAttr(RTA_FLOW, u32b(7)...)...)
	ne.PutUint16(hop, uint16(len(hop)))
	m := rtReq(RTM_NEWROUTE, NLM_F_REQUEST, hdr4, 0, rtAttr(RTA_MULTIPATH, hop...))
	r, err := DecodeRouteRequest(m)
	if err != nil {
		t.Fatal(err)
	}
	want := []Nexthop{{Hops: 1, IfIndex: 3, Present: 1<<RTA_GATEWAY | 1<<RTA_FLOW,
		Gateway: netip.MustParseAddr("10.0.0.2"), Flow: 7, GatewayLen: 4, FlowLen: 4, Off: routeAttrBase + nlaHdrLen}}
	if d := cmp.Diff(want, r.Multipath, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); d != "" {
		t.Error(d)
	}
}

// TestMultipathRestQuirk: rtnh_ok() stops at an rtnexthop whose length is
// short or runs past the attribute; what is left is reported for the
// kernel's "extra data after nexthops".
func TestMultipathRestQuirk(t *testing.T) {
	good := append([]byte{8, 0, 0, 0}, u32b(3)...)
	cases := []struct {
		name       string
		mp         []byte
		hops, rest int
	}{
		{"one hop", good, 1, 0},
		{"trailing 4 bytes", append(append([]byte{}, good...), 1, 2, 3, 4), 1, 4},
		{"second hop too long", append(append([]byte{}, good...), 40, 0, 0, 0, 0, 0, 0, 0), 1, 8},
		{"second hop too short", append(append([]byte{}, good...), 4, 0, 0, 0, 0, 0, 0, 0), 1, 8},
		{"last hop padding cut", []byte{10, 0, 0, 0, 3, 0, 0, 0, 0, 0}, 1, 0},
	}
	for _, c := range cases {
		hops, rest := decodeMultipath(AF_INET, c.mp, 0)
		if len(hops) != c.hops || rest != c.rest {
			t.Errorf("%s: %d hops, %d rest; want %d, %d", c.name, len(hops), rest, c.hops, c.rest)
		}
	}
}

// TestRouteLiberalParseQuirks: the deprecated parse of NEWROUTE ignores
// unknown types and type 0, accepts over-long attributes below
// strict_start_type, and leaves a "bytes leftover" warning for a cut tail.
func TestRouteLiberalParseQuirks(t *testing.T) {
	m := rtReq(RTM_NEWROUTE, NLM_F_REQUEST, hdr4, 0,
		rtAttr(RTA_DST, 10, 5, 0, 0, 9, 9), rtAttr(40, 1, 2, 3, 4), rtAttr(0, 1), []byte{1, 0})
	r, err := DecodeRouteRequest(m)
	if err != nil {
		t.Fatal(err)
	}
	if r.Dst != netip.MustParseAddr("10.5.0.0") || r.Len(RTA_DST) != 6 || r.Present != 1<<RTA_DST {
		t.Errorf("dst %v len %d present %#x", r.Dst, r.Len(RTA_DST), r.Present)
	}
	if r.Warning != "bytes leftover after parsing attributes" {
		t.Errorf("warning %q", r.Warning)
	}
}

// TestRouteIPv6ShortDstQuirk: rtm_ipv6_policy has no RTA_DST entry, so a
// short destination passes the policy (rtm_to_fib6_config() compares its
// length with the prefix length later); the decoder pads it and keeps its
// length.
func TestRouteIPv6ShortDstQuirk(t *testing.T) {
	m := rtReq(RTM_NEWROUTE, NLM_F_REQUEST, hdr6, 0, rtAttr(RTA_DST, 0x20, 0x01, 0x0d, 0xb8))
	r, err := DecodeRouteRequest(m)
	if err != nil {
		t.Fatal(err)
	}
	if r.Dst != netip.MustParseAddr("2001:db8::") || r.Len(RTA_DST) != 4 {
		t.Errorf("dst %v len %d", r.Dst, r.Len(RTA_DST))
	}
}

// TestRouteIPv6TwoPrefsrcQuirk: rt6_fill_node() writes the selected source
// and then the configured prefsrc, both as RTA_PREFSRC; decoding keeps
// both and encoding restores the order.
func TestRouteIPv6TwoPrefsrcQuirk(t *testing.T) {
	r := &RouteMsg{Family: AF_INET6, DstLen: 128}
	r.SetTable(254)
	r.Dst, r.SelSrc, r.PrefSrc = netip.MustParseAddr("2001:db8::5"), netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2001:db8::7")
	r.Set(RTA_DST)
	r.Set(RTA_PREFSRC)
	b := AppendRoute(nil, RTM_NEWROUTE, 0, 1, 1, r)
	got, err := DecodeRoute(&SplitDatagram(b)[0])
	if err != nil {
		t.Fatal(err)
	}
	if got.SelSrc != r.SelSrc || got.PrefSrc != r.PrefSrc {
		t.Errorf("selected %v configured %v", got.SelSrc, got.PrefSrc)
	}
}

// TestRouteTableCompatQuirk: a table id above 255 goes in RTA_TABLE with
// rtm_table = RT_TABLE_COMPAT; a request's RTA_TABLE overrides rtm_table
// even when 0.
func TestRouteTableCompatQuirk(t *testing.T) {
	var r RouteMsg
	r.SetTable(100000)
	if r.Table != RT_TABLE_COMPAT || r.Table32 != 100000 || !r.Has(RTA_TABLE) {
		t.Errorf("%+v", r)
	}
	r.SetTable(100)
	if r.Table != 100 {
		t.Errorf("table %d", r.Table)
	}
	h := hdr4
	h[4] = 100
	q, err := DecodeRouteRequest(rtReq(RTM_NEWROUTE, NLM_F_REQUEST, h, 0, rtAttr(RTA_TABLE, u32b(0)...)))
	if err != nil || q.TableID() != 0 {
		t.Errorf("TableID %d, %v", q.TableID(), err)
	}
	q, _ = DecodeRouteRequest(rtReq(RTM_NEWROUTE, NLM_F_REQUEST, h, 0))
	if q.TableID() != 100 {
		t.Errorf("TableID %d", q.TableID())
	}
}

// TestRouteDumpLegacyQuirk: without NETLINK_GET_STRICT_CHK a dump request's
// header and attributes are ignored except rtm_flags' CLONED and PREFIX
// bits, and nothing is filtered.
func TestRouteDumpLegacyQuirk(t *testing.T) {
	h := [8]uint8{AF_INET, 8, 8, 4, 100, 4, 253, 6}
	m := rtReq(RTM_GETROUTE, NLM_F_REQUEST|NLM_F_DUMP, h, RTM_F_CLONED|RTM_F_FIB_MATCH, rtAttr(RTA_PRIORITY, 1))
	d, err := DecodeRouteDump(m, false)
	if err != nil {
		t.Fatal(err)
	}
	want := RouteDump{Family: AF_INET, Flags: RTM_F_CLONED, Routes: true, Exceptions: true}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Error(diff)
	}
	d, err = DecodeRouteDump(rtReq(RTM_GETROUTE, NLM_F_REQUEST|NLM_F_DUMP, [8]uint8{AF_INET6}, 0), true)
	if err != nil || d.Filtered || !d.Routes || d.Exceptions {
		t.Errorf("strict unfiltered: %+v %v", d, err)
	}
	d, err = DecodeRouteDump(rtReq(RTM_GETROUTE, NLM_F_REQUEST|NLM_F_DUMP, [8]uint8{AF_INET, 0, 0, 0, 100}, 0, rtAttr(RTA_TABLE, u32b(300)...)), true)
	if err != nil || !d.Filtered || d.Table != 300 {
		t.Errorf("RTA_TABLE overrides rtm_table: %+v %v", d, err)
	}
}

// TestMetricsClampQuirk: ip_metrics_convert() clamps advmss, mtu and
// hoplimit instead of refusing them, and keeps zero values (which
// rtnetlink_put_metrics() then leaves out of replies).
func TestMetricsClampQuirk(t *testing.T) {
	var mx []byte
	for _, kv := range [][2]uint32{{RTAX_MTU, 70000}, {RTAX_ADVMSS, 70000}, {RTAX_HOPLIMIT, 256}, {RTAX_WINDOW, 0}, {RTAX_RTT, 8}} {
		mx = append(mx, rtAttr(uint16(kv[0]), u32b(kv[1])...)...)
	}
	r, err := DecodeRouteRequest(rtReq(RTM_NEWROUTE, NLM_F_REQUEST, hdr4, 0, rtAttr(RTA_METRICS, mx...)))
	if err != nil {
		t.Fatal(err)
	}
	x, err := r.ConvertMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	var want Metrics
	want.Put(RTAX_MTU, 65520)
	want.Put(RTAX_ADVMSS, 65495)
	want.Put(RTAX_HOPLIMIT, 255)
	want.Put(RTAX_WINDOW, 0)
	want.Put(RTAX_RTT, 8)
	if d := cmp.Diff(want, x); d != "" {
		t.Error(d)
	}
	enc := appendMetrics(nil, &x)
	if got := decodeMetrics(enc[nlaHdrLen:]); got.Has(RTAX_WINDOW) || !got.Has(RTAX_RTT) {
		t.Errorf("encoded metrics %x", enc)
	}
	if len(appendMetrics(nil, &Metrics{})) != 0 {
		t.Error("empty metrics encoded a nest")
	}
}

// TestRouteDecodeErrors covers decode paths the golden file does not:
// families without a route handler, and the error offsets of nested
// policy failures.
func TestRouteDecodeErrors(t *testing.T) {
	cases := []struct {
		name string
		m    *Message
		get  bool
		want *Error
	}{
		{"unspec family", rtReq(RTM_NEWROUTE, NLM_F_REQUEST, [8]uint8{0}, 0), false, Errno(syscall.EOPNOTSUPP)},
		{"family 7", rtReq(RTM_DELROUTE, NLM_F_REQUEST, [8]uint8{7}, 0), false, Errno(syscall.EOPNOTSUPP)},
		{"get unspec family", rtReq(RTM_GETROUTE, NLM_F_REQUEST, [8]uint8{0}, 0), true, Errno(syscall.EOPNOTSUPP)},
		{"v6 multipath short", rtReq(RTM_NEWROUTE, NLM_F_REQUEST, hdr6, 0, rtAttr(RTA_DST, make([]byte, 16)...), rtAttr(RTA_MULTIPATH, 1, 2)), false,
			&Error{Errno: syscall.ERANGE, Msg: policyFailed, Offset: routeAttrBase + 20}},
		{"v6 metrics nested missing ok, encap short", rtReq(RTM_NEWROUTE, NLM_F_REQUEST, hdr6, 0, rtAttr(RTA_ENCAP, 1)), false,
			&Error{Errno: syscall.ERANGE, Msg: policyFailed, Offset: routeAttrBase, Policy: policyNest(policy{kind: polNested})}},
		{"v6 get strict nh_id", rtReq(RTM_GETROUTE, NLM_F_REQUEST, [8]uint8{AF_INET6}, 0, rtAttr(RTA_NH_ID, u32b(1)...)), true,
			Errorf(syscall.EINVAL, "ipv6: Unsupported attribute in get route request")},
	}
	for _, c := range cases {
		var err *Error
		if c.get {
			_, err = DecodeRouteGet(c.m, true)
		} else {
			_, err = DecodeRouteRequest(c.m)
		}
		if d := cmp.Diff(c.want, err); d != "" {
			t.Errorf("%s: %s", c.name, d)
		}
	}
}

// TestRouteGetFlowKeys decodes the recorded IPv6 route get that carries
// RTA_FLOWLABEL, RTA_IP_PROTO and the ports: the be32 and be16 values come
// out in host order.
func TestRouteGetFlowKeys(t *testing.T) {
	for _, c := range loadGolden(t) {
		if c.name != "get6-flowlabel" {
			continue
		}
		r, err := DecodeRouteGet(&SplitDatagram(c.req)[0], true)
		if err != nil {
			t.Fatal(err)
		}
		type keys struct {
			Dst          netip.Addr
			FlowLabel    uint32
			IPProto      uint8
			Sport, Dport uint16
		}
		got := keys{r.Dst, r.FlowLabel, r.IPProto, r.Sport, r.Dport}
		want := keys{netip.MustParseAddr("2001:db8:1::5"), 0x12345, syscall.IPPROTO_TCP, 1000, 80}
		if got != want {
			t.Errorf("got %+v, want %+v", got, want)
		}
		return
	}
	t.Fatal("no get6-flowlabel case")
}
