package integration

// nlemu exec for static and Go programs: the seccomp supervisor
// (supervise/, docs/EXEC.md). A static C program and a CGO_ENABLED=0 Go
// program, both speaking rtnetlink with raw system calls, run under
// `nlemu exec` inside the host guard and in a fresh kernel namespace
// (`ip netns exec`); their outputs must be identical.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nlemu/nlemu/integration/kernelns"
	"github.com/nlemu/nlemu/server"
)

// seccompFixture is a server nobody may use too, and public copies of
// nlemu and the two programs.
type seccompFixture struct {
	srv   *server.Server
	dir   string
	sock  string
	nlemu string
	progs map[string]string // "c", "go" -> binary
	guard *hostGuard
}

// seccompBuilt are the public copies of nlemu and the two programs, built
// once per test process.
var seccompBuilt struct {
	once  sync.Once
	dir   string
	nlemu string
	progs map[string]string
	err   error
}

func seccompBuild(t *testing.T) {
	t.Helper()
	b := &seccompBuilt
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "nlemu-seccomp-")
		if err == nil {
			err = os.Chmod(dir, 0o755)
		}
		if err != nil {
			b.err = err
			return
		}
		b.dir, b.progs = dir, map[string]string{}
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Dir(filepath.Dir(file))
		b.progs["c"] = filepath.Join(dir, "nlprog")
		if out, err := exec.Command("gcc", "-static", "-O1", "-Wall", "-o", b.progs["c"],
			filepath.Join(root, "integration/testdata/seccomp/nlprog.c"), "-lpthread").CombinedOutput(); err != nil {
			b.err = fmt.Errorf("gcc -static nlprog.c: %v\n%s", err, out)
			return
		}
		b.progs["go"] = filepath.Join(dir, "goprog")
		cmd := exec.Command("go", "build", "-o", b.progs["go"], "./integration/testdata/seccomp/goprog")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build goprog: %v\n%s", err, out)
			return
		}
		bin, err := ipcNlemuBinary()
		if err != nil {
			b.err = err
			return
		}
		b.nlemu = filepath.Join(dir, "nlemu")
		b.err = copyExecutable(bin, b.nlemu)
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
}

func newSeccompFixture(t *testing.T) *seccompFixture {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc is not installed: the static C program cannot be built")
	}
	seccompBuild(t)
	// the server's socket in a public directory of this test's own
	dir, err := os.MkdirTemp("", "nlemu-seccomp-sock-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f := &seccompFixture{dir: dir, nlemu: seccompBuilt.nlemu, progs: seccompBuilt.progs}
	// nobody may change state (the unprivileged runs compare with root's
	// kernel run); the socket is world-connectable in a public directory.
	f.srv = server.New(server.Config{AllowGroups: []uint32{nobody}})
	f.sock = filepath.Join(dir, "nlemu.sock")
	ln, err := f.srv.ListenUnix(f.sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ln.Close()
		f.srv.Close()
	})
	f.guard = maybeHostGuard(t, []string{"link", "set", "lo", "up"}) // "others" uses loopback, as on a host
	return f
}

func copyExecutable(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// nlemuRun runs `nlemu exec -n NS -- argv` (as nobody with asUser) inside
// the host guard and returns stdout; stats, if set, receives the
// supervisor's counts.
func (f *seccompFixture) nlemuRun(t *testing.T, ns string, asUser bool, stats string, argv ...string) string {
	t.Helper()
	full := append([]string{f.nlemu, "exec", "--socket", f.sock, "-n", ns, "--"}, argv...)
	if asUser {
		full = asNobody("", full...)
	}
	cmd := exec.Command(full[0], full[1:]...)
	if f.guard != nil {
		cmd = f.guard.command(context.Background(), ipcFindIP(), full...)
	}
	cmd.Env = os.Environ()
	if stats != "" {
		cmd.Env = append(cmd.Env, "NLEMU_EXEC_STATS="+stats)
	}
	return runWatched(t, cmd)
}

func runWatched(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	done := shimWatchdog(t, cmd, 60*time.Second)
	out, err := cmd.Output()
	done()
	if err != nil {
		t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(cmd.Args, " "), err, out, stderr.String())
	}
	return string(out)
}

// kernelRun runs argv in kernel namespace k.
func kernelRun(t *testing.T, k *kernelns.NS, argv ...string) string {
	t.Helper()
	return runWatched(t, exec.Command(ipcFindIP(), append([]string{"netns", "exec", k.Name()}, argv...)...))
}

// seccompSteps are the commands each program runs, in order, on both sides.
var seccompSteps = map[string][][]string{
	"c": {
		{"rules"}, {"rule-add", "100", "100"}, {"rule-add", "100", "100"}, {"rules"},
		{"route-get", "10.0.0.1"}, {"addr"}, {"peek"}, {"fork"}, {"thread"}, {"others"}, {"read"},
	},
	"go": {
		{"rules"}, {"rule-add", "200", "200"}, {"rule-add", "200", "200"}, {"rules"},
		{"route-get", "10.0.0.1"}, {"threads", "4"},
	},
}

// TestSeccompStaticProgramsMatchKernel: each program's steps give the same
// output under nlemu exec (root, and nobody) as in a fresh kernel namespace.
func TestSeccompStaticProgramsMatchKernel(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root: the kernel side runs in a kernel namespace")
	}
	f := newSeccompFixture(t)
	for _, prog := range []string{"c", "go"} {
		for _, asUser := range []bool{false, true} {
			name := prog + "/root"
			if asUser {
				name = prog + "/nobody"
			}
			t.Run(name, func(t *testing.T) {
				k := kernelns.NewForTest(t, "h-sc")
				if _, e, code := k.IP("link", "set", "lo", "up"); code != 0 {
					t.Fatalf("lo up: %s", e)
				}
				ns := "seccomp-" + strings.ReplaceAll(name, "/", "-")
				if err := f.srv.Namespaces().Add(ns); err != nil {
					t.Fatal(err)
				}
				for _, step := range seccompSteps[prog] {
					argv := append([]string{f.progs[prog]}, step...)
					want := kernelRun(t, k, argv...)
					got := f.nlemuRun(t, ns, asUser, "", argv...)
					if d := cmp.Diff(want, got); d != "" {
						t.Errorf("%s %s: nlemu differs from the kernel (-kernel +nlemu):\n%s", prog, strings.Join(step, " "), d)
					}
				}
			})
		}
	}
}

// TestSeccompSendsDoNotNotify: the supervisor counts its notifications; N
// route gets from one socket cause one socket(), one bind() and N
// recvmsg() notifications — the sends never enter the supervisor.
func TestSeccompSendsDoNotNotify(t *testing.T) {
	f := newSeccompFixture(t)
	if err := f.srv.Namespaces().Add("seccomp-count"); err != nil {
		t.Fatal(err)
	}
	stats := filepath.Join(t.TempDir(), "stats.json")
	const n = 50
	out := f.nlemuRun(t, "seccomp-count", false, stats, f.progs["c"], "bench", fmt.Sprint(n), "10.0.0.1")
	if !strings.Contains(out, "route gets") {
		t.Fatalf("bench: %q", out)
	}
	b, err := os.ReadFile(stats)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]uint64
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	// "waits" and "inline_waits" count receives that waited for their
	// reply, on a goroutine or on their worker's thread (no notification
	// of their own): by timing, up to n of each (a receive waits briefly
	// on its worker, then on a goroutine)
	if got["waits"] > n || got["inline_waits"] > n {
		t.Errorf("%d waits and %d inline waits for %d receives", got["waits"], got["inline_waits"], n)
	}
	delete(got, "waits")
	delete(got, "inline_waits")
	// sockets answered from a connection made ahead (no notification)
	if got["spares_taken"]+got["ready_taken"] > 1 {
		t.Errorf("%d spares and %d ready spares taken for 1 socket", got["spares_taken"], got["ready_taken"])
	}
	delete(got, "spares_taken")
	delete(got, "ready_taken")
	// the exec of CMD itself is trapped (the supervisor forgets the
	// thread's cached namespace before an execve)
	want := map[string]uint64{"socket": 1, "bind": 1, "recvmsg": n, "execve": 1, "total": n + 3}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("notifications (-want +got):\n%s", d)
	}
}

// TestSeccompUnshareMapsToOwnNamespace: a Go program that enters a
// namespace made by ip netns add (setns) reaches the nlemu namespace of
// the same name (created for it, matched by device and inode); one that
// unshares a new namespace reaches an ephemeral "netns-INODE", deleted
// when the program is done. The kernel namespaces stay empty.
func TestSeccompUnshareMapsToOwnNamespace(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root: unshare(CLONE_NEWNET) and setns")
	}
	f := newSeccompFixture(t)
	k := kernelns.NewForTest(t, "h-sc-setns")
	name := k.Name()
	if err := f.srv.Namespaces().Add("seccomp-unshare"); err != nil {
		t.Fatal(err)
	}
	out := f.nlemuRun(t, "seccomp-unshare", false, "", f.progs["go"], "setns", name, "300", "300")
	want := "rule add 300 table 300: 0\nrule 0 table 255 action 1\nrule 300 table 300 action 1\nrule 32766 table 254 action 1\nrule 32767 table 253 action 1\n"
	if d := cmp.Diff(want, out); d != "" {
		t.Errorf("setns (-want +got):\n%s", d)
	}
	// the kernel namespace the program entered is untouched
	kout, kerr, code := k.IP("rule")
	wantKernel := "0:\tfrom all lookup local\n32766:\tfrom all lookup main\n32767:\tfrom all lookup default\n"
	if code != 0 || kout != wantKernel {
		t.Errorf("ip -n %s rule: exit %d\n%s%s\nwant\n%s", name, code, kout, kerr, wantKernel)
	}
	// the start namespace's nlemu namespace did not get the rule
	if got := f.nlemuRun(t, "seccomp-unshare", false, "", f.progs["go"], "rules"); strings.Contains(got, "300") {
		t.Errorf("the rule reached -n's namespace:\n%s", got)
	}
	// nlemu has the named one, with the rule
	if got := f.nlemuRun(t, name, false, "", f.progs["go"], "rules"); !strings.Contains(got, "rule 300 table 300") {
		t.Errorf("nlemu namespace %s lacks the rule:\n%s", name, got)
	}
	// a namespace of its own, never named: an ephemeral netns-INODE, which
	// has the rule while the program runs and is gone once it (and its
	// supervisor, which anchors the namespace) exited
	before := f.srv.Namespaces().List()
	out = f.nlemuRun(t, "seccomp-unshare", false, "", f.progs["go"], "unshare", "301", "301")
	if !strings.Contains(out, "rule 301 table 301") {
		t.Errorf("unshare:\n%s", out)
	}
	// the server sees the close after the program has exited: wait for it
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end) && len(f.srv.Namespaces().List()) != len(before); {
		time.Sleep(10 * time.Millisecond)
	}
	if d := cmp.Diff(before, f.srv.Namespaces().List()); d != "" {
		t.Errorf("the ephemeral namespace outlived the program (-before +after):\n%s", d)
	}

	// the same without root: uid 65534 in a user namespace of its own
	// (unshare -r), where unshare(CLONE_NEWNET) is allowed
	cmd := exec.Command(ipcFindIP(), append([]string{"netns", "exec", f.guardName(t)},
		asNobody("", "unshare", "-r", f.nlemu, "exec", "--socket", f.sock, "-n", "seccomp-unshare", "--",
			f.progs["go"], "unshare", "302", "302")...)...)
	out = runWatched(t, cmd)
	if !strings.Contains(out, "rule add 302 table 302: 0") || !strings.Contains(out, "rule 302 table 302") {
		t.Errorf("unshare as uid 65534 in a user namespace:\n%s", out)
	}
}

// guardName is the host guard's kernel namespace (the unprivileged run
// enters it before dropping root).
func (f *seccompFixture) guardName(t *testing.T) string {
	t.Helper()
	if f.guard == nil {
		t.Skip("no host guard")
	}
	return f.guard.ns.Name()
}

func ipIn(ns string, args ...string) (string, string, int) {
	cmd := exec.Command(ipcFindIP(), append([]string{"-n", ns}, args...)...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return o.String(), e.String(), ee.ExitCode()
	}
	if err != nil {
		return o.String(), err.Error(), -1
	}
	return o.String(), e.String(), 0
}

// TestSeccompExitStatus: nlemu exec reports CMD's exit status, and a
// signal that killed CMD as 128+n (as a shell does).
func TestSeccompExitStatus(t *testing.T) {
	f := newSeccompFixture(t)
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{f.progs["c"], "no-such-command"}, 2},
		{[]string{f.progs["go"], "rules"}, 0},
		{[]string{"--seccomp", "/bin/sh", "-c", "kill -9 $$"}, 128 + 9},
		{[]string{"--seccomp", "/bin/sh", "-c", "exit 7"}, 7},
	} {
		args := append([]string{"exec", "--socket", f.sock, "--"}, tc.args...)
		if tc.args[0] == "--seccomp" {
			args = append([]string{"exec", "--seccomp", "--socket", f.sock, "--"}, tc.args[1:]...)
		}
		cmd := exec.Command(f.nlemu, args...)
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != tc.want {
			t.Errorf("nlemu %s: exit %d, want %d", strings.Join(args, " "), code, tc.want)
		}
	}
}

// TestSeccompRunsIPLikeTheShim: iproute2's ip (dynamic, so normally the
// shim's) forced under the supervisor with --seccomp — its sizing peeks,
// dumps, extended acks, a monitor — prints what it prints under the shim
// (checked against the kernel elsewhere), step by step, in two fresh
// namespaces. The veth pair's MAC addresses are given: each namespace
// would draw its own, and with them its link-local addresses.
func TestSeccompRunsIPLikeTheShim(t *testing.T) {
	ip := ipcFindIP()
	if ip == "" {
		t.Skip("iproute2 (ip) is not installed")
	}
	f := newSeccompFixture(t)
	steps := [][]string{
		{"link", "add", "v0", "address", "02:00:00:00:00:01", "type", "veth", "peer", "name", "v1", "address", "02:00:00:00:00:02"},
		{"link", "set", "v0", "up"},
		{"link", "set", "v1", "up"},
		{"addr", "add", "192.0.2.1/24", "dev", "v0"},
		{"-6", "addr", "add", "2001:db8::1/64", "dev", "v0", "nodad"},
		{"route", "add", "198.51.100.0/24", "via", "192.0.2.254"},
		{"route", "get", "198.51.100.7"},
		{"rule", "add", "pref", "10", "from", "192.0.2.0/24", "table", "10"},
		{"rule", "add", "pref", "10", "from", "192.0.2.0/24", "table", "10"}, // EEXIST, with its message
		{"-d", "link", "show"},
		{"addr", "show"},
		{"route", "show", "table", "all"},
		{"-6", "route", "show", "table", "all"},
		{"rule", "show"},
		{"-s", "-j", "link", "show", "lo"},
	}
	run := func(ns string, seccomp bool, args []string) string {
		argv := []string{f.nlemu, "exec", "--socket", f.sock, "-n", ns}
		if seccomp {
			argv = append(argv, "--seccomp")
		}
		argv = append(append(argv, "--", ip), args...)
		cmd := exec.Command(argv[0], argv[1:]...)
		if f.guard != nil {
			cmd = f.guard.command(context.Background(), ip, argv...)
		}
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		done := shimWatchdog(t, cmd, 60*time.Second)
		err := cmd.Run()
		done()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("exit %d\n%s%s", code, o.String(), e.String())
	}
	for _, ns := range []string{"seccomp-ip-shim", "seccomp-ip-seccomp"} {
		if err := f.srv.Namespaces().Add(ns); err != nil {
			t.Fatal(err)
		}
	}
	for _, step := range steps {
		want := run("seccomp-ip-shim", false, step)
		got := run("seccomp-ip-seccomp", true, step)
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("ip %s: --seccomp differs from the shim (-shim +seccomp):\n%s", strings.Join(step, " "), d)
		}
	}
}

// TestSeccompForwardsSIGTERM: a SIGTERM sent to nlemu exec reaches the
// supervised CMD, whose exit status nlemu exec then reports.
func TestSeccompForwardsSIGTERM(t *testing.T) {
	f := newSeccompFixture(t)
	cmd := exec.Command(f.nlemu, "exec", "--seccomp", "--socket", f.sock, "--",
		"/bin/sh", "-c", `trap "exit 42" TERM; echo ready; while :; do sleep 0.05; done`)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := shimWatchdog(t, cmd, 60*time.Second)
	defer done()
	line := make([]byte, 6)
	if _, err := io.ReadFull(out, line); err != nil || string(line) != "ready\n" {
		t.Fatalf("CMD did not start: %q %v", line, err)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 42 {
		t.Errorf("nlemu exec after SIGTERM: %v, want exit 42 (CMD's trap)", err)
	}
}
