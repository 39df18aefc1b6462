package integration

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Socket is an Endpoint with the socket controls a scenario uses; nlemu's
// *server.Client and *kernelns.Socket both satisfy it.
type Socket interface {
	Endpoint
	SetSockopt(level, name int, v uint32) error
	Bind(groups uint32) error
	Close() error
}

// SockSpec describes one socket of a scenario. Every side opens the same
// sockets in the same order and configures them the same way.
type SockSpec struct {
	Name string
	// Dial-time options (nlemu: server.Options; kernel: kernelns.Options).
	ExtAck, CapAck, StrictCheck bool
	Groups                      uint32 // legacy nl_groups bind mask
	// After dialing: NETLINK_ADD_MEMBERSHIP for each group, then Bind(Rebind)
	// when Rebind != 0.
	AddMemberships []uint32
	Rebind         uint32
	// Listener sockets are drained after every step; what they received is
	// compared (port id of the step's sender normalized to 0).
	Listener bool
}

// Side is one implementation under comparison.
type Side struct {
	Name   string
	Timing Timing
	// Dial opens a socket as described by spec (dial-time options only).
	Dial func(spec SockSpec) (Socket, error)
}

// Step is one operation of a scenario, replayed in order on every side.
type Step struct {
	Name string
	// Sock names the sender (default "main").
	Sock string
	// Setup runs on the sender before the datagram is sent (setsockopt,
	// bind); its error is part of the comparison.
	Setup func(s Socket) error
	// Build returns the datagram to send for the given base sequence number
	// (messages of one datagram use seq, seq+1, ...). Nil sends nothing.
	Build func(seq uint32) []byte
	// NoStateDump skips the AF_UNSPEC dump after this step.
	NoStateDump bool
}

// StepDiff is one difference found by RunDiff.
type StepDiff struct {
	Index int
	Step  string
	What  string // "reply", "listener mon", "state dump", ...
	Diff  string
}

func (d StepDiff) String() string {
	return fmt.Sprintf("step %d %q: %s differs:\n%s", d.Index, d.Step, d.What, d.Diff)
}

type openSock struct {
	spec SockSpec
	s    Socket
	rcv  *Receiver
}

type sideState struct {
	side  *Side
	state openSock // private socket for the state dumps
	socks map[string]*openSock
	order []string
}

func openSide(side *Side, specs []SockSpec) (*sideState, error) {
	st := &sideState{side: side, socks: map[string]*openSock{}}
	s, err := side.Dial(SockSpec{Name: "state"})
	if err != nil {
		return nil, fmt.Errorf("%s: dial state socket: %w", side.Name, err)
	}
	st.state = openSock{spec: SockSpec{Name: "state"}, s: s, rcv: NewReceiver(s)}
	for _, spec := range specs {
		s, err := side.Dial(spec)
		if err != nil {
			st.close()
			return nil, fmt.Errorf("%s: dial %s: %w", side.Name, spec.Name, err)
		}
		o := &openSock{spec: spec, s: s, rcv: NewReceiver(s)}
		st.socks[spec.Name] = o
		st.order = append(st.order, spec.Name)
		for _, g := range spec.AddMemberships {
			if err := s.SetSockopt(solNetlink, netlinkAddMember, g); err != nil {
				st.close()
				return nil, fmt.Errorf("%s: %s: add membership %d: %w", side.Name, spec.Name, g, err)
			}
		}
		if spec.Rebind != 0 {
			if err := s.Bind(spec.Rebind); err != nil {
				st.close()
				return nil, fmt.Errorf("%s: %s: bind %#x: %w", side.Name, spec.Name, spec.Rebind, err)
			}
		}
	}
	return st, nil
}

func (st *sideState) close() {
	if st.state.s != nil {
		st.state.s.Close()
	}
	for _, n := range st.order {
		st.socks[n].s.Close()
	}
}

// stepResult is what one side produced for one step.
type stepResult struct {
	reply     Reply
	listeners map[string]Reply
	state     Reply
}

func (st *sideState) run(step Step, seq, stateSeq uint32) (stepResult, error) {
	res := stepResult{listeners: map[string]Reply{}}
	name := step.Sock
	if name == "" {
		name = "main"
	}
	snd, ok := st.socks[name]
	if !ok {
		return res, fmt.Errorf("step %q: no socket %q", step.Name, name)
	}
	tm := st.side.Timing
	if step.Setup != nil {
		if err := step.Setup(snd.s); err != nil {
			res.reply.Problem = "setup: " + errText(err)
		}
	}
	if step.Build != nil {
		rep := Exchange(snd.s, snd.rcv, step.Build(seq), tm)
		if res.reply.Problem != "" {
			rep.Problem = res.reply.Problem + "; " + rep.Problem
		}
		res.reply = rep
	}
	// Drain the listeners concurrently: each waits for quiet.
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, n := range st.order {
		o := st.socks[n]
		if !o.spec.Listener || (o == snd && step.Build != nil) {
			continue // the sender's own queue was read by Exchange
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := Collect(o.rcv, 0, tm, snd.s.PortID())
			mu.Lock()
			res.listeners[o.spec.Name] = r
			mu.Unlock()
		}()
	}
	wg.Wait()
	if !step.NoStateDump {
		res.state = DumpRules(st.state.s, st.state.rcv, afUnspec, stateSeq, tm)
	}
	return res, nil
}

// stepHasDump reports whether any message of the step's datagram is a dump
// request; datagram boundaries of such replies are not compared.
func stepHasDump(d []byte) bool {
	msgs, _ := splitMsgs(d)
	for _, m := range msgs {
		if m.Flags&nlmFRequest != 0 && isDumpRequest(m.Type, m.Flags) {
			return true
		}
	}
	return false
}

// compareReplies returns "" when a and b are identical (same bytes, same
// port-id marks, and with boundaries the same datagram split), else a
// readable diff (-a +b).
func compareReplies(a, b Reply, boundaries bool) string {
	ra, rb := RenderReply(a, boundaries), RenderReply(b, boundaries)
	if d := cmp.Diff(ra, rb); d != "" {
		return d
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		// The rendering lost a detail; fall back to hex.
		return cmp.Diff(hexLines(a.Bytes()), hexLines(b.Bytes()))
	}
	return ""
}

func hexLines(b []byte) []string {
	return strings.Split(strings.TrimSpace(hex.Dump(b)), "\n")
}

// Trace makes RunDiff log side a's replies and notifications for every
// step (set from the NLEMU_DIFF_TRACE environment variable by the tests).
var Trace bool

// RunDiff replays steps on sides a (the reference: the kernel) and b (under
// test) and returns every difference: for each step the sender's replies,
// what each listener received, and the AF_UNSPEC rule dump afterwards (plus
// one dump before the first step). Each difference is also reported with
// tb.Errorf, naming the step and showing the diff (-a +b).
func RunDiff(tb testing.TB, specs []SockSpec, steps []Step, a, b *Side) []StepDiff {
	tb.Helper()
	sa, err := openSide(a, specs)
	if err != nil {
		tb.Fatal(err)
	}
	defer sa.close()
	sb, err := openSide(b, specs)
	if err != nil {
		tb.Fatal(err)
	}
	defer sb.close()

	var diffs []StepDiff
	report := func(i int, step, what, d string) {
		sd := StepDiff{Index: i, Step: step, What: what, Diff: d}
		diffs = append(diffs, sd)
		tb.Errorf("step %d %q: %s differs (-%s +%s):\n%s", i, step, what, a.Name, b.Name, d)
	}

	const stateSeqBase = 900000
	da := DumpRules(sa.state.s, sa.state.rcv, afUnspec, stateSeqBase, a.Timing)
	db := DumpRules(sb.state.s, sb.state.rcv, afUnspec, stateSeqBase, b.Timing)
	if d := compareReplies(da, db, false); d != "" {
		report(-1, "initial state", "state dump", d)
	}
	// A state divergence persists until the sides converge again; report it
	// when it first appears or changes, not after every step.
	lastState := ""
	for i, step := range steps {
		seq := uint32(1000 + 16*i)
		stateSeq := uint32(stateSeqBase + 1 + i)
		ra, err := sa.run(step, seq, stateSeq)
		if err != nil {
			tb.Fatal(err)
		}
		rb, err := sb.run(step, seq, stateSeq)
		if err != nil {
			tb.Fatal(err)
		}
		boundaries := step.Build == nil || !stepHasDump(step.Build(seq))
		if Trace {
			tb.Logf("step %d %q (%s):\n  %s", i, step.Name, a.Name, strings.Join(RenderReply(ra.reply, boundaries), "\n  "))
			for _, n := range sa.order {
				if r, ok := ra.listeners[n]; ok && (len(r.Datagrams) > 0 || r.Problem != "") {
					tb.Logf("  listener %s:\n  %s", n, strings.Join(RenderReply(r, true), "\n  "))
				}
			}
		}
		if d := compareReplies(ra.reply, rb.reply, boundaries); d != "" {
			report(i, step.Name, "reply", d)
		}
		for _, n := range sa.order {
			if !sa.socks[n].spec.Listener {
				continue
			}
			if d := compareReplies(ra.listeners[n], rb.listeners[n], true); d != "" {
				report(i, step.Name, "listener "+n, d)
			}
		}
		if !step.NoStateDump {
			d := compareReplies(ra.state, rb.state, false)
			if d != "" && d != lastState {
				report(i, step.Name, "state dump", d)
			}
			lastState = d
		}
	}
	return diffs
}
