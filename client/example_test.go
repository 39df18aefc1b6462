package client_test

import (
	"fmt"
	"log"
	"net"

	"github.com/jsimonetti/rtnetlink/v2"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/nlemu/nlemu/client"
	"github.com/nlemu/nlemu/server"
)

// request sends one rtnetlink request built from a jsimonetti/rtnetlink
// message and returns the replies, as rtnetlink.Conn.Execute does.
func request(c *netlink.Conn, typ netlink.HeaderType, flags netlink.HeaderFlags, m interface{ MarshalBinary() ([]byte, error) }) ([]netlink.Message, error) {
	b, err := m.MarshalBinary()
	if err != nil {
		return nil, err
	}
	return c.Execute(netlink.Message{Header: netlink.Header{Type: typ, Flags: netlink.Request | flags}, Data: b})
}

const create = netlink.Acknowledge | netlink.Create | netlink.Excl

// A rule added with jsimonetti/rtnetlink's RuleMessage, then listed:
// the three default rules and the new one, as a kernel namespace shows.
func ExampleDialServer_rules() {
	srv := server.New(server.Config{})
	defer srv.Close()
	srv.Namespaces().Add("ex")
	sock, err := client.DialServer(srv, "ex")
	if err != nil {
		log.Fatal(err)
	}
	c := netlink.NewConn(sock, sock.PortID())
	defer c.Close()

	prio, table := uint32(100), uint32(10)
	src := net.ParseIP("192.0.2.0")
	if _, err := request(c, unix.RTM_NEWRULE, create, &rtnetlink.RuleMessage{
		Family: unix.AF_INET, SrcLength: 24, Table: 10, Action: unix.FR_ACT_TO_TBL,
		Attributes: &rtnetlink.RuleAttributes{Src: &src, Priority: &prio, Table: &table},
	}); err != nil {
		log.Fatal(err)
	}
	msgs, err := request(c, unix.RTM_GETRULE, netlink.Dump, &rtnetlink.RuleMessage{Family: unix.AF_INET})
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range msgs {
		var r rtnetlink.RuleMessage
		if err := r.UnmarshalBinary(m.Data); err != nil {
			log.Fatal(err)
		}
		from := "all"
		if r.Attributes.Src != nil {
			from = fmt.Sprintf("%v/%d", *r.Attributes.Src, r.SrcLength)
		}
		var prio uint32 // the kernel leaves out FRA_PRIORITY 0
		if r.Attributes.Priority != nil {
			prio = *r.Attributes.Priority
		}
		fmt.Printf("%d: from %s lookup %d\n", prio, from, *r.Attributes.Table)
	}
	// Output:
	// 0: from all lookup 255
	// 100: from 192.0.2.0/24 lookup 10
	// 32766: from all lookup 254
	// 32767: from all lookup 253
}

// A bridge made with LinkMessage, an address on it with AddressMessage and
// a route through it with RouteMessage; the kernel's errors come back as
// *netlink.OpError with the extended ack's text.
func ExampleDialServer_linksAddressesRoutes() {
	srv := server.New(server.Config{})
	defer srv.Close()
	srv.Namespaces().Add("ex")
	sock, err := client.DialServer(srv, "ex")
	if err != nil {
		log.Fatal(err)
	}
	c := netlink.NewConn(sock, sock.PortID())
	defer c.Close()
	if err := c.SetOption(netlink.ExtendedAcknowledge, true); err != nil {
		log.Fatal(err)
	}

	if _, err := request(c, unix.RTM_NEWLINK, create, &rtnetlink.LinkMessage{
		Family: unix.AF_UNSPEC, Flags: unix.IFF_UP, Change: unix.IFF_UP,
		Attributes: &rtnetlink.LinkAttributes{Name: "br0", Info: &rtnetlink.LinkInfo{Kind: "bridge"}},
	}); err != nil {
		log.Fatal(err)
	}
	links, err := request(c, unix.RTM_GETLINK, netlink.Dump, &rtnetlink.LinkMessage{})
	if err != nil {
		log.Fatal(err)
	}
	var br uint32
	for _, m := range links {
		var l rtnetlink.LinkMessage
		if err := l.UnmarshalBinary(m.Data); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("link %d %s\n", l.Index, l.Attributes.Name)
		if l.Attributes.Name == "br0" {
			br = l.Index
		}
	}

	if _, err := request(c, unix.RTM_NEWADDR, create, &rtnetlink.AddressMessage{
		Family: unix.AF_INET, PrefixLength: 24, Index: br,
		Attributes: &rtnetlink.AddressAttributes{Address: net.ParseIP("192.0.2.1").To4(), Local: net.ParseIP("192.0.2.1").To4()},
	}); err != nil {
		log.Fatal(err)
	}
	route := &rtnetlink.RouteMessage{
		Family: unix.AF_INET, DstLength: 24, Table: unix.RT_TABLE_MAIN, Protocol: unix.RTPROT_STATIC,
		Scope: unix.RT_SCOPE_UNIVERSE, Type: unix.RTN_UNICAST,
		Attributes: rtnetlink.RouteAttributes{Dst: net.ParseIP("198.51.100.0").To4(), Gateway: net.ParseIP("192.0.2.254").To4(), OutIface: br},
	}
	if _, err := request(c, unix.RTM_NEWROUTE, create, route); err != nil {
		log.Fatal(err)
	}
	_, err = request(c, unix.RTM_NEWROUTE, create, route)
	fmt.Println("again:", err)

	routes, err := request(c, unix.RTM_GETROUTE, netlink.Dump, &rtnetlink.RouteMessage{Family: unix.AF_INET})
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range routes {
		var r rtnetlink.RouteMessage
		if err := r.UnmarshalBinary(m.Data); err != nil {
			log.Fatal(err)
		}
		if r.Table != unix.RT_TABLE_MAIN {
			continue
		}
		fmt.Printf("route %v/%d via %v dev %d\n", r.Attributes.Dst, r.DstLength, r.Attributes.Gateway, r.Attributes.OutIface)
	}
	// Output:
	// link 1 lo
	// link 2 br0
	// again: netlink receive: file exists
	// route 192.0.2.0/24 via <nil> dev 2
	// route 198.51.100.0/24 via 192.0.2.254 dev 2
}
