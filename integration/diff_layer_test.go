package integration

import (
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// Unit tests of the differential layer itself (no kernel, no nlemu).

func ne32(v uint32) []byte { return binary.NativeEndian.AppendUint32(nil, v) }
func ne16(v uint16) []byte { return binary.NativeEndian.AppendUint16(nil, v) }

func TestDiffLayerRuleRequestBytes(t *testing.T) {
	got := v4().Src(ipb("10.1.2.3"), 8).Pref(100).Raw([]byte{0xAA, 0xBB}).Str(fraIifname, "lo").
		Request(rtmNewRule, fAckExcl, 7)
	var want []byte
	want = append(want, ne32(16+12+8+8+2+8)...) // nlmsg_len counts the raw tail, not the final padding
	want = append(want, ne16(rtmNewRule)...)
	want = append(want, ne16(fAckExcl)...)
	want = append(want, ne32(7)...)
	want = append(want, ne32(0)...)
	want = append(want, afInet, 0, 8, 0, 0, 0, 0, frActToTbl, 0, 0, 0, 0)
	want = append(want, 8, 0, fraSrc, 0, 10, 1, 2, 3)
	want = append(want, 8, 0, fraPriority, 0)
	want = append(want, ne32(100)...)
	want = append(want, 0xAA, 0xBB)
	want = append(want, 7, 0, fraIifname, 0, 'l', 'o', 0, 0)
	want = append(want, 0, 0) // message padding
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("request bytes (-want +got):\n%s", d)
	}
}

func TestDiffLayerNormalizePids(t *testing.T) {
	ack := Msg(nlmsgError, nlmFCapped, 5, 4242, append(ne32(0), Msg(rtmNewRule, fAck, 5, 4242, nil)...))
	other := Msg(rtmNewRule, 0, 6, 99, RuleHdr{Family: afInet}.Bytes())
	zero := Msg(nlmsgDone, nlmFMulti, 7, 0, ne32(0))
	d := catMsgs(ack, other, zero)
	got, marks := normalizePids(d, 4242)
	want := catMsgs(
		// Only the top-level pid changes; the echoed header keeps 4242.
		Msg(nlmsgError, nlmFCapped, 5, 0, append(ne32(0), Msg(rtmNewRule, fAck, 5, 4242, nil)...)),
		other, zero)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("normalized bytes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]bool{true, false, false}, marks); diff != "" {
		t.Errorf("marks (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(d[:4], ne32(uint32(len(ack)))); diff != "" {
		t.Errorf("input modified:\n%s", diff)
	}
}

func TestDiffLayerExpectedTerminators(t *testing.T) {
	hdr := RuleHdr{Family: afInet}.Bytes()
	tests := []struct {
		name string
		d    []byte
		want int
	}{
		{"ack", Msg(rtmNewRule, fAck, 1, 0, hdr), 1},
		{"no ack", Msg(rtmNewRule, nlmFRequest, 1, 0, hdr), 0},
		{"dump", Msg(rtmGetRule, nlmFRequest|nlmFDump, 1, 0, hdr), 1},
		{"dump root only", Msg(rtmGetRule, nlmFRequest|nlmFRoot, 1, 0, hdr), 1},
		{"dump empty body", Msg(rtmGetRule, nlmFRequest|nlmFDump, 1, 0, nil), 0},
		{"dump without REQUEST", Msg(rtmGetRule, nlmFDump, 1, 0, hdr), 0},
		{"GET without dump flags", Msg(rtmGetRule, nlmFRequest, 1, 0, hdr), 0},
		{"noop with ack", Msg(nlmsgNoop, fAck, 1, 0, nil), 1},
		{"three", catMsgs(Msg(rtmNewRule, fAck, 1, 0, hdr), Msg(rtmDelRule, nlmFRequest, 2, 0, hdr),
			Msg(rtmGetRule, nlmFRequest|nlmFDump, 3, 0, hdr)), 2},
		{"truncated", Msg(rtmNewRule, fAck, 1, 0, hdr)[:20], 0},
	}
	for _, tt := range tests {
		if got := expectedTerminators(tt.d); got != tt.want {
			t.Errorf("%s: expectedTerminators = %d, want %d", tt.name, got, tt.want)
		}
	}
}

func TestDiffLayerRenderError(t *testing.T) {
	req := v4().Bytes(fraPriority, []byte{1, 0}).Request(rtmNewRule, fAckExcl, 9)
	policy := catMsgs(
		[]byte{12, 0, 4, 0}, make([]byte, 8),
		[]byte{12, 0, 5, 0}, ne32(0xffffffff), make([]byte, 4),
		[]byte{8, 0, 1, 0}, ne32(4))
	tlvs := catMsgs(
		[]byte{22, 0, nlmsgerrAttrMsg, 0}, []byte("Error parsing msg\x00"), []byte{0, 0},
		[]byte{8, 0, nlmsgerrAttrOffs, 0}, ne32(28),
		ne16(uint16(4+len(policy))), ne16(0x8000|nlmsgerrAttrPolicy), policy)
	e := Msg(nlmsgError, nlmFAckTLVs, 9, 77, catMsgs(ne32(uint32(0xffffffde)), req, tlvs))
	got := RenderReply(Reply{Datagrams: []Datagram{newDatagram(e, []uint32{77})}}, true)
	want := []string{
		"datagram 0 (124 bytes)",
		"NLMSG_ERROR(2) flags=0x200<ACK_TLVS> seq=9 pid=PORT len=124",
		"  error -34 (ERANGE)",
		"  echoed hdr len=36 RTM_NEWRULE(32) flags=0x605 seq=9 pid=0",
		"  echoed body 0200000000000001000000000600060001000000",
		`  extack msg "Error parsing msg\x00"`,
		"  extack offset 28",
		"  extack policy [4:0000000000000000 5:ffffffff00000000 1:04000000] (type 0x8004)",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("rendering (-want +got):\n%s", d)
	}
}

func TestDiffLayerCompareReplies(t *testing.T) {
	a := Reply{Datagrams: []Datagram{newDatagram(Msg(nlmsgDone, nlmFMulti, 1, 5, ne32(0)), []uint32{5})}}
	// Same bytes after normalization, but the pid was a literal 0.
	b := Reply{Datagrams: []Datagram{newDatagram(Msg(nlmsgDone, nlmFMulti, 1, 0, ne32(0)), []uint32{6})}}
	if compareReplies(a, a, true) != "" {
		t.Error("identical replies differ")
	}
	if compareReplies(a, b, true) == "" {
		t.Error("pid 0 instead of the port id went unnoticed")
	}
	// Datagram boundaries count only when asked for.
	m := Msg(nlmsgNoop, 0, 1, 0, nil)
	one := Reply{Datagrams: []Datagram{newDatagram(catMsgs(m, m), nil)}}
	two := Reply{Datagrams: []Datagram{newDatagram(m, nil), newDatagram(m, nil)}}
	if compareReplies(one, two, false) != "" {
		t.Error("boundaries compared although off")
	}
	if compareReplies(one, two, true) == "" {
		t.Error("boundaries not compared")
	}
}

// chanEndpoint is an Endpoint without SetRecvTimeout: Receiver must pump it.
type chanEndpoint struct{ ch chan []byte }

func (c chanEndpoint) PortID() uint32    { return 1 }
func (c chanEndpoint) Send([]byte) error { return nil }
func (c chanEndpoint) Recv() ([]byte, error) {
	b, ok := <-c.ch
	if !ok {
		return nil, errors.New("closed")
	}
	return b, nil
}

func TestDiffLayerReceiverPump(t *testing.T) {
	ep := chanEndpoint{ch: make(chan []byte, 1)}
	r := NewReceiver(ep)
	if _, err := r.Next(10 * time.Millisecond); !errors.Is(err, errRecvTimeout) {
		t.Fatalf("empty endpoint: err = %v, want timeout", err)
	}
	ep.ch <- []byte{1, 2, 3}
	b, err := r.Next(time.Second)
	if err != nil || len(b) != 3 {
		t.Fatalf("Next = %v, %v", b, err)
	}
	close(ep.ch)
	if _, err := r.Next(time.Second); err == nil {
		t.Fatal("closed endpoint: no error")
	}
}
