// Command execcalls times each system call a Go netlink library makes on a
// NETLINK_ROUTE socket, one call at a time: socket, setsockopt at
// SOL_NETLINK and at SOL_SOCKET, bind, getsockname, sendto, recvfrom with
// and without a sender address, close. Built static (CGO_ENABLED=0), it
// runs the same on the kernel and under `nlemu exec --seccomp`, where the
// trapped ones are answered by the supervisor (hack/exec-overhead.sh).
//
// A receive is timed only once its datagram is queued (poll() first, not
// trapped): what it reports is the call's own cost, not the server's time
// to answer, which is printed apart as "reply".
//
// It prints one line per call: "CALL: median M p90 P p99 Q ns" over N
// rounds (after one warm-up round: the first socket may create the
// namespace).
package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// calls, in the order of a round.
var calls = []string{"socket", "setsockopt-netlink", "setsockopt-socket", "bind", "getsockname",
	"sendto", "reply", "recvfrom", "recvfrom-noaddr", "close"}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: execcalls N")
		os.Exit(2)
	}
	n, err := strconv.Atoi(os.Args[1])
	if err != nil || n <= 0 {
		fmt.Fprintln(os.Stderr, "execcalls: bad N")
		os.Exit(2)
	}
	runtime.LockOSThread()
	ts := make([][]time.Duration, len(calls))
	for i := range ts {
		ts[i] = make([]time.Duration, 0, n)
	}
	round(ts) // warm-up
	for i := range ts {
		ts[i] = ts[i][:0]
	}
	for range n {
		round(ts)
	}
	for i, name := range calls {
		d := ts[i]
		slices.Sort(d)
		q := func(p int) int64 { return d[min(len(d)-1, len(d)*p/100)].Nanoseconds() }
		fmt.Printf("%s: median %d p90 %d p99 %d ns\n", name, q(50), q(90), q(99))
	}
}

func fail(what string, err error) {
	fmt.Fprintf(os.Stderr, "execcalls: %s: %v\n", what, err)
	os.Exit(1)
}

var (
	req = getlinkLo()
	buf = make([]byte, 65536)
)

// round is one socket's life as vishvananda/netlink's package-level calls
// live it, each call timed into ts (in the order of calls).
func round(ts [][]time.Duration) {
	k := 0
	timed := func(f func() error, what string) {
		t0 := time.Now()
		err := f()
		ts[k] = append(ts[k], time.Since(t0))
		k++
		if err != nil {
			fail(what, err)
		}
	}
	var fd int
	timed(func() (err error) {
		fd, err = unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
		return err
	}, "socket")
	timed(func() error { return unix.SetsockoptInt(fd, unix.SOL_NETLINK, unix.NETLINK_EXT_ACK, 1) }, "setsockopt SOL_NETLINK")
	timed(func() error { return unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 65536) }, "setsockopt SOL_SOCKET")
	timed(func() error { return unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}) }, "bind")
	timed(func() error { _, err := unix.Getsockname(fd); return err }, "getsockname")
	send := func() error { return unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}) }
	timed(send, "sendto")
	timed(func() error { return waitIn(fd) }, "poll")
	timed(func() error {
		_, from, err := unix.Recvfrom(fd, buf, 0)
		if err == nil {
			if nl, ok := from.(*unix.SockaddrNetlink); !ok || nl.Pid != 0 {
				return fmt.Errorf("sender %#v", from)
			}
		}
		return err
	}, "recvfrom")
	if err := send(); err != nil {
		fail("sendto", err)
	}
	if err := waitIn(fd); err != nil {
		fail("poll", err)
	}
	timed(func() error {
		// recvfrom(fd, buf, len, 0, NULL, NULL): what a C program's recv() is
		_, _, e := unix.Syscall6(unix.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), 0, 0, 0)
		if e != 0 {
			return e
		}
		return nil
	}, "recv")
	timed(func() error { return unix.Close(fd) }, "close")
}

// waitIn polls fd until it is readable.
func waitIn(fd int) error {
	for {
		p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		_, err := unix.Poll(p, 10000)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if p[0].Revents&unix.POLLIN != 0 {
			return nil
		}
		return fmt.Errorf("poll: revents %#x", p[0].Revents)
	}
}

// getlinkLo is an RTM_GETLINK request for lo by name (no ack: one reply).
func getlinkLo() []byte {
	name := append([]byte("lo"), 0)
	req := make([]byte, 16+16+4+8)
	ne := binary.NativeEndian
	ne.PutUint32(req[0:], uint32(len(req)))
	ne.PutUint16(req[4:], unix.RTM_GETLINK)
	ne.PutUint16(req[6:], unix.NLM_F_REQUEST)
	ne.PutUint32(req[8:], 1)
	ne.PutUint16(req[32:], uint16(4+len(name)))
	ne.PutUint16(req[34:], unix.IFLA_IFNAME)
	copy(req[36:], name)
	return req
}
