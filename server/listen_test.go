package server_test

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/nlemu/nlemu/server"
)

// TestListenRefusesLiveServerAndReplacesStaleSocket: `nlemu serve` must not
// steal a live server's socket, but may reuse a dead one's file; closing
// removes the file.
func TestListenRefusesLiveServerAndReplacesStaleSocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nlemu.sock")
	a := server.New(server.Config{})
	la, err := a.ListenUnix(path)
	if err != nil {
		t.Fatal(err)
	}
	b := server.New(server.Config{})
	defer b.Close()
	if _, err := b.ListenUnix(path); !errors.Is(err, server.ErrInUse) {
		t.Fatalf("second server on a live socket: %v", err)
	}
	la.Close()
	a.Close()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("socket file left behind: %v", err)
	}
	// A stale socket file (no one listening) is replaced.
	l, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: path, Net: "unixpacket"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()
	if _, err := b.ListenUnix(path); err != nil {
		t.Fatalf("stale socket not replaced: %v", err)
	}
	c, err := server.DialUnix(path, server.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if _, err := server.DialUnix(path, server.Options{Namespace: "nope"}); !errors.Is(err, server.ErrNoNamespace) {
		t.Fatalf("unknown namespace: %v", err)
	}
}
