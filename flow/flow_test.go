package flow

import (
	"net/netip"
	"testing"
)

func TestKeyDSCPDropsECN(t *testing.T) {
	for _, tc := range []struct {
		tos, dscp uint8
	}{{0, 0}, {0x03, 0}, {0x10, 4}, {0xb8, 46}, {0xff, 63}} {
		k := Key{TOS: tc.tos}
		if got := k.DSCP(); got != tc.dscp {
			t.Errorf("Key{TOS: %#x}.DSCP() = %d, want %d", tc.tos, got, tc.dscp)
		}
	}
}

func TestKeyIs4(t *testing.T) {
	if k := (Key{Dst: netip.MustParseAddr("10.0.0.1")}); !k.Is4() {
		t.Error("10.0.0.1 is not IPv4")
	}
	if k := (Key{Dst: netip.MustParseAddr("2001:db8::1")}); k.Is4() {
		t.Error("2001:db8::1 is IPv4")
	}
}
