package integration

// Links on the wire: veth pairs and bridges created, brought up and down,
// renamed, resized and deleted with raw RTM_NEWLINK / RTM_DELLINK
// requests (what iproute2 sends), on a fresh kernel namespace and a fresh
// nlemu namespace. The ACKs, the RTNLGRP_LINK notifications and a link
// dump after each step must be the same messages in the same order, with
// the same attributes.
//
// Masked on both sides (zeroed before the comparison) because nlemu moves
// no packets or cannot know them:
//
//   - the counters: IFLA_STATS64, IFLA_STATS and the inet6 IFLA_INET6_STATS /
//     IFLA_INET6_ICMP6STATS (a kernel veth with carrier sends router
//     solicitations and MLD reports; nlemu's counters stay 0);
//   - IFLA_INET6_CACHEINFO tstamp and reachable_time (time and random; see
//     lo_diff_test.go, which checks their ranges);
//   - IFLA_INET6_FLAGS: addrconf's IF_RS_SENT and friends follow the packets
//     above.
//
// Addresses are given explicitly (a veth's and a bridge's are random
// otherwise). The kernel runs linkwatch from a work queue; nlemu runs it
// synchronously (docs/LINKS.md), so the collector waits for notifications
// to settle. Only veth carrier events, which the kernel treats as urgent,
// are compared this way; bridge carrier, which the kernel delays by up to a
// second, is compared in the ipcases (link_bridge_*.batch) after a settle.

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const (
	rtmDelLink     = 17
	iflaAddress    = 1
	iflaMTU        = 4
	iflaLinkinfo   = 18
	iflaStats      = 7
	iflaStats64    = 23
	iflaInfoKind   = 1
	iflaInfoData   = 2
	vethInfoPeer   = 1
	iflaInet6Flags = 1
	iflaInet6Stats = 3
	iflaInet6ICMP  = 6
)

// linkMask zeroes what the package comment lists in every RTM_NEWLINK /
// RTM_DELLINK of d.
func linkMask(d []byte) []byte {
	out := append([]byte(nil), d...)
	ne := binary.NativeEndian
	inet6 := func(b []byte) {
		for _, a := range loAttrs(b) {
			switch a.typ {
			case iflaInet6Cache:
				if len(a.data) >= 12 {
					clear(a.data[4:12])
				}
			case iflaInet6Stats, iflaInet6ICMP, iflaInet6Flags:
				clear(a.data)
			}
		}
	}
	for off := 0; off+16 <= len(out); {
		l := int(ne.Uint32(out[off:]))
		if l < 16 || off+l > len(out) {
			break
		}
		m := out[off : off+l]
		if t := ne.Uint16(m[4:]); (t == rtmNewLink || t == rtmDelLink) && len(m) >= 32 {
			for _, a := range loAttrs(m[32:]) {
				switch {
				case a.typ == iflaStats || a.typ == iflaStats64:
					clear(a.data)
				case a.typ == iflaAFSpec:
					for _, f := range loAttrs(a.data) {
						if f.typ == 10 {
							inet6(f.data)
						}
					}
				case a.typ == iflaProtinfo && m[16] == 10:
					inet6(a.data)
				}
			}
		}
		off += nlmsgAlign(l)
	}
	return out
}

func mac(last byte) []byte { return []byte{2, 0, 0, 0, 0, last} }

// newVeth is `ip link add NAME address A type veth peer name PEER address B`.
func newVeth(name, peer string, a, b byte) func(seq uint32) []byte {
	return func(seq uint32) []byte {
		p := nlAttr(nlAttr(ifinfo(0, 0, 0, 0), iflaIfname, []byte(peer+"\x00")), iflaAddress, mac(b))
		data := nlAttr(nil, vethInfoPeer, p)
		li := nlAttr(nlAttr(nil, iflaInfoKind, []byte("veth\x00")), iflaInfoData|0x8000, data)
		body := nlAttr(nlAttr(nlAttr(ifinfo(0, 0, 0, 0), iflaIfname, []byte(name+"\x00")), iflaAddress, mac(a)), iflaLinkinfo|0x8000, li)
		return Msg(rtmNewLink, nlmFRequest|nlmFAck|nlmFExcl|0x400, seq, 0, body)
	}
}

// newBridge is `ip link add NAME address A type bridge`.
func newBridge(name string, a byte) func(seq uint32) []byte {
	return func(seq uint32) []byte {
		li := nlAttr(nil, iflaInfoKind, []byte("bridge\x00"))
		body := nlAttr(nlAttr(nlAttr(ifinfo(0, 0, 0, 0), iflaIfname, []byte(name+"\x00")), iflaAddress, mac(a)), iflaLinkinfo|0x8000, li)
		return Msg(rtmNewLink, nlmFRequest|nlmFAck|nlmFExcl|0x400, seq, 0, body)
	}
}

func setLinkReq(index int32, flags, change uint32, attrs ...[]byte) func(seq uint32) []byte {
	return func(seq uint32) []byte {
		body := ifinfo(0, index, flags, change)
		for _, a := range attrs {
			body = append(body, a...)
		}
		return Msg(rtmNewLink, nlmFRequest|nlmFAck, seq, 0, body)
	}
}

// TestLinksOnTheWireMatchKernel walks a veth pair and a bridge through
// their life on both sides (ifindex order: the peer first; carrier only
// once both ends are up; LOWERLAYERDOWN; dev_close_many()'s change mask;
// the RTM_DELLINK with an empty IFLA_AF_SPEC) and compares every reply,
// notification and dump.
func TestLinksOnTheWireMatchKernel(t *testing.T) {
	requireKernelNS(t)
	sides := []*Side{kernelSide(t, "kernel"), nlemuSide(t, "nlemu")}
	type open struct {
		main, mon   Socket
		rmain, rmon *Receiver
	}
	var socks [2]open
	for i, s := range sides {
		m, err := s.Dial(SockSpec{Name: "main", ExtAck: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		l, err := s.Dial(SockSpec{Name: "mon", Groups: rtnlgrpLinkMask})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		socks[i] = open{m, l, NewReceiver(m), NewReceiver(l)}
	}
	u32 := func(t uint16, v uint32) []byte { return nlAttr(nil, t, u32Bytes(v)) }
	name := func(n string) []byte { return nlAttr(nil, iflaIfname, []byte(n+"\x00")) }
	steps := []struct {
		name  string
		build func(seq uint32) []byte
	}{
		{"add v0 type veth peer name v1", newVeth("v0", "v1", 1, 2)},
		{"add v0 again: EEXIST", newVeth("v0", "v9", 3, 4)},
		{"add v2 peer v1: EEXIST after the peer", newVeth("v2", "v1", 3, 4)},
		{"set v0 up (peer down: LOWERLAYERDOWN)", setLinkReq(3, iffUp, iffUp)},
		{"set v1 up (carrier on both)", setLinkReq(2, iffUp, iffUp)},
		{"set v0 mtu 1400", setLinkReq(3, 0, 0, u32(iflaMTU, 1400))},
		{"set v0 mtu 1400 again (no change)", setLinkReq(3, 0, 0, u32(iflaMTU, 1400))},
		{"set v0 mtu 70000", setLinkReq(3, 0, 0, u32(iflaMTU, 70000))},
		{"rename v0 w0", setLinkReq(3, 0, 0, name("w0"))},
		{"rename w0 v1: EEXIST", setLinkReq(3, 0, 0, name("v1"))},
		{"set v1 down", setLinkReq(2, 0, iffUp)},
		{"add br0 type bridge", newBridge("br0", 0x10)},
		{"del w0 (takes v1)", func(seq uint32) []byte {
			return Msg(rtmDelLink, nlmFRequest|nlmFAck, seq, 0, ifinfo(0, 3, 0, 0))
		}},
		{"del w0 again: ENODEV", func(seq uint32) []byte {
			return Msg(rtmDelLink, nlmFRequest|nlmFAck, seq, 0, ifinfo(0, 3, 0, 0))
		}},
		{"del lo: EOPNOTSUPP", func(seq uint32) []byte {
			return Msg(rtmDelLink, nlmFRequest|nlmFAck, seq, 0, ifinfo(0, 1, 0, 0))
		}},
		{"add v4 peer v5 (indexes are not reused)", newVeth("v4", "v5", 5, 6)},
	}
	compare := func(what string, reps [2]Reply) {
		t.Helper()
		var r [2][]string
		for i, rep := range reps {
			r[i] = loRender(linkMask(rep.Bytes()))
			if rep.Problem != "" {
				r[i] = append(r[i], "problem: "+rep.Problem)
			}
		}
		if d := cmp.Diff(r[0], r[1]); d != "" {
			t.Errorf("%s differs (-kernel +nlemu):\n%s", what, d)
		}
	}
	seq := uint32(100)
	for _, st := range steps {
		seq++
		var acks, notes, dumps [2]Reply
		for i, s := range sides {
			acks[i] = Exchange(socks[i].main, socks[i].rmain, st.build(seq), s.Timing)
			// The kernel's linkwatch work runs after the ACK, from a work
			// queue: wait for the socket to stay quiet a while.
			notes[i] = Collect(socks[i].rmon, 0, Timing{Wait: s.Timing.Wait, Settle: max(300*time.Millisecond, s.Timing.Settle)})
		}
		compare(st.name+": ACK", acks)
		compare(st.name+": notifications", notes)
		seq++
		for i, s := range sides {
			dumps[i] = Exchange(socks[i].main, socks[i].rmain,
				Msg(rtmGetLink, nlmFRequest|nlmFDump, seq, 0, ifinfo(0, 0, 0, 0)), s.Timing)
		}
		compare(st.name+": dump", dumps)
	}
}
