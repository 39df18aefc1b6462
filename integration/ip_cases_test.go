package integration

// TestIPCases runs every testdata/ipcases/*.batch file through the real
// iproute2 `ip`, once against a fresh kernel network namespace and once
// against a fresh nlemu namespace, and requires identical output:
//
//	go test ./integration -run 'TestIPCases' -v
//	go test ./integration -run 'TestIPCases/goto_' -v      # a few cases
//
// Needs root (`ip netns add`); skipped otherwise. To look at one case by hand:
// hack/compare-kernel.sh integration/testdata/ipcases/NAME.batch
//
// # Case files
//
// A case is an `ip -batch` file. It runs as `ip -force -batch NAME.batch`
// (nlemu: `nlemu exec -n NS -- ip -force -batch NAME.batch`, kernel:
// `ip -n NS -force -batch NAME.batch`), and its stdout, stderr and exit code
// must be the same on both sides. Then these commands must print the same
// bytes on both sides: ip rule show, ip -6 rule show, ip -d -j rule show,
// ip -6 -d -j rule show, ip mrule show, ip -6 mrule show, ip rule save and
// ip -6 rule save (the save streams with nlmsg_seq and nlmsg_pid zeroed:
// time(NULL) and the port id), and the routes: ip [-6] [-d] route show table
// all, ip -j route show table all, ip -6 -d -j route show table all, ip -4
// route save table all and ip -6 route save table all.
//
// Comment lines that mean something to the harness:
//
//	# expect-fail        some command of the batch fails on the kernel (checked)
//	# ip-options: -6     the lines that follow run as a separate
//	                     `ip -6 -force -batch` in the same namespaces; an
//	                     empty option list goes back to plain `ip`
//	# settle             the lines that follow run as a separate batch (same
//	                     options), started once the kernel side has settled
//	                     (ipcSettle): link state changes reach the routes
//	                     through the linkwatch work queue and an IPv6
//	                     address gets its local route from the DAD work even
//	                     with nodad, both after the command returned; nlemu
//	                     does both synchronously, so it is not waited for
//	# monitor: OBJECTS   `ip monitor OBJECTS` (leading -options go before
//	                     "monitor") runs beside the whole case on each side,
//	                     and prints the same lines on both (route_diff_test.go;
//	                     it must show IPv4 routes: its markers are routes)
//
// iproute2 6.1 takes global options such as -6 only on the command line, not
// on a batch line ("Object "-6" is unknown"), hence the directive. Each
// segment runs from a copy of the file in which the other segments' lines are
// blank, so "Command failed NAME.batch:LINE" keeps the line numbers of the
// case file. ip ignores the directive lines (they are comments), so a case
// without directives is also a plain batch file for hack/compare-kernel.sh.

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// ipcCase is one parsed case file.
type ipcCase struct {
	name       string // file name without .batch
	lines      []string
	expectFail bool
	segments   []ipcSegment
	monitor    []string // ip's arguments for the # monitor: directive, or nil
}

// ipcSegment is a run of lines executed by one `ip OPTS -force -batch`.
type ipcSegment struct {
	opts        []string
	first, last int  // 1-based line numbers, inclusive
	settle      bool // wait for ipcSettle on the kernel side first
}

const (
	ipcDirExpectFail = "# expect-fail"
	ipcDirOptions    = "# ip-options:"
	ipcDirSettle     = "# settle"
	ipcDirMonitor    = "# monitor:"
)

func ipcParseCase(path string) (*ipcCase, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c := &ipcCase{name: strings.TrimSuffix(filepath.Base(path), ".batch")}
	sc := bufio.NewScanner(bytes.NewReader(data))
	seg := ipcSegment{first: 1}
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		c.lines = append(c.lines, line)
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == ipcDirExpectFail:
			c.expectFail = true
		case strings.HasPrefix(trimmed, ipcDirMonitor):
			c.monitor = rdMonitorArgs(strings.Fields(strings.TrimPrefix(trimmed, ipcDirMonitor)))
		case strings.HasPrefix(trimmed, ipcDirOptions), trimmed == ipcDirSettle:
			if n > seg.first {
				seg.last = n - 1
				c.segments = append(c.segments, seg)
			}
			if trimmed == ipcDirSettle {
				seg = ipcSegment{opts: seg.opts, first: n, settle: true}
			} else {
				seg = ipcSegment{opts: strings.Fields(strings.TrimPrefix(trimmed, ipcDirOptions)), first: n}
			}
		}
	}
	seg.last = n
	c.segments = append(c.segments, seg)
	return c, sc.Err()
}

// segmentFile is the case file with every line outside seg blanked.
func (c *ipcCase) segmentFile(seg ipcSegment) []byte {
	var b bytes.Buffer
	for i, l := range c.lines {
		if i+1 >= seg.first && i+1 <= seg.last {
			b.WriteString(l)
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// ipcShowCommands are compared after every case, with how to display them.
var ipcShowCommands = []struct {
	args   []string
	render func([]byte) []string
	save   bool
}{
	{args: []string{"rule", "show"}},
	{args: []string{"-6", "rule", "show"}},
	{args: []string{"-d", "-j", "rule", "show"}, render: ipcJSONLines},
	{args: []string{"-6", "-d", "-j", "rule", "show"}, render: ipcJSONLines},
	{args: []string{"mrule", "show"}},
	{args: []string{"-6", "mrule", "show"}},
	{args: []string{"rule", "save"}, render: ipcSaveLines, save: true},
	{args: []string{"-6", "rule", "save"}, render: ipcSaveLines, save: true},
}

// ipcRouteShowCommands are compared, after ipcShowCommands, after every case
// (the rule cases included: their routes are lo's): the routes of every table in
// both families (an AF_UNSPEC dump for the plain form, so IPv6 routes follow
// the IPv4 ones as on the kernel), with -d (type, table, protocol and scope
// always printed) and -j, and the binary save streams.
var ipcRouteShowCommands = []struct {
	args   []string
	render func([]byte) []string
	save   bool
}{
	{args: []string{"route", "show", "table", "all"}},
	{args: []string{"-6", "route", "show", "table", "all"}},
	{args: []string{"-d", "route", "show", "table", "all"}},
	{args: []string{"-6", "-d", "route", "show", "table", "all"}},
	{args: []string{"-j", "route", "show", "table", "all"}, render: ipcJSONLines},
	{args: []string{"-6", "-d", "-j", "route", "show", "table", "all"}, render: ipcJSONLines},
	{args: []string{"-4", "route", "save", "table", "all"}, render: ipcSaveLines, save: true},
	{args: []string{"-6", "route", "save", "table", "all"}, render: ipcSaveLines, save: true},
}

// ipcRouteCasePrefixes name the cases that change links, addresses or
// routes: the kernel side settles (ipcSettle) before their state is
// compared, and TestIPRouteCasesKernelVsKernel checks them.
var ipcRouteCasePrefixes = []string{"route_", "routeget_", "link_", "addr_"}

// ipcComparesRoutes reports whether case name is one of those.
func ipcComparesRoutes(name string) bool {
	for _, p := range ipcRouteCasePrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

func ipcCaseFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "ipcases", "*.batch"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no testdata/ipcases/*.batch files")
	}
	slices.Sort(files)
	return files
}

func TestIPCases(t *testing.T) {
	env := newIPCEnv(t)
	for _, path := range ipcCaseFiles(t) {
		c, err := ipcParseCase(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(c.name, func(t *testing.T) {
			ipcRunCase(t, env, c)
		})
	}
}

func ipcRunCase(t *testing.T, env *ipcEnv, c *ipcCase) {
	kernel, nlemu := env.pair(t)
	ipcRunCaseOn(t, c, kernel, nlemu)
}

// ipcRunCaseOn runs case c on the reference side kernel and the side under
// test nlemu (another kernel namespace in the kernel-vs-kernel checks).
func ipcRunCaseOn(t *testing.T, c *ipcCase, kernel, nlemu *ipcSide) {
	var kmon, nmon *rdMonitor
	if c.monitor != nil {
		kmon, nmon = rdSyncMonitor(t, kernel, c.monitor), rdSyncMonitor(t, nlemu, c.monitor)
	}
	kernelFailed := false
	for i, seg := range c.segments {
		dir := filepath.Join(t.TempDir(), "seg")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		file := c.name + ".batch"
		if err := os.WriteFile(filepath.Join(dir, file), c.segmentFile(seg), 0o644); err != nil {
			t.Fatal(err)
		}
		args := append(slices.Clone(seg.opts), "-force", "-batch", file)
		if seg.settle {
			ipcSettle(t, kernel)
			ipcSettle(t, nlemu)
		}
		k := kernel.runIn(dir, nil, args...)
		n := nlemu.runIn(dir, nil, args...)
		if k.Code != 0 {
			kernelFailed = true
		}
		t.Logf("segment %d (lines %d-%d): ip %s\nkernel exit %d\nkernel stdout:\n%s\nkernel stderr:\n%s",
			i+1, seg.first, seg.last, strings.Join(args, " "), k.Code, k.Stdout, k.Stderr)
		ipcCompare(t, fmt.Sprintf("%s (lines %d-%d)", strings.Join(args, " "), seg.first, seg.last), k, n, nil)
		if n.Problem != "" {
			t.Fatalf("the nlemu side did not complete; not running the show commands")
		}
	}
	if kernelFailed != c.expectFail {
		if c.expectFail {
			t.Errorf("CASE FILE: says %q but every segment exits 0 on the kernel", ipcDirExpectFail)
		} else {
			t.Errorf("CASE FILE: a command fails on the kernel; add %q if that is intended", ipcDirExpectFail)
		}
	}
	if ipcComparesRoutes(c.name) || kmon != nil {
		ipcSettle(t, kernel)
		ipcSettle(t, nlemu)
	}
	if kmon != nil {
		rdCompareMonitors(t, c.monitor, kmon, nmon)
	}
	ipcCompareState(t, kernel, nlemu)
}

// ipcCompareState compares the output of ipcShowCommands and
// ipcRouteShowCommands on both sides.
func ipcCompareState(t *testing.T, kernel, nlemu *ipcSide) {
	t.Helper()
	for _, sc := range append(slices.Clone(ipcShowCommands), ipcRouteShowCommands...) {
		k := kernel.run(nil, sc.args...)
		n := nlemu.run(nil, sc.args...)
		if sc.save {
			k.Stdout = ipcNormalizeSave(k.Stdout)
			n.Stdout = ipcNormalizeSave(n.Stdout)
		}
		ipcCompare(t, strings.Join(sc.args, " "), k, n, sc.render)
	}
}

// TestIPCasesOneByOne runs every command line of every case as its own ip
// process (`ip [OPTS] LINE`, no -batch): one netlink socket per command, with
// NETLINK_GET_STRICT_CHK (which ip sets only outside batch mode), and no
// batch-only effects. Each command's stdout, stderr and exit code must match,
// then the same show commands as TestIPCases.
func TestIPCasesOneByOne(t *testing.T) {
	env := newIPCEnv(t)
	for _, path := range ipcCaseFiles(t) {
		c, err := ipcParseCase(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(c.name, func(t *testing.T) {
			kernel, nlemu := env.pair(t)
			for _, seg := range c.segments {
				if seg.settle {
					ipcSettle(t, kernel)
				}
				for ln := seg.first; ln <= seg.last; ln++ {
					line, _, _ := strings.Cut(c.lines[ln-1], "#")
					words := strings.Fields(line)
					if len(words) == 0 {
						continue
					}
					args := append(slices.Clone(seg.opts), words...)
					k, n := kernel.run(nil, args...), nlemu.run(nil, args...)
					ipcCompare(t, fmt.Sprintf("%s (line %d)", strings.Join(args, " "), ln), k, n, nil)
					if n.Problem != "" {
						t.Fatalf("the nlemu side did not complete; stopping this case")
					}
				}
			}
			if ipcComparesRoutes(c.name) {
				ipcSettle(t, kernel)
			}
			ipcCompareState(t, kernel, nlemu)
		})
	}
}

// TestIPCasesHarness checks the harness itself: case parsing, the save
// normalization, and (as root) that a real difference is reported.
func TestIPCasesHarness(t *testing.T) {
	t.Run("Segments", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "x.batch")
		src := "# expect-fail\nrule add pref 1 table 1\n# ip-options: -6 -d\nrule add pref 2 table 2\n# ip-options:\nrule flush\n"
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := ipcParseCase(path)
		if err != nil {
			t.Fatal(err)
		}
		if c.name != "x" || !c.expectFail || len(c.segments) != 3 {
			t.Fatalf("parsed %+v", c)
		}
		want := []ipcSegment{{first: 1, last: 2}, {opts: []string{"-6", "-d"}, first: 3, last: 4}, {opts: []string{}, first: 5, last: 6}}
		for i, s := range c.segments {
			if !slices.Equal(s.opts, want[i].opts) || s.first != want[i].first || s.last != want[i].last || s.settle {
				t.Errorf("segment %d = %+v, want %+v", i, s, want[i])
			}
		}
		if got, want := string(c.segmentFile(c.segments[1])), "\n\n# ip-options: -6 -d\nrule add pref 2 table 2\n\n\n"; got != want {
			t.Errorf("segment file %q, want %q", got, want)
		}
	})
	t.Run("Settle", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "x.batch")
		src := "# ip-options: -6\nroute add ::/0 dev lo\n# settle\nroute show\n# settle\n"
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := ipcParseCase(path)
		if err != nil {
			t.Fatal(err)
		}
		want := []ipcSegment{{opts: []string{"-6"}, first: 1, last: 2}, {opts: []string{"-6"}, first: 3, last: 4, settle: true}, {opts: []string{"-6"}, first: 5, last: 5, settle: true}}
		if len(c.segments) != len(want) {
			t.Fatalf("segments %+v, want %+v", c.segments, want)
		}
		for i, s := range c.segments {
			if !slices.Equal(s.opts, want[i].opts) || s.first != want[i].first || s.last != want[i].last || s.settle != want[i].settle {
				t.Errorf("segment %d = %+v, want %+v", i, s, want[i])
			}
		}
		if !ipcSettled(ipcSettleLinks, ipcSettleAddrs, ipcSettleLocal) {
			t.Error("a settled namespace is reported unsettled")
		}
		if !ipcSettled(ipcSettleLinks, ipcSettleAddrs, "*") {
			t.Error("local \"*\" does not leave the local routes out")
		}
		for _, tc := range []struct{ name, links, addrs, local string }{
			{"operstate lags carrier", strings.Replace(ipcSettleLinks, "state UP", "state LOWERLAYERDOWN", 1), ipcSettleAddrs, ipcSettleLocal},
			{"carrier lost, operstate up", strings.Replace(ipcSettleLinks, "UP,LOWER_UP> mtu 1500 qdisc noqueue state UP", "NO-CARRIER,UP> mtu 1500 qdisc noqueue state UP", 1), ipcSettleAddrs, ipcSettleLocal},
			{"local route missing", ipcSettleLinks, ipcSettleAddrs, "local ::1 dev lo proto kernel metric 0 pref medium\n"},
			{"DAD running", ipcSettleLinks, ipcSettleAddrs + "3: v0    inet6 fe80::1/64 scope link tentative \\       valid_lft forever preferred_lft forever\n", ipcSettleLocal},
		} {
			if ipcSettled(tc.links, tc.addrs, tc.local) {
				t.Errorf("%s: reported settled", tc.name)
			}
		}
	})
	t.Run("NormalizeSave", func(t *testing.T) {
		msg := func(seq, pid uint32, body ...byte) []byte {
			m := make([]byte, 16, 16+len(body))
			m = append(m, body...)
			ne := binary.NativeEndian
			ne.PutUint32(m[0:], uint32(len(m)))
			ne.PutUint16(m[4:], 32)
			ne.PutUint16(m[6:], 2)
			ne.PutUint32(m[8:], seq)
			ne.PutUint32(m[12:], pid)
			return m
		}
		in := append([]byte{0x86, 0x69, 0x70, 0x71}, msg(7, 8, 1, 2, 3, 4)...)
		in = append(in, msg(9, 10, 5, 6, 7, 8)...)
		want := append([]byte{0x86, 0x69, 0x70, 0x71}, msg(0, 0, 1, 2, 3, 4)...)
		want = append(want, msg(0, 0, 5, 6, 7, 8)...)
		if got := ipcNormalizeSave(in); !bytes.Equal(got, want) {
			t.Errorf("normalized\n% x\nwant\n% x", got, want)
		}
		if in[4+8] != 7 {
			t.Error("ipcNormalizeSave changed its input")
		}
	})
	t.Run("Diff", func(t *testing.T) {
		got := ipcDiff([]string{"a", "b", "c"}, []string{"a", "x", "c"})
		if want := "      a\n    - b\n    + x\n      c\n"; got != want {
			t.Errorf("diff:\n%s\nwant:\n%s", got, want)
		}
	})
	t.Run("SeesDifferences", func(t *testing.T) {
		env := newIPCEnv(t)
		k, n := env.pair(t)
		if r := k.run(nil, "rule", "add", "pref", "7", "table", "7"); r.Code != 0 {
			t.Fatalf("kernel: %s", r.Stderr)
		}
		d := ipcDifference(k.run(nil, "rule", "show"), n.run(nil, "rule", "show"), nil)
		if !strings.Contains(d, "    - 7:\\tfrom all lookup 7\n") {
			t.Errorf("a rule only the kernel has is not reported:\n%s", d)
		}
		if d := ipcDifference(k.run(nil, "-6", "rule", "show"), n.run(nil, "-6", "rule", "show"), nil); d != "" {
			t.Errorf("identical output reported as different:\n%s", d)
		}
		ks, ns := k.run(nil, "-6", "rule", "save"), n.run(nil, "-6", "rule", "save")
		if bytes.Equal(ks.Stdout, ns.Stdout) {
			t.Log("the raw save streams are equal even before normalization (same second, same port id?)")
		}
		ks.Stdout, ns.Stdout = ipcNormalizeSave(ks.Stdout), ipcNormalizeSave(ns.Stdout)
		if d := ipcDifference(ks, ns, ipcSaveLines); d != "" {
			t.Errorf("normalized save streams of the default IPv6 rules differ:\n%s", d)
		}
	})
}

// Sample `ip -o link show`, `ip -6 -o addr show` and `ip -6 route show table
// local` of a settled namespace, for TestIPCasesHarness/Settle.
const (
	ipcSettleLinks = `1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN mode DEFAULT group default qlen 1000\    link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00
2: v1@v0: <NO-CARRIER,BROADCAST,MULTICAST,UP> mtu 1500 qdisc noqueue state LOWERLAYERDOWN mode DEFAULT group default qlen 1000\    link/ether 02:00:00:00:00:02 brd ff:ff:ff:ff:ff:ff
3: v0@v1: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc noqueue state UP mode DEFAULT group default qlen 1000\    link/ether 02:00:00:00:00:01 brd ff:ff:ff:ff:ff:ff
`
	ipcSettleAddrs = `1: lo    inet6 ::1/128 scope host \       valid_lft forever preferred_lft forever
2: v1    inet6 2001:db8:1::1/64 scope global nodad \       valid_lft forever preferred_lft forever
3: v0    inet6 2001:db8::1/64 scope global nodad \       valid_lft forever preferred_lft forever
2: v1    inet6 2001:db8:2::1/64 scope global tentative \       valid_lft forever preferred_lft forever
`
	ipcSettleLocal = "local ::1 dev lo proto kernel metric 0 pref medium\nlocal 2001:db8::1 dev v0 proto kernel metric 0 pref medium\n"
)

// ipcSettleTimeout bounds the wait for the kernel side to settle.
const ipcSettleTimeout = 10 * time.Second

// ipcSettleQuiet is how long a namespace whose only shortfall is missing
// IPv6 local routes must stay unchanged to count as settled.
const ipcSettleQuiet = 200 * time.Millisecond

// ipcSettle waits until the kernel side has finished the work the kernel
// defers after a command returns, so that the next segment sees its result
// (nlemu does this work synchronously): linkwatch (linkwatch_event ->
// netdev_state_change) sets operstate from the carrier and only then runs
// the NETDEV_CHANGE notifiers that flag routes RTNH_F_LINKDOWN and configure
// IPv6 on a device that became ready (addrconf_notify); and an IPv6 address
// on a device other than lo gets its local route from addrconf_dad_work, even
// with nodad (without nodad, only once DAD has completed, a second or two
// later). So: every link that is up has the operstate its carrier implies,
// and every IPv6 address on a link with carrier has finished DAD and has its
// local route. The 20 ms after that cover the notifier chain that runs
// after operstate is set. A case may delete such a local route on purpose:
// when only local routes are missing and nothing has changed for
// ipcSettleQuiet, the namespace counts as settled too. The wait is part of
// the setup, never a measurement.
func ipcSettle(t *testing.T, kernel *ipcSide) {
	t.Helper()
	if !kernel.kernel {
		return
	}
	deadline := time.Now().Add(ipcSettleTimeout)
	var last string
	var quietSince time.Time
	for {
		links := kernel.run(nil, "-o", "link", "show")
		addrs := kernel.run(nil, "-6", "-o", "addr", "show")
		local := kernel.run(nil, "-6", "route", "show", "table", "local")
		l, a, r := string(links.Stdout), string(addrs.Stdout), string(local.Stdout)
		if ipcSettled(l, a, r) {
			time.Sleep(20 * time.Millisecond)
			return
		}
		if snap := l + a + r; snap != last {
			last, quietSince = snap, time.Now()
		} else if ipcSettled(l, a, "*") && time.Since(quietSince) >= ipcSettleQuiet {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the kernel namespace did not settle within %v:\n%s%s%s", ipcSettleTimeout, links.Stdout, addrs.Stdout, local.Stdout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ipcSettled is ipcSettle's condition on the output of `ip -o link show`,
// `ip -6 -o addr show` and `ip -6 route show table local`; local "*" leaves
// the local routes out.
func ipcSettled(links, addrs, local string) bool {
	ready := map[string]bool{} // up with carrier
	for _, l := range strings.Split(links, "\n") {
		_, rest, ok := strings.Cut(l, ": ")
		if !ok {
			continue
		}
		name, rest, _ := strings.Cut(rest, ":")
		name, _, _ = strings.Cut(name, "@")
		_, rest, _ = strings.Cut(rest, "<")
		flagList, rest, _ := strings.Cut(rest, ">")
		flags := strings.Split(flagList, ",")
		if !slices.Contains(flags, "UP") {
			continue
		}
		state := ""
		if _, after, ok := strings.Cut(rest, " state "); ok {
			state, _, _ = strings.Cut(after, " ")
		}
		switch {
		case slices.Contains(flags, "LOWER_UP"):
			if state != "UP" && state != "UNKNOWN" {
				return false
			}
			ready[name] = true
		case slices.Contains(flags, "NO-CARRIER"):
			if state != "LOWERLAYERDOWN" && state != "DOWN" {
				return false
			}
		default:
			// Running without carrier: linkwatch has not yet replaced a
			// stale operstate (a device opened before its delayed
			// carrier-off event ran).
			return false
		}
	}
	for _, l := range strings.Split(addrs, "\n") {
		w := strings.Fields(l)
		if len(w) < 4 || w[2] != "inet6" || !ready[w[1]] || slices.Contains(w, "dadfailed") {
			continue
		}
		if slices.Contains(w, "tentative") {
			return false // DAD still running (addrconf_dad_work)
		}
		addr, _, _ := strings.Cut(w[3], "/")
		if local != "*" && !strings.Contains(local, "local "+addr+" dev "+w[1]+" ") {
			return false
		}
	}
	return true
}
