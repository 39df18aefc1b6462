package fib

import "github.com/nlemu/nlemu/rtnl"

// hopEncap is fib_nh_common_init()'s lightweight tunnel: when the hop has
// an RTA_ENCAP, lwtunnel_build_state() of it with the hop's RTA_ENCAP_TYPE
// (0 when absent: "Unknown LWT encapsulation type"). A successful build
// that left bytes after the nest's last attribute sets the request's
// warning, which the ACK carries (the nested parse's extack text).
func hopEncap(m *rtnl.RouteMsg, has bool, typ uint16, nest []byte, off uint32) (rtnl.Encap, *rtnl.Error) {
	if !has {
		return rtnl.Encap{}, nil
	}
	e, warn, _, err := rtnl.BuildEncap(typ, m.Family, nest, off)
	if err != nil {
		return rtnl.Encap{}, err
	}
	if warn != "" {
		m.Warning = warn
	}
	return e, nil
}

// msgEncap is hopEncap for the request's own RTA_ENCAP / RTA_ENCAP_TYPE
// (a single-path route).
func msgEncap(m *rtnl.RouteMsg) (rtnl.Encap, *rtnl.Error) {
	var typ uint16
	if m.Has(rtnl.RTA_ENCAP_TYPE) {
		typ = m.EncapType
	}
	return hopEncap(m, m.Has(rtnl.RTA_ENCAP), typ, m.Encap, m.Off(rtnl.RTA_ENCAP))
}

// mpEncap is hopEncap for one RTA_MULTIPATH hop (fib_get_nhs() reads its
// RTA_ENCAP and RTA_ENCAP_TYPE with nla_find()).
func mpEncap(m *rtnl.RouteMsg, h *rtnl.Nexthop) (rtnl.Encap, *rtnl.Error) {
	var typ uint16
	if h.Has(rtnl.RTA_ENCAP_TYPE) {
		typ = h.EncapType
	}
	return hopEncap(m, h.Has(rtnl.RTA_ENCAP), typ, h.Encap, h.EncapOff)
}

// MatchEncap is what a delete compares of the request's encapsulation
// (fib_encap_match()): nothing (the zero Encap) when the request has no
// RTA_ENCAP or no RTA_ENCAP_TYPE, or when its state cannot be built —
// then the kernel matches any hop, keeping the build's extack text in the
// ACK (a success carrying "Attribute failed policy validation"); otherwise
// the built state, which must equal the hop's (lwtunnel_cmp_encap()).
func MatchEncap(m *rtnl.RouteMsg) rtnl.Encap {
	if !m.Has(rtnl.RTA_ENCAP) || !m.Has(rtnl.RTA_ENCAP_TYPE) || m.EncapType == 0 {
		return rtnl.Encap{}
	}
	e, _, unimplemented, err := rtnl.BuildEncap(m.EncapType, m.Family, m.Encap, m.Off(rtnl.RTA_ENCAP))
	if err != nil {
		if !unimplemented && err.Msg != "" && m.Warning == "" {
			m.Warning = err.Msg
		}
		return rtnl.Encap{}
	}
	return e
}
