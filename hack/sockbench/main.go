// Command sockbench times what vishvananda/netlink does for every
// package-level call without a Handle: open a NETLINK_ROUTE socket and
// close it (mode "socket"), or also bind it and send one RTM_GETLINK
// request for lo and read its answer (mode "call"). Built static
// (CGO_ENABLED=0), it runs the same on the kernel and under
// `nlemu exec --seccomp`, where each socket() is answered by the
// supervisor (hack/sockbench.sh). It prints "MODE: N ns each".
package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: sockbench socket|call N")
		os.Exit(2)
	}
	n, err := strconv.Atoi(os.Args[2])
	if err != nil || n <= 0 {
		fmt.Fprintln(os.Stderr, "sockbench: bad N")
		os.Exit(2)
	}
	runtime.LockOSThread()
	op := map[string]func() error{"socket": openClose, "call": oneCall}[os.Args[1]]
	if op == nil {
		fmt.Fprintln(os.Stderr, "sockbench: mode is socket or call")
		os.Exit(2)
	}
	if err := op(); err != nil { // warm-up: the first socket may create the namespace
		fmt.Fprintln(os.Stderr, "sockbench:", err)
		os.Exit(1)
	}
	t0 := time.Now()
	for range n {
		if err := op(); err != nil {
			fmt.Fprintln(os.Stderr, "sockbench:", err)
			os.Exit(1)
		}
	}
	fmt.Printf("%s: %d ns each\n", os.Args[1], time.Since(t0).Nanoseconds()/int64(n))
}

func openClose() error {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return err
	}
	return unix.Close(fd)
}

// oneCall is vishvananda/netlink's newNetlinkRequest + Execute for
// LinkByName("lo") without a Handle: socket, bind, send, receive, close.
func oneCall() error {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	name := append([]byte("lo"), 0)
	req := make([]byte, 16+16+4+8)
	ne := binary.NativeEndian
	ne.PutUint32(req[0:], uint32(len(req)))
	ne.PutUint16(req[4:], unix.RTM_GETLINK)
	ne.PutUint16(req[6:], unix.NLM_F_REQUEST|unix.NLM_F_ACK)
	ne.PutUint32(req[8:], 1)
	ne.PutUint16(req[32:], uint16(4+len(name)))
	ne.PutUint16(req[34:], unix.IFLA_IFNAME)
	copy(req[36:], name)
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	buf := make([]byte, 65536)
	for {
		m, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			return err
		}
		for b := buf[:m]; len(b) >= 16; {
			l := int(ne.Uint32(b))
			t := ne.Uint16(b[4:])
			if t == unix.NLMSG_ERROR {
				if e := int32(ne.Uint32(b[16:])); e != 0 {
					return unix.Errno(-e)
				}
				return nil
			}
			if t == unix.NLMSG_DONE || l < 16 || l > len(b) {
				return nil
			}
			b = b[(l+3)&^3:]
		}
	}
}
