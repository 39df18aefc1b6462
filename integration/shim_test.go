package integration

// End-to-end tests of the LD_PRELOAD shim (preload/) and `nlemu exec`: a C
// program (shim_prog.c) and the real iproute2 `ip` run against an in-process
// nlemu server listening on a temporary Unix socket.
//
//	go test ./integration -run 'TestShim' -v

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nlemu/nlemu/integration/kernelns"
	"github.com/nlemu/nlemu/preload"
	"github.com/nlemu/nlemu/server"
)

//go:embed shim_prog.c
var shimProgSource []byte

// shimFixture is one server on a Unix socket, the shim library and the
// compiled test program, shared by the subtests of one test.
type shimFixture struct {
	srv  *server.Server
	sock string
	lib  string
	prog string
	dir  string
	// guard is the kernel namespace run() runs the programs in (nil
	// without kernel namespaces): it must not change.
	guard *hostGuard
}

func newShimFixture(t *testing.T) *shimFixture {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc is not installed: the LD_PRELOAD shim tests compile C code")
	}
	lib, err := preload.Path()
	if err != nil {
		t.Fatalf("building the shim: %v", err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "shim_prog.c")
	if err := os.WriteFile(src, shimProgSource, 0o644); err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(dir, "shim_prog")
	if out, err := exec.Command("gcc", "-O1", "-Wall", "-o", prog, src, "-lpthread").CombinedOutput(); err != nil {
		t.Fatalf("compiling shim_prog.c: %v\n%s", err, out)
	}
	srv, sock := startTestServer(t, dir)
	guard := maybeHostGuard(t, []string{"link", "set", "lo", "up"}) // programs use loopback, as on a host
	return &shimFixture{srv: srv, sock: sock, lib: lib, prog: prog, dir: dir, guard: guard}
}

// ns creates a fresh namespace for one subtest.
func (f *shimFixture) ns(t *testing.T) string {
	t.Helper()
	name := "shim-" + strings.NewReplacer("/", "-", " ", "-").Replace(t.Name())
	if err := f.srv.Namespaces().Add(name); err != nil {
		t.Fatal(err)
	}
	return name
}

// env is what `nlemu exec` gives a command.
func (f *shimFixture) env(ns string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "LD_PRELOAD=") && !strings.HasPrefix(kv, "NLEMU_") {
			env = append(env, kv)
		}
	}
	return append(env, "LD_PRELOAD="+f.lib, "NLEMU_SOCKET="+f.sock, "NLEMU_NETNS="+ns)
}

// run runs shim_prog MODE under the shim in namespace ns (or natively, on
// the kernel, when ns is "") and returns its stdout.
func (f *shimFixture) run(t *testing.T, ns string, args ...string) string {
	t.Helper()
	cmd := exec.Command(f.prog, args...)
	if ns != "" {
		cmd.Env = f.env(ns)
		if f.guard != nil {
			// The shim's variables are set after `ip netns exec` has
			// entered the guard namespace (by env(1)), as `nlemu exec`
			// inside it would: a shim loaded into the wrapper itself
			// would record the host namespace as the one the program
			// started in, and the program, in the guard's /run/netns
			// namespace, would attach to the nlemu namespace named
			// like it (TestIPNetnsExecInsideMapsToNamedNamespace).
			env := cmd.Env // f.env: the environment, then its three shim variables
			argv := append([]string{"env"}, env[len(env)-3:]...)
			cmd = f.guard.command(context.Background(), ipcFindIP(), append(append(argv, f.prog), args...)...)
			cmd.Env = env[:len(env)-3]
		}
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	done := shimWatchdog(t, cmd, 60*time.Second)
	out, err := cmd.Output()
	done()
	if err != nil {
		t.Fatalf("shim_prog %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out)
}

// shimWatchdog kills cmd if it runs longer than d (a hung shim must fail
// the test, not the whole run); call the returned func when cmd is done.
func shimWatchdog(t *testing.T, cmd *exec.Cmd, d time.Duration) func() {
	stop := make(chan struct{})
	go func() {
		select {
		case <-time.After(d):
			if cmd.Process != nil {
				t.Errorf("%s: still running after %v, killed", cmd.Path, d)
				cmd.Process.Kill()
			}
		case <-stop:
		}
	}()
	return func() { close(stop) }
}

// kv parses "a=1 b=2" lines into a map (the last value of a key wins).
func shimKV(out string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		for _, f := range strings.Fields(line) {
			if k, v, ok := strings.Cut(f, "="); ok {
				m[k] = v
			}
		}
	}
	return m
}

func shimWant(t *testing.T, got map[string]string, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
}

// shimAddRules adds n IPv4 rules "pref base+i table base+i" through an
// in-process client of namespace ns.
func (f *shimFixture) shimAddRules(t *testing.T, ns string, base, n int) {
	t.Helper()
	c, err := f.srv.Dial(server.Options{Namespace: ns, ExtAck: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetRecvTimeout(10 * time.Second)
	for i := 0; i < n; i++ {
		seq := uint32(i + 1)
		if err := c.Send(shimNewRule(seq, uint32(base+i), uint32(base+i))); err != nil {
			t.Fatal(err)
		}
		rep, err := c.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if errno := shimAckErrno(rep); errno != 0 {
			t.Fatalf("adding rule %d: %v", base+i, syscall.Errno(errno))
		}
	}
}

// shimNewRule is RTM_NEWRULE {AF_INET, FR_ACT_TO_TBL} + FRA_PRIORITY +
// FRA_TABLE with REQUEST|ACK|EXCL|CREATE.
func shimNewRule(seq, prio, table uint32) []byte {
	ne := binary.NativeEndian
	b := make([]byte, 16+12+8+8)
	ne.PutUint32(b[0:], uint32(len(b)))
	ne.PutUint16(b[4:], syscall.RTM_NEWRULE)
	ne.PutUint16(b[6:], syscall.NLM_F_REQUEST|syscall.NLM_F_ACK|syscall.NLM_F_EXCL|syscall.NLM_F_CREATE)
	ne.PutUint32(b[8:], seq)
	b[16] = syscall.AF_INET
	b[16+7] = 1 // FR_ACT_TO_TBL
	ne.PutUint16(b[28:], 8)
	ne.PutUint16(b[30:], 6) // FRA_PRIORITY
	ne.PutUint32(b[32:], prio)
	ne.PutUint16(b[36:], 8)
	ne.PutUint16(b[38:], 15) // FRA_TABLE
	ne.PutUint32(b[40:], table)
	return b
}

// shimAckErrno returns the positive errno of an NLMSG_ERROR (0 for an ack).
func shimAckErrno(b []byte) int {
	ne := binary.NativeEndian
	if len(b) < 20 || ne.Uint16(b[4:]) != syscall.NLMSG_ERROR {
		return int(syscall.EPROTO)
	}
	return -int(int32(ne.Uint32(b[16:])))
}

const shimDefaultRules = "0:\tfrom all lookup local\n32766:\tfrom all lookup main\n32767:\tfrom all lookup default\n"

func TestShim(t *testing.T) {
	f := newShimFixture(t)

	t.Run("NonblockingPoll", func(t *testing.T) {
		got := shimKV(f.run(t, f.ns(t), "nonblock"))
		shimWant(t, got, map[string]string{"rules": "3"})
	})

	t.Run("PeekTrunc", func(t *testing.T) {
		ns := f.ns(t)
		got := shimKV(f.run(t, ns, "peek"))
		shimWant(t, got, map[string]string{
			"peek_trunc": "1", "peek_namelen": "12", "family": strconv.Itoa(syscall.AF_NETLINK),
			"nl_pid": "0", "nl_groups": "0", "peek_again_same": "1", "peek_plain": "16",
			"recv_full": "1", "trunc": "0", "reply_pid_ok": "1", "reply_seq": "7",
			"first_datagram_rules": "3", "done": "1", "recvfrom_ok": "1", "addrlen": "12",
		})
	})

	t.Run("DumpLargerThanBuffer", func(t *testing.T) {
		ns := f.ns(t)
		f.shimAddRules(t, ns, 1000, 500)
		got := shimKV(f.run(t, ns, "dump", "4096"))
		shimWant(t, got, map[string]string{"rules": "503", "read_rules": "503"})
		if n, _ := strconv.Atoi(got["datagrams"]); n < 2 {
			t.Errorf("dump of 503 rules came in %d datagram(s) of at most 4096 bytes", n)
		}
		// ~30 KB of rules: one or two datagrams once 32 KiB reads were seen.
		if n, _ := strconv.Atoi(got["big_datagrams"]); n < 1 || n > 2 {
			t.Errorf("with 32 KiB reads the dump came in %d datagrams, want 1 or 2", n)
		}
	})

	t.Run("NoServerOrNamespace", func(t *testing.T) {
		for _, tc := range []struct{ sock, ns, errno, stderr string }{
			{filepath.Join(f.dir, "missing.sock"), "default", "Connection refused",
				"nlemu: cannot reach the nlemu server at " + filepath.Join(f.dir, "missing.sock") +
					": No such file or directory\n"},
			{f.sock, "no-such-ns", "No such file or directory",
				"nlemu: namespace \"no-such-ns\" does not exist on the nlemu server at " + f.sock + "\n"},
		} {
			cmd := exec.Command(f.prog, "open")
			cmd.Env = append(f.env(tc.ns), "NLEMU_SOCKET="+tc.sock)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%v: %s", err, stderr.String())
			}
			if want := "fd_ok=0 errno=" + tc.errno + "\n"; string(out) != want {
				t.Errorf("socket(): %q, want %q", out, want)
			}
			if stderr.String() != tc.stderr {
				t.Errorf("stderr %q, want %q", stderr.String(), tc.stderr)
			}
		}
	})

	t.Run("TwoSockets", func(t *testing.T) {
		got := shimKV(f.run(t, f.ns(t), "two"))
		shimWant(t, got, map[string]string{
			"distinct": "1", "nonzero": "1", "groups": "0x80", "same_pid_after_bind": "1",
			"bind_short": "-1", "errno": strconv.Itoa(int(syscall.EINVAL)), "short_len": "12",
			"both_dumped": "1",
		})
	})

	t.Run("SockoptsMatchKernel", func(t *testing.T) {
		ns := f.ns(t)
		shim := f.run(t, ns, "sockopt")
		kernel, err := exec.Command(f.prog, "sockopt").Output()
		if err != nil {
			kernelns.Unavailable(t, "no kernel netlink to compare with: %v", err)
		}
		if shim != string(kernel) {
			t.Errorf("getsockopt/setsockopt differ from the kernel:\nkernel:\n%s\nshim:\n%s", kernel, shim)
		}
	})

	t.Run("PeekMatchesKernel", func(t *testing.T) {
		ns := f.ns(t)
		shim := f.run(t, ns, "peek")
		kernel, err := exec.Command(f.prog, "peek").Output()
		if err != nil {
			kernelns.Unavailable(t, "no kernel netlink to compare with: %v", err)
		}
		if shim != string(kernel) {
			t.Errorf("peek/recv semantics differ from the kernel:\nkernel:\n%s\nshim:\n%s", kernel, shim)
		}
	})

	t.Run("DupAndClose", func(t *testing.T) {
		got := shimKV(f.run(t, f.ns(t), "dup"))
		shimWant(t, got, map[string]string{
			"dup_pids_equal": "1", "dup_dump_rules": "3", "shared_option": "1",
			"dup2_replaced": "1", "reused_fd": "1", "family_inet": "1",
		})
	})

	t.Run("PassThrough", func(t *testing.T) {
		got := shimKV(f.run(t, f.ns(t), "passthrough"))
		shimWant(t, got, map[string]string{
			"route_kernel_domain_unix": "1", "generic_kernel_domain_netlink": "1",
			"generic_reply": "1", "udp_roundtrip": "1", "from_inet": "1",
		})
	})

	t.Run("InterfaceNames", func(t *testing.T) {
		got := f.run(t, f.ns(t), "ifindex")
		want := "lo=1\nindex1=lo\nunknown=0 errno=No such device\n" +
			"unknown_index=(null) errno=No such device or address\nlink=1:lo\n"
		if got != want {
			t.Errorf("got:\n%s\nwant:\n%s", got, want)
		}
	})

	t.Run("ForkAndExec", func(t *testing.T) {
		got := shimKV(f.run(t, f.ns(t), "fork"))
		shimWant(t, got, map[string]string{
			"child_ok": "1", "parent_rules": "3", "cloexec_closed": "1", "plain_kept": "1",
		})
	})

	t.Run("Threads", func(t *testing.T) {
		got := shimKV(f.run(t, f.ns(t), "threads"))
		shimWant(t, got, map[string]string{"threads_ok": "1"})
	})

	t.Run("AckThroughSendmsg", func(t *testing.T) {
		got := shimKV(f.run(t, f.ns(t), "ack"))
		shimWant(t, got, map[string]string{
			"del_missing_error": strconv.Itoa(-int(syscall.ENOENT)), "seq": "77",
		})
	})

	t.Run("SendmmsgRecvmmsg", func(t *testing.T) {
		got := shimKV(f.run(t, f.ns(t), "mmsg"))
		shimWant(t, got, map[string]string{
			"sent": "2", "len0": "36", "received": "2", "seq_sum": "3", "names_ok": "1",
		})
	})

	t.Run("ENOBUFS", func(t *testing.T) {
		ns := f.ns(t)
		cmd := exec.Command(f.prog, "enobufs")
		cmd.Env = f.env(ns)
		stdin, _ := cmd.StdinPipe()
		stdout, _ := cmd.StdoutPipe()
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := shimWatchdog(t, cmd, 60*time.Second)
		defer done()
		r := bufio.NewReader(stdout)
		if line, err := r.ReadString('\n'); line != "ready\n" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("shim_prog enobufs: %q %v\n%s", line, err, stderr.String())
		}
		// Far more notifications than the minimum receive buffer holds
		// (the server also has the Unix socket's own buffer to fill).
		const n = 1500
		f.shimAddRules(t, ns, 1, n)
		io.WriteString(stdin, "go\n")
		rest, _ := io.ReadAll(r)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("shim_prog enobufs: %v\n%s\n%s", err, rest, stderr.String())
		}
		got := shimKV(string(rest))
		e, _ := strconv.Atoi(got["enobufs"])
		notes, _ := strconv.Atoi(got["notifications"])
		t.Logf("ENOBUFS reported %d time(s); %d of %d notifications delivered", e, notes, n)
		// The kernel's count (TestENOBUFSAfterKernelCount/shim): two
		// notifications of 832 bytes of truesize fill sk_rcvbuf 2304.
		if e != 1 || notes != 2 {
			t.Errorf("want ENOBUFS once and 2 notifications, as the kernel: %s", rest)
		}
	})
}

// shimIP is the iproute2 binary, or "" when it is not installed.
func shimIP() string {
	for _, p := range []string{"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// shimNlemu returns the nlemu binary, built once per test process.
func shimNlemu(t *testing.T) string {
	t.Helper()
	bin, err := ipcNlemuBinary()
	if err != nil {
		t.Fatalf("%v", err)
	}
	return bin
}

// shimExec runs `nlemu exec --socket S -n NS -- args...` with stdin and
// returns stdout, stderr and the exit code.
func (f *shimFixture) shimExec(t *testing.T, ns, stdin string, args ...string) (string, string, int) {
	t.Helper()
	bin := shimNlemu(t)
	full := append([]string{"exec", "--socket", f.sock, "-n", ns, "--"}, args...)
	cmd := exec.Command(bin, full...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	done := shimWatchdog(t, cmd, 60*time.Second)
	err := cmd.Run()
	done()
	code := 0
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("nlemu exec: %v", err)
		}
		code = ee.ExitCode()
	}
	return out.String(), errb.String(), code
}

func TestShimIPRoute2(t *testing.T) {
	ip := shimIP()
	if ip == "" {
		t.Skip("iproute2 (ip) is not installed")
	}
	f := newShimFixture(t)
	shimNlemu(t)

	t.Run("RuleShowDefault", func(t *testing.T) {
		out, errs, code := f.shimExec(t, f.ns(t), "", ip, "rule", "show")
		if code != 0 || out != shimDefaultRules {
			t.Fatalf("rc %d\nstdout:\n%q\nwant:\n%q\nstderr:\n%s", code, out, shimDefaultRules, errs)
		}
	})

	t.Run("RuleAddShowDel", func(t *testing.T) {
		ns := f.ns(t)
		if out, errs, code := f.shimExec(t, ns, "", ip, "rule", "add", "from", "10.0.0.0/8", "table", "5"); code != 0 {
			t.Fatalf("rule add: rc %d %s %s", code, out, errs)
		}
		out, _, _ := f.shimExec(t, ns, "", ip, "rule", "show")
		want := "0:\tfrom all lookup local\n32765:\tfrom 10.0.0.0/8 lookup 5\n32766:\tfrom all lookup main\n32767:\tfrom all lookup default\n"
		if out != want {
			t.Errorf("after add:\n%q\nwant:\n%q", out, want)
		}
		_, errs, code := f.shimExec(t, ns, "", ip, "-6", "rule", "del", "pref", "100")
		if code != 2 || errs != "RTNETLINK answers: No such file or directory\n" {
			t.Errorf("deleting a missing rule: rc %d stderr %q", code, errs)
		}
		// The default namespace is untouched.
		out, _, _ = f.shimExec(t, "default", "", ip, "rule", "show")
		if out != shimDefaultRules {
			t.Errorf("default namespace changed:\n%s", out)
		}
	})

	t.Run("Batch", func(t *testing.T) {
		ns := f.ns(t)
		var b strings.Builder
		for i := 0; i < 100; i++ {
			fmt.Fprintf(&b, "rule add from all table %d\n", 100+i)
		}
		out, errs, code := f.shimExec(t, ns, b.String(), ip, "-batch", "-")
		if code != 0 {
			t.Fatalf("ip -batch: rc %d %s %s", code, out, errs)
		}
		out, _, _ = f.shimExec(t, ns, "", ip, "-4", "rule", "show")
		if n := strings.Count(out, "\n"); n != 103 {
			t.Errorf("%d rules after the batch, want 103", n)
		}
	})

	t.Run("DeviceFallbackThroughIfNameToIndex", func(t *testing.T) {
		// RTM_GETLINK by name fails, then ip falls back to
		// if_nametoindex(), which must ask the emulated namespace too.
		_, errs, code := f.shimExec(t, f.ns(t), "", ip, "route", "add", "10.1.0.0/16", "dev", "nlemu-nosuch0")
		if code != 1 || errs != "Cannot find device \"nlemu-nosuch0\"\n" {
			t.Errorf("rc %d stderr %q", code, errs)
		}
	})

	t.Run("Monitor", func(t *testing.T) {
		ns := f.ns(t)
		bin := shimNlemu(t)
		cmd := exec.Command(bin, "exec", "--socket", f.sock, "-n", ns, "--", ip, "monitor", "rule")
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string, 100)
		go func() {
			s := bufio.NewScanner(stdout)
			for s.Scan() {
				lines <- s.Text()
			}
			close(lines)
		}()
		defer func() {
			cmd.Process.Signal(syscall.SIGTERM)
			cmd.Wait()
		}()
		// ip subscribes some time after it starts: add rules until one
		// is reported.
		deadline := time.After(10 * time.Second)
		for i := 0; ; i++ {
			f.shimAddRules(t, ns, 2000+i, 1)
			select {
			case l := <-lines:
				// one of the rules added so far, as `ip rule` prints it
				var pref, table int
				if _, err := fmt.Sscanf(l, "%d:\tfrom all lookup %d", &pref, &table); err != nil ||
					pref != table || pref < 2000 || pref > 2000+i {
					t.Errorf("monitor printed %q", l)
				}
				return
			case <-time.After(100 * time.Millisecond):
			case <-deadline:
				t.Fatal("ip monitor rule printed nothing")
			}
		}
	})

	t.Run("ExecErrors", func(t *testing.T) {
		bin := shimNlemu(t)
		run := func(args ...string) (string, int) {
			cmd := exec.Command(bin, args...)
			var errb bytes.Buffer
			cmd.Stderr = &errb
			err := cmd.Run()
			var ee *exec.ExitError
			if err != nil && !errors.As(err, &ee) {
				t.Fatal(err)
			}
			return errb.String(), cmd.ProcessState.ExitCode()
		}
		// A missing namespace is the shim's to report (nlemu exec only
		// connects, no handshake): ip's socket() fails with ENOENT.
		errs, code := run("exec", "--socket", f.sock, "-n", "no-such-ns", "--", ip, "rule")
		if want := "nlemu: namespace \"no-such-ns\" does not exist on the nlemu server at " + f.sock + "\n" +
			"Cannot open netlink socket: No such file or directory\n"; code != 1 || errs != want {
			t.Errorf("unknown namespace: rc %d %q, want 1 %q", code, errs, want)
		}
		missing := filepath.Join(f.dir, "missing.sock")
		errs, code = run("exec", "--socket", missing, "-n", "default", "--", ip, "rule")
		if code != 1 || errs != "nlemu exec: no server at "+missing+": no such file or directory\n" {
			t.Errorf("no server: rc %d %q", code, errs)
		}
		if _, code = run("exec", "--socket", f.sock, "--", "sh", "-c", "exit 7"); code != 7 {
			t.Errorf("exit code %d, want 7", code)
		}
		cmd := exec.Command(bin, "exec", "--socket", f.sock, "--", "sh", "-c", "kill -TERM $$")
		cmd.Run()
		// nlemu exec becomes CMD (execve), so the caller sees CMD's own
		// death by signal, as if it had run CMD itself.
		if ws := cmd.ProcessState.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
			t.Errorf("killed command: status %v, want killed by SIGTERM", ws)
		}
		// The environment CMD sees.
		cmd = exec.Command(bin, "exec", "--socket", f.sock, "-n", "default", "--", "sh", "-c",
			`printf '%s\n%s\n%s\n' "$LD_PRELOAD" "$NLEMU_SOCKET" "$NLEMU_NETNS"`)
		cmd.Env = append(os.Environ(), "LD_PRELOAD=/nonexistent/other.so")
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		want := f.lib + ":/nonexistent/other.so\n" + f.sock + "\ndefault\n"
		// ld.so warns about the missing other.so on stderr only.
		if string(out) != want {
			t.Errorf("environment:\n%q\nwant:\n%q", out, want)
		}
	})
}

// TestExecFastPathSkipsGoRuntime: once the shim is built and verified,
// `nlemu exec` runs CMD from a C constructor before its Go runtime starts
// (cmd/nlemu/execfast_cgo.go), and CMD sees exactly what the Go path gives
// it. The Go runtime's start shows as GODEBUG=inittrace=1 lines on stderr;
// the fast path prints none. Whatever the fast path cannot decide (an
// unknown flag, a missing server, a static program, a library that changed
// since its record was written) is left to the Go path, which says why.
func TestExecFastPathSkipsGoRuntime(t *testing.T) {
	f := newShimFixture(t)
	bin := shimNlemu(t)
	cache := t.TempDir() // a fresh cache: the first run builds the shim in Go
	run := func(env []string, args ...string) (stdout, stderr string, code int) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+cache, "GODEBUG=inittrace=1",
			"LD_PRELOAD=/nonexistent/other.so")
		cmd.Env = append(cmd.Env, env...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		done := shimWatchdog(t, cmd, 120*time.Second)
		cmd.Run()
		done()
		return out.String(), errb.String(), cmd.ProcessState.ExitCode()
	}
	goRan := func(stderr string) bool { return strings.Contains(stderr, "init runtime @") }
	show := []string{"exec", "--socket", f.sock, "-n", "fast", "--", "sh", "-c",
		`printf '%s|%s|%s|%s\n' "$LD_PRELOAD" "$NLEMU_SOCKET" "$NLEMU_NETNS" "$*"`, "sh", "a b", "c"}

	slowOut, slowErr, code := run(nil, show...)
	if code != 0 || !goRan(slowErr) {
		t.Fatalf("first run (builds the shim): exit %d, stderr %q; want 0 and the Go runtime's start", code, slowErr)
	}
	if !strings.HasSuffix(slowOut, "|"+f.sock+"|fast|a b c\n") || !strings.Contains(slowOut, ":/nonexistent/other.so|") {
		t.Errorf("first run: CMD saw %q", slowOut)
	}
	fastOut, fastErr, code := run(nil, show...)
	if code != 0 || goRan(fastErr) {
		t.Errorf("second run: exit %d, stderr %q; want 0 and no Go runtime start (the fast path)", code, fastErr)
	}
	if fastOut != slowOut {
		t.Errorf("the fast path gave CMD\n%q\nthe Go path\n%q", fastOut, slowOut)
	}
	// The forms of the flags the fast path parses; the result is the same.
	for _, args := range [][]string{
		{"exec", "--socket=" + f.sock, "-n=fast", "sh", "-c", "echo $NLEMU_NETNS"},
		{"exec", "-socket", f.sock, "--netns", "fast", "--", "sh", "-c", "echo $NLEMU_NETNS"},
	} {
		out, errs, code := run(nil, args...)
		if code != 0 || goRan(errs) || out != "fast\n" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want fast, on the fast path", args, code, out, errs)
		}
	}
	// The environment is execEnv's for any LD_PRELOAD the caller had (the
	// shim first, once; the others kept in order, split on ':' and ' '):
	// the same through the fast path and through the Go path (--preload is
	// an argument the fast path leaves to Go).
	lib := strings.SplitN(strings.SplitN(slowOut, "|", 2)[0], ":", 2)[0]
	for _, pre := range []string{"", "/a.so", "/a.so /b.so:/c.so", lib, "/a.so:" + lib + ": /b.so", "::"} {
		env := []string{"LD_PRELOAD=" + pre}
		fast, errs, code := run(env, show...)
		if code != 0 || goRan(errs) {
			t.Errorf("LD_PRELOAD=%q: exit %d, Go ran %v; want 0 on the fast path", pre, code, goRan(errs))
		}
		slow, errs, code := run(env, append([]string{"exec", "--preload"}, show[1:]...)...)
		if code != 0 || !goRan(errs) {
			t.Errorf("LD_PRELOAD=%q --preload: exit %d, Go ran %v; want 0 on the Go path", pre, code, goRan(errs))
		}
		if fast != slow {
			t.Errorf("LD_PRELOAD=%q: the fast path gave CMD %q, the Go path %q", pre, fast, slow)
		}
	}
	// The exit status and death by signal are CMD's own on the fast path too.
	if _, errs, code := run(nil, "exec", "--socket", f.sock, "--", "sh", "-c", "exit 7"); code != 7 || goRan(errs) {
		t.Errorf("exit 7: got %d, Go ran %v", code, goRan(errs))
	}

	// Left to the Go path, which answers as it always did.
	cases := []struct {
		name     string
		env      []string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"NoServer", nil, []string{"exec", "--socket", filepath.Join(f.dir, "none.sock"), "--", "true"},
			1, "nlemu exec: no server at " + filepath.Join(f.dir, "none.sock") + ": no such file or directory\n"},
		{"UnknownFlag", nil, []string{"exec", "--bogus", "--", "true"}, 2, "nlemu exec: flag provided but not defined: -bogus\n"},
		{"NotFound", nil, []string{"exec", "--socket", f.sock, "--", "no-such-command-here"}, 127,
			"nlemu exec: no-such-command-here: command not found\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, errs, code := run(c.env, c.args...)
			if !goRan(errs) {
				t.Errorf("the fast path ran; want the Go path")
			}
			var lines []string
			for _, l := range strings.SplitAfter(errs, "\n") {
				if l != "" && !strings.HasPrefix(l, "init ") && !strings.HasPrefix(l, "ERROR: ld.so:") {
					lines = append(lines, l)
				}
			}
			if got := strings.Join(lines, ""); code != c.wantCode || !strings.HasPrefix(got, c.wantErr) {
				t.Errorf("exit %d, stderr %q; want %d, %q", code, got, c.wantCode, c.wantErr)
			}
		})
	}

	// A library that is no longer the one recorded (here: a new mtime) is
	// not used by the fast path; the Go path verifies it and records it again.
	if !strings.HasPrefix(lib, cache) {
		t.Fatalf("the shim %q is not in the test's cache %s", lib, cache)
	}
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(lib, later, later); err != nil {
		t.Fatal(err)
	}
	if _, errs, code := run(nil, show...); code != 0 || !goRan(errs) {
		t.Errorf("after the library changed: exit %d, Go ran %v; want 0 on the Go path", code, goRan(errs))
	}
	if _, errs, code := run(nil, show...); code != 0 || goRan(errs) {
		t.Errorf("after the Go path recorded it again: exit %d, Go ran %v; want 0 on the fast path", code, goRan(errs))
	}
}
