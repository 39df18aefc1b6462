package supervise

import (
	"errors"
	"net"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
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

// waitSpares waits until the pool holds n ready spares.
func waitSpares(t *testing.T, p *sparePool, n int) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		ready, _, _ := p.counts()
		if ready >= n {
			return
		}
		if time.Now().After(end) {
			p.mu.Lock()
			err := p.fillErr
			p.mu.Unlock()
			t.Fatalf("%d spares ready, want %d (the filler's last error: %v)", ready, n, err)
		}
	}
}

// TestSpareConnUsedForHello: a spare made ahead carries the next socket's
// HELLO (the port id is the hint, as on a fresh connection), and is handed
// out once.
func TestSpareConnUsedForHello(t *testing.T) {
	path := testServer(t)
	var p sparePool
	p.init(path)
	p.wake()
	waitSpares(t, &p, spareCount)
	fd := p.take()
	if fd < 0 {
		t.Fatal("no spare connection made")
	}
	ran := 0
	cfd, portid, err := dialOn(fd, path, "default", 4242, 0, func() { ran++ })
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(cfd)
	if cfd != fd || portid != 4242 || ran != 1 {
		t.Errorf("HELLO on fd %d port id %d (meanwhile ran %d times), want the spare %d, port id 4242, once", cfd, portid, ran, fd)
	}
	for range spareCount {
		if got := p.take(); got == fd {
			t.Fatal("a spare taken twice")
		} else if got >= 0 {
			unix.Close(got)
		}
	}
}

// TestSparePoolRefillsUnderBurst: a burst of socket() calls takes the
// spares ready (each HELLO answered on one), and the filler tops the pool
// up for the next burst without the takers making any. It is woken when a
// take leaves spareLow or fewer and then fills to spareCount, so after a
// burst at least spareCount-1 are ready (a last take may find it full and
// leave one fewer, waking nothing).
func TestSparePoolRefillsUnderBurst(t *testing.T) {
	path := testServer(t)
	var p sparePool
	p.init(path)
	p.wake()
	const burst = spareCount - 1
	for round := range 5 {
		waitSpares(t, &p, burst)
		var fds []int
		for range burst {
			fd := p.take()
			if fd < 0 {
				t.Fatalf("round %d: no spare for socket %d", round, len(fds))
			}
			fds = append(fds, fd)
		}
		for i, fd := range fds {
			// A hint of its own: the server may not have seen the
			// previous round's closes yet.
			hint := uint32(100 + 10*round + i)
			cfd, portid, err := dialOn(fd, path, "default", hint, 0, nil)
			if err != nil {
				t.Fatalf("round %d, socket %d: %v", round, i, err)
			}
			if cfd != fd || portid != hint {
				t.Errorf("round %d, socket %d: fd %d port id %d, want %d and %d", round, i, cfd, portid, fd, hint)
			}
			unix.Close(cfd)
		}
	}
	waitSpares(t, &p, burst)
	ready, made, taken := p.counts()
	if taken != 5*burst || made != ready+taken || ready > spareCount {
		t.Errorf("pool: %d ready, %d made, %d taken; want at most %d ready, %d taken, made = ready + taken", ready, made, taken, spareCount, 5*burst)
	}
}

// TestSparePoolDropsStaleSpares: a spare older than spareMaxAge is closed
// instead of handed out (the server gives up on a silent connection after
// 30 s), and the pool is refilled with fresh ones.
func TestSparePoolDropsStaleSpares(t *testing.T) {
	path := testServer(t)
	var p sparePool
	p.init(path)
	p.wake()
	waitSpares(t, &p, spareCount)
	p.mu.Lock()
	old := make([]int, 0, spareCount)
	for i := range p.fds {
		p.fds[i].made = time.Now().Add(-2 * spareMaxAge)
		old = append(old, p.fds[i].fd)
	}
	p.mu.Unlock()
	if fd := p.take(); fd >= 0 {
		t.Fatalf("a stale spare was handed out (fd %d)", fd)
	}
	for _, fd := range old {
		// Closed: its number is free or reused by a fresh spare.
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err == nil {
			p.mu.Lock()
			fresh := false
			for _, sp := range p.fds {
				fresh = fresh || sp.fd == fd
			}
			p.mu.Unlock()
			if !fresh {
				t.Errorf("stale spare %d still open", fd)
			}
		}
	}
	waitSpares(t, &p, spareCount)
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
	cfd, portid, err := dialOn(spare, path, "default", 77, 0, nil)
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
	_, _, err = dialOn(spare, path, "no-such-namespace", 78, 0, nil)
	var hr *helloRefused
	if !errors.As(err, &hr) || hr.errno != syscall.ENOENT {
		t.Errorf("HELLO for a missing namespace on a spare: %v, want the server's ENOENT", err)
	}
}

// waitReady waits until key k holds n ready spares.
func waitReady(t *testing.T, p *sparePool, k helloKey, n int) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		p.mu.Lock()
		got := 0
		if l := p.ready[k]; l != nil {
			got = len(l.spares)
		}
		err := p.fillErr
		p.mu.Unlock()
		if got >= n {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("%d ready spares of %v, want %d (the filler's last error: %v)", got, k, n, err)
		}
	}
}

// TestReadySparesRefilledInBatches: takes of a key's ready spares ask for
// a refill only when fewer than readyLow are left, and only once until the
// filler has run; the filler then makes the key's readyPerKey again in one
// turn (makeReadyBatch), each spare with its HELLO answered and a port id
// no other open one has.
func TestReadySparesRefilledInBatches(t *testing.T) {
	path := testServer(t)
	var p sparePool
	p.init(path)
	k := helloKey{ns: "default", pid: 4300}
	p.want(k)
	p.wake()
	waitReady(t, &p, k, readyPerKey)
	var refills []bool
	ports := map[uint32]bool{}
	take := func() {
		r, ok, refill := p.takeReady(k)
		if !ok {
			t.Fatalf("take %d: no ready spare", len(refills))
		}
		if ports[r.portid] {
			t.Errorf("port id %d handed out twice", r.portid)
		}
		ports[r.portid] = true
		// kept open to the end: a closed socket's port id is free again
		t.Cleanup(func() { unix.Close(r.fd) })
		refills = append(refills, refill)
	}
	for range readyPerKey {
		take()
	}
	want := make([]bool, readyPerKey)
	want[readyPerKey-readyLow] = true // the take that leaves readyLow-1
	if d := cmp.Diff(want, refills); d != "" {
		t.Errorf("refills asked (-want +got):\n%s", d)
	}
	p.wake()
	waitReady(t, &p, k, readyPerKey)
	if got := p.readyCounts(); got != readyPerKey {
		t.Errorf("%d ready spares taken, want %d", got, readyPerKey)
	}
	p.mu.Lock()
	made := p.readyMade
	p.mu.Unlock()
	if made != 2*readyPerKey {
		t.Errorf("%d ready spares made, want %d (two batches)", made, 2*readyPerKey)
	}
	refills = nil
	for range readyPerKey {
		take()
	}
	if d := cmp.Diff(want, refills); d != "" {
		t.Errorf("refills asked after the batch (-want +got):\n%s", d)
	}
}
