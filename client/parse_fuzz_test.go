package client

import (
	"encoding/binary"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mdlayher/netlink"
)

// referenceParse is the obvious reading of a datagram as mdlayher/netlink's
// kernel socket does it (conn_linux.go: the buffer is the datagram padded
// to 4 bytes; parseMessagesIter walks it): whole aligned messages while 16
// bytes remain, an error at the first message shorter than its header or
// longer than what is left.
func referenceParse(d []byte) ([]netlink.Message, bool) {
	b := append([]byte(nil), d...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	var out []netlink.Message
	for off := 0; len(b)-off >= 16; {
		n := int(binary.NativeEndian.Uint32(b[off:]))
		if n < 16 {
			return out, false
		}
		an := (n + 3) / 4 * 4
		if off+an > len(b) {
			return out, false
		}
		var m netlink.Message
		if err := m.UnmarshalBinary(b[off : off+an]); err != nil {
			return out, false
		}
		out = append(out, m)
		off += an
	}
	return out, true
}

// FuzzParseMessages: parseMessages yields the reference's messages, and an
// error exactly where the reference stops with one.
func FuzzParseMessages(f *testing.F) {
	ack := []byte{36, 0, 0, 0, 2, 0, 0, 1, 1, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 20, 0, 0, 0, 16, 0, 5, 0, 1, 0, 0, 0, 7, 0, 0, 0}
	f.Add(ack)
	f.Add(append(append([]byte(nil), ack...), ack...))
	f.Add([]byte{17, 0, 0, 0, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9})
	f.Add([]byte{15, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{255, 0, 0, 0, 3, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, d []byte) {
		var got []netlink.Message
		ok := true
		for m, err := range parseMessages(d) {
			if err != nil {
				ok = false
				break
			}
			got = append(got, m)
		}
		want, wantOK := referenceParse(d)
		if ok != wantOK {
			t.Fatalf("error: got %v, reference %v", !ok, !wantOK)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("messages differ (-reference +parseMessages):\n%s", diff)
		}
	})
}
