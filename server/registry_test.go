package server

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestAllocPortMatchesAutobind: one opener at a time gets the port ids the
// one-mutex allocator gave (netlink_autobind(): the pid when free, else
// -4096, -4097, ... skipping ids in use), the reference being that
// allocator's loop over a map.
func TestAllocPortMatchesAutobind(t *testing.T) {
	s := New(Config{})
	defer s.Close()
	used := map[uint32]bool{}
	rover := uint32(0xFFFFF000)
	ref := func(pid uint32) uint32 { // the allocator before the shards
		if pid != 0 && !used[pid] {
			used[pid] = true
			return pid
		}
		for used[rover] || rover == 0 {
			rover--
		}
		p := rover
		rover--
		used[p] = true
		return p
	}
	pids := []uint32{0, 0, 77, 77, 0xFFFFEFFE, 0, 0, 0, 0xFFFFEFFE, 5, 0}
	var got, want []uint32
	for _, pid := range pids {
		got = append(got, s.allocPort(pid))
		want = append(want, ref(pid))
	}
	s.releasePort(77)
	got = append(got, s.allocPort(77))
	delete(used, 77)
	want = append(want, ref(77))
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("port ids (-one mutex +shards):\n%s", d)
	}
}

// TestParallelOpensGetDistinctPorts opens sockets from many goroutines at
// once, in namespaces of their own and in one shared: every socket gets a
// port id of its own, the registry counts them all, and closing them
// empties it.
func TestParallelOpensGetDistinctPorts(t *testing.T) {
	s := New(Config{})
	defer s.Close()
	const n = 64
	for i := range n {
		if err := s.nsm.Add(fmt.Sprint("p", i)); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	clients := make([]*Client, 2*n)
	errs := make([]error, 2*n)
	for i := range clients {
		wg.Go(func() {
			ns := "default"
			if i < n {
				ns = fmt.Sprint("p", i)
			}
			clients[i], errs[i] = s.Dial(Options{Namespace: ns, PID: uint32(i % 3)})
		})
	}
	wg.Wait()
	seen := map[uint32]bool{}
	for i, c := range clients {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if seen[c.PortID()] {
			t.Fatalf("port id %#x given twice", c.PortID())
		}
		seen[c.PortID()] = true
	}
	if got := s.connCount(); got != len(clients) {
		t.Fatalf("%d sockets registered, want %d", got, len(clients))
	}
	for _, c := range clients {
		c.Close()
	}
	if got := s.connCount(); got != 0 {
		t.Fatalf("%d sockets registered after closing them all", got)
	}
}

// TestCloseRacesOpens: sockets opened while the server closes either fail
// with net.ErrClosed or are closed by Close; none is left registered.
func TestCloseRacesOpens(t *testing.T) {
	for range 20 {
		s := New(Config{})
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 32 {
			wg.Go(func() {
				<-start
				if _, err := s.Dial(Options{}); err != nil && !errors.Is(err, net.ErrClosed) {
					t.Error(err)
				}
			})
		}
		close(start)
		s.Close()
		wg.Wait()
		if got := s.connCount(); got != 0 {
			t.Fatalf("%d sockets registered after Close", got)
		}
	}
}

// TestFastAttachNeverMissesAnEphemeralNamespace: openers of an ephemeral
// namespace that is created and deleted over and over, beside openers of a
// plain namespace on the lock-free path: every socket of the ephemeral
// namespace counts (the namespace never goes while one is open), and the
// plain namespace's sockets never make it ephemeral.
func TestFastAttachNeverMissesAnEphemeralNamespace(t *testing.T) {
	s := New(Config{})
	defer s.Close()
	if err := s.nsm.Add("plain"); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for range 300 {
				c, err := s.Dial(Options{Namespace: "eph", Ephemeral: true})
				if err != nil {
					t.Error(err)
					return
				}
				d, err := s.Dial(Options{Namespace: "eph"}) // finds it: counts
				if err != nil {
					t.Error(err)
					c.Close()
					return
				}
				c.Close()
				if cur, ok := s.nsm.Get("eph"); !ok || cur != d.c.ns {
					t.Errorf("opener %d: the ephemeral namespace went while a socket held it", g)
				}
				d.Close()
			}
		})
		wg.Go(func() {
			for range 300 {
				c, err := s.Dial(Options{Namespace: "plain"})
				if err != nil {
					t.Error(err)
					return
				}
				c.Close()
			}
		})
	}
	wg.Wait()
	if !hasNamespace(s, "plain") {
		t.Fatal("the plain namespace was deleted by its sockets")
	}
	if hasNamespace(s, "eph") {
		t.Fatal("the ephemeral namespace outlived its sockets")
	}
	if w := s.eph.word.Load(); uint32(w) != 0 {
		t.Fatalf("ephemeral count %d with none left", uint32(w))
	}
}

// BenchmarkOpenParallel opens and closes in-process sockets from many
// goroutines at once, each in a namespace of its own (`nlemu load`'s
// start: every client dials at once): what registering a socket costs
// when the openers meet, per open and close.
func BenchmarkOpenParallel(b *testing.B) {
	s := New(Config{})
	defer s.Close()
	const n = 512
	for i := range n {
		if err := s.nsm.Add(fmt.Sprint("b", i)); err != nil {
			b.Fatal(err)
		}
	}
	var next sync.Mutex
	i := 0
	b.SetParallelism(n / 2) // 512 goroutines on 2 cores
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		next.Lock()
		ns := fmt.Sprint("b", i%n)
		i++
		next.Unlock()
		for pb.Next() {
			c, err := s.Dial(Options{Namespace: ns})
			if err != nil {
				b.Error(err)
				return
			}
			c.Close()
		}
	})
}

// TestSecondCloseKeepsReusedPort: a socket closed twice (the client's
// close, then Server.Close's) gives its port id back once; by the second
// close the id may belong to a newer socket, which must keep it, as the
// kernel's netlink_release() unhashes a socket exactly once.
func TestSecondCloseKeepsReusedPort(t *testing.T) {
	s := New(Config{})
	defer s.Close()
	a, err := s.open("", 4242, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	a.close()
	b, err := s.open("", 4242, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer b.close()
	if b.portid != 4242 {
		t.Fatalf("reopened socket got port %d, want 4242 (freed by the first close)", b.portid)
	}
	a.close()
	c, err := s.open("", 4242, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	if c.portid == 4242 {
		t.Errorf("a second close of the old socket freed port 4242, which the open socket still holds")
	}
}
