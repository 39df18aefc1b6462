package integration

// The command generator of TestDiffRand (diffrand_test.go): random `ip`
// command lines over small pools of names, prefixes, gateways, tables and
// preferences, so that commands collide (duplicates, deletes that match,
// replaces of what exists, gateways that are or are not reachable) the way a
// routing daemon's or a CNI plugin's sequence does. Valid and invalid lines
// are both wanted: the kernel decides which is which.

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
)

// drGen draws command lines. links and addrs are what the kernel side showed
// after the last command (drLearn), so that sets and deletes mostly name
// things that exist.
type drGen struct {
	r     *rand.Rand
	links []string // link names, lo included
	addrs []string // "ADDR/LEN dev NAME" of every address
}

func newDRGen(seed uint64) *drGen {
	return &drGen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), links: []string{"lo"}}
}

func (g *drGen) pct(p int) bool           { return g.r.IntN(100) < p }
func (g *drGen) pick(s ...string) string  { return s[g.r.IntN(len(s))] }
func (g *drGen) pickIn(s []string) string { return s[g.r.IntN(len(s))] }

var (
	drPfx4  = []string{"10.0.0.0/8", "10.1.0.0/16", "10.1.2.0/24", "10.1.2.3/32", "default", "192.0.2.0/24", "198.51.100.0/24", "10.1.2.128/25", "10.1.2.3/24", "10.1.3.0/24", "0.0.0.0/0", "224.0.0.0/4"}
	drPfx6  = []string{"2001:db8::/32", "2001:db8:1::/48", "2001:db8:1::/64", "2001:db8:1::1/128", "default", "fd00::/8", "fe80::/64", "2001:db8:1::1/64", "2001:db8:2::/64", "::/0", "ff00::/8"}
	drAddr4 = []string{"10.1.2.1/24", "10.1.2.2/24", "10.1.3.1/24", "192.0.2.1/24", "10.1.2.5/32", "198.51.100.7/28", "10.1.2.1/16", "127.0.0.2/8"}
	drAddr6 = []string{"2001:db8:1::1/64", "2001:db8:1::2/64", "2001:db8:2::1/64", "fd00::1/8", "2001:db8:1::1/128", "fe80::5/64", "2001:db8:1::1/48"}
	drGw4   = []string{"10.1.2.254", "10.1.3.254", "192.0.2.254", "203.0.113.1", "10.1.2.1", "127.0.0.1"}
	drGw6   = []string{"2001:db8:1::fe", "fe80::1", "2001:db8:9::1", "2001:db8:2::fe", "::1"}
	drSrc4  = []string{"10.1.2.1", "10.1.3.1", "192.0.2.1", "203.0.113.9"}
	drSrc6  = []string{"2001:db8:1::1", "2001:db8:2::1", "2001:db8:9::9"}
	drTab   = []string{"main", "local", "100", "200", "1000000", "default", "254", "0"}
	drProto = []string{"boot", "static", "kernel", "42", "bird", "zebra", "dhcp", "ra"}
	drScope = []string{"global", "link", "host", "200", "nowhere", "site"}
	drNames = []string{"v0", "v1", "v2", "v3", "br0", "br1", "w0", "lo"}
)

// drMAC is the fixed address each generated link gets (veth and bridge
// addresses are random otherwise, and IPv6 link-local addresses derive from
// them).
func drMAC(name string) string {
	return fmt.Sprintf("02:00:00:00:%02x:%02x", name[0], name[len(name)-1])
}

// next returns the arguments of the next command line.
func (g *drGen) next() []string {
	var s string
	switch n := g.r.IntN(100); {
	case n < 22:
		s = g.rule()
	case n < 62:
		s = g.route()
	case n < 82:
		s = g.addr()
	default:
		s = g.link()
	}
	return strings.Fields(s)
}

func (g *drGen) dev() string {
	if g.pct(5) {
		return g.pickIn(drNames) // may not exist
	}
	return g.pickIn(g.links)
}

func (g *drGen) fam6() bool { return g.pct(40) }

func (g *drGen) rule() string {
	v6 := g.fam6()
	var b strings.Builder
	if v6 {
		b.WriteString("-6 ")
	}
	verb := g.pick("add", "add", "add", "del", "del", "flush", "show")
	b.WriteString("rule " + verb)
	if verb == "show" {
		if g.pct(50) {
			b.WriteString(" table " + g.pickIn(drTab))
		}
		return b.String()
	}
	if verb == "flush" {
		return b.String()
	}
	pfx := drPfx4
	if v6 {
		pfx = drPfx6
	}
	if g.pct(10) {
		b.WriteString(" not")
	}
	if g.pct(40) {
		b.WriteString(" from " + g.pickIn(pfx))
	}
	if g.pct(25) {
		b.WriteString(" to " + g.pickIn(pfx))
	}
	if g.pct(20) {
		b.WriteString(" fwmark " + g.pick("0x1", "0x10/0xff", "7", "0x0/0x1"))
	}
	if g.pct(15) {
		b.WriteString(" iif " + g.pick(g.dev(), "lo"))
	}
	if g.pct(10) {
		b.WriteString(" oif " + g.dev())
	}
	if g.pct(10) && !v6 {
		b.WriteString(" tos " + g.pick("0x10", "0x04", "0x03"))
	}
	if g.pct(8) {
		b.WriteString(" ipproto " + g.pick("tcp", "udp", "icmp"))
	}
	if g.pct(6) {
		b.WriteString(" dport " + g.pick("80", "1000-2000", "0"))
	}
	if g.pct(6) {
		b.WriteString(" uidrange " + g.pick("100-200", "0-0", "5-1"))
	}
	if g.pct(5) {
		b.WriteString(" l3mdev")
	}
	if g.pct(50) {
		b.WriteString(" pref " + g.pick("100", "200", "32765", "0", "1", "32766"))
	}
	if g.pct(8) {
		b.WriteString(" protocol " + g.pickIn(drProto))
	}
	switch n := g.r.IntN(100); {
	case n < 60:
		b.WriteString(" table " + g.pickIn(drTab))
		if g.pct(15) {
			b.WriteString(" suppress_prefixlength " + g.pick("0", "8", "24", "-1"))
		}
		if g.pct(5) {
			b.WriteString(" suppress_ifgroup " + g.pick("0", "7"))
		}
	case n < 70:
		b.WriteString(" goto " + g.pick("100", "200", "32766", "50"))
	case n < 85:
		b.WriteString(" " + g.pick("blackhole", "unreachable", "prohibit", "nop"))
	}
	return b.String()
}

func (g *drGen) route() string {
	v6 := g.fam6()
	var b strings.Builder
	if v6 {
		b.WriteString("-6 ")
	}
	verb := g.pick("add", "add", "add", "replace", "replace", "append", "prepend", "change", "del", "del", "flush", "get", "show")
	pfx, gws, srcs := drPfx4, drGw4, drSrc4
	if v6 {
		pfx, gws, srcs = drPfx6, drGw6, drSrc6
	}
	b.WriteString("route " + verb)
	switch verb {
	case "flush", "show":
		switch g.r.IntN(4) {
		case 0:
			b.WriteString(" table " + g.pick("all", "100", "main", "local"))
		case 1:
			b.WriteString(" dev " + g.dev())
		case 2:
			b.WriteString(" proto " + g.pickIn(drProto))
		default:
			if verb == "flush" {
				b.WriteString(" table " + g.pick("100", "200", "1000000"))
			} else {
				b.WriteString(" " + g.pick("root", "match", "exact") + " " + g.pickIn(pfx))
			}
		}
		return b.String()
	case "get":
		b.WriteString(" " + g.pickIn(gws))
		if g.pct(30) {
			b.WriteString(" from " + g.pickIn(srcs))
		}
		if g.pct(15) {
			b.WriteString(" mark " + g.pick("1", "0x10"))
		}
		if g.pct(10) {
			b.WriteString(" fibmatch")
		}
		return b.String()
	}
	if g.pct(20) {
		b.WriteString(" " + g.pick("blackhole", "unreachable", "prohibit", "local", "broadcast", "throw", "unicast", "anycast", "multicast"))
	}
	b.WriteString(" " + g.pickIn(pfx))
	multipath := g.pct(10)
	if multipath {
		for range 1 + g.r.IntN(2) {
			b.WriteString(" nexthop")
			if g.pct(80) {
				b.WriteString(" via " + g.pickIn(gws))
			}
			if g.pct(60) {
				b.WriteString(" dev " + g.dev())
			}
			if g.pct(30) {
				b.WriteString(" weight " + g.pick("1", "2", "10"))
			}
			if g.pct(8) {
				b.WriteString(" onlink")
			}
		}
	} else {
		if g.pct(45) {
			b.WriteString(" via " + g.pickIn(gws))
		}
		if g.pct(65) {
			b.WriteString(" dev " + g.dev())
		}
	}
	if g.pct(35) {
		b.WriteString(" table " + g.pickIn(drTab))
	}
	if g.pct(30) {
		b.WriteString(" metric " + g.pick("0", "10", "100", "1024", "4294967295"))
	}
	if g.pct(12) {
		b.WriteString(" proto " + g.pickIn(drProto))
	}
	if g.pct(10) {
		b.WriteString(" scope " + g.pickIn(drScope))
	}
	if g.pct(10) {
		b.WriteString(" src " + g.pickIn(srcs))
	}
	if g.pct(6) && !multipath {
		b.WriteString(" onlink")
	}
	if g.pct(8) {
		b.WriteString(" mtu " + g.pick("1400", "lock 1300", "100000"))
	}
	if g.pct(4) {
		b.WriteString(" advmss 1000 hoplimit 7")
	}
	if g.pct(4) {
		b.WriteString(" initcwnd 10 rto_min 20ms")
	}
	if v6 && g.pct(8) {
		b.WriteString(" pref " + g.pick("high", "low", "medium"))
	}
	if v6 && g.pct(4) {
		b.WriteString(" expires 600")
	}
	if !v6 && g.pct(5) {
		b.WriteString(" tos " + g.pick("0x10", "0x08", "0x03"))
	}
	return b.String()
}

func (g *drGen) addr() string {
	v6 := g.fam6()
	verb := g.pick("add", "add", "add", "del", "replace", "change", "flush", "show")
	var b strings.Builder
	switch verb {
	case "flush":
		if v6 {
			b.WriteString("-6 ")
		}
		b.WriteString("addr flush dev " + g.dev())
		if g.pct(30) {
			b.WriteString(" " + g.pick("scope global", "secondary", "primary", "label lo:1", "permanent", "dynamic"))
		}
		return b.String()
	case "show":
		b.WriteString("addr show")
		if g.pct(40) {
			b.WriteString(" dev " + g.dev())
		}
		return b.String()
	case "del":
		if len(g.addrs) > 0 && g.pct(80) {
			return "addr del " + g.pickIn(g.addrs)
		}
	}
	a, extra := g.pickIn(drAddr4), ""
	if v6 {
		a = g.pickIn(drAddr6)
		if g.pct(90) {
			extra += " nodad" // DAD holds the kernel's address tentative for seconds
		}
	} else {
		if g.pct(10) {
			extra += " peer " + g.pick("10.9.9.9/32", "10.9.9.0/24")
		}
		if g.pct(10) {
			extra += " broadcast " + g.pick("+", "10.1.2.255")
		}
		if g.pct(8) {
			extra += " label " + g.pick("v0:1", "lo:x", "v0:1234567890123")
		}
	}
	b.WriteString("addr " + verb + " " + a + " dev " + g.dev() + extra)
	if g.pct(10) {
		b.WriteString(" noprefixroute")
	}
	if g.pct(10) {
		b.WriteString(" metric " + g.pick("0", "50", "1024"))
	}
	if g.pct(10) {
		b.WriteString(" scope " + g.pick("link", "host", "global", "200"))
	}
	if g.pct(10) {
		b.WriteString(" valid_lft " + g.pick("forever 100", "5000 preferred_lft 3000", "100 preferred_lft 0", "10 preferred_lft 100"))
	}
	return b.String()
}

func (g *drGen) link() string {
	name := g.pickIn(drNames)
	switch n := g.r.IntN(100); {
	case n < 18:
		peer := map[string]string{"v0": "v1", "v1": "v0", "v2": "v3", "v3": "v2", "w0": "v2"}[name]
		if peer == "" || g.pct(15) {
			return "link add " + name + " address " + drMAC(name) + " type bridge"
		}
		return "link add " + name + " address " + drMAC(name) + " type veth peer name " + peer + " address " + drMAC(peer)
	case n < 45:
		return "link set " + g.dev() + " " + g.pick("up", "up", "down")
	case n < 52:
		return "link set " + g.dev() + " addrgenmode " + g.pick("none", "none", "eui64")
	case n < 62:
		return "link set " + g.dev() + " mtu " + g.pick("1400", "1500", "9000", "1280", "65536")
	case n < 72:
		if g.pct(25) {
			return "link set " + g.dev() + " nomaster"
		}
		return "link set " + g.dev() + " master " + g.pick("br0", "br1", "v0")
	case n < 78:
		return "link set " + g.dev() + " name " + g.pickIn(drNames)
	case n < 84:
		return "link set " + g.dev() + " " + g.pick("alias x", "group 7", "txqueuelen 100", "arp off", "multicast off", "promisc on")
	case n < 92:
		return "link del " + g.dev()
	default:
		return g.pick("link show", "link show type bridge", "link show master br0", "link show up", "-d link show dev "+g.dev())
	}
}

var (
	drLinkLine = regexp.MustCompile(`(?m)^\d+: ([^:@ ]+)(@[^:]+)?: <`)
	drAddrLine = regexp.MustCompile(`(?m)^    inet6? ([0-9a-f.:]+/\d+) .*$`)
)

// learn takes the link names and addresses from the kernel's `ip -d -batch`
// view (drViews[0]).
func (g *drGen) learn(view string) {
	g.links = g.links[:0]
	dev := ""
	g.addrs = g.addrs[:0]
	seen := map[string]bool{}
	for _, l := range strings.Split(view, "\n") {
		if m := drLinkLine.FindStringSubmatch(l); m != nil {
			dev = m[1]
			if !seen[dev] {
				seen[dev] = true
				g.links = append(g.links, dev)
			}
			continue
		}
		if m := drAddrLine.FindStringSubmatch(l); m != nil && dev != "" {
			g.addrs = append(g.addrs, m[1]+" dev "+dev)
		}
	}
	if len(g.links) == 0 {
		g.links = append(g.links, "lo")
	}
}
