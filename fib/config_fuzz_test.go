package fib

import (
	"testing"

	"github.com/nlemu/nlemu/rtnl"
)

// FuzzRouteConfig feeds arbitrary RTM_NEWROUTE / RTM_DELROUTE bodies through
// the decoder, Parse and Build against rs_4's tables: nothing panics, and a
// request that fails to build changes no route.
func FuzzRouteConfig(f *testing.F) {
	seed := func(m rtnl.RouteMsg) {
		b := rtnl.AppendRoute(nil, rtnl.RTM_NEWROUTE, 0, 0, 0, &m)
		f.Add(b[rtnl.NLMSG_HDRLEN:], false)
		f.Add(b[rtnl.NLMSG_HDRLEN:], true)
	}
	m := rtnl.RouteMsg{Family: rtnl.AF_INET, DstLen: 16, Table: 254, Protocol: 3, Scope: 253, Type: 1, Dst: cip("10.1.0.0"), OIF: 3}
	m.Set(rtnl.RTA_DST)
	m.Set(rtnl.RTA_OIF)
	seed(m)
	m.Gateway = cip("10.0.0.2")
	m.Set(rtnl.RTA_GATEWAY)
	m.Scope = 0
	seed(m)
	m6 := rtnl.RouteMsg{Family: rtnl.AF_INET6, DstLen: 64, Table: 254, Protocol: 3, Type: 1, Dst: cip("2001:db8:9::"), Gateway: cip("2001:db8::2")}
	m6.Set(rtnl.RTA_DST)
	m6.Set(rtnl.RTA_GATEWAY)
	seed(m6)
	m6.Multipath = []rtnl.Nexthop{{IfIndex: 3}, {Gateway: cip("2001:db8::3")}}
	m6.Multipath[1].Set(rtnl.RTA_GATEWAY)
	m6.Set(rtnl.RTA_MULTIPATH)
	seed(m6)
	f.Fuzz(func(t *testing.T, body []byte, del bool) {
		typ := uint16(rtnl.RTM_NEWROUTE)
		if del {
			typ = rtnl.RTM_DELROUTE
		}
		b := rtnl.AppendMessage(nil, typ, rtnl.NLM_F_REQUEST|rtnl.NLM_F_CREATE, 1, 0, body)
		msgs := rtnl.SplitDatagram(b)
		if len(msgs) != 1 {
			return
		}
		rm, err := rtnl.DecodeRouteRequest(&msgs[0])
		if err != nil {
			return
		}
		f4, f6 := rs4(t)
		fb := f4
		if rm.Family == rtnl.AF_INET6 {
			fb = f6
		}
		c, err := Parse(rm, typ, rtnl.NLM_F_CREATE)
		if err != nil || del {
			return
		}
		before := fb.tables.Routes()
		fb.tables.Create(c.Table)
		r, err := c.Build(Env{Devs: rs4Devs(), FIB: fb})
		if err != nil {
			if n := fb.tables.Routes(); n != before {
				t.Fatalf("failed build changed the route count %d -> %d", before, n)
			}
			return
		}
		if r.Family != rm.Family || r.Table != c.Table {
			t.Fatalf("route %+v from request family %d table %d", r, rm.Family, c.Table)
		}
		fb.tables.Insert(r, rtnl.NLM_F_CREATE)
	})
}
