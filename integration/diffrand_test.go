package integration

// TestDiffRand is the randomized differential test: random sequences of `ip`
// commands (rules, routes, addresses and links of both families, valid and
// invalid; diffrand_gen_test.go) run one by one on a fresh kernel network
// namespace and on a fresh nlemu namespace (under the host guard), and after
// every command these must be the same on both sides:
//
//   - the command's exit status, stdout and stderr;
//   - after a command the kernel accepted (and after the last one), the
//     views `ip -d -batch -` of "link show", "addr show", "rule show" and
//     "route show table all" (both families), and `ip -6 -d -batch -` of
//     "rule show" and "route show table all".
//
// The first difference ends the sequence (what follows would compare
// diverged states) and is reported with the commands that led to it, ready to
// replay by hand or to pin as a testdata/ipcases case.
//
// The default run (CI) is a few fixed seeds; a longer hunt:
//
//	go test ./integration -run TestDiffRand -diffrand 200 -diffrand.len 60 -v
//	go test ./integration -run TestDiffRand -diffrand.only 1234,1250   # these sequences again
//
// Normalizations (drNormalize), each for something that legitimately
// differs between two runs of the same commands, even on two kernels:
//
//   - the seconds left of a finite address lifetime (valid_lft / preferred_lft
//     NNNsec) and of a route's expiry (expires NNNsec): they count down
//     between the two sides' runs;
//   - the bridge timers of `ip -d link` (hello_timer, tcn_timer,
//     topology_change_timer, gc_timer and the port's message_age_timer,
//     forward_delay_timer, hold_timer): running clocks.
//
// Nothing else is rewritten: every generated link gets a fixed MAC address
// (drMAC), so IPv6 link-local addresses and bridge ids are the same on both
// sides. The kernel side settles (ipcSettle: linkwatch, DAD) before its
// views are taken; nlemu does that work synchronously.

import (
	"flag"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

var (
	diffRandN    = flag.Int("diffrand", 0, "TestDiffRand: number of random sequences (0: the fixed-seed default run)")
	diffRandSeed = flag.Uint64("diffrand.seed", 0, "TestDiffRand: seed of the first sequence (0: 1)")
	diffRandLen  = flag.Int("diffrand.len", 0, "TestDiffRand: commands per sequence (0: 30)")
	diffRandOnly = flag.String("diffrand.only", "", "TestDiffRand: comma-separated seeds to run (instead of -diffrand and -diffrand.seed)")
)

// drDefaultSeeds are the sequences CI runs (a few seconds each).
const drDefaultSeeds = 3

// drViews are the state views compared after each accepted command: the
// options of one `ip OPTS -batch -` run and the batch lines it reads.
var drViews = []struct {
	opts  []string
	lines string
}{
	{[]string{"-d"}, "link show\naddr show\nrule show\nroute show table all\n"},
	{[]string{"-6", "-d"}, "rule show\nroute show table all\n"},
}

var drNormRes = []struct {
	re  *regexp.Regexp
	rep string
}{
	{regexp.MustCompile(`\b(valid_lft|preferred_lft|expires) \d+sec\b`), "$1 <N>sec"},
	{regexp.MustCompile(`\b(\w+_timer) +\d+\.\d+`), "$1 <T>"},
}

// drNormalize rewrites what the package comment lists, and nothing else.
func drNormalize(b []byte) []byte {
	for _, n := range drNormRes {
		b = n.re.ReplaceAll(b, []byte(n.rep))
	}
	return b
}

func TestDiffRandNormalize(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"       valid_lft 99sec preferred_lft 0sec\n", "       valid_lft <N>sec preferred_lft <N>sec\n"},
		{"       valid_lft forever preferred_lft forever\n", "       valid_lft forever preferred_lft forever\n"},
		{"2001:db8::/64 dev v0 proto static metric 1024 expires 598sec pref medium\n", "2001:db8::/64 dev v0 proto static metric 1024 expires <N>sec pref medium\n"},
		{"hello_timer    0.00 tcn_timer    0.00 topology_change_timer    0.00 gc_timer  123.45 vlan_default_pvid 1",
			"hello_timer <T> tcn_timer <T> topology_change_timer <T> gc_timer <T> vlan_default_pvid 1"},
		{"metric 1024 pref medium", "metric 1024 pref medium"},
	} {
		if got := string(drNormalize([]byte(tc.in))); got != tc.want {
			t.Errorf("drNormalize(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestDiffRandGenerator: the generator is deterministic per seed and draws
// every kind of command.
func TestDiffRandGenerator(t *testing.T) {
	a, b := newDRGen(7), newDRGen(7)
	kinds := map[string]int{}
	for range 2000 {
		x, y := strings.Join(a.next(), " "), strings.Join(b.next(), " ")
		if x != y {
			t.Fatalf("same seed, different lines: %q, %q", x, y)
		}
		w := strings.Fields(strings.TrimPrefix(x, "-6 "))
		kinds[w[0]]++
	}
	for _, k := range []string{"rule", "route", "addr", "link"} {
		if kinds[k] < 100 {
			t.Errorf("%d %s commands in 2000 lines", kinds[k], k)
		}
	}
	g := newDRGen(1)
	g.learn("1: lo: <LOOPBACK> mtu 65536\n    inet 127.0.0.1/8 scope host lo\n3: v0@v1: <BROADCAST> mtu 1500\n    inet6 2001:db8::1/64 scope global\n")
	if want := []string{"lo", "v0"}; strings.Join(g.links, ",") != strings.Join(want, ",") {
		t.Errorf("learned links %q, want %q", g.links, want)
	}
	if want := "127.0.0.1/8 dev lo,2001:db8::1/64 dev v0"; strings.Join(g.addrs, ",") != want {
		t.Errorf("learned addrs %q, want %q", g.addrs, want)
	}
}

func TestDiffRand(t *testing.T) {
	env := newIPCEnv(t)
	n, seed, length := drDefaultSeeds, *diffRandSeed, *diffRandLen
	if *diffRandN > 0 {
		n = *diffRandN
	}
	if seed == 0 {
		seed = 1
	}
	if length <= 0 {
		length = 30
	}
	seeds := make([]uint64, n)
	for i := range seeds {
		seeds[i] = seed + uint64(i)
	}
	if *diffRandOnly != "" {
		seeds = seeds[:0]
		for _, f := range strings.Split(*diffRandOnly, ",") {
			v, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64)
			if err != nil {
				t.Fatalf("-diffrand.only: %v", err)
			}
			seeds = append(seeds, v)
		}
	}
	var summary []string
	for _, s := range seeds {
		t.Run(fmt.Sprintf("seed%d", s), func(t *testing.T) {
			if d := drRunSeq(t, env, s, length); d != "" {
				summary = append(summary, fmt.Sprintf("seed %d: %s", s, d))
			}
		})
	}
	if len(summary) > 0 {
		t.Logf("%d of %d sequences differ:\n  %s", len(summary), len(seeds), strings.Join(summary, "\n  "))
	}
}

// drSettleDown waits (up to a second) until no IPv6 address of the kernel
// side's lo is tentative: addrconf_dad_start() hands even lo's addresses
// to the DAD work queue, which completes them a moment after the command
// returned, down or not; ipcSettle waits only for devices with carrier.
// nlemu completes them at once.
func drSettleDown(t *testing.T, kernel *ipcSide) {
	t.Helper()
	for range 100 {
		r := kernel.run(nil, "-6", "-o", "addr", "show")
		tentative := false
		for _, l := range strings.Split(string(r.Stdout), "\n") {
			if strings.HasPrefix(l, "1: ") && strings.Contains(l, " tentative") { // ifindex 1: the loopback device
				tentative = true
			}
		}
		if !tentative {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// drRunSeq runs one sequence; it returns the first difference's one-line
// summary ("" if none) after reporting it in full as a test error.
func drRunSeq(t *testing.T, env *ipcEnv, seed uint64, length int) string {
	kernel, nlemu := env.pair(t)
	g := newDRGen(seed)
	var done []string
	fail := func(what, diff string) string {
		t.Errorf("seed %d: %s differs after:\n  ip %s\n%s", seed, what, strings.Join(done, "\n  ip "), diff)
		return fmt.Sprintf("%s after `ip %s`", what, done[len(done)-1])
	}
	prelude := [][]string{}
	if g.pct(80) {
		prelude = append(prelude, []string{"link", "set", "lo", "up"})
	}
	if g.pct(50) {
		// A CNI-style start: a veth pair up with an address of each
		// family, so that gateways resolve and devices have carrier.
		prelude = append(prelude, strings.Fields("link add v0 address "+drMAC("v0")+" type veth peer name v1 address "+drMAC("v1")))
		if g.pct(60) {
			prelude = append(prelude, strings.Fields("link set v0 addrgenmode none"), strings.Fields("link set v1 addrgenmode none"))
		}
		prelude = append(prelude, strings.Fields("link set v0 up"), strings.Fields("link set v1 up"),
			strings.Fields("addr add 10.1.2.1/24 dev v0"), strings.Fields("addr add 2001:db8:1::1/64 dev v0 nodad"))
	}
	for i := 0; i < length+len(prelude); i++ {
		var args []string
		if i < len(prelude) {
			args = prelude[i]
		} else {
			args = g.next()
		}
		done = append(done, strings.Join(args, " "))
		k, n := kernel.run(nil, args...), nlemu.run(nil, args...)
		k.Stdout, n.Stdout = drNormalize(k.Stdout), drNormalize(n.Stdout)
		if d := ipcDifference(k, n, nil); d != "" {
			return fail("the command", d)
		}
		last := i == length+len(prelude)-1
		if k.Code != 0 && !last {
			continue
		}
		ipcSettle(t, kernel)
		drSettleDown(t, kernel)
		for vi, v := range drViews {
			args := append(append([]string(nil), v.opts...), "-batch", "-")
			kv := kernel.run([]byte(v.lines), args...)
			nv := nlemu.run([]byte(v.lines), args...)
			kv.Stdout, nv.Stdout = drNormalize(kv.Stdout), drNormalize(nv.Stdout)
			if vi == 0 {
				g.learn(string(kv.Stdout))
			}
			if d := ipcDifference(kv, nv, nil); d != "" {
				return fail(fmt.Sprintf("the view `ip %s` (%q)", strings.Join(args, " "), v.lines), d)
			}
		}
	}
	return ""
}
