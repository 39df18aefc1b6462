// Package jsrscript is the script of the jsimonetti/rtnetlink differential
// runs (integration/goclients_test.go): a rule list, a bridge, an address
// and a route, printed as a canonical transcript. The same script runs on
// rtnetlink.Dial's connection (the static program goprogs/jsr, on a kernel
// namespace and under `nlemu exec`) and on a netlink.Conn over nlemu's Go
// API (client.DialServer), through API.
package jsrscript

import (
	"fmt"
	"io"
	"net"

	"github.com/jsimonetti/rtnetlink/v2"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// API is the part of rtnetlink.Conn's services the script uses.
type API interface {
	RuleList() ([]rtnetlink.RuleMessage, error)
	LinkNew(*rtnetlink.LinkMessage) error
	LinkList() ([]rtnetlink.LinkMessage, error)
	AddressNew(*rtnetlink.AddressMessage) error
	RouteAdd(*rtnetlink.RouteMessage) error
	RouteList() ([]rtnetlink.RouteMessage, error)
}

// FromConn is API on rtnetlink.Conn's own services.
func FromConn(c *rtnetlink.Conn) API { return connAPI{c} }

type connAPI struct{ c *rtnetlink.Conn }

func (a connAPI) RuleList() ([]rtnetlink.RuleMessage, error)   { return a.c.Rule.List() }
func (a connAPI) LinkNew(m *rtnetlink.LinkMessage) error       { return a.c.Link.New(m) }
func (a connAPI) LinkList() ([]rtnetlink.LinkMessage, error)   { return a.c.Link.List() }
func (a connAPI) AddressNew(m *rtnetlink.AddressMessage) error { return a.c.Address.New(m) }
func (a connAPI) RouteAdd(m *rtnetlink.RouteMessage) error     { return a.c.Route.Add(m) }
func (a connAPI) RouteList() ([]rtnetlink.RouteMessage, error) { return a.c.Route.List() }

// FromNetlink is API on a netlink.Conn (for example one over
// client.Socket), sending what rtnetlink.Conn's services send: the same
// message types and flags.
func FromNetlink(c *netlink.Conn) API { return nlAPI{c} }

type nlAPI struct{ c *netlink.Conn }

const create = netlink.Request | netlink.Create | netlink.Acknowledge | netlink.Excl

func (a nlAPI) exec(typ netlink.HeaderType, flags netlink.HeaderFlags, m interface{ MarshalBinary() ([]byte, error) }) ([]netlink.Message, error) {
	b, err := m.MarshalBinary()
	if err != nil {
		return nil, err
	}
	return a.c.Execute(netlink.Message{Header: netlink.Header{Type: typ, Flags: flags}, Data: b})
}

func (a nlAPI) RuleList() ([]rtnetlink.RuleMessage, error) {
	msgs, err := a.exec(unix.RTM_GETRULE, netlink.Request|netlink.Dump, &rtnetlink.RuleMessage{})
	out := make([]rtnetlink.RuleMessage, len(msgs))
	for i, m := range msgs {
		if err := out[i].UnmarshalBinary(m.Data); err != nil {
			return nil, err
		}
	}
	return out, err
}

func (a nlAPI) LinkNew(m *rtnetlink.LinkMessage) error {
	_, err := a.exec(unix.RTM_NEWLINK, create, m)
	return err
}

func (a nlAPI) LinkList() ([]rtnetlink.LinkMessage, error) {
	msgs, err := a.exec(unix.RTM_GETLINK, netlink.Request|netlink.Dump, &rtnetlink.LinkMessage{})
	out := make([]rtnetlink.LinkMessage, len(msgs))
	for i, m := range msgs {
		if err := out[i].UnmarshalBinary(m.Data); err != nil {
			return nil, err
		}
	}
	return out, err
}

func (a nlAPI) AddressNew(m *rtnetlink.AddressMessage) error {
	_, err := a.exec(unix.RTM_NEWADDR, create, m)
	return err
}

func (a nlAPI) RouteAdd(m *rtnetlink.RouteMessage) error {
	_, err := a.exec(unix.RTM_NEWROUTE, create, m)
	return err
}

func (a nlAPI) RouteList() ([]rtnetlink.RouteMessage, error) {
	msgs, err := a.exec(unix.RTM_GETROUTE, netlink.Request|netlink.Dump, &rtnetlink.RouteMessage{})
	out := make([]rtnetlink.RouteMessage, len(msgs))
	for i, m := range msgs {
		if err := out[i].UnmarshalBinary(m.Data); err != nil {
			return nil, err
		}
	}
	return out, err
}

func errText(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

func u32(p *uint32) uint32 {
	if p == nil {
		return 0
	}
	return *p
}

// Run runs the script on api and writes its transcript to w.
func Run(api API, w io.Writer) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
	rules, err := api.RuleList()
	p("rule list: %s", errText(err))
	for _, r := range rules {
		src := "all"
		if r.Attributes != nil && r.Attributes.Src != nil {
			src = fmt.Sprintf("%v/%d", *r.Attributes.Src, r.SrcLength)
		}
		p("rule family=%d prio=%d from=%s table=%d action=%d", r.Family, u32(r.Attributes.Priority), src, u32(r.Attributes.Table), r.Action)
	}

	err = api.LinkNew(&rtnetlink.LinkMessage{
		Family: unix.AF_UNSPEC, Flags: unix.IFF_UP, Change: unix.IFF_UP,
		Attributes: &rtnetlink.LinkAttributes{Name: "br0", Info: &rtnetlink.LinkInfo{Kind: "bridge"}},
	})
	p("link new br0: %s", errText(err))
	links, err := api.LinkList()
	p("link list: %s", errText(err))
	var br uint32
	for _, l := range links {
		kind := ""
		if l.Attributes.Info != nil {
			kind = l.Attributes.Info.Kind
		}
		p("link %d %s kind=%q up=%v mtu=%d", l.Index, l.Attributes.Name, kind, l.Flags&unix.IFF_UP != 0, l.Attributes.MTU)
		if l.Attributes.Name == "br0" {
			br = l.Index
		}
	}

	ip := net.ParseIP("192.0.2.1").To4()
	err = api.AddressNew(&rtnetlink.AddressMessage{Family: unix.AF_INET, PrefixLength: 24, Index: br,
		Attributes: &rtnetlink.AddressAttributes{Address: ip, Local: ip}})
	p("address new 192.0.2.1/24: %s", errText(err))

	route := &rtnetlink.RouteMessage{
		Family: unix.AF_INET, DstLength: 24, Table: unix.RT_TABLE_MAIN, Protocol: unix.RTPROT_STATIC,
		Scope: unix.RT_SCOPE_UNIVERSE, Type: unix.RTN_UNICAST,
		Attributes: rtnetlink.RouteAttributes{Dst: net.ParseIP("198.51.100.0").To4(), Gateway: net.ParseIP("192.0.2.254").To4(), OutIface: br},
	}
	p("route add 198.51.100.0/24: %s", errText(api.RouteAdd(route)))
	p("route add again: %s", errText(api.RouteAdd(route)))
	routes, err := api.RouteList()
	p("route list: %s", errText(err))
	var lines []string
	for _, r := range routes {
		if r.Table == unix.RT_TABLE_LOCAL && r.DstLength == 128 && r.Attributes.Dst.IsLinkLocalUnicast() {
			// The kernel adds a link-local address's local route when
			// its DAD completes, a second or two later; nlemu's DAD is
			// synchronous (docs/ADDRESSES.md).
			continue
		}
		lines = append(lines, fmt.Sprintf("route family=%d table=%d type=%d proto=%d scope=%d dst=%v/%d gw=%v src=%v dev=%d prio=%d",
			r.Family, r.Attributes.Table, r.Type, r.Protocol, r.Scope, r.Attributes.Dst, r.DstLength, r.Attributes.Gateway, r.Attributes.Src, r.Attributes.OutIface, r.Attributes.Priority))
	}
	// In the dump's order, the kernel's.
	for _, l := range lines {
		p("%s", l)
	}
}
