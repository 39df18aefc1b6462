package preload

import (
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The shim's shared-memory rings (nlemu_preload.c, "shared-memory rings"),
// end to end: a C client (ring_prog.c) and iproute2 under the shim against
// `nlemu serve`, through the rings (a polling server) and through the
// socket (NLEMU_SHM=0, or a server that does not poll), whose outputs must
// be the same.

//go:embed ring_prog.c
var ringProgSource []byte

var (
	nlemuOnce sync.Once
	nlemuBin  string
	nlemuErr  error
	nlemuDir  string
)

// TestMain removes the nlemu binary the ring tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	if nlemuDir != "" {
		os.RemoveAll(nlemuDir)
	}
	os.Exit(code)
}

// nlemuCommand builds cmd/nlemu once per test binary.
func nlemuCommand(t *testing.T) string {
	t.Helper()
	nlemuOnce.Do(func() {
		nlemuDir, nlemuErr = os.MkdirTemp("", "nlemu-ringtest-")
		if nlemuErr != nil {
			return
		}
		nlemuBin = filepath.Join(nlemuDir, "nlemu")
		out, err := exec.Command("go", "build", "-o", nlemuBin, "github.com/nlemu/nlemu/cmd/nlemu").CombinedOutput()
		if err != nil {
			nlemuErr = fmt.Errorf("go build cmd/nlemu: %v\n%s", err, out)
		}
	})
	if nlemuErr != nil {
		t.Fatal(nlemuErr)
	}
	return nlemuBin
}

// ringServer is one `nlemu serve` for a test.
type ringServer struct {
	bin, sock, lib string
	n              int // namespaces made
}

// startRingServer starts `nlemu serve --loop-sched sched` and builds the
// shim. The polling loop needs two CPUs and SCHED_FIFO (root).
func startRingServer(t *testing.T, sched string) *ringServer {
	t.Helper()
	needCC(t)
	if sched == "poll" {
		if os.Geteuid() != 0 {
			t.Skip("the polling loop needs SCHED_FIFO: run as root")
		}
		if n, _ := cpusAllowed(t); n < 2 {
			t.Skipf("%d CPU: the polling loop needs two", n)
		}
	}
	isolate(t)
	lib, err := Path()
	if err != nil {
		t.Fatal(err)
	}
	bin := nlemuCommand(t)
	sock := filepath.Join(t.TempDir(), "nlemu.sock")
	cmd := exec.Command(bin, "serve", "--socket", sock, "--loop-sched", sched)
	cmd.Env = shimlessEnv()
	logf := filepath.Join(t.TempDir(), "serve.log")
	lf, err := os.Create(logf)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = lf, lf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		lf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logf)
			t.Logf("nlemu serve log:\n%s", b)
		}
	})
	for i := 0; ; i++ {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if i == 200 {
			t.Fatal("nlemu serve: no socket after 20 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	return &ringServer{bin: bin, sock: sock, lib: lib}
}

// shimlessEnv is the environment without the shim's variables.
func shimlessEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "LD_PRELOAD=") && !strings.HasPrefix(kv, "NLEMU_") {
			env = append(env, kv)
		}
	}
	return env
}

// netns makes a fresh namespace.
func (s *ringServer) netns(t *testing.T) string {
	t.Helper()
	s.n++
	name := fmt.Sprintf("ring-%d", s.n)
	cmd := exec.Command(s.bin, "netns", "add", name)
	cmd.Env = append(shimlessEnv(), "NLEMU_SOCKET="+s.sock)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nlemu netns add %s: %v\n%s", name, err, out)
	}
	return name
}

// command is argv under the shim in namespace ns, with env.
func (s *ringServer) command(ns string, argv []string, env ...string) *exec.Cmd {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(append(shimlessEnv(), "LD_PRELOAD="+s.lib, "NLEMU_SOCKET="+s.sock, "NLEMU_NETNS="+ns), env...)
	return cmd
}

// run runs argv under the shim in a fresh namespace and returns its
// stdout and the namespace.
func (s *ringServer) run(t *testing.T, stdin string, argv []string, env ...string) (string, string) {
	t.Helper()
	ns := s.netns(t)
	cmd := s.command(ns, argv, env...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	done := make(chan struct{})
	go func() {
		select {
		case <-time.After(120 * time.Second):
			t.Errorf("%s: still running after 120 s, killed", argv[0])
			cmd.Process.Kill()
		case <-done:
		}
	}()
	out, err := cmd.Output()
	close(done)
	if err != nil {
		t.Fatalf("%s (%s): %v\nstdout:\n%s\nstderr:\n%s", strings.Join(argv, " "), strings.Join(env, " "), err, out, stderr.String())
	}
	return string(out), ns
}

// buildRingProg compiles ring_prog.c (fortified, so that recv and read of
// fixed buffers are the _chk variants).
func buildRingProg(t *testing.T) string {
	t.Helper()
	cc, err := compiler()
	if err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "ring_prog.c")
	if err := os.WriteFile(src, ringProgSource, 0o644); err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(dir, "ring_prog")
	args := append(append([]string{}, cc[1:]...), "-O2", "-D_FORTIFY_SOURCE=2", "-Wall", "-o", prog, src, "-lpthread")
	if out, err := exec.Command(cc[0], args...).CombinedOutput(); err != nil {
		t.Fatalf("cc ring_prog.c: %v\n%s", err, out)
	}
	return prog
}

// ringLines splits ring_prog's output into what it received and its
// "ring WHEN: mode M sent S received R" lines, as "WHEN M" (and whether
// the ring carried datagrams while in ring mode: S and R > 0).
func ringLines(t *testing.T, out string) (recv []string, modes []string) {
	t.Helper()
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		rest, ok := strings.CutPrefix(l, "ring ")
		if !ok {
			recv = append(recv, l)
			continue
		}
		when, stats, _ := strings.Cut(rest, ": ")
		var m, sent, rcvd int
		if _, err := fmt.Sscanf(stats, "mode %d sent %d received %d", &m, &sent, &rcvd); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		used := sent > 0 && rcvd > 0
		modes = append(modes, fmt.Sprintf("%s %d used=%v", when, m, used))
	}
	return recv, modes
}

// TestRingMatchesSocket: each ring_prog mode gives, through the rings,
// exactly what it gives through the socket (NLEMU_SHM=0), and the rings
// were used, and left, where they should be: the receive flag matrix
// (MSG_PEEK, MSG_TRUNC, short buffers, MSG_DONTWAIT, O_NONBLOCK, read,
// readv, recvfrom, recv, recvmmsg, a dump, rule changes) stays in ring
// mode; poll() after a request, pthread_create, fork, dup, FIONREAD and
// F_SETFD without FD_CLOEXEC leave it with nothing lost; a socket joining a
// group leaves (a control call) and gets every notification of changes
// made through another socket's ring, in order, with its group; 2,000
// requests sent before any reply is read (both rings fill: the shim waits
// for room, the server holds replies) are all answered, in order.
func TestRingMatchesSocket(t *testing.T) {
	srv := startRingServer(t, "poll")
	prog := buildRingProg(t)
	for _, tc := range []struct {
		mode string
		ring []string // the ring lines of the run through the rings
	}{
		{"matrix", []string{"end 1 used=true"}},
		{"nonblock", []string{"end 1 used=true"}},
		{"poll", []string{"before 1 used=true", "after 0 used=true"}},
		{"thread", []string{"before 1 used=true", "after 0 used=true"}},
		{"fork", []string{"before 1 used=true", "after 0 used=true"}},
		{"dup", []string{"before 1 used=true", "after dup 0 used=true", "before 1 used=true",
			"after FIONREAD 0 used=true", "before 1 used=true", "after F_SETFD 0 0 used=true"}},
		{"monitor", []string{"monitor 0 used=true", "changer 1 used=true"}},
		{"flood", []string{"flood 1 used=true"}},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			ringOut, _ := srv.run(t, "", []string{prog, tc.mode})
			sockOut, _ := srv.run(t, "", []string{prog, tc.mode}, "NLEMU_SHM=0")
			rr, rm := ringLines(t, ringOut)
			sr, sm := ringLines(t, sockOut)
			if d := cmp.Diff(sr, rr); d != "" {
				t.Errorf("through the rings (+) vs through the socket (-):\n%s", d)
			}
			if d := cmp.Diff(tc.ring, rm); d != "" {
				t.Errorf("ring mode through the rings (-want +got):\n%s", d)
			}
			for _, m := range sm {
				if !strings.HasSuffix(m, " 0 used=false") {
					t.Errorf("NLEMU_SHM=0: %q, want no ring mode", m)
				}
			}
			if t.Failed() {
				t.Logf("through the rings:\n%s", ringOut)
			}
		})
	}
}

// TestRingNotOfferedWithoutPolling: a server that does not poll (pin)
// offers no rings; the shim asks and uses the socket, with the same
// answers as through the rings of a polling server.
func TestRingNotOfferedWithoutPolling(t *testing.T) {
	prog := buildRingProg(t)
	poll := startRingServer(t, "poll")
	want, _ := poll.run(t, "", []string{prog, "matrix"})
	pin := startRingServer(t, "pin")
	got, _ := pin.run(t, "", []string{prog, "matrix"})
	wr, wm := ringLines(t, want)
	gr, gm := ringLines(t, got)
	if d := cmp.Diff(wr, gr); d != "" {
		t.Errorf("pin server (+) vs rings of a polling server (-):\n%s", d)
	}
	if d := cmp.Diff([]string{"end 1 used=true"}, wm); d != "" {
		t.Errorf("polling server (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"end 0 used=false"}, gm); d != "" {
		t.Errorf("pin server (-want +got):\n%s", d)
	}
}

// findIP is iproute2's ip, or a skip.
func findIP(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("ip"); err == nil {
		return p
	}
	for _, p := range []string{"/usr/sbin/ip", "/sbin/ip"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Skip("iproute2 not installed")
	return ""
}

// syscallCount runs cmd under `perf stat -e raw_syscalls:sys_enter` and
// returns its system calls (children included), -1 without perf.
func syscallCount(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	perf, err := exec.LookPath("perf")
	if err != nil || exec.Command(perf, "stat", "-x,", "-e", "raw_syscalls:sys_enter", "-o", os.DevNull, "--", "true").Run() != nil {
		return -1
	}
	out := filepath.Join(t.TempDir(), "perf.out")
	cmd.Args = append([]string{perf, "stat", "-x,", "-e", "raw_syscalls:sys_enter", "-o", out, "--"}, cmd.Args...)
	cmd.Path = perf
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Split(l, ","); len(f) > 2 && strings.HasPrefix(f[2], "raw_syscalls:sys_enter") {
			if n, err := strconv.Atoi(f[0]); err == nil {
				return n
			}
		}
	}
	t.Fatalf("no count in perf's output:\n%s", b)
	return 0
}

// TestRingIPBatch: `ip -batch` of 1,024 rules through the rings leaves
// exactly the rule list the socket path leaves (IPv4 and IPv6), and, where
// perf can count them, with far fewer system calls (no sendmsg and
// recvmsg per rule: a request and its reply cross memory).
func TestRingIPBatch(t *testing.T) {
	ip := findIP(t)
	srv := startRingServer(t, "poll")
	var batch strings.Builder
	for i := 1; i <= 1024; i++ {
		fmt.Fprintf(&batch, "rule add from all table %d\n", i)
	}
	calls := map[string]int{}
	shows := map[string]string{}
	for _, side := range []string{"ring", "socket"} {
		env := []string{}
		if side == "socket" {
			env = append(env, "NLEMU_SHM=0")
		}
		for _, v := range []string{"-4", "-6"} {
			ns := srv.netns(t)
			f := filepath.Join(t.TempDir(), "rules")
			if err := os.WriteFile(f, []byte(batch.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := srv.command(ns, []string{ip, v, "-batch", f}, env...)
			if n := syscallCount(t, cmd); n >= 0 {
				calls[side+v] = n
			} else if out, err := srv.command(ns, []string{ip, v, "-batch", f}, env...).CombinedOutput(); err != nil {
				t.Fatalf("ip %s -batch: %v\n%s", v, err, out)
			}
			out, err := srv.command(ns, []string{ip, v, "rule", "show"}).CombinedOutput()
			if err != nil {
				t.Fatalf("ip %s rule show: %v\n%s", v, err, out)
			}
			shows[side+v] = string(out)
		}
	}
	for _, v := range []string{"-4", "-6"} {
		if d := cmp.Diff(shows["socket"+v], shows["ring"+v]); d != "" {
			t.Errorf("ip %s rule show after the batch, rings (+) vs socket (-):\n%s", v, d)
		}
		if n := strings.Count(shows["ring"+v], "\n"); n < 1024 {
			t.Errorf("ip %s rule show: %d lines, want the 1,024 rules and the defaults", v, n)
		}
	}
	t.Logf("system calls of ip -batch (1,024 rules): %v", calls)
	for _, v := range []string{"-4", "-6"} {
		r, s := calls["ring"+v], calls["socket"+v]
		if s == 0 {
			continue // no perf
		}
		// The socket path makes at least a sendmsg and a recvmsg per rule.
		if s < 2048 || r*2 > s {
			t.Errorf("ip %s -batch: %d system calls through the rings, %d through the socket: want at most half", v, r, s)
		}
	}
}

// TestRingShmOffGivesPlainSocket: NLEMU_SHM=0 does not ask for rings
// (TestRingMatchesSocket checks the mode lines); a socket without
// SOCK_CLOEXEC never asks either, whatever NLEMU_SHM says.
func TestRingShmOffGivesPlainSocket(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("linux only")
	}
	srv := startRingServer(t, "poll")
	prog := buildRingProg(t)
	out, _ := srv.run(t, "", []string{prog, "noclo"})
	_, m := ringLines(t, out)
	if d := cmp.Diff([]string{"noclo 0 used=false"}, m); d != "" {
		t.Errorf("socket without SOCK_CLOEXEC (-want +got):\n%s", d)
	}
	out, _ = srv.run(t, "", []string{prog, "nonblock"}, "NLEMU_SHM=0")
	_, m = ringLines(t, out)
	if d := cmp.Diff([]string{"end 0 used=false"}, m); d != "" {
		t.Errorf("NLEMU_SHM=0 (-want +got):\n%s", d)
	}
}
