package server

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nlemu/nlemu/nsmgr"
	"github.com/nlemu/nlemu/rtnl"
	T "github.com/nlemu/nlemu/rtnl/rtnltest"
)

// loopConnsRegistered is the number of connections the event loops hold.
func loopConnsRegistered() int64 {
	var n int64
	for _, l := range startedLoops() {
		n += l.conns.Load()
	}
	return n
}

// startedLoops is the event loops (started if need be, through their
// sync.Once, so that reading them is ordered after their start).
func startedLoops() []*evloop {
	ls, _ := startLoops()
	return ls
}

// waitFor polls cond until it holds (10 s at most).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestLoopManyConnectionsAnsweredInOrder: many connections at once, each
// sending requests back to back, are all served by the event loops (busy
// mode takes one at most), and every connection gets every answer, its
// own, in the order asked.
func TestLoopManyConnectionsAnsweredInOrder(t *testing.T) {
	conns, requests := 200, 500
	if raceEnabled {
		conns, requests = 64, 200
	}
	_, sock := listenTest(t)
	waitIdle(t)
	reads0, busy0 := loopReads.Load(), busyReads.Load()
	var wg sync.WaitGroup
	for k := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := DialUnix(sock, Options{})
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			c.SetRecvTimeout(30 * time.Second)
			for i := range uint32(requests) {
				got, err := roundTrip(c, ruleRequest(i, uint32(1000+k)))
				if err != nil {
					t.Errorf("connection %d request %d: %v", k, i, err)
					return
				}
				if want := []string{fmt.Sprintf("ack seq=%d errno=0", i)}; !cmp.Equal(got, want) {
					t.Errorf("connection %d request %d: %v, want %v", k, i, got, want)
					return
				}
			}
		}()
	}
	wg.Wait()
	total := uint64(conns * requests)
	loopRead, busyRead := loopReads.Load()-reads0, busyReads.Load()-busy0
	if loopRead+busyRead < total {
		t.Errorf("%d requests, %d read by the loops and %d in busy mode", total, loopRead, busyRead)
	}
	if loopRead < total/2 {
		t.Errorf("%d concurrent connections: only %d of %d requests read by the loops", conns, loopRead, total)
	}
	t.Logf("%d loops; %d requests read by them, %d in busy mode", len(startedLoops()), loopRead, busyRead)
}

// TestLoopSlowReaderDumpStallsNoOtherConnection: a client that asks for a
// dump much larger than its receive buffer and then reads nothing keeps no
// loop thread waiting: connections on every loop, its own included, keep
// being answered meanwhile, and the dump arrives whole once the client
// reads.
func TestLoopSlowReaderDumpStallsNoOtherConnection(t *testing.T) {
	_, sock := listenTest(t)
	waitIdle(t)
	adder := dialTest(t, sock)
	defer adder.Close()
	const n = 1500
	for i := uint32(0); i < n; i++ {
		req := T.Msg(rtnl.RTM_NEWRULE, T.AddFlags, i, T.Body(T.V4(100), T.Pref(1000+i)))
		if got, err := roundTrip(adder, req); err != nil || got[len(got)-1] != fmt.Sprintf("ack seq=%d errno=0", i) {
			t.Fatalf("add %d: %v %v", i, got, err)
		}
	}
	slow := dialTest(t, sock)
	defer slow.Close()
	slow.SetSockopt(rtnl.SOL_SOCKET, rtnl.SO_RCVBUF, 1)
	if err := slow.Send(T.Msg(rtnl.RTM_GETRULE, rtnl.NLM_F_REQUEST|rtnl.NLM_F_DUMP, 7, T.Body(T.Hdr{Family: rtnl.AF_INET}))); err != nil {
		t.Fatal(err)
	}
	// Enough other connections that every loop, the slow one's among
	// them, serves some (placement is least-loaded).
	others := 4 * len(startedLoops())
	var wg sync.WaitGroup
	for k := range others {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := DialUnix(sock, Options{})
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			c.SetRecvTimeout(10 * time.Second)
			for i := range uint32(200) {
				got, err := roundTrip(c, ruleRequest(i, uint32(200+k)))
				if err != nil || got[len(got)-1] != fmt.Sprintf("ack seq=%d errno=0", i) {
					t.Errorf("connection %d request %d while a dump stalls: %v %v", k, i, got, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	rules, done := 0, false
	for !done {
		b, err := slow.Recv()
		if err != nil {
			t.Fatalf("dump after %d rules: %v", rules, err)
		}
		for _, m := range rtnl.SplitDatagram(b) {
			switch m.Header.Type {
			case rtnl.RTM_NEWRULE:
				rules++
			case rtnl.NLMSG_DONE:
				done = true
			}
		}
	}
	if rules != n+3 {
		t.Errorf("dump of %d rules, want %d", rules, n+3)
	}
}

// TestLoopClientClosesMidRequest: clients that send a request (a large
// dump, a change) and hang up without reading the answer are torn down —
// their connection slots and loop registrations given back — and the
// server keeps answering others.
func TestLoopClientClosesMidRequest(t *testing.T) {
	srv, sock := listenTest(t)
	waitIdle(t)
	adder := dialTest(t, sock)
	defer adder.Close()
	for i := uint32(0); i < 300; i++ {
		req := T.Msg(rtnl.RTM_NEWRULE, T.AddFlags, i, T.Body(T.V4(100), T.Pref(1000+i)))
		if _, err := roundTrip(adder, req); err != nil {
			t.Fatal(err)
		}
	}
	waitIdle(t) // the adder back in its loop
	slots0, reg0 := srv.connSlots(), loopConnsRegistered()
	for k := range 100 {
		c := dialTest(t, sock)
		var req []byte
		if k%2 == 0 {
			req = T.Msg(rtnl.RTM_GETRULE, rtnl.NLM_F_REQUEST|rtnl.NLM_F_DUMP, 1, T.Body(T.Hdr{Family: rtnl.AF_INET}))
		} else {
			req = ruleRequest(0, uint32(5000+k))
		}
		if err := c.Send(req); err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	defer func() {
		t.Logf("slots %d (want %d), registered %d (want <= %d)", srv.connSlots(), slots0, loopConnsRegistered(), reg0)
	}()
	waitFor(t, "the closed connections' teardown", func() bool {
		return srv.connSlots() == slots0 && loopConnsRegistered() <= reg0
	})
	if got, err := roundTrip(adder, ruleRequest(0, 77)); err != nil || got[len(got)-1] != "ack seq=0 errno=0" {
		t.Fatalf("after the hang-ups: %v %v", got, err)
	}
}

// gateJournal is a Journal whose records wait for the test: Apply blocks
// until the gate opens (a slow fsync), then applies the change, recording
// the order of the sequence numbers it made durable.
type gateJournal struct {
	gate    chan struct{}
	waiting atomic.Int32
	mu      sync.Mutex
	order   []uint32
}

func (j *gateJournal) Apply(ns *nsmgr.Namespace, m *rtnl.Message, strict bool, do func() *rtnl.Error) *rtnl.Error {
	j.waiting.Add(1)
	<-j.gate
	err := do()
	j.mu.Lock()
	j.order = append(j.order, m.Header.Sequence)
	j.mu.Unlock()
	return err
}

// TestLoopJournalWaitsOffTheLoop: with a journal, a change's ACK waits for
// its record; that wait holds no loop thread (other connections' requests
// are answered meanwhile, on every loop), and the waiting connection's own
// requests, sent back to back, are answered in order once it ends.
func TestLoopJournalWaitsOffTheLoop(t *testing.T) {
	srv := New(Config{})
	j := &gateJournal{gate: make(chan struct{})}
	srv.SetJournal(j)
	t.Cleanup(func() { srv.Close() })
	sock := filepath.Join(t.TempDir(), "s.sock")
	if _, err := srv.ListenUnix(sock); err != nil {
		t.Fatal(err)
	}
	waitIdle(t)
	handOffs0 := loopHandOffs.Load()
	writer := dialTest(t, sock)
	defer writer.Close()
	const n = 20
	for i := uint32(0); i < n; i++ {
		if err := writer.Send(ruleRequest(i, 100)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the first change to wait for its record", func() bool { return j.waiting.Load() == 1 })
	// Reads answered while the record waits: a GET is not journaled.
	var wg sync.WaitGroup
	for k := range 4 * len(startedLoops()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := DialUnix(sock, Options{})
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			c.SetRecvTimeout(10 * time.Second)
			for i := range uint32(50) {
				req := T.Msg(rtnl.RTM_GETRULE, rtnl.NLM_F_REQUEST|rtnl.NLM_F_ACK, i, T.Body(T.Hdr{Family: rtnl.AF_INET}, T.Pref(12345)))
				got, err := roundTrip(c, req)
				if err != nil || len(got) == 0 || !strings.HasPrefix(got[len(got)-1], fmt.Sprintf("ack seq=%d ", i)) {
					t.Errorf("reader %d request %d while a record waits: %v %v", k, i, got, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if w := j.waiting.Load(); w != 1 {
		t.Fatalf("%d changes began their record while the first waited, want 1 (one request at a time per connection)", w)
	}
	close(j.gate)
	var got []string
	for i := uint32(0); i < n; i++ {
		b, err := writer.Recv()
		if err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		for _, m := range rtnl.SplitDatagram(b) {
			got = append(got, fmt.Sprintf("ack seq=%d errno=%d", m.Header.Sequence, T.ParseAck(m).Errno))
		}
	}
	var want []string
	var wantOrder []uint32
	for i := uint32(0); i < n; i++ {
		want = append(want, fmt.Sprintf("ack seq=%d errno=0", i))
		wantOrder = append(wantOrder, i)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("the writer's answers (-want +got):\n%s", d)
	}
	j.mu.Lock()
	order := append([]uint32(nil), j.order...)
	j.mu.Unlock()
	if d := cmp.Diff(wantOrder, order); d != "" {
		t.Errorf("journal order (-want +got):\n%s", d)
	}
	if h := loopHandOffs.Load() - handOffs0; h < n/2 {
		// Busy mode may take the connection after a few: it answers on
		// a goroutine of its own anyway.
		t.Errorf("%d journaled changes, %d answered off the loops", n, h)
	}
}

// TestLoopThreadsStayFew: while many connections are busy at once, the
// process runs about as many threads as loops, busy slots and the
// runtime's own: a connection is never a thread.
func TestLoopThreadsStayFew(t *testing.T) {
	_, sock := listenTest(t)
	waitIdle(t)
	before := threads(t)
	const conns = 100
	var wg sync.WaitGroup
	var mu sync.Mutex
	peak := 0
	for k := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := DialUnix(sock, Options{})
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			c.SetRecvTimeout(10 * time.Second)
			for i := range uint32(100) {
				if _, err := roundTrip(c, ruleRequest(i, uint32(300+k))); err != nil {
					t.Error(err)
					return
				}
				if i == 50 {
					n := threads(t)
					mu.Lock()
					peak = max(peak, n)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	// The loops were started by an earlier test or by this one's first
	// connection; the Go clients' blocking receives take threads of
	// their own (each a syscall the runtime may hand off).
	limit := before + len(startedLoops()) + cap(busySlots) + 24
	if peak > limit {
		t.Errorf("%d busy connections: %d threads at the peak, %d before (limit %d)", conns, peak, before, limit)
	}
	t.Logf("threads: %d before, %d at the peak, %d loops", before, peak, len(startedLoops()))
}
