// Command lookupget is hack/lookup-kernel.sh's probe: it measures the
// RTM_GETROUTE rate on one netlink socket, one request and one reply at a
// time, against the kernel (a raw NETLINK_ROUTE socket in the current
// network namespace: run it under `ip netns exec`) or against nlemu (an
// embedded server, over an in-process client or its Unix socket).
//
//	lookupget -mode kernel|inproc|unix -routes FILE -dsts FILE [-rules K] [-n GETS] [-cpuprofile FILE]
//
// FILE holds `route add PREFIX dev lo` lines (an `ip -batch` file, which
// the script loads into the kernel itself); in the nlemu modes the probe
// sends the same routes and K rules (`fwmark i table 1000+i pref 100+i`,
// none matching) to its server first. -dsts holds one address per line,
// the destinations asked for in turn. It prints the rate in gets per
// second.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nlemu/nlemu/internal/gctune"
	"github.com/nlemu/nlemu/rtnl"
	"github.com/nlemu/nlemu/server"
)

func main() {
	mode := flag.String("mode", "kernel", "kernel, inproc or unix")
	routes := flag.String("routes", "", "ip -batch file of `route add PREFIX dev lo` lines")
	dsts := flag.String("dsts", "", "destinations, one a line")
	rules := flag.Int("rules", 0, "non-matching rules the nlemu modes add (the script adds the kernel's)")
	n := flag.Int("n", 200000, "route gets to time")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the timed gets to this file")
	flag.Parse()
	gets, err := requests(*dsts)
	if err != nil {
		fail(err)
	}
	var rt func([]byte) ([]byte, error)
	switch *mode {
	case "kernel":
		rt, err = kernelSocket()
	case "inproc", "unix":
		rt, err = nlemuSocket(*mode == "unix", *routes, *rules)
	default:
		err = fmt.Errorf("unknown mode %q", *mode)
	}
	if err != nil {
		fail(err)
	}
	for i := 0; i < min(len(gets), 2000); i++ { // warm up, and check
		r, err := rt(gets[i])
		if err != nil || len(r) < 20 || uint16(r[4]) != rtnl.RTM_NEWROUTE {
			fail(fmt.Errorf("route get %d: reply %x, %v", i, r[:min(len(r), 64)], err))
		}
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fail(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fail(err)
		}
		defer pprof.StopCPUProfile()
	}
	t0 := time.Now()
	for i := 0; i < *n; i++ {
		if _, err := rt(gets[i%len(gets)]); err != nil {
			fail(err)
		}
	}
	fmt.Printf("%.0f\n", float64(*n)/time.Since(t0).Seconds())
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "lookupget:", err)
	os.Exit(1)
}

// requests builds the route gets `ip route get ADDR` sends.
func requests(file string) ([][]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out [][]byte
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		a, err := netip.ParseAddr(strings.TrimSpace(sc.Text()))
		if err != nil {
			return nil, err
		}
		q := rtnl.RouteMsg{Family: rtnl.AF_INET, Dst: a, DstLen: uint8(a.BitLen())}
		if a.Is6() {
			q.Family = rtnl.AF_INET6
		} else {
			q.Flags = rtnl.RTM_F_LOOKUP_TABLE
		}
		q.Set(rtnl.RTA_DST)
		out = append(out, rtnl.AppendRoute(nil, rtnl.RTM_GETROUTE, rtnl.NLM_F_REQUEST, uint32(len(out)+1), 0, &q))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no destinations", file)
	}
	return out, sc.Err()
}

// kernelSocket is one raw NETLINK_ROUTE socket with plain blocking
// write and read, as a C client would use it.
func kernelSocket() (func([]byte) ([]byte, error), error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, err
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, err
	}
	buf := make([]byte, 8192)
	return func(b []byte) ([]byte, error) {
		if _, err := unix.Write(fd, b); err != nil {
			return nil, err
		}
		n, err := unix.Read(fd, buf)
		if err != nil {
			return nil, err
		}
		return buf[:n], nil
	}, nil
}

// nlemuSocket starts an embedded server, loads the routes and rules into
// its namespace "lk" and returns a round trip over one client.
func nlemuSocket(overUnix bool, routes string, rules int) (func([]byte) ([]byte, error), error) {
	// The collector settings of `nlemu serve` (internal/gctune), so that
	// the figure is a server's: with Go's default GOGC the collector ran
	// about every 4 MB of replies and scanned the whole 40,000-route FIB
	// each time.
	gctune.Apply()
	srv := server.New(server.Config{})
	srv.Namespaces().Add("lk")
	c, err := srv.Dial(server.Options{Namespace: "lk"})
	if overUnix {
		dir, derr := os.MkdirTemp("", "lookupget")
		if derr != nil {
			return nil, derr
		}
		path := filepath.Join(dir, "s.sock")
		if _, err := srv.ListenUnix(path); err != nil {
			return nil, err
		}
		c, err = server.DialUnix(path, server.Options{Namespace: "lk"})
	}
	if err != nil {
		return nil, err
	}
	// One receive buffer, as the kernel mode reads into: RecvInto copies
	// each reply into it (recvmsg(2)), and in-process the server reuses
	// the buffers read this way for its next replies.
	buf := make([]byte, 8192)
	rt := func(b []byte) ([]byte, error) {
		if err := c.Send(b); err != nil {
			return nil, err
		}
		n, err := c.RecvInto(buf)
		if err != nil {
			return nil, err
		}
		if n > len(buf) {
			return nil, fmt.Errorf("reply of %d bytes truncated", n)
		}
		return buf[:n], nil
	}
	ack := func(b []byte) error {
		r, err := rt(b)
		if err != nil {
			return err
		}
		if len(r) < 20 || uint16(r[4]) != rtnl.NLMSG_ERROR || r[16]|r[17]|r[18]|r[19] != 0 {
			return fmt.Errorf("request %x: reply %x", b[:min(len(b), 48)], r[:min(len(r), 48)])
		}
		return nil
	}
	up := make([]byte, rtnl.IfInfoLen)
	up[4], up[8], up[12] = 1, 1, 1 // lo: ifindex 1, IFF_UP in flags and change
	if err := ack(rtnl.AppendMessage(nil, rtnl.RTM_NEWLINK, rtnl.NLM_F_REQUEST|rtnl.NLM_F_ACK, 1, 0, up)); err != nil {
		return nil, err
	}
	f, err := os.Open(routes)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	fams := map[uint8]bool{}
	for seq := uint32(2); sc.Scan(); seq++ {
		w := strings.Fields(sc.Text())
		if len(w) != 5 || w[0] != "route" || w[1] != "add" || w[3] != "dev" || w[4] != "lo" {
			return nil, fmt.Errorf("%s: unexpected line %q", routes, sc.Text())
		}
		p, err := netip.ParsePrefix(w[2])
		if err != nil {
			return nil, err
		}
		m := rtnl.RouteMsg{Family: rtnl.AF_INET, DstLen: uint8(p.Bits()), Table: rtnl.RT_TABLE_MAIN, Protocol: rtnl.RTPROT_BOOT,
			Scope: rtnl.RT_SCOPE_LINK, Type: rtnl.RTN_UNICAST, Dst: p.Addr(), OIF: 1}
		if p.Addr().Is6() {
			m.Family, m.Scope = rtnl.AF_INET6, rtnl.RT_SCOPE_UNIVERSE
		}
		fams[m.Family] = true
		m.Set(rtnl.RTA_DST)
		m.Set(rtnl.RTA_OIF)
		if err := ack(rtnl.AppendRoute(nil, rtnl.RTM_NEWROUTE, rtnl.NLM_F_REQUEST|rtnl.NLM_F_ACK|rtnl.NLM_F_CREATE|rtnl.NLM_F_EXCL, seq, 0, &m)); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for fam := range fams {
		for i := 0; i < rules; i++ {
			m := rtnl.RuleMsg{Family: fam, Action: rtnl.FR_ACT_TO_TBL, Priority: uint32(100 + i), Table32: uint32(1000 + i), FwMark: uint32(i + 1)}
			m.Present = 1<<rtnl.FRA_PRIORITY | 1<<rtnl.FRA_TABLE | 1<<rtnl.FRA_FWMARK
			if err := ack(rtnl.AppendRule(nil, rtnl.RTM_NEWRULE, rtnl.NLM_F_REQUEST|rtnl.NLM_F_ACK|rtnl.NLM_F_CREATE|rtnl.NLM_F_EXCL, uint32(i+1), 0, &m)); err != nil {
				return nil, err
			}
		}
	}
	return rt, nil
}
