package fib

import (
	"encoding/binary"
	"syscall"
	"testing"

	"github.com/nlemu/nlemu/rtnl"
)

// TestIPv4BadViaBeforeGoodViaFails: rtm_to_fib_config() converts each
// RTA_VIA as it walks the attributes, so a malformed first one fails the
// request even though a later, well-formed one would have overwritten it
// (recorded on Linux 6.18: "Invalid IPv4 address in RTA_VIA"). nlemu looked
// at the last RTA_VIA only and accepted the route.
func TestIPv4BadViaBeforeGoodViaFails(t *testing.T) {
	attr := func(typ uint16, data ...byte) []byte {
		b := binary.NativeEndian.AppendUint16(nil, uint16(4+len(data)))
		b = binary.NativeEndian.AppendUint16(b, typ)
		b = append(b, data...)
		for len(b)%4 != 0 {
			b = append(b, 0)
		}
		return b
	}
	via := func(addr ...byte) []byte { return attr(rtnl.RTA_VIA, append([]byte{rtnl.AF_INET, 0}, addr...)...) }
	body := []byte{rtnl.AF_INET, 24, 0, 0, rtnl.RT_TABLE_MAIN, rtnl.RTPROT_BOOT, rtnl.RT_SCOPE_UNIVERSE, rtnl.RTN_UNICAST, 0, 0, 0, 0}
	body = append(body, attr(rtnl.RTA_DST, 10, 9, 0, 0)...)
	body = append(body, via(10, 0, 0)...)    // 3 bytes: not an IPv4 address
	body = append(body, via(10, 0, 0, 2)...) // a good one after it
	b := rtnl.AppendMessage(nil, rtnl.RTM_NEWROUTE, rtnl.NLM_F_REQUEST|rtnl.NLM_F_ACK|rtnl.NLM_F_CREATE|rtnl.NLM_F_EXCL, 1, 0, body)
	msg := rtnl.SplitDatagram(b)[0]
	m, derr := rtnl.DecodeRouteRequest(&msg)
	if derr != nil {
		t.Fatalf("decode: %v", derr)
	}
	_, err := Parse(m, rtnl.RTM_NEWROUTE, uint16(msg.Header.Flags))
	if err == nil || err.Errno != syscall.EINVAL || err.Msg != "Invalid IPv4 address in RTA_VIA" {
		t.Errorf("got %v, want EINVAL \"Invalid IPv4 address in RTA_VIA\"", err)
	}
}
