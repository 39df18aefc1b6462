package rtnl

import "testing"

func benchRequest(b *testing.B, cmd string) *Message {
	for _, q := range loadIPRequests(b) {
		if q.cmd == cmd {
			return &q.msg
		}
	}
	b.Fatalf("no request for %q", cmd)
	return nil
}

// BenchmarkDecodeRouteRequest decodes iproute2's `ip route add` with a
// gateway, metric, metrics, realm and prefsrc into a reused RouteMsg.
func BenchmarkDecodeRouteRequest(b *testing.B) {
	m := benchRequest(b, "ip route add 10.5.0.0/16 via 10.0.0.2 metric 5 mtu 1400 advmss 1360 realm 3 src 10.0.0.1 proto static")
	var r RouteMsg
	b.ReportAllocs()
	for b.Loop() {
		if err := r.DecodeRequest(m); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeRouteGet decodes iproute2's `ip route get` with every
// IPv4 flow key, on a strict socket.
func BenchmarkDecodeRouteGet(b *testing.B) {
	m := benchRequest(b, "ip route get 10.5.1.1 from 10.0.0.1 mark 16 uid 1000 tos 0x10 ipproto tcp sport 1000 dport 80")
	var r RouteMsg
	b.ReportAllocs()
	for b.Loop() {
		if err := r.DecodeGet(m, true); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendRoute encodes a dumped IPv6 route (the common dump
// message) into a reused buffer.
func BenchmarkAppendRoute(b *testing.B) {
	var r *RouteMsg
	for _, c := range loadGoldenF(b) {
		if c.name == "get6-two-prefsrc" {
			r, _ = DecodeRoute(&SplitDatagram(c.reps[0])[0])
		}
	}
	if r == nil {
		b.Fatal("no golden route")
	}
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendRoute(buf[:0], RTM_NEWROUTE, NLM_F_MULTI, 1, 2, r)
	}
}
