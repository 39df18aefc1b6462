package integration

// iproute2 differential tests that do not fit a single batch file:
//
//	go test ./integration -run 'TestIPSaveRestore|TestIPMonitor|TestIPSeedBatch' -v
//
// Each runs the same experiment against a fresh kernel namespace and a fresh
// nlemu namespace and compares what ip prints (see ip_harness_test.go).

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// ipcSetup runs `ip OPTS -force -batch -` with the given lines on both sides
// and requires the same result.
func ipcSetup(t *testing.T, k, n *ipcSide, opts []string, lines ...string) {
	t.Helper()
	in := []byte(strings.Join(lines, "\n") + "\n")
	args := append(append([]string{}, opts...), "-force", "-batch", "-")
	kr, nr := k.run(in, args...), n.run(in, args...)
	if kr.Code != 0 {
		t.Fatalf("setup batch fails on the kernel (exit %d): %s", kr.Code, kr.Stderr)
	}
	ipcCompare(t, strings.Join(args, " ")+" (setup)", kr, nr, nil)
}

// ipcCompareShow compares `ip ARGS` on both sides and returns the kernel's
// stdout.
func ipcCompareShow(t *testing.T, k, n *ipcSide, args ...string) []byte {
	t.Helper()
	kr, nr := k.run(nil, args...), n.run(nil, args...)
	render := ipcLines
	if strings.Contains(strings.Join(args, " "), "-j") {
		render = ipcJSONLines
	}
	ipcCompare(t, strings.Join(args, " "), kr, nr, render)
	return kr.Stdout
}

// TestIPSaveRestore: `ip rule save` in one namespace, `ip rule restore` of
// that stream into a fresh one, on both sides; and nlemu restoring the
// kernel's stream. restore adds every saved rule with REQUEST|CREATE|ACK (no
// EXCL, so the fresh namespace's default rules are duplicated, and the
// priority-0 rule, saved without FRA_PRIORITY, gets an automatic priority).
func TestIPSaveRestore(t *testing.T) {
	env := newIPCEnv(t)
	for _, fam := range []struct {
		name  string
		opts  []string
		setup []string
	}{
		{"IPv4", nil, []string{
			"rule add from 10.0.0.0/8 table 100 pref 10",
			"rule add not to 192.168.0.0/16 iif lo oif nosuchdev table 1000 pref 11",
			"rule add fwmark 0x10/0xf0 uidrange 5-10 ipproto tcp sport 80 dport 90-100 tun_id 3 table 101 pref 12",
			"rule add tos 0x10 realms 2/3 suppress_prefixlength 0 suppress_ifgroup 4 table main pref 13",
			"rule add pref 14 goto 16",
			"rule add pref 5 goto 13",
			"rule add pref 16 blackhole",
			"rule add l3mdev pref 17",
			"rule add protocol static table 102",
			"rule add pref 0 table 103",
		}},
		{"IPv6", []string{"-6"}, []string{
			"rule add from 2001:db8::/32 table 100 pref 10",
			"rule add not to 2001:db8:1::1 iif lo oif nosuchdev table 1000 pref 11",
			"rule add fwmark 5 tos EF uidrange 5-10 ipproto udp sport 53 table 101 pref 12",
			"rule add pref 14 goto 32766",
			"rule add pref 15 unreachable",
			"rule add protocol boot table 102",
		}},
	} {
		t.Run(fam.name, func(t *testing.T) {
			k1, n1 := env.pair(t)
			ipcSetup(t, k1, n1, fam.opts, fam.setup...)
			save := append(append([]string{}, fam.opts...), "rule", "save")
			ks, ns := k1.run(nil, save...), n1.run(nil, save...)
			if ks.Code != 0 || len(ks.Stdout) < 4 {
				t.Fatalf("kernel: ip %s: exit %d %s", strings.Join(save, " "), ks.Code, ks.Stderr)
			}
			kSaved, nSaved := ks.Stdout, ns.Stdout
			ks.Stdout, ns.Stdout = ipcNormalizeSave(ks.Stdout), ipcNormalizeSave(ns.Stdout)
			ipcCompare(t, strings.Join(save, " "), ks, ns, ipcSaveLines)

			restore := append(append([]string{}, fam.opts...), "rule", "restore")
			k2, n2 := env.pair(t)
			kRestore := k2.run(kSaved, restore...)
			ipcCompare(t, strings.Join(restore, " "), kRestore, n2.run(nSaved, restore...), nil)
			kr := k2.run(nil, append(append([]string{}, fam.opts...), "rule", "show")...)
			t.Logf("kernel after restore:\n%s", kr.Stdout)
			for _, show := range [][]string{{"rule", "show"}, {"-d", "-j", "rule", "show"}} {
				args := append(append([]string{}, fam.opts...), show...)
				ipcCompareShow(t, k2, n2, args...)
			}
			// nlemu restoring the stream the kernel wrote.
			n3 := env.nlemuNS(t)
			ipcCompare(t, strings.Join(restore, " ")+" (the kernel's stream, into nlemu)",
				kRestore, n3.run(kSaved, restore...), nil)
			for _, show := range [][]string{{"rule", "show"}, {"-d", "-j", "rule", "show"}} {
				args := append(append([]string{}, fam.opts...), show...)
				ipcCompareShow(t, k2, n3, args...)
			}
		})
	}
}

// ipcMonitor is a running `ip monitor rule` whose output lines arrive on a
// channel.
type ipcMonitor struct {
	stop  func() ipcResult // SIGTERM, wait, and what it printed
	lines chan string
}

func ipcStartMonitor(t *testing.T, s *ipcSide) *ipcMonitor {
	t.Helper()
	cmd := s.command(t.Context(), "monitor", "rule")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", s.cmdline("monitor", "rule"), err)
	}
	m := &ipcMonitor{lines: make(chan string, 1000)}
	var all bytes.Buffer
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		defer close(m.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			all.WriteString(sc.Text() + "\n")
			m.lines <- sc.Text()
		}
	}()
	stopped := false
	var res ipcResult
	m.stop = func() ipcResult {
		if stopped {
			return res
		}
		stopped = true
		cmd.Process.Signal(syscall.SIGTERM)
		// Keep the reader going (all holds every line) until ip is gone.
		lines, timeout := m.lines, time.After(10*time.Second)
		for done := false; !done; {
			select {
			case <-readDone:
				done = true
			case _, ok := <-lines:
				if !ok {
					lines = nil
				}
			case <-timeout:
				cmd.Process.Kill()
				res.Problem = "did not end within 10s of SIGTERM"
				timeout = nil
			}
		}
		cmd.Wait()
		res.Stdout, res.Stderr = all.Bytes(), stderr.Bytes()
		res.Code = ipcExitCode(cmd.ProcessState)
		return res
	}
	t.Cleanup(func() { m.stop() })
	return m
}

// waitLine waits for a line equal to want and returns the lines before it.
func (m *ipcMonitor) waitLine(want string, d time.Duration) ([]string, bool) {
	var before []string
	deadline := time.After(d)
	for {
		select {
		case l, ok := <-m.lines:
			if !ok {
				return before, false
			}
			if l == want {
				return before, true
			}
			before = append(before, l)
		case <-deadline:
			return before, false
		}
	}
}

// ipcMonitorSteps are the changes made while `ip monitor rule` listens:
// both families, multicast rules, failures (which notify nothing), goto
// (un)resolution (which notifies nothing either) and a flush.
var ipcMonitorSteps = [][]string{
	{"rule", "add", "from", "10.0.0.0/8", "table", "100", "pref", "10"},
	{"-6", "rule", "add", "from", "2001:db8::/32", "table", "100", "pref", "10"},
	{"rule", "add", "pref", "20", "goto", "30"},
	{"rule", "add", "pref", "30", "table", "100"},
	{"rule", "add", "from", "10.0.0.0/8", "table", "100", "pref", "10"},
	{"rule", "add", "iif", "nosuchdev", "fwmark", "5/0xff", "table", "1000", "pref", "40"},
	{"rule", "del", "pref", "30"},
	{"-6", "rule", "add", "tos", "0x01", "table", "5"},
	{"-6", "rule", "add", "not", "to", "::1", "uidrange", "1-2", "table", "5"},
	{"rule", "del", "pref", "99"},
	{"mrule", "add", "iif", "lo", "table", "10", "pref", "50"},
	{"-6", "mrule", "add", "iif", "lo", "table", "10", "pref", "50"},
	{"-6", "rule", "del", "pref", "10"},
	{"rule", "del", "pref", "20"},
	{"-6", "rule", "flush"},
	{"-6", "rule", "add", "table", "7"},
	{"rule", "del", "pref", "0"},
}

// runMonitorExperiment starts `ip monitor rule` on s, waits until it is
// listening (it adds "32000: lookup 40000+i", deleting it and adding the
// next one until the monitor prints one), runs the steps and returns the lines the monitor
// printed for them (up to the end marker "32001: lookup 32001"), the steps'
// own results and the monitor's result (stderr, exit code) after SIGTERM.
func ipcRunMonitorExperiment(t *testing.T, s *ipcSide) ([]string, []ipcResult, ipcResult) {
	t.Helper()
	m := ipcStartMonitor(t, s)
	const end = "32001:\tfrom all lookup 32001"
	synced := false
	for i := 0; i < 50 && !synced; i++ {
		// A new table each round: a late line of an earlier round cannot
		// be taken for this round's.
		table := fmt.Sprint(40000 + i)
		if r := s.run(nil, "rule", "add", "pref", "32000", "table", table); r.Code != 0 {
			t.Fatalf("%s side: adding the sync rule: exit %d %s %s", s.label(), r.Code, r.Stderr, r.Problem)
		}
		if _, ok := m.waitLine("32000:\tfrom all lookup "+table, 200*time.Millisecond); ok {
			synced = true
			break
		}
		s.run(nil, "rule", "del", "pref", "32000")
	}
	if !synced {
		r := m.stop()
		t.Fatalf("%s side: ip monitor rule printed no sync line in 10s\nstdout:\n%s\nstderr:\n%s",
			s.label(), r.Stdout, r.Stderr)
	}
	var results []ipcResult
	for _, step := range ipcMonitorSteps {
		results = append(results, s.run(nil, step...))
	}
	s.run(nil, "rule", "add", "pref", "32001", "table", "32001")
	lines, ok := m.waitLine(end, 10*time.Second)
	r := m.stop()
	if !ok {
		t.Errorf("%s side: the monitor did not print the end marker within 10s\nstdout:\n%s\nstderr:\n%s",
			s.label(), r.Stdout, r.Stderr)
	}
	return lines, results, r
}

// TestIPMonitor: `ip monitor rule` in one process sees the notifications
// caused by other ip processes, exactly as on the kernel.
func TestIPMonitor(t *testing.T) {
	env := newIPCEnv(t)
	k, n := env.pair(t)
	kLines, kRes, kMon := ipcRunMonitorExperiment(t, k)
	nLines, nRes, nMon := ipcRunMonitorExperiment(t, n)
	t.Logf("kernel monitor printed:\n%s", strings.Join(kLines, "\n"))
	for i, step := range ipcMonitorSteps {
		ipcCompare(t, strings.Join(step, " "), kRes[i], nRes[i], nil)
	}
	if !slices.Equal(kLines, nLines) {
		t.Errorf("ip monitor rule printed differently for the steps (-kernel +nlemu):\n%s",
			ipcDiff(ipcLines([]byte(strings.Join(kLines, "\n")+"\n")), ipcLines([]byte(strings.Join(nLines, "\n")+"\n"))))
	}
	// The monitor's own stderr and exit status (killed by SIGTERM); its
	// stdout holds the sync lines, whose number depends on timing.
	kMon.Stdout, nMon.Stdout = nil, nil
	ipcCompare(t, "monitor rule (its stderr and exit status)", kMon, nMon, nil)
}

// TestIPSeedBatch is the seed's load in one namespace: a batch of 1024
// "rule add from all table N" lines; 1027 IPv4 rules (1026 with -6), listed
// identically (the dumps span many datagrams).
func TestIPSeedBatch(t *testing.T) {
	env := newIPCEnv(t)
	var b strings.Builder
	for i := 1; i <= 1024; i++ {
		fmt.Fprintf(&b, "rule add from all table %d\n", i)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "seed.batch")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, fam := range []struct {
		name string
		opts []string
		want int
	}{
		{"IPv4", nil, 1027},
		{"IPv6", []string{"-6"}, 1026},
	} {
		t.Run(fam.name, func(t *testing.T) {
			k, n := env.pair(t)
			args := append(append([]string{}, fam.opts...), "-batch", file)
			start := time.Now()
			kr := k.run(nil, args...)
			kTime := time.Since(start)
			start = time.Now()
			nr := n.run(nil, args...)
			t.Logf("ip %s: kernel %v, nlemu %v", strings.Join(args, " "), kTime, time.Since(start))
			if kr.Code != 0 {
				t.Fatalf("kernel: exit %d: %s", kr.Code, kr.Stderr)
			}
			ipcCompare(t, strings.Join(args, " "), kr, nr, nil)
			show := append(append([]string{}, fam.opts...), "rule", "show")
			out := ipcCompareShow(t, k, n, show...)
			if got := bytes.Count(out, []byte("\n")); got != fam.want {
				t.Errorf("kernel lists %d rules, want %d", got, fam.want)
			}
			ipcCompareShow(t, k, n, append(append([]string{}, fam.opts...), "-d", "-j", "rule", "show")...)
			save := append(append([]string{}, fam.opts...), "rule", "save")
			ks, ns := k.run(nil, save...), n.run(nil, save...)
			ks.Stdout, ns.Stdout = ipcNormalizeSave(ks.Stdout), ipcNormalizeSave(ns.Stdout)
			ipcCompare(t, strings.Join(save, " "), ks, ns, ipcSaveLines)
		})
	}
}
