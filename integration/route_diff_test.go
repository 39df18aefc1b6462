package integration

// Route differential tests beyond the batch cases of ip_cases_test.go:
// `ip monitor` running beside a case (the `# monitor:` directive), and
// `ip route save | ip route restore` across namespaces.
//
//	go test ./integration -run 'TestIPCases/route_monitor' -v
//	go test ./integration -run 'TestIPRouteSaveRestore' -v

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The monitor markers are blackhole routes in table rdMarkerTable, which no
// case uses: a route add/delete is printed by `ip monitor route` and `ip
// monitor all` alike, and unlike a rule marker it does not split the IPv4
// local and main tables (fib_unmerge()), which would change what `ip route
// get` prints afterwards. The markers leave table 250 existing (empty) on
// both sides.
const (
	rdMarkerTable = "250"
	rdMarkerProbe = "198.51.100.250" // repeated until the monitor prints it
	rdMarkerStart = "198.51.100.251" // its deletion is the last line dropped
	rdMarkerEnd   = "198.51.100.252" // its addition is the first line dropped
)

// rdMonitor is a running `ip [OPTS] monitor OBJECTS` whose stdout lines
// arrive on a channel.
type rdMonitor struct {
	side  *ipcSide
	args  []string
	lines chan string
	stop  func() ipcResult // SIGTERM, wait, and what it printed
}

// rdMonitorArgs turns the words of a `# monitor:` directive into ip's
// arguments: leading words that start with "-" are ip options, the rest
// follow "monitor".
func rdMonitorArgs(words []string) []string {
	i := 0
	for i < len(words) && strings.HasPrefix(words[i], "-") {
		i++
	}
	return append(append(slices.Clone(words[:i]), "monitor"), words[i:]...)
}

func rdStartMonitor(t *testing.T, s *ipcSide, args []string) *rdMonitor {
	t.Helper()
	cmd := s.command(t.Context(), args...)
	// Its own process group, so that the SIGTERM reaches ip itself on the
	// nlemu side too (ip netns exec -> nlemu exec -> ip).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", s.cmdline(args...), err)
	}
	m := &rdMonitor{side: s, args: args, lines: make(chan string, 10000)}
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
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
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
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
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

// waitFor waits for a line that match accepts and returns the lines before
// it (not including it).
func (m *rdMonitor) waitFor(match func(string) bool, d time.Duration) ([]string, bool) {
	var before []string
	deadline := time.After(d)
	for {
		select {
		case l, ok := <-m.lines:
			if !ok {
				return before, false
			}
			if match(l) {
				return before, true
			}
			before = append(before, l)
		case <-deadline:
			return before, false
		}
	}
}

// rdIsMarker reports whether monitor line l is the addition (del false) or
// deletion (del true) of the marker route for addr.
func rdIsMarker(l, addr string, del bool) bool {
	l = strings.TrimPrefix(l, "[ROUTE]")
	return strings.Contains(l, "blackhole "+addr+" ") && strings.HasPrefix(l, "Deleted ") == del
}

func (s *ipcSide) rdMarker(t *testing.T, verb, addr string) {
	t.Helper()
	if r := s.run(nil, "route", verb, "blackhole", addr, "table", rdMarkerTable); r.Code != 0 || r.Problem != "" {
		t.Fatalf("%s side: route %s of the monitor marker %s: exit %d %s %s", s.label(), verb, addr, r.Code, r.Stderr, r.Problem)
	}
}

// rdSyncMonitor starts the monitor and returns once it is listening: the
// probe marker is added and deleted until the monitor prints it, then the
// start marker is added and deleted and everything up to its deletion is
// dropped.
func rdSyncMonitor(t *testing.T, s *ipcSide, args []string) *rdMonitor {
	t.Helper()
	m := rdStartMonitor(t, s, args)
	synced := false
	for i := 0; i < 50 && !synced; i++ {
		s.rdMarker(t, "add", rdMarkerProbe)
		_, synced = m.waitFor(func(l string) bool { return rdIsMarker(l, rdMarkerProbe, false) }, 200*time.Millisecond)
		s.rdMarker(t, "del", rdMarkerProbe)
	}
	if !synced {
		r := m.stop()
		t.Fatalf("%s side: %s printed no marker in 10s\nstdout:\n%s\nstderr:\n%s", s.label(), s.cmdline(args...), r.Stdout, r.Stderr)
	}
	s.rdMarker(t, "add", rdMarkerStart)
	s.rdMarker(t, "del", rdMarkerStart)
	if _, ok := m.waitFor(func(l string) bool { return rdIsMarker(l, rdMarkerStart, true) }, 10*time.Second); !ok {
		r := m.stop()
		t.Fatalf("%s side: %s did not print the start marker\nstdout:\n%s\nstderr:\n%s", s.label(), s.cmdline(args...), r.Stdout, r.Stderr)
	}
	return m
}

// finish adds the end marker, returns what the monitor printed before it and
// stops the monitor.
func (m *rdMonitor) finish(t *testing.T) ([]string, ipcResult) {
	t.Helper()
	m.side.rdMarker(t, "add", rdMarkerEnd)
	lines, ok := m.waitFor(func(l string) bool { return rdIsMarker(l, rdMarkerEnd, false) }, 10*time.Second)
	m.side.rdMarker(t, "del", rdMarkerEnd)
	r := m.stop()
	if !ok {
		t.Errorf("%s side: %s did not print the end marker within 10s\nstdout:\n%s\nstderr:\n%s",
			m.side.label(), m.side.cmdline(m.args...), r.Stdout, r.Stderr)
	}
	return lines, r
}

// rdCompareMonitors compares what the two monitors printed during a case,
// then their own stderr and exit status (stdout holds the markers, whose
// number depends on timing).
func rdCompareMonitors(t *testing.T, args []string, km, nm *rdMonitor) {
	t.Helper()
	kLines, kRes := km.finish(t)
	nLines, nRes := nm.finish(t)
	t.Logf("kernel `ip %s` printed:\n%s", strings.Join(args, " "), strings.Join(kLines, "\n"))
	if !slices.Equal(kLines, nLines) {
		t.Errorf("`ip %s` beside the case printed differently (-kernel +nlemu):\n%s", strings.Join(args, " "),
			ipcDiff(ipcMonitorLines(kLines), ipcMonitorLines(nLines)))
	}
	kRes.Stdout, nRes.Stdout = nil, nil
	ipcCompare(t, strings.Join(args, " ")+" (its stderr and exit status)", kRes, nRes, nil)
}

func ipcMonitorLines(ls []string) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = strings.ReplaceAll(l, "\t", "\\t")
	}
	return out
}

func TestRouteMonitorHarness(t *testing.T) {
	for _, tc := range []struct {
		words, want []string
	}{
		{[]string{"route"}, []string{"monitor", "route"}},
		{[]string{"all"}, []string{"monitor", "all"}},
		{[]string{"-6", "route", "address"}, []string{"-6", "monitor", "route", "address"}},
		{nil, []string{"monitor"}},
	} {
		if got := rdMonitorArgs(tc.words); !slices.Equal(got, tc.want) {
			t.Errorf("rdMonitorArgs(%q) = %q, want %q", tc.words, got, tc.want)
		}
	}
	for _, tc := range []struct {
		line, addr string
		del, want  bool
	}{
		{"blackhole 198.51.100.251 table 250 proto boot scope global ", rdMarkerStart, false, true},
		{"Deleted blackhole 198.51.100.251 table 250 proto boot scope global ", rdMarkerStart, true, true},
		{"[ROUTE]Deleted blackhole 198.51.100.251 table 250 proto boot scope global ", rdMarkerStart, true, true},
		{"Deleted blackhole 198.51.100.251 table 250 proto boot scope global ", rdMarkerStart, false, false},
		{"blackhole 198.51.100.2510 table 250", rdMarkerStart, false, false},
		{"blackhole 198.51.100.252 table 250 proto boot scope global ", rdMarkerStart, false, false},
	} {
		if got := rdIsMarker(tc.line, tc.addr, tc.del); got != tc.want {
			t.Errorf("rdIsMarker(%q, %s, %v) = %v", tc.line, tc.addr, tc.del, got)
		}
	}
}

// TestIPRouteSaveRestore: `ip route save` of a populated kernel namespace,
// fed to `ip route restore` on a fresh kernel namespace and a fresh nlemu
// namespace that have the same links and addresses: the restore prints the
// same and leaves the same routes, and `ip route save` of the two restored
// namespaces is the same stream (nlmsg_seq and nlmsg_pid zeroed). Then the
// other way: nlemu's own save stream restored on both sides.
func TestIPRouteSaveRestore(t *testing.T) {
	env := newIPCEnv(t)
	setup := []string{
		"link set lo up",
		"link add v0 address 02:00:00:00:00:01 type veth peer name v1 address 02:00:00:00:00:02",
		"link set v0 addrgenmode none",
		"link set v1 addrgenmode none",
		"link set v0 up",
		"link set v1 up",
		"# settle",
		"addr add 10.0.0.1/24 dev v0",
		"addr add 2001:db8::1/64 dev v0 nodad",
		"# settle",
	}
	routes := []string{
		"route add 192.168.1.0/24 via 10.0.0.2 metric 7 proto static",
		"route add blackhole 192.168.2.0/24 table 100",
		"route add 192.168.3.0/24 nexthop via 10.0.0.2 weight 2 nexthop via 10.0.0.3",
		"route add 192.168.4.0/24 dev v0 mtu lock 1400 src 10.0.0.1",
		"route add 192.168.5.0/24 tos 0x10 via 10.0.0.2 realm 5",
		"route add unreachable 10.99.0.0/16 table 200",
		"# ip-options: -6",
		"route add 2001:db8:1::/48 via 2001:db8::2 pref high",
		"route add unreachable 2001:db8:2::/48",
		"route add 2001:db8:3::/48 nexthop via 2001:db8::2 nexthop via 2001:db8::3",
		"route add 2001:db8:4::/48 dev v0 table 100 metric 5 mtu 1300",
	}
	prepare := func(t *testing.T, s *ipcSide, lines []string) {
		t.Helper()
		c := rdInlineCase(t, "route_save_setup", lines)
		for _, seg := range c.segments {
			if seg.settle && s.kernel {
				ipcSettle(t, s)
			}
			for ln := seg.first; ln <= seg.last; ln++ {
				words := strings.Fields(c.lines[ln-1])
				if len(words) == 0 || strings.HasPrefix(words[0], "#") {
					continue
				}
				args := append(slices.Clone(seg.opts), words...)
				if r := s.run(nil, args...); r.Code != 0 || r.Problem != "" {
					t.Fatalf("%s side: ip %s: exit %d %s %s", s.label(), strings.Join(args, " "), r.Code, r.Stderr, r.Problem)
				}
			}
		}
	}
	for _, fam := range []string{"-4", "-6"} {
		t.Run(fam, func(t *testing.T) {
			src, _ := env.pair(t)
			prepare(t, src, append(slices.Clone(setup), routes...))
			saved := src.run(nil, fam, "route", "save", "table", "all")
			if saved.Code != 0 || len(saved.Stdout) < 4 {
				t.Fatalf("kernel: ip %s route save table all: exit %d %s", fam, saved.Code, saved.Stderr)
			}
			rdRestoreBoth(t, env, prepare, setup, fam, saved.Stdout, "the kernel's save stream")
			// nlemu's own stream, when nlemu can produce one.
			_, nsrc := env.pair(t)
			prepare(t, nsrc, append(slices.Clone(setup), routes...))
			nsaved := nsrc.run(nil, fam, "route", "save", "table", "all")
			ks, ns := saved, nsaved
			ks.Stdout, ns.Stdout = ipcNormalizeSave(saved.Stdout), ipcNormalizeSave(nsaved.Stdout)
			if !ipcCompare(t, fam+" route save table all (populated)", ks, ns, ipcSaveLines) {
				t.Log("nlemu's save stream differs from the kernel's; restoring it on both sides as well")
			}
			if nsaved.Code == 0 && len(nsaved.Stdout) >= 4 {
				rdRestoreBoth(t, env, prepare, setup, fam, nsaved.Stdout, "nlemu's save stream")
			}
		})
	}
}

// rdRestoreBoth restores stream on a fresh pair prepared with setup and
// compares the restore's output and the resulting routes.
func rdRestoreBoth(t *testing.T, env *ipcEnv, prepare func(*testing.T, *ipcSide, []string), setup []string, fam string, stream []byte, what string) {
	t.Helper()
	k, n := env.pair(t)
	prepare(t, k, setup)
	prepare(t, n, setup)
	kr := k.run(stream, fam, "route", "restore")
	nr := n.run(stream, fam, "route", "restore")
	ipcCompare(t, fam+" route restore < "+what, kr, nr, nil)
	ipcSettle(t, k)
	for _, args := range [][]string{
		{fam, "route", "show", "table", "all"},
		{fam, "-d", "route", "show", "table", "all"},
	} {
		ipcCompare(t, strings.Join(args, " ")+" after restoring "+what, k.run(nil, args...), n.run(nil, args...), nil)
	}
	ks, ns := k.run(nil, fam, "route", "save", "table", "all"), n.run(nil, fam, "route", "save", "table", "all")
	ks.Stdout, ns.Stdout = ipcNormalizeSave(ks.Stdout), ipcNormalizeSave(ns.Stdout)
	ipcCompare(t, fam+" route save table all after restoring "+what, ks, ns, ipcSaveLines)
}

// rdInlineCase parses lines as a case file (directives included).
func rdInlineCase(t *testing.T, name string, lines []string) *ipcCase {
	t.Helper()
	path := filepath.Join(t.TempDir(), name+".batch")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := ipcParseCase(path)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestIPRouteCasesKernelVsKernel runs the route_*, routeget_*, link_* and
// addr_* cases (ipcComparesRoutes) on two fresh kernel namespaces: a
// difference is a case (or a settle point) that is not deterministic on the
// kernel, not an nlemu bug.
func TestIPRouteCasesKernelVsKernel(t *testing.T) {
	env := newIPCEnv(t)
	for _, path := range ipcCaseFiles(t) {
		c, err := ipcParseCase(path)
		if err != nil {
			t.Fatal(err)
		}
		if !ipcComparesRoutes(c.name) {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			ipcRunCaseOn(t, c, env.kernelNS(t), env.kernelNS(t))
		})
	}
}
