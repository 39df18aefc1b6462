package supervise

import (
	"net"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/nlemu/nlemu/server"
)

// BenchmarkDialHello is the server's share of a supervised socket(): a
// connection with its HELLO answered and GROUPFRAMES sent (dial), then
// closed, against an in-process server. hack/sockbench.sh measures the
// whole socket()+close() on the kernel and under nlemu exec --seccomp.
func BenchmarkDialHello(b *testing.B) {
	path := filepath.Join(b.TempDir(), "s.sock")
	srv := server.New(server.Config{})
	l, err := srv.ListenUnix(path)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	for b.Loop() {
		fd, _, err := dial(path, "default", 1, 0)
		if err != nil {
			b.Fatal(err)
		}
		unix.Close(fd)
	}
}

// BenchmarkNsTargetCached is the namespace lookup of a socket() from a
// namespace /run/netns does not name (netns.New() in vishvananda/netlink's
// tests): one stat of the directory once the scan is cached.
func BenchmarkNsTargetCached(b *testing.B) {
	var m nsMap
	m.init(0)
	m.racyWindow = 0
	id := nsID{1, 2}
	for b.Loop() {
		m.target(id)
	}
}

// BenchmarkDialFloor is what BenchmarkDialHello cannot go below: connect
// to a Go SOCK_SEQPACKET listener that accepts on a goroutine and answers
// one datagram, read the answer, close; the same run's figure to compare
// with on a loaded machine.
func BenchmarkDialFloor(b *testing.B) {
	path := filepath.Join(b.TempDir(), "f.sock")
	ln, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: path, Net: "unixpacket"})
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.AcceptUnix()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				var buf [64]byte
				if n, err := c.Read(buf[:]); err == nil {
					c.Write(buf[:n])
				}
				c.Read(buf[:])
			}()
		}
	}()
	buf := make([]byte, 64)
	for b.Loop() {
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			b.Fatal(err)
		}
		if err := unix.Connect(fd, &unix.SockaddrUnix{Name: path}); err != nil {
			b.Fatal(err)
		}
		unix.Write(fd, buf[:32])
		if _, err := unix.Read(fd, buf); err != nil {
			b.Fatal(err)
		}
		unix.Close(fd)
	}
}
