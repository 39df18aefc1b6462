// Package flow holds the flow key of one routing lookup: the fields of the
// kernel's struct flowi4 / flowi6 (include/net/flow.h) that the policy
// rules and the FIB look at. It is a leaf package: a Key is a plain value,
// built by whoever asks the question (`ip route get`, a benchmark, a test)
// and passed by value to rulesops and fib.
package flow

import "net/netip"

// Flags of a lookup (flowi_flags, include/net/flow.h FLOWI_FLAG_*), plus the
// bits nlemu needs to say where the iif/oif came from.
const (
	// FlagAnySrc is FLOWI_FLAG_ANYSRC: the source address need not be local.
	FlagAnySrc uint8 = 0x01
	// FlagKnownNH is FLOWI_FLAG_KNOWN_NH.
	FlagKnownNH uint8 = 0x02
	// FlagL3MDevOIF is FLOWI_FLAG_L3MDEV_OIF: the L3 domain (VRF) of the
	// flow was derived from its output device; fib_rule_match() matches
	// an l3mdev oif rule only then.
	FlagL3MDevOIF uint8 = 0x04
)

// Key is a flow key (struct flowi_common + flowi4/flowi6). The zero value
// is "any": no address, no device, mark 0, uid 0.
//
// Dst and Src hold addresses of the lookup's family (IPv4 as 4-byte
// addresses, never 4-in-6); an invalid Src means "no source address"
// (saddr 0 / ::), which matters to IPv6 rules (fib6_rule_match() skips the
// source check and falls back to FIB_RULE_FIND_SADDR).
type Key struct {
	Dst, Src netip.Addr
	// IIF is flowi_iif. Output (locally generated) lookups carry 1, the
	// loopback device, as ip_route_output_key_hash() sets it, which is why
	// an `iif lo` rule selects local traffic; input lookups carry the
	// receiving device. 0 is "none".
	IIF int32
	// OIF is flowi_oif: 0 when no output device is requested.
	OIF int32
	// L3MDev is flowi_l3mdev, the ifindex of the flow's L3 master device
	// (VRF), 0 for none.
	L3MDev int32
	// Mark is flowi_mark (fwmark).
	Mark uint32
	// UID is flowi_uid.
	UID uint32
	// TunID is flowi_tun_key.tun_id.
	TunID uint64
	// TOS is the DS field byte of the lookup: flowi4_tos for IPv4 (the
	// kernel's flowi4_dscp << 2 in 6.18), the traffic class for IPv6.
	// The ECN bits are ignored by every match.
	TOS uint8
	// Proto is flowi_proto (IPPROTO_*), 0 when unknown.
	Proto uint8
	// Flags is flowi_flags (Flag*).
	Flags uint8
	// Scope is flowi4_scope, the narrowest route scope acceptable
	// (RT_SCOPE_UNIVERSE = 0 for a normal lookup). IPv4 only.
	Scope uint8
	// Sport and Dport are the transport ports (fl4_sport/fl4_dport,
	// fl6_sport/fl6_dport), host byte order.
	Sport, Dport uint16
	// FlowLabel is the IPv6 flow label (flowi6_flowlabel), host byte
	// order, low 20 bits; 0 for IPv4.
	FlowLabel uint32
}

// DSCP returns the flow's DSCP (the DS field's upper six bits).
func (k *Key) DSCP() uint8 { return k.TOS >> 2 }

// Is4 reports whether the key is an IPv4 lookup (by its destination).
func (k *Key) Is4() bool { return k.Dst.Is4() }
