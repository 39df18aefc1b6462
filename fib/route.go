package fib

import (
	"encoding/binary"
	"net/netip"
	"slices"
	"strings"

	"github.com/nlemu/nlemu/rtnl"
)

// Route is one route as a typed value: what a dump prints and what a
// notification carries. The validation of a request against devices
// (fib/config*.go) builds it; Tables stores it. A Route returned by a read
// shares its Nexthops slice with the stored entry: treat it as read-only.
type Route struct {
	// Family is rtnl.AF_INET or rtnl.AF_INET6.
	Family uint8
	// Table is the table id the entry belongs to (never 0).
	Table uint32
	// Dst is the masked destination prefix.
	Dst netip.Prefix
	// Src is the IPv6 source prefix (RTA_SRC, source-specific routing);
	// the zero Prefix when the route has none. Always zero for IPv4.
	Src netip.Prefix
	// Tos is the IPv4 rtm_tos (part of the key); 0 for IPv6.
	Tos uint8
	// Type is rtm_type (RTN_*).
	Type uint8
	// Scope is rtm_scope (RT_SCOPE_*).
	Scope uint8
	// Protocol is rtm_protocol (RTPROT_*).
	Protocol uint8
	// Priority is RTA_PRIORITY: the IPv4 priority or the IPv6 metric.
	Priority uint32
	// Prefsrc is RTA_PREFSRC; the zero Addr when none.
	Prefsrc netip.Addr
	// Flags are the rtm_flags stored with the route (RTM_F_* and, for a
	// single-path route, nothing per hop: hop flags live in Nexthop.Flags).
	Flags uint32
	// Pref is the IPv6 router preference (RTA_PREF, ICMPV6_ROUTER_PREF_*).
	Pref uint8
	// Expires is the IPv6 RTA_EXPIRES value in seconds as given at insert
	// (0 = none); the handler turns it into a remaining time.
	Expires uint32
	// NhID is the nexthop object id (RTA_NH_ID); 0 = inline nexthops.
	NhID uint32
	// Metrics are the RTA_METRICS values.
	Metrics Metrics
	// Nexthops are the hops in order; one hop for a single-path route, none
	// for blackhole/unreachable/prohibit/throw routes. For IPv6 an entry
	// with several hops is an ECMP sibling set.
	Nexthops []Nexthop
}

// Nexthop is one hop of a route (the kernel's fib_nh / fib6_nh).
type Nexthop struct {
	// Gateway is RTA_GATEWAY (or RTA_VIA: an IPv6 gateway of an IPv4
	// route); the zero Addr for a device route.
	Gateway netip.Addr
	// Dev is the output ifindex (RTA_OIF); 0 = none.
	Dev int32
	// Weight is the hop weight, rtnh_hops+1 (1 for a single path).
	Weight uint16
	// Flags are RTNH_F_ONLINK, RTNH_F_DEAD, RTNH_F_LINKDOWN.
	Flags uint8
	// Realm is RTA_FLOW (IPv4 realms); 0 = none.
	Realm uint32
	// Encap is the hop's lightweight tunnel (RTA_ENCAP_TYPE / RTA_ENCAP);
	// the zero value when none.
	Encap rtnl.Encap
}

// Metrics is an immutable set of RTA_METRICS values (RTAX_* → value),
// comparable with ==, so that equal metric sets intern to one entry. The
// zero value is the empty set. RTAX_CC_ALGO is stored as the algorithm's
// key (the kernel's tcp_ca_get_key_by_name()), as the kernel does.
type Metrics struct {
	// s packs (type uint16, value uint32) big-endian pairs sorted by type.
	s string
}

// MakeMetrics returns the set holding vals (type → value).
func MakeMetrics(vals map[uint16]uint32) Metrics {
	if len(vals) == 0 {
		return Metrics{}
	}
	keys := make([]uint16, 0, len(vals))
	for k := range vals {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	var buf [6]byte
	for _, k := range keys {
		binary.BigEndian.PutUint16(buf[:2], k)
		binary.BigEndian.PutUint32(buf[2:], vals[k])
		b.Write(buf[:])
	}
	return Metrics{s: b.String()}
}

// Len returns the number of metrics in the set.
func (m Metrics) Len() int { return len(m.s) / 6 }

// At returns the i-th metric in type order.
func (m Metrics) At(i int) (typ uint16, val uint32) {
	p := m.s[i*6 : i*6+6]
	return uint16(p[0])<<8 | uint16(p[1]), uint32(p[2])<<24 | uint32(p[3])<<16 | uint32(p[4])<<8 | uint32(p[5])
}

// Get returns the value of metric typ.
func (m Metrics) Get(typ uint16) (uint32, bool) {
	for i := range m.Len() {
		t, v := m.At(i)
		if t == typ {
			return v, true
		}
		if t > typ {
			break
		}
	}
	return 0, false
}

// Match selects the route a delete removes. A zero field is a wildcard
// unless its doc says otherwise; which fields count depends on the family,
// as in fib_table_delete() and ip6_route_del().
type Match struct {
	// Family is rtnl.AF_INET or rtnl.AF_INET6.
	Family uint8
	// Table is the table id (required).
	Table uint32
	// Dst is the exact prefix (required). IPv6 ignores host bits.
	Dst netip.Prefix
	// Src is the IPv6 source prefix; zero = the plain (non source-specific) routes.
	Src netip.Prefix
	// Tos must equal the entry's tos exactly (IPv4; never a wildcard).
	Tos uint8
	// Type: 0 = any (IPv4; IPv6 ignores it).
	Type uint8
	// Scope: RT_SCOPE_NOWHERE (255) = any (IPv4; IPv6 ignores it). Note the
	// zero value RT_SCOPE_UNIVERSE is not a wildcard.
	Scope uint8
	// Protocol: 0 = any.
	Protocol uint8
	// Priority: 0 = any.
	Priority uint32
	// Prefsrc: zero = any (IPv4).
	Prefsrc netip.Addr
	// Oif: 0 = any; compared with the first hop (IPv4) or the hop (IPv6).
	Oif int32
	// Gateway: zero = any; compared with the first hop (IPv4); for IPv6 it
	// removes only that hop from an ECMP set.
	Gateway netip.Addr
	// Realm: 0 = any (IPv4 RTA_FLOW, first hop).
	Realm uint32
	// Multipath, when non-nil, is compared hop by hop (IPv4
	// fib_nh_match()); IPv6 callers split it into one Delete per hop.
	Multipath []Nexthop
	// NhID: 0 = any; a route using a nexthop object matches only by id.
	NhID uint32
	// Metrics: each given metric must equal the stored one (IPv4
	// fib_metrics_match()).
	Metrics Metrics
	// Encap: zero = any; else it must equal the first hop's (IPv4
	// fib_encap_match(), compared with Oif and Gateway; see MatchEncap).
	Encap rtnl.Encap
}

// Event is one change a notification reports.
type Event struct {
	// Type is rtnl.RTM_NEWROUTE or rtnl.RTM_DELROUTE.
	Type uint16
	// Flags are the nlmsg_flags of the notification (NLM_F_CREATE,
	// NLM_F_EXCL, NLM_F_REPLACE, NLM_F_APPEND as the kernel sets them).
	Flags uint16
	// Route is the route as the notification prints it.
	Route Route
}

// Change lists what an operation did, in the order the kernel notifies.
// It is returned with an error too, when the kernel notifies part of a
// change it then rolls back (an IPv6 multipath add failing on a later hop).
type Change struct {
	// Events are the notifications to send, in order.
	Events []Event
	// Replaced are the routes a replace removed; the kernel sends no
	// RTM_DELROUTE for them (the RTM_NEWROUTE carries NLM_F_REPLACE).
	Replaced []Route
	// Silent are routes removed without a notification (IPv4 fib_flush()
	// after a device goes down sends none).
	Silent []Route
}

func (c *Change) add(typ, flags uint16, r Route) {
	c.Events = append(c.Events, Event{Type: typ, Flags: flags, Route: r})
}
