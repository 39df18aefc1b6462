// Command goprog is rtnetlink through raw system calls from a Go program
// built with CGO_ENABLED=0 (no libc: only the seccomp supervisor of nlemu
// exec reaches it). integration/seccomp_test.go runs it under nlemu and in a
// kernel namespace and compares the output.
//
//	goprog rules                      list IPv4 rules
//	goprog rule-add PRIO TABLE        add an IPv4 rule, print the ack's errno
//	goprog route-get ADDR             IPv4 route get: errno or table/type
//	goprog threads N                  N goroutines on their own threads list rules
//	goprog unshare PRIO TABLE         unshare(CLONE_NEWNET), add a rule and list
//	                                  the rules there
//	goprog setns NAME PRIO TABLE      the same in /run/netns/NAME (setns)
package main

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

var ne = binary.NativeEndian

func must(what string, err error) {
	if err != nil {
		fmt.Printf("%s: %v\n", what, err)
		os.Exit(1)
	}
}

type conn struct {
	fd  int
	seq uint32
}

func open() *conn {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	must("socket", err)
	must("bind", unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}))
	sa, err := unix.Getsockname(fd)
	must("getsockname", err)
	if _, ok := sa.(*unix.SockaddrNetlink); !ok {
		fmt.Printf("getsockname: %T\n", sa)
		os.Exit(1)
	}
	return &conn{fd: fd}
}

func (c *conn) send(typ, flags uint16, body []byte) {
	c.seq++
	b := make([]byte, 16+len(body))
	ne.PutUint32(b[0:], uint32(len(b)))
	ne.PutUint16(b[4:], typ)
	ne.PutUint16(b[6:], flags|unix.NLM_F_REQUEST)
	ne.PutUint32(b[8:], c.seq)
	copy(b[16:], body)
	must("sendto", unix.Sendto(c.fd, b, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}))
}

// recv is what vishvananda/netlink does: Recvfrom and a type assertion of
// the sender to *SockaddrNetlink.
func (c *conn) recv() [][]byte {
	buf := make([]byte, 65536)
	n, from, err := unix.Recvfrom(c.fd, buf, 0)
	must("recvfrom", err)
	nl, ok := from.(*unix.SockaddrNetlink)
	if !ok || nl.Pid != 0 {
		fmt.Printf("recvfrom: sender %#v\n", from)
		os.Exit(1)
	}
	var msgs [][]byte
	b := buf[:n]
	for len(b) >= 16 {
		l := int(ne.Uint32(b))
		if l < 16 || l > len(b) {
			break
		}
		msgs = append(msgs, b[:l])
		b = b[(l+3)&^3:]
	}
	return msgs
}

func attr32(typ uint16, v uint32) []byte {
	b := make([]byte, 8)
	ne.PutUint16(b[0:], 8)
	ne.PutUint16(b[2:], typ)
	ne.PutUint32(b[4:], v)
	return b
}

func rules(c *conn) []string {
	c.send(unix.RTM_GETRULE, unix.NLM_F_DUMP, []byte{unix.AF_INET, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	var out []string
	for {
		for _, m := range c.recv() {
			switch ne.Uint16(m[4:]) {
			case unix.NLMSG_DONE:
				return out
			case unix.NLMSG_ERROR:
				return append(out, fmt.Sprintf("dump error %d", int32(ne.Uint32(m[16:]))))
			}
			body := m[16:]
			table, action := uint32(body[4]), body[7]
			var prio uint32
			for a := body[12:]; len(a) >= 4; {
				l := int(ne.Uint16(a))
				if l < 4 || l > len(a) {
					break
				}
				switch ne.Uint16(a[2:]) {
				case unix.FRA_PRIORITY:
					prio = ne.Uint32(a[4:])
				case unix.FRA_TABLE:
					table = ne.Uint32(a[4:])
				}
				a = a[(l+3)&^3:]
			}
			out = append(out, fmt.Sprintf("rule %d table %d action %d", prio, table, action))
		}
	}
}

func ackErrno(c *conn) int32 {
	m := c.recv()[0]
	if ne.Uint16(m[4:]) != unix.NLMSG_ERROR {
		return 9999
	}
	return int32(ne.Uint32(m[16:]))
}

func ruleAdd(c *conn, prio, table uint32) int32 {
	body := []byte{unix.AF_INET, 0, 0, 0, 0, 0, 0, unix.FR_ACT_TO_TBL, 0, 0, 0, 0}
	body = append(body, attr32(unix.FRA_PRIORITY, prio)...)
	body = append(body, attr32(unix.FRA_TABLE, table)...)
	c.send(unix.RTM_NEWRULE, unix.NLM_F_ACK|unix.NLM_F_CREATE|unix.NLM_F_EXCL, body)
	return ackErrno(c)
}

func routeGet(c *conn, addr string) string {
	a := netip.MustParseAddr(addr).As4()
	body := make([]byte, 12)
	body[0], body[1] = unix.AF_INET, 32
	at := make([]byte, 8)
	ne.PutUint16(at[0:], 8)
	ne.PutUint16(at[2:], unix.RTA_DST)
	copy(at[4:], a[:])
	c.send(unix.RTM_GETROUTE, 0, append(body, at...))
	m := c.recv()[0]
	switch ne.Uint16(m[4:]) {
	case unix.NLMSG_ERROR:
		return fmt.Sprintf("route get %s: error %d", addr, int32(ne.Uint32(m[16:])))
	case unix.RTM_NEWROUTE:
		return fmt.Sprintf("route get %s: table %d type %d", addr, m[16+4], m[16+7])
	}
	return "route get: unexpected reply"
}

func atoi(s string) uint32 {
	n, err := strconv.ParseUint(s, 10, 32)
	must("number", err)
	return uint32(n)
}

func main() {
	if len(os.Args) < 2 {
		os.Exit(2)
	}
	args := os.Args[2:]
	switch os.Args[1] {
	case "rules":
		fmt.Println(strings.Join(rules(open()), "\n"))
	case "rule-add":
		fmt.Printf("rule add %s table %s: %d\n", args[0], args[1], ruleAdd(open(), atoi(args[0]), atoi(args[1])))
	case "route-get":
		fmt.Println(routeGet(open(), args[0]))
	case "threads":
		n := int(atoi(args[0]))
		res := make([]string, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				runtime.LockOSThread() // a thread of its own, never given back
				res[i] = strings.Join(rules(open()), "; ")
			}()
		}
		wg.Wait()
		sort.Strings(res)
		fmt.Println(strings.Join(res, "\n"))
	case "unshare", "setns":
		runtime.LockOSThread() // the namespace is this thread's
		if os.Args[1] == "unshare" {
			must("unshare", unix.Unshare(unix.CLONE_NEWNET))
		} else {
			fd, err := unix.Open("/run/netns/"+args[0], unix.O_RDONLY|unix.O_CLOEXEC, 0)
			must("open", err)
			must("setns", unix.Setns(fd, unix.CLONE_NEWNET))
			unix.Close(fd)
			args = args[1:]
		}
		c := open()
		fmt.Printf("rule add %s table %s: %d\n", args[0], args[1], ruleAdd(c, atoi(args[0]), atoi(args[1])))
		fmt.Println(strings.Join(rules(c), "\n"))
	default:
		os.Exit(2)
	}
}
