package rtnl

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// refMessage is a message as the slow reference splitter sees it: where it
// starts in the datagram and its nlmsg_len.
type refMessage struct{ Off, Len int }

// refSplit is netlink_rcv_skb()'s loop written as the kernel writes it, on
// offsets, with no shortcut: while a header fits, stop at an nlmsg_len
// below NLMSG_HDRLEN or beyond what is left, else take the message and
// pull NLMSG_ALIGN(nlmsg_len) bytes, or what is left if that is less.
func refSplit(b []byte) []refMessage {
	var out []refMessage
	off := 0
	for {
		left := len(b) - off
		if left < NLMSG_HDRLEN {
			return out
		}
		n := int(binary.LittleEndian.Uint32(b[off:]))
		if n < NLMSG_HDRLEN || left < n {
			return out
		}
		out = append(out, refMessage{off, n})
		msglen := (n + 3) / 4 * 4
		if msglen > left {
			msglen = left
		}
		off += msglen
	}
}

// FuzzSplitDatagram checks the datagram decoder (SplitDatagram, the framing
// every request goes through) against refSplit on arbitrary datagrams:
// the same messages at the same offsets, each header decoded from its
// bytes, Data and Raw views of exactly nlmsg_len bytes that cannot grow
// into the next message, and each message re-encoded by AppendMessage
// giving back its bytes. Seeds (testdata/fuzz/FuzzSplitDatagram) are the
// datagrams `ip` sent to the kernel and the shim sent to nlemu.
func FuzzSplitDatagram(f *testing.F) {
	f.Add([]byte{20, 0, 0, 0, 34, 0, 1, 3, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 17, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9})
	f.Fuzz(func(t *testing.T, b []byte) {
		orig := bytes.Clone(b)
		got := SplitDatagram(b)
		want := refSplit(b)
		var gotRef []refMessage
		for _, m := range got {
			gotRef = append(gotRef, refMessage{offsetIn(b, m.Raw), len(m.Raw)})
		}
		if d := cmp.Diff(want, gotRef); d != "" {
			t.Fatalf("messages differ from netlink_rcv_skb()'s (-want +got):\n%s", d)
		}
		for i, m := range got {
			r := b[want[i].Off : want[i].Off+want[i].Len]
			if !bytes.Equal(m.Raw, r) || !bytes.Equal(m.Data, r[NLMSG_HDRLEN:]) {
				t.Fatalf("message %d: views do not match its bytes", i)
			}
			if cap(m.Raw) != len(m.Raw) || cap(m.Data) != len(m.Data) {
				t.Fatalf("message %d: a view can grow into the next message", i)
			}
			h := m.Header
			if int(h.Length) != len(r) || uint16(h.Type) != binary.LittleEndian.Uint16(r[4:]) ||
				uint16(h.Flags) != binary.LittleEndian.Uint16(r[6:]) ||
				h.Sequence != binary.LittleEndian.Uint32(r[8:]) || h.PID != binary.LittleEndian.Uint32(r[12:]) {
				t.Fatalf("message %d: header %+v decoded wrong from %x", i, h, r[:NLMSG_HDRLEN])
			}
			re := AppendMessage(nil, uint16(h.Type), uint16(h.Flags), h.Sequence, h.PID, m.Data)
			if !bytes.Equal(re[:len(r)], r) || len(re) != (len(r)+3)&^3 {
				t.Fatalf("message %d: re-encoded %x, was %x", i, re, r)
			}
		}
		if !bytes.Equal(b, orig) {
			t.Fatal("decoding changed the datagram")
		}
	})
}

// offsetIn is the offset of sub within b (sub is a non-empty view of b;
// every message has at least its header), or -1.
func offsetIn(b, sub []byte) int {
	for off := 0; off <= len(b)-len(sub); off++ {
		if &b[off] == &sub[0] {
			return off
		}
	}
	return -1
}
