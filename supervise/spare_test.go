package supervise

import (
	"errors"
	"net"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nlemu/nlemu/server"
)

func testServer(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.sock")
	srv := server.New(server.Config{})
	l, err := srv.ListenUnix(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		l.Close()
		srv.Close()
	})
	return path
}

// TestSpareConnUsedForHello: a spare made ahead carries the next socket's
// HELLO (the port id is the hint, as on a fresh connection), and a new one
// is made after it is taken.
func TestSpareConnUsedForHello(t *testing.T) {
	path := testServer(t)
	var c spareConn
	c.fill(path)
	var fd int
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if fd = c.take(); fd >= 0 || time.Now().After(end) {
			break
		}
	}
	if fd < 0 {
		t.Fatal("no spare connection made")
	}
	cfd, portid, err := dialOn(fd, path, "default", 4242, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(cfd)
	if cfd != fd || portid != 4242 {
		t.Errorf("HELLO on fd %d port id %d, want the spare %d and port id 4242", cfd, portid, fd)
	}
	if c.take() >= 0 {
		t.Error("a spare taken twice")
	}
}

// TestSpareConnClosedByServerIsReplaced: a spare the server has closed
// (its 30 s HELLO deadline, a restart) fails before any answer, and the
// HELLO is sent on a fresh connection; a HELLO the server refused on a
// spare is its answer, not retried.
func TestSpareConnClosedByServerIsReplaced(t *testing.T) {
	path := testServer(t)
	dead := filepath.Join(t.TempDir(), "dead.sock")
	ln, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: dead, Net: "unixpacket"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.AcceptUnix()
			if err != nil {
				return
			}
			c.Close() // hangs up without reading the HELLO
		}
	}()
	spare, err := connectServer(dead)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond) // let the hang-up happen first
	cfd, portid, err := dialOn(spare, path, "default", 77, 0)
	if err != nil {
		t.Fatalf("dial with a dead spare: %v", err)
	}
	unix.Close(cfd)
	if portid != 77 {
		t.Errorf("port id %d, want 77", portid)
	}

	spare, err = connectServer(path)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = dialOn(spare, path, "no-such-namespace", 78, 0)
	var hr *helloRefused
	if !errors.As(err, &hr) || hr.errno != syscall.ENOENT {
		t.Errorf("HELLO for a missing namespace on a spare: %v, want the server's ENOENT", err)
	}
}
