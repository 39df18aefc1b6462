package integration

// The fault test (issue 10 item 5): the parallel load of many namespaces,
// rules and routes — real `ip -batch` under `nlemu exec` and Go clients,
// in-process and over the Unix socket — while faults are injected, then a
// check that the server kept every promise it made.
//
// What is checked, precisely:
//
//   - Go clients send one request at a time and wait for its ACK. Every
//     change acknowledged with errno 0 is present at the end (an
//     acknowledged delete: absent). A client that closes its socket right
//     after sending a request (the fault) does not know whether that one
//     request applied, nor when: the server still reads what the socket
//     sent before its end, so the change may land after the client's later
//     requests on a new socket (a delete of its key then finds nothing, or
//     the key comes back after it). That key may be present or absent at
//     the end; nothing else may be present that no request asked for.
//   - `ip -batch` without -force sends line k only after line k-1 was
//     acknowledged without error, and stops at the first error. So for a
//     batch that exited 0 every line is applied; for one killed with SIGKILL
//     at any moment, the lines applied are exactly a prefix of the batch:
//     line k applied implies every line before it applied (the line in
//     flight at the kill may or may not be), and nothing after the first
//     unapplied line is. Applied is read per observable line: a rule (by
//     priority), a blackhole route (by prefix), a multipath route (by
//     prefix).
//   - Nothing is half-applied: every multipath route present has both of
//     its nexthops.
//   - A namespace deleted while clients use it is skipped by these checks
//     (its clients keep their sockets, as with `ip netns del`); a Go client
//     that reopens into it gets ENOENT and stops.
//   - A listener that never reads gets ENOBUFS and no other socket does:
//     a reading listener of the same group receives every notification.
//   - Sockets closed in the middle of a dump, and connections sending
//     garbage, leave the server answering: a garbage connection still gets
//     its next valid request answered.
//   - Afterwards (every client closed, the round's namespaces deleted) the
//     goroutine count and the open descriptors of this process (the server
//     runs in it) come back to what they were before the round, and the
//     server still answers a dump and NETNS_LIST.
//
// The scale is 512 namespaces (NLEMU_FAULTS_NETNS to change it) and takes
// seconds; `hack/soak.sh MINUTES` runs rounds of it for MINUTES
// (-faults.duration).

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nlemu/nlemu/preload"
	"github.com/nlemu/nlemu/rtnl"
	T "github.com/nlemu/nlemu/rtnl/rtnltest"
	"github.com/nlemu/nlemu/server"
)

var faultsDuration = flag.Duration("faults.duration", 0, "repeat TestFaultsUnderLoad's rounds for this long (hack/soak.sh)")

var fltNE = binary.NativeEndian

// The big namespace of a round: its rules (what the mid-dump closers
// dump) and the notifications written there during the load.
const bigRules, notes = 1000, 200

// faultsNetns is the number of namespaces of one round.
func faultsNetns(t *testing.T) int {
	if v := os.Getenv("NLEMU_FAULTS_NETNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 32 {
			t.Fatalf("NLEMU_FAULTS_NETNS=%q: want a number of at least 32", v)
		}
		return n
	}
	return 512
}

// TestFaultsUnderLoad runs rounds of the fault load (one, or as many as
// -faults.duration allows) against one in-process server.
func TestFaultsUnderLoad(t *testing.T) {
	ip := ipcFindIP()
	if ip == "" {
		t.Skip("iproute2's ip is not installed")
	}
	if _, err := preload.Path(); err != nil {
		t.Skipf("cannot build the LD_PRELOAD shim: %v", err)
	}
	bin, err := ipcNlemuBinary()
	if err != nil {
		t.Fatal(err)
	}
	guard := newHostGuard(t)
	srv, sock := startTestServer(t, t.TempDir())
	f := &faults{t: t, srv: srv, sock: sock, ip: ip, nlemu: bin, guard: guard, n: faultsNetns(t), dir: t.TempDir()}
	end := time.Now().Add(*faultsDuration)
	for round := 0; ; round++ {
		f.round(round)
		if t.Failed() || !time.Now().Before(end) {
			t.Logf("%d round(s) of %d namespaces", round+1, f.n)
			return
		}
	}
}

type faults struct {
	t         *testing.T
	srv       *server.Server
	sock      string
	ip, nlemu string
	guard     *hostGuard
	n         int
	dir       string
}

// fltLine is one line of the ip batch and, for an observable one, how to
// see that it applied.
type fltLine struct {
	text string
	kind string // "", "rule", "route"
	key  string // rule: priority; route: family/prefix
	hops int    // route: nexthops (multipath)
}

// fltBatch is the batch every ip namespace runs: devices and addresses
// first, then rules, blackhole routes of both families and IPv4 multipath
// routes, interleaved.
func fltBatch() []fltLine {
	lines := []fltLine{
		{text: "link add v0 type veth peer name v1"},
		{text: "link set v0 up"},
		{text: "link set v1 up"},
		{text: "addr add 10.255.1.1/24 dev v0"},
		{text: "addr add 10.255.2.1/24 dev v1"},
	}
	for i := 0; i < 8; i++ {
		lines = append(lines,
			fltLine{fmt.Sprintf("rule add pref %d table %d", 1000+i, 100+i), "rule", strconv.Itoa(1000 + i), 0},
			fltLine{fmt.Sprintf("route add blackhole 10.0.%d.0/24", i), "route", fmt.Sprintf("4/10.0.%d.0/24", i), 0},
			fltLine{fmt.Sprintf("route add blackhole 2001:db8:%d::/64", i), "route", "6/" + netip.MustParsePrefix(fmt.Sprintf("2001:db8:%d::/64", i)).String(), 0})
		if i < 4 {
			lines = append(lines, fltLine{fmt.Sprintf("route add 192.168.%d.0/24 nexthop via 10.255.1.2 dev v0 nexthop via 10.255.2.2 dev v1", i),
				"route", fmt.Sprintf("4/192.168.%d.0/24", i), 2})
		}
	}
	return lines
}

// fltOp is one request of a Go client.
type fltOp struct {
	req  []byte
	kind string // "rule" or "route"
	key  string
	del  bool
}

// fltOps are the requests of one Go namespace: rules of both families and
// blackhole routes of both families, then deletes of a rule and a route.
func fltOps() []fltOp {
	var ops []fltOp
	seq := uint32(0)
	next := func() uint32 { seq++; return seq }
	for i := 0; i < 4; i++ {
		for _, fam := range []uint8{rtnl.AF_INET, rtnl.AF_INET6} {
			pref := uint32(2000 + 10*i + int(fam))
			ops = append(ops, fltOp{T.Msg(rtnl.RTM_NEWRULE, T.AddFlags, next(), T.Body(T.Hdr{Family: fam, Table: 100, Action: rtnl.FR_ACT_TO_TBL}, T.Pref(pref))),
				"rule", fmt.Sprintf("%d/%d", fam, pref), false})
		}
		ops = append(ops,
			fltOp{faultRoute(rtnl.RTM_NEWROUTE, next(), netip.MustParsePrefix(fmt.Sprintf("10.1.%d.0/24", i))), "route", fmt.Sprintf("4/10.1.%d.0/24", i), false},
			fltOp{faultRoute(rtnl.RTM_NEWROUTE, next(), netip.MustParsePrefix(fmt.Sprintf("2001:db8:1:%d::/64", i))), "route", "6/" + netip.MustParsePrefix(fmt.Sprintf("2001:db8:1:%d::/64", i)).String(), false})
	}
	ops = append(ops,
		fltOp{T.Msg(rtnl.RTM_DELRULE, T.DelFlags, next(), T.Body(T.Hdr{Family: rtnl.AF_INET, Table: 100, Action: rtnl.FR_ACT_TO_TBL}, T.Pref(2002))), "rule", "2/2002", true},
		fltOp{faultRoute(rtnl.RTM_DELROUTE, next(), netip.MustParsePrefix("10.1.0.0/24")), "route", "4/10.1.0.0/24", true})
	return ops
}

// faultRoute is `ip route add|del blackhole PREFIX` (rtmsg has
// fib_rule_hdr's layout).
func faultRoute(typ uint16, seq uint32, p netip.Prefix) []byte {
	fam := uint8(rtnl.AF_INET)
	if p.Addr().Is6() {
		fam = rtnl.AF_INET6
	}
	flags := uint16(T.AddFlags)
	if typ == rtnl.RTM_DELROUTE {
		flags = T.DelFlags
	}
	h := T.Hdr{Family: fam, DstLen: uint8(p.Bits()), Table: rtnl.RT_TABLE_MAIN, Res1: 3, Action: rtnl.RTN_BLACKHOLE}
	return T.Msg(typ, flags, seq, T.Body(h, T.Attr{Type: rtnl.RTA_DST, Data: p.Addr().AsSlice()}))
}

// fltState is what the checks read of one namespace: rule priorities per
// family ("2/1000") and routes by "family/prefix" with their hop count.
type fltState struct {
	rules  map[string]bool
	routes map[string]int
}

func (f *faults) round(round int) {
	t := f.t
	rng := rand.New(rand.NewSource(int64(round) + 1))
	baseG, baseFD := runtime.NumGoroutine(), fltOpenFDs(t)
	start := time.Now()
	prefix := fmt.Sprintf("flt%d-", round)
	nIP := f.n / 8 // ip processes cost far more than Go clients
	names := make([]string, f.n)
	for i := range names {
		names[i] = fmt.Sprintf("%s%d", prefix, i)
		if err := f.srv.Namespaces().Add(names[i]); err != nil {
			t.Fatal(err)
		}
	}
	big := prefix + "big"
	if err := f.srv.Namespaces().Add(big); err != nil {
		t.Fatal(err)
	}
	bigc := f.dial(t, big)
	for i := 0; i < bigRules; i++ {
		f.mustAck(bigc, T.Msg(rtnl.RTM_NEWRULE, T.AddFlags, uint32(i+1), T.Body(T.V4(100), T.Pref(uint32(10000+i)))))
	}
	lines := fltBatch()
	var text strings.Builder
	for _, l := range lines {
		text.WriteString(l.text + "\n")
	}
	batch := filepath.Join(f.dir, fmt.Sprintf("batch-%d", round))
	if err := os.WriteFile(batch, []byte(text.String()), 0o644); err != nil {
		t.Fatal(err)
	}

	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		deleted  = map[string]bool{}
		ipResult = map[string]string{} // "ok", "killed", or a failure
		goWant   = map[string]map[string]bool{}
		goMaybe  = map[string]map[string]bool{}
		problems []string
	)
	took := map[string]time.Duration{}
	mark := func(what string) {
		mu.Lock()
		took[what] = max(took[what], time.Since(start).Round(time.Millisecond))
		mu.Unlock()
	}
	problem := func(format string, args ...any) {
		mu.Lock()
		problems = append(problems, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	deleteLater := func(name string, after time.Duration) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(after)
			mu.Lock()
			deleted[name] = true
			mu.Unlock()
			if err := f.srv.Namespaces().Del(name); err != nil {
				problem("delete %s in use: %v", name, err)
			}
		}()
	}

	// The multicast listeners of the big namespace: one never reads, one
	// reads everything; a writer adds notes rules there during the load.
	// The deaf one's buffer holds 9 notifications (SO_RCVBUF 4096).
	deaf := f.dialUnix(t, big)
	ear := f.dialUnix(t, big)
	if err := deaf.SetSockopt(rtnl.SOL_SOCKET, rtnl.SO_RCVBUF, 4096); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*server.Client{deaf, ear} {
		if err := c.JoinGroup(rtnl.RTNLGRP_IPV4_RULE); err != nil {
			t.Fatal(err)
		}
	}
	var heard atomic.Int64
	earDone := make(chan struct{})
	go func() {
		defer close(earDone)
		for {
			b, err := ear.Recv()
			if err != nil {
				if !errors.Is(err, net.ErrClosed) && !errors.Is(err, server.ErrTimeout) {
					problem("reading listener: %v", err)
				}
				return
			}
			for _, m := range rtnl.SplitDatagram(b) {
				if uint16(m.Header.Type) == rtnl.RTM_NEWRULE {
					heard.Add(1)
				}
			}
		}
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer mark("notifications")
		w := f.dial(t, big)
		defer w.Close()
		for i := 0; i < notes; i++ {
			// Paced to the reading listener (no more than 50 ahead), so
			// that only the deaf one can overrun, however slow the
			// machine.
			for end := time.Now().Add(hangLimit); heard.Load() < int64(i-50) && time.Now().Before(end); time.Sleep(time.Millisecond) {
			}
			if a := f.ack(w, T.Msg(rtnl.RTM_NEWRULE, T.AddFlags, uint32(i+1), T.Body(T.V4(101), T.Pref(uint32(20000+i))))); a.Errno != 0 {
				problem("big namespace writer: rule %d: %v", i, a)
				return
			}
		}
	}()

	// ip -batch under nlemu exec, 8 at a time; every 8th killed at a
	// random moment, every 16th namespace deleted while in use.
	sem := make(chan struct{}, 8)
	for k := 0; k < nIP; k++ {
		name := names[k]
		kill := k%8 == 3
		var killAfter time.Duration
		if kill {
			killAfter = time.Duration(rng.Intn(40)) * time.Millisecond
		}
		if k%16 == 5 {
			deleteLater(name, time.Duration(rng.Intn(200))*time.Millisecond)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer mark("ip")
			sem <- struct{}{}
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(context.Background(), hangLimit)
			defer cancel()
			cmd := f.guard.command(ctx, f.ip, f.nlemu, "exec", "--socket", f.sock, "-n", name, "--", f.ip, "-batch", batch)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				problem("%s: %v", name, err)
				return
			}
			if kill {
				timer := time.AfterFunc(killAfter, func() { cmd.Process.Signal(syscall.SIGKILL) })
				defer timer.Stop()
			}
			err := cmd.Wait()
			res := "ok"
			var ee *exec.ExitError
			switch {
			case err == nil:
			case errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL:
				res = "killed"
			default:
				res = fmt.Sprintf("%v: %s", err, bytes.TrimSpace(out.Bytes()))
			}
			mu.Lock()
			ipResult[name] = res
			mu.Unlock()
		}()
	}

	// Go clients, 8 at a time, alternating in-process and Unix; every
	// 4th closes its socket right after one request (then reopens and goes
	// on), every 16th namespace is deleted while in use.
	ops := fltOps()
	for k := nIP; k < f.n; k++ {
		name := names[k]
		unix := k%2 == 0
		abandon := -1
		if k%4 == 1 {
			abandon = rng.Intn(len(ops))
		}
		if k%16 == 7 {
			deleteLater(name, time.Duration(rng.Intn(100))*time.Millisecond)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer mark("go")
			sem <- struct{}{}
			defer func() { <-sem }()
			want, maybe := map[string]bool{}, map[string]bool{}
			defer func() {
				mu.Lock()
				goWant[name], goMaybe[name] = want, maybe
				mu.Unlock()
			}()
			c, err := f.open(name, unix)
			if err != nil {
				// ENOENT: the namespace was deleted before the client
				// came.
				if !errors.Is(err, server.ErrNoNamespace) {
					problem("%s: open: %v", name, err)
				}
				return
			}
			for j, op := range ops {
				if err := c.Send(op.req); err != nil {
					problem("%s: send: %v", name, err)
					c.Close()
					return
				}
				if j == abandon {
					// The fault: the client goes away with its request in
					// flight, and comes back. The change may or may not
					// have applied (a delete: the key may be gone).
					maybe[op.kind+" "+op.key] = true
					delete(want, op.kind+" "+op.key)
					c.Close()
					if c, err = f.open(name, unix); err != nil {
						if !errors.Is(err, server.ErrNoNamespace) {
							problem("%s: reopen: %v", name, err)
						}
						return
					}
					continue
				}
				a, err := f.recvAck(c)
				if err != nil {
					problem("%s: op %d: %v", name, j, err)
					c.Close()
					return
				}
				key := op.kind + " " + op.key
				if a.Errno == int(syscall.ENOENT) && op.del && maybe[key] {
					// The add it deletes was in flight on the abandoned
					// socket, and has not applied (yet: the server reads
					// what that socket sent until its end).
					continue
				}
				if a.Errno != 0 {
					problem("%s: op %d (%s): %v", name, j, key, a)
					continue
				}
				if op.del {
					// An abandoned add of the key may still apply after
					// this: it stays "maybe".
					delete(want, key)
				} else {
					want[op.kind+" "+op.key] = true
				}
			}
			c.Close()
		}()
	}

	// Sockets closed in the middle of a dump of the big namespace.
	dump := T.Msg(rtnl.RTM_GETRULE, rtnl.NLM_F_REQUEST|rtnl.NLM_F_DUMP, 1, T.Body(T.Hdr{Family: rtnl.AF_INET}))
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer mark("dump closers")
			for i := 0; i < 20; i++ {
				c, err := f.open(big, i%2 == 0)
				if err != nil {
					problem("dump closer: %v", err)
					return
				}
				c.Send(dump)
				if i%4 < 2 {
					c.Recv() // one datagram of many, then away
				}
				c.Close()
			}
		}()
	}

	// Garbage: HELLOs that are not, and random datagrams after a good
	// HELLO (in the default namespace, which no check reads).
	for g := 0; g < 4; g++ {
		seed := rng.Int63()
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer mark("garbage")
			r := rand.New(rand.NewSource(seed))
			uc, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: f.sock, Net: "unixpacket"})
			if err != nil {
				problem("garbage dial: %v", err)
				return
			}
			uc.Write(fltGarbage(r))
			uc.SetReadDeadline(time.Now().Add(hangLimit))
			uc.Read(make([]byte, 4096)) // the NACK, or the close
			uc.Close()
			c, err := server.DialUnix(f.sock, server.Options{})
			if err != nil {
				problem("garbage client: %v", err)
				return
			}
			defer c.Close()
			for i := 0; i < 50; i++ {
				c.Send(fltGarbage(r))
			}
			// Still answered: an acked rule get, read past whatever the
			// garbage got.
			c.Send(T.Msg(rtnl.RTM_GETRULE, rtnl.NLM_F_REQUEST|rtnl.NLM_F_DUMP, 0xfa017, T.Body(T.Hdr{Family: rtnl.AF_INET})))
			c.SetRecvTimeout(hangLimit)
			for {
				b, err := c.Recv()
				if errors.Is(err, syscall.ENOBUFS) || errors.Is(err, syscall.EMSGSIZE) {
					continue
				}
				if err != nil {
					problem("garbage client after garbage: %v", err)
					return
				}
				// Its NLMSG_DONE, or EBUSY when a garbage datagram
				// happened to start a dump of its own.
				if ms := rtnl.SplitDatagram(b); len(ms) > 0 && ms[len(ms)-1].Header.Sequence == 0xfa017 {
					if typ := uint16(ms[len(ms)-1].Header.Type); typ == rtnl.NLMSG_DONE || typ == rtnl.NLMSG_ERROR {
						return
					}
				}
			}
		}()
	}

	wg.Wait()
	t.Logf("round %d: load and faults took %v (each part ended at %v)", round, time.Since(start).Round(time.Millisecond), took)
	// Every notification reached the reading listener; the deaf one got
	// ENOBUFS.
	for end := time.Now().Add(hangLimit); heard.Load() < notes && time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
	}
	if n := heard.Load(); n != notes {
		problem("the reading listener heard %d of %d notifications", n, notes)
	}
	// Over the Unix socket, what was already written into the socket comes
	// before the error.
	deaf.SetRecvTimeout(hangLimit)
	for n := 0; ; {
		b, err := deaf.Recv()
		if errors.Is(err, syscall.ENOBUFS) {
			if n >= notes {
				problem("the listener that never read got all %d notifications and ENOBUFS", n)
			}
			break
		}
		if err != nil {
			problem("the listener that never read: %v after %d notifications, want ENOBUFS", err, n)
			break
		}
		n += len(rtnl.SplitDatagram(b))
	}
	ear.Close()
	deaf.Close()
	<-earDone

	// The checks.
	ipCounts := map[string]int{}
	for k := 0; k < nIP; k++ {
		name := names[k]
		if deleted[name] {
			ipCounts["deleted"]++
			continue
		}
		res := ipResult[name]
		ipCounts[res]++
		if res != "ok" && res != "killed" {
			problem("%s: ip -batch: %s", name, res)
			continue
		}
		st := f.state(t, name)
		firstOff := -1 // the first observable line not applied
		allowed := map[string]bool{}
		for i, l := range lines {
			if l.kind == "" {
				continue
			}
			on := false
			if l.kind == "rule" {
				allowed["2/"+l.key] = true
				on = st.rules["2/"+l.key]
			} else if hops, ok := st.routes[l.key]; ok {
				on = true
				if hops != l.hops {
					problem("%s: %s has %d nexthops, want %d (half-applied)", name, l.key, hops, l.hops)
				}
			}
			switch {
			case on && firstOff >= 0:
				problem("%s: line %d (%q) applied after line %d, which is not", name, i+1, l.text, firstOff+1)
			case !on && firstOff < 0:
				firstOff = i
			}
			if !on && res == "ok" {
				problem("%s: line %d (%q) missing after ip -batch exited 0", name, i+1, l.text)
			}
		}
		if res == "killed" && firstOff > 0 {
			// Killed after some lines and before the end: mid-batch.
			ipCounts["killed mid-batch"]++
		}
		// Nothing that no line asked for.
		for key := range st.rules {
			if !allowed[key] && !fltDefaultRule(key) {
				problem("%s: unexpected rule %s", name, key)
			}
		}
	}
	goCounts := map[string]int{}
	for k := nIP; k < f.n; k++ {
		name := names[k]
		if deleted[name] {
			goCounts["deleted"]++
			continue
		}
		goCounts["checked"]++
		st := f.state(t, name)
		have := map[string]bool{}
		for key := range st.rules {
			if !fltDefaultRule(key) {
				have["rule "+key] = true
			}
		}
		for key := range st.routes {
			if strings.HasPrefix(key, "4/10.1.") || strings.HasPrefix(key, "6/2001:db8:1:") {
				have["route "+key] = true
			}
		}
		for key := range goWant[name] {
			if !have[key] {
				problem("%s: acknowledged %s is missing", name, key)
			}
		}
		for key := range have {
			if !goWant[name][key] && !goMaybe[name][key] {
				problem("%s: %s present but never acknowledged nor in flight", name, key)
			}
		}
	}
	t.Logf("round %d: ip batches %v; Go namespaces %v; checked at %v", round, ipCounts, goCounts, time.Since(start).Round(time.Millisecond))

	// Clean up, then the baselines and a server that still answers.
	bigc.Close()
	for _, n := range append(names, big) {
		if !deleted[n] {
			f.srv.Namespaces().Del(n)
		}
	}
	c := f.dialUnix(t, "default")
	if list, err := c.NetnsList(); err != nil || len(list) == 0 || list[0] != "default" {
		problem("NETNS_LIST after the load: %v %v", list, err)
	}
	if n := len(fltDump(t, c, dump)); n != 3 {
		problem("default namespace dump after the load: %d rules, want 3", n)
	}
	c.Close()
	var g, fds int
	settle := time.Now()
	for end := time.Now().Add(hangLimit); ; time.Sleep(10 * time.Millisecond) {
		g, fds = runtime.NumGoroutine(), fltOpenFDs(t)
		if g <= baseG && fds <= baseFD || time.Now().After(end) {
			break
		}
	}
	t.Logf("round %d: goroutines %d (before %d), descriptors %d (before %d), %v after the cleanup", round, g, baseG, fds, baseFD, time.Since(settle).Round(time.Millisecond))
	if g > baseG || fds > baseFD {
		var stacks strings.Builder
		pprof.Lookup("goroutine").WriteTo(&stacks, 1)
		problem("after the round: %d goroutines (before: %d), %d descriptors (before: %d)\n%s", g, baseG, fds, baseFD, stacks.String())
	}
	for i, p := range problems {
		if i == 20 {
			t.Errorf("... and %d more", len(problems)-20)
			break
		}
		t.Error(p)
	}
}

// fltDefaultRule reports whether key is one of a namespace's default rules.
func fltDefaultRule(key string) bool {
	switch key {
	case "2/0", "2/32766", "2/32767", "10/0", "10/32766":
		return true
	}
	return false
}

// fltGarbage is a random datagram: random bytes, half of them behind a
// header that claims an rtnetlink type and a plausible length.
func fltGarbage(r *rand.Rand) []byte {
	// At least one byte: an empty datagram reads as end of stream on a
	// SEQPACKET socket, so the server hangs up (a known limit of the
	// transport, not a fault of this test's making).
	b := make([]byte, 1+r.Intn(300))
	r.Read(b)
	if len(b) >= 16 && r.Intn(2) == 0 {
		fltNE.PutUint32(b, uint32(16+r.Intn(len(b)-15)))
		fltNE.PutUint16(b[4:], uint16(rtnl.NLMSG_MIN_TYPE+r.Intn(100)))
	}
	return b
}

func (f *faults) dial(t *testing.T, ns string) *server.Client {
	c, err := f.srv.Dial(server.Options{Namespace: ns, ExtAck: true})
	if err != nil {
		t.Fatal(err)
	}
	c.SetRecvTimeout(hangLimit)
	return c
}

func (f *faults) dialUnix(t *testing.T, ns string) *server.Client {
	c, err := server.DialUnix(f.sock, server.Options{Namespace: ns, ExtAck: true})
	if err != nil {
		t.Fatal(err)
	}
	c.SetRecvTimeout(hangLimit)
	return c
}

// open opens a socket in ns, over the Unix socket or in-process.
func (f *faults) open(ns string, unix bool) (*server.Client, error) {
	var c *server.Client
	var err error
	if unix {
		c, err = server.DialUnix(f.sock, server.Options{Namespace: ns, ExtAck: true})
	} else {
		c, err = f.srv.Dial(server.Options{Namespace: ns, ExtAck: true})
	}
	if err != nil {
		return nil, err
	}
	c.SetRecvTimeout(hangLimit)
	return c, nil
}

// recvAck reads the NLMSG_ERROR answering the last request.
func (f *faults) recvAck(c *server.Client) (T.Ack, error) {
	b, err := c.Recv()
	if err != nil {
		return T.Ack{}, err
	}
	ms := rtnl.SplitDatagram(b)
	if len(ms) != 1 || uint16(ms[0].Header.Type) != rtnl.NLMSG_ERROR {
		return T.Ack{}, fmt.Errorf("not an ack: % x", b)
	}
	return T.ParseAck(ms[0]), nil
}

func (f *faults) ack(c *server.Client, req []byte) T.Ack {
	if err := c.Send(req); err != nil {
		return T.Ack{Errno: -1, Msg: err.Error()}
	}
	a, err := f.recvAck(c)
	if err != nil {
		return T.Ack{Errno: -1, Msg: err.Error()}
	}
	return a
}

func (f *faults) mustAck(c *server.Client, req []byte) {
	if a := f.ack(c, req); a.Errno != 0 {
		f.t.Fatalf("request: %v", a)
	}
}

// state reads a namespace's rules and routes of both families through a
// fresh socket.
func (f *faults) state(t *testing.T, ns string) fltState {
	c := f.dial(t, ns)
	defer c.Close()
	st := fltState{rules: map[string]bool{}, routes: map[string]int{}}
	for _, fam := range []uint8{rtnl.AF_INET, rtnl.AF_INET6} {
		for _, m := range fltDump(t, c, T.Msg(rtnl.RTM_GETRULE, rtnl.NLM_F_REQUEST|rtnl.NLM_F_DUMP, 1, T.Body(T.Hdr{Family: fam}))) {
			if len(m.Data) < 12 {
				continue
			}
			for a := range rtnl.Attrs(m.Data[12:]) {
				if a.Type == rtnl.FRA_PRIORITY && len(a.Data) == 4 {
					st.rules[fmt.Sprintf("%d/%d", m.Data[0], fltNE.Uint32(a.Data))] = true
				}
			}
			if !fltHasAttr(m.Data[12:], rtnl.FRA_PRIORITY) {
				st.rules[fmt.Sprintf("%d/0", m.Data[0])] = true
			}
		}
		body := make([]byte, 12)
		body[0] = fam
		for _, m := range fltDump(t, c, T.Msg(rtnl.RTM_GETROUTE, rtnl.NLM_F_REQUEST|rtnl.NLM_F_DUMP, 2, body)) {
			if len(m.Data) < 12 || m.Data[4] != rtnl.RT_TABLE_MAIN {
				continue
			}
			var dst netip.Addr
			hops := 0
			for a := range rtnl.Attrs(m.Data[12:]) {
				switch a.Type {
				case rtnl.RTA_DST:
					dst, _ = netip.AddrFromSlice(a.Data)
				case rtnl.RTA_MULTIPATH:
					for d := a.Data; len(d) >= 8; {
						n := int(fltNE.Uint16(d))
						if n < 8 || n > len(d) {
							break
						}
						hops++
						d = d[(n+3)&^3:]
					}
				}
			}
			if dst.IsValid() {
				v := 4
				if fam == rtnl.AF_INET6 {
					v = 6
				}
				st.routes[fmt.Sprintf("%d/%s", v, netip.PrefixFrom(dst, int(m.Data[1])))] = hops
			}
		}
	}
	return st
}

func fltHasAttr(b []byte, typ uint16) bool {
	for a := range rtnl.Attrs(b) {
		if a.Type == typ {
			return true
		}
	}
	return false
}

// fltDump runs one dump and returns its messages (copies).
func fltDump(t *testing.T, c *server.Client, req []byte) []rtnl.Message {
	t.Helper()
	if err := c.Send(req); err != nil {
		t.Fatal(err)
	}
	var out []rtnl.Message
	for {
		b, err := c.Recv()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range rtnl.SplitDatagram(b) {
			switch uint16(m.Header.Type) {
			case rtnl.NLMSG_DONE:
				return out
			case rtnl.NLMSG_ERROR:
				t.Fatalf("dump: %v", T.ParseAck(m))
			}
			out = append(out, m)
		}
	}
}

// fltOpenFDs counts this process's open descriptors.
func fltOpenFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}
