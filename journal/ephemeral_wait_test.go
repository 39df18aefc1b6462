package journal

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/nlemu/nlemu/server"
)

// TestEphemeralOpenWaitsWithNoLockHeld: under --fsync group an ephemeral
// namespace's creation waits for the fdatasync of its records before its
// socket is answered, and waits with the server's ephemeral lock
// released: a socket opening meanwhile in another ephemeral namespace
// (which takes that lock) is answered while the sync is held.
func TestEphemeralOpenWaitsWithNoLockHeld(t *testing.T) {
	fs := newFaultFS(t.TempDir())
	e := openEnv(t, "", Options{FS: fs, Fsync: Group, syncDepth: 1})
	defer e.close()
	a0, err := e.srv.Dial(server.Options{Namespace: "e0", Ephemeral: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a0.Close()

	gate := make(chan struct{})
	fs.gate.Store(&gate)
	var created atomic.Bool
	done := make(chan error, 1)
	go func() {
		c, err := e.srv.Dial(server.Options{Namespace: "e1", Ephemeral: true})
		created.Store(true)
		if err == nil {
			defer c.Close()
		}
		done <- err
	}()
	waitFor(func() bool { return fs.inSync.Load() == 1 }) // e1's records' fdatasync, held

	other := make(chan error, 1)
	go func() {
		c, err := e.srv.Dial(server.Options{Namespace: "e0"}) // needs the ephemeral lock
		if err == nil {
			c.Close()
		}
		other <- err
	}()
	select {
	case err := <-other:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute): // a hang, not a slow machine
		close(gate)
		t.Fatal("an open in another ephemeral namespace waited for e1's fdatasync")
	}
	if created.Load() {
		t.Fatal("e1's socket was answered before its records' fdatasync")
	}
	close(gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	fs.gate.Store(nil)
}
