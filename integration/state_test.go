package integration

// Durable state (issue 10 item 6): `nlemu serve --state DIR` is SIGKILLed
// in the middle of a concurrent load of Go clients and restarted on the
// same directory; every change acknowledged before the kill must be there
// and nothing else.
//
// "Nothing else" precisely: each worker sends one change at a time and
// waits for its ACK, so at the kill at most one change per worker is in
// flight. That one may be durable without its ACK having been sent (its
// fdatasync completed, the kill came before the reply), so the restored
// state of a worker's namespace must be its model after exactly its
// acknowledged changes, or after those and the one in flight — never a
// later change, never an unsent one, never a gap, never half of one. The
// loops accumulate: each restart must also keep what every earlier loop
// left, and no namespace may exist that no worker created.

import (
	"encoding/binary"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nlemu/nlemu/rtnl"
	"github.com/nlemu/nlemu/server"
)

var stateLoops = flag.Int("state-loops", 3, "kill-and-restart rounds of TestStateSurvivesSIGKILLUnderLoad (the acceptance runs 20)")

var sne = binary.NativeEndian

// stateServer runs `nlemu serve --state dir` and waits until it answers.
func stateServer(t *testing.T, dir, sock string) *exec.Cmd {
	t.Helper()
	bin, err := ipcNlemuBinary()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd := exec.Command(bin, "serve", "--socket", sock, "--state", dir)
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for end := time.Now().Add(hangLimit); ; time.Sleep(5 * time.Millisecond) {
		c, err := server.DialUnix(sock, server.Options{})
		if err == nil {
			c.Close()
			return cmd
		}
		if time.Now().After(end) {
			t.Fatalf("server never listened: %v\n%s", err, stderr.String())
		}
	}
}

// stateOp is one change of a worker's script.
type stateOp struct {
	kind  byte // 'r' rule add, 'd' rule del, 'b' blackhole route, 'l' veth pair
	fam   uint8
	prio  uint32
	route string
	link  string
}

// script is worker w's changes: rules with explicit priorities in both
// families, deletes of earlier ones, blackhole routes, veth pairs.
func script(n int) []stateOp {
	ops := make([]stateOp, n)
	for i := range ops {
		fam := uint8(rtnl.AF_INET)
		if i%2 == 1 {
			fam = rtnl.AF_INET6
		}
		switch {
		case i%11 == 10:
			ops[i] = stateOp{kind: 'l', link: fmt.Sprintf("v%d", i)}
		case i%7 == 6:
			ops[i] = stateOp{kind: 'b', route: fmt.Sprintf("10.%d.%d.0/24", i/256, i%256)}
		case i%5 == 4:
			// Delete the rule added two ops before, of the same family.
			ops[i] = stateOp{kind: 'd', fam: fam, prio: ops[i-2].prio}
		default:
			ops[i] = stateOp{kind: 'r', fam: fam, prio: uint32(1000 + i)}
		}
	}
	// A delete whose rule was not an add (the op two before was a link or
	// route) becomes an add of its own.
	for i := range ops {
		if ops[i].kind == 'd' && ops[i-2].kind != 'r' {
			ops[i] = stateOp{kind: 'r', fam: ops[i].fam, prio: uint32(1000 + i)}
		}
	}
	return ops
}

// model is a namespace's state after a prefix of its script, as the
// dumps below report it.
func model(ops []stateOp) string {
	var rules, routes, links []string
	for _, op := range ops {
		switch op.kind {
		case 'r':
			rules = append(rules, fmt.Sprintf("rule %d %d", op.fam, op.prio))
		case 'd':
			rules = slices.DeleteFunc(rules, func(s string) bool { return s == fmt.Sprintf("rule %d %d", op.fam, op.prio) })
		case 'b':
			routes = append(routes, "blackhole "+op.route)
		case 'l':
			links = append(links, "link "+op.link, "link p"+op.link)
		}
	}
	all := append(append(rules, routes...), links...)
	sort.Strings(all)
	return strings.Join(all, "\n")
}

func stateAttr(typ uint16, data []byte) []byte {
	b := sne.AppendUint16(nil, uint16(4+len(data)))
	b = sne.AppendUint16(b, typ)
	b = append(b, data...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// request encodes op as `ip` would.
func (op stateOp) request(seq uint32) []byte {
	const f = rtnl.NLM_F_REQUEST | rtnl.NLM_F_ACK
	switch op.kind {
	case 'r', 'd':
		hdr := []byte{op.fam, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
		attrs := stateAttr(rtnl.FRA_PRIORITY, sne.AppendUint32(nil, op.prio))
		if op.kind == 'd' {
			return rtnl.AppendMessage(nil, rtnl.RTM_DELRULE, f, seq, 0, hdr, attrs)
		}
		hdr[4], hdr[7] = 100, rtnl.FR_ACT_TO_TBL
		return rtnl.AppendMessage(nil, rtnl.RTM_NEWRULE, f|rtnl.NLM_F_EXCL|rtnl.NLM_F_CREATE, seq, 0, hdr, attrs)
	case 'b':
		p := netip.MustParsePrefix(op.route)
		rtm := []byte{rtnl.AF_INET, uint8(p.Bits()), 0, 0, 254, 3, 0, 6, 0, 0, 0, 0}
		return rtnl.AppendMessage(nil, rtnl.RTM_NEWROUTE, f|rtnl.NLM_F_EXCL|rtnl.NLM_F_CREATE, seq, 0, rtm, stateAttr(1, p.Addr().AsSlice()))
	default:
		ifi := make([]byte, 16)
		peer := append(append([]byte(nil), ifi...), stateAttr(rtnl.IFLA_IFNAME, append([]byte("p"+op.link), 0))...)
		info := stateAttr(rtnl.IFLA_LINKINFO, append(stateAttr(1, []byte("veth\x00")), stateAttr(2, stateAttr(1, peer))...))
		return rtnl.AppendMessage(nil, rtnl.RTM_NEWLINK, f|rtnl.NLM_F_EXCL|rtnl.NLM_F_CREATE, seq, 0, ifi, stateAttr(rtnl.IFLA_IFNAME, append([]byte(op.link), 0)), info)
	}
}

// observed is namespace ns's state from its dumps, in model's terms.
func observed(t *testing.T, sock, ns string) string {
	t.Helper()
	c, err := server.DialUnix(sock, server.Options{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetRecvTimeout(hangLimit)
	var all []string
	dump := func(typ uint16, hdr []byte, each func(body []byte)) {
		if err := c.Send(rtnl.AppendMessage(nil, typ, rtnl.NLM_F_REQUEST|rtnl.NLM_F_DUMP, 1, 0, hdr)); err != nil {
			t.Fatal(err)
		}
		for {
			b, err := c.Recv()
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range rtnl.SplitDatagram(b) {
				if uint16(m.Header.Type) == rtnl.NLMSG_DONE {
					return
				}
				each(m.Data)
			}
		}
	}
	dump(rtnl.RTM_GETRULE, make([]byte, 12), func(b []byte) {
		var prio uint32
		for a := range rtnl.Attrs(b[12:]) {
			if a.Type == rtnl.FRA_PRIORITY {
				prio = sne.Uint32(a.Data)
			}
		}
		if prio >= 1000 && prio < 32765 {
			all = append(all, fmt.Sprintf("rule %d %d", b[0], prio))
		}
	})
	dump(rtnl.RTM_GETROUTE, []byte{rtnl.AF_INET, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, func(b []byte) {
		if b[7] != 6 { // RTN_BLACKHOLE
			return
		}
		for a := range rtnl.Attrs(b[12:]) {
			if a.Type == 1 {
				all = append(all, "blackhole "+netip.PrefixFrom(netip.AddrFrom4([4]byte(a.Data)), int(b[1])).String())
			}
		}
	})
	dump(rtnl.RTM_GETLINK, make([]byte, 16), func(b []byte) {
		for a := range rtnl.Attrs(b[16:]) {
			if a.Type == rtnl.IFLA_IFNAME {
				if name := strings.TrimRight(string(a.Data), "\x00"); name != "lo" {
					all = append(all, "link "+name)
				}
			}
		}
	})
	sort.Strings(all)
	return strings.Join(all, "\n")
}

// worker is one client's progress: its namespace, whether its netns add
// was acknowledged, how many changes were, and whether one was in flight.
type worker struct {
	ns       string
	ops      []stateOp
	created  bool // netns add acknowledged
	acked    int
	inFlight bool // a change (or the netns add) was sent and not answered
}

func (w *worker) run(sock string) {
	adm, err := server.DialUnix(sock, server.Options{})
	if err != nil {
		return
	}
	w.inFlight = true
	err = adm.NetnsAdd(w.ns)
	adm.Close()
	if err != nil {
		return
	}
	w.created, w.inFlight = true, false
	c, err := server.DialUnix(sock, server.Options{Namespace: w.ns})
	if err != nil {
		return
	}
	defer c.Close()
	for i, op := range w.ops {
		w.inFlight = true
		if c.Send(op.request(uint32(i+1))) != nil {
			return
		}
		b, err := c.Recv()
		if err != nil {
			return
		}
		ms := rtnl.SplitDatagram(b)
		if len(ms) != 1 || uint16(ms[0].Header.Type) != rtnl.NLMSG_ERROR || sne.Uint32(ms[0].Data) != 0 {
			w.acked = -1 - i // a refused change: the script is wrong
			w.inFlight = false
			return
		}
		w.acked, w.inFlight = i+1, false
	}
}

// TestStateSurvivesSIGKILLUnderLoad: -state-loops rounds of: start the
// server on the state directory, check everything earlier rounds left,
// run 16 workers in new namespaces, SIGKILL the server at a random moment,
// and check each worker's namespace against its model.
func TestStateSurvivesSIGKILLUnderLoad(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	sock := filepath.Join(t.TempDir(), "nlemu.sock")
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	want := map[string][]string{} // namespace -> the states it may be in
	const workers, opsPer = 16, 400
	for loop := range *stateLoops {
		cmd := stateServer(t, dir, sock)
		checkState(t, sock, want, fmt.Sprintf("after restart %d", loop))
		ws := make([]*worker, workers)
		var wg sync.WaitGroup
		for i := range ws {
			ws[i] = &worker{ns: fmt.Sprintf("L%dw%d", loop, i), ops: script(opsPer)}
			wg.Add(1)
			go func(w *worker) { defer wg.Done(); w.run(sock) }(ws[i])
		}
		// Kill somewhere in the load: the workers are at different
		// points of their scripts, some perhaps still creating their
		// namespace.
		time.Sleep(time.Duration(20+rng.IntN(400)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		wg.Wait()
		total := 0
		for _, w := range ws {
			if w.acked < 0 {
				t.Fatalf("%s: change %d refused", w.ns, -w.acked-1)
			}
			total += w.acked
			switch {
			case !w.created && w.inFlight:
				want[w.ns] = []string{"absent", ""} // add not answered: either
			case !w.created:
				want[w.ns] = []string{"absent"}
			case w.inFlight && w.acked < len(w.ops):
				want[w.ns] = []string{model(w.ops[:w.acked]), model(w.ops[:w.acked+1])}
			default:
				want[w.ns] = []string{model(w.ops[:w.acked])}
			}
		}
		t.Logf("loop %d: %d changes acknowledged before the kill", loop, total)
	}
	stateServer(t, dir, sock)
	checkState(t, sock, want, "after the last restart")
}

// checkState compares every namespace with the states it may be in, and
// the namespace list with the ones that may exist.
func checkState(t *testing.T, sock string, want map[string][]string, when string) {
	t.Helper()
	adm, err := server.DialUnix(sock, server.Options{})
	if err != nil {
		t.Fatal(err)
	}
	names, err := adm.NetnsList()
	adm.Close()
	if err != nil {
		t.Fatal(err)
	}
	present := map[string]bool{}
	for _, n := range names {
		present[n] = true
		if _, ok := want[n]; !ok && n != "default" {
			t.Fatalf("%s: namespace %s exists, and no worker's acknowledged or pending add made it", when, n)
		}
	}
	for ns, states := range want {
		if !present[ns] {
			if !slices.Contains(states, "absent") {
				t.Fatalf("%s: namespace %s, acknowledged, is missing", when, ns)
			}
			continue
		}
		got := observed(t, sock, ns)
		if !slices.Contains(states, got) {
			t.Fatalf("%s: namespace %s is in none of the states its acknowledged changes allow\ngot:\n%s\nwant one of:\n%s", when, ns, got, strings.Join(states, "\n--- or ---\n"))
		}
		// From now on it is in the state it was found in.
		want[ns] = []string{got}
	}
}
