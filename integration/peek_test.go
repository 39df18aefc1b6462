package integration

// The shim's receive paths at the floor (preload/nlemu_preload.c, "peeking
// at the floor"): a MSG_PEEK reads the datagram into the shim, and the next
// receive call is answered from there. peek_prog.c prints the receive flag
// matrix; the kernel's answers on a fresh namespace and the shim's must be
// the same lines.
//
//	go test ./integration -run 'TestPeek|TestShimOneReceive' -v

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nlemu/nlemu/integration/kernelns"
)

//go:embed peek_prog.c
var peekProgSource []byte

// buildPeekProg compiles peek_prog.c into dir.
func buildPeekProg(t *testing.T, dir string) string {
	t.Helper()
	src := filepath.Join(dir, "peek_prog.c")
	if err := os.WriteFile(src, peekProgSource, 0o644); err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(dir, "peek_prog")
	if out, err := exec.Command("gcc", "-O1", "-Wall", "-o", prog, src, "-lpthread").CombinedOutput(); err != nil {
		t.Fatalf("compiling peek_prog.c: %v\n%s", err, out)
	}
	return prog
}

// runGuarded runs argv under the shim in nlemu namespace ns, inside the
// fixture's host guard, and returns its stdout.
func (f *shimFixture) runGuarded(t *testing.T, ns string, env []string, argv ...string) string {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	if f.guard != nil {
		cmd = f.guard.command(context.Background(), ipcFindIP(), argv...)
	}
	cmd.Env = append(f.env(ns), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	done := shimWatchdog(t, cmd, 60*time.Second)
	out, err := cmd.Output()
	done()
	if err != nil {
		t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(argv, " "), err, out, stderr.String())
	}
	return string(out)
}

// TestPeekFlagMatrixMatchesKernel: every receive flag combination and call
// iproute2 and other libc programs use after a MSG_PEEK|MSG_TRUNC sizing
// peek (MSG_PEEK alone, MSG_TRUNC on a short buffer, MSG_DONTWAIT,
// O_NONBLOCK, MSG_WAITALL, MSG_CMSG_CLOEXEC, read/readv/recv/recvfrom/
// recvmmsg, msg_flags and the sender address), and readiness after a peek
// for poll, ppoll, select, pselect, epoll_wait and epoll_pwait with a zero
// timeout (the datagram the shim read ahead must still make the socket
// readable, and nothing may be readable once it is read), in a
// single-threaded process (read-ahead) and after a second thread existed
// (plain peeks), give what a kernel NETLINK_ROUTE socket gives.
func TestPeekFlagMatrixMatchesKernel(t *testing.T) {
	f := newShimFixture(t)
	prog := buildPeekProg(t, f.dir)
	kns := kernelns.NewForTest(t, "nlemu-peek")
	kcmd := exec.Command(ipcFindIP(), "netns", "exec", kns.Name(), prog)
	var kerr bytes.Buffer
	kcmd.Stderr = &kerr
	kernel, err := kcmd.Output()
	if err != nil {
		t.Fatalf("peek_prog on the kernel: %v\n%s", err, kerr.String())
	}
	shim := f.runGuarded(t, f.ns(t), nil, prog)
	if d := cmp.Diff(strings.Split(string(kernel), "\n"), strings.Split(shim, "\n")); d != "" {
		t.Errorf("receive flag matrix differs from the kernel's (-kernel +shim):\n%s", d)
	}
	// The matrix must have run all its steps (a silent early exit would
	// compare two empty outputs).
	for _, step := range []string{"sizing:", "wait_calls:", "wait_alone:", "dump:", "fork:", "threaded:"} {
		if !strings.Contains(string(kernel), "\n"+step) && !strings.HasPrefix(string(kernel), step) {
			t.Errorf("the kernel's run has no step %q:\n%s", step, kernel)
		}
	}
}

// straceCount matches one row of `strace -c`: calls (and errors) by name.
var straceCount = regexp.MustCompile(`(?m)^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:(\d+)\s+)?(\w+)$`)

// TestShimOneReceivePerReply: an `ip -batch` of N requests makes N sendmsg
// and N recvmsg calls on the client side under the shim (iproute2's sizing
// peek is answered from the datagram the shim already read), plus a handful
// for the socket's setup; before the read-ahead it was 2N receive calls.
// Counted with strace -c (a count, not a time). The ip runs as after
// `eval "$(nlemu env -n NS)"`: a plain ip with the shim's environment and
// no nlemu process (README, Quick start). Receive calls that fail are not
// counted: they are the shim's non-blocking probes while it spins for a
// reply (docs/SHIM.md, "Spin then block"), each an EAGAIN that moves no
// datagram.
func TestShimOneReceivePerReply(t *testing.T) {
	if _, err := exec.LookPath("strace"); err != nil {
		kernelns.Unavailable(t, "strace is not installed: the system calls cannot be counted")
	}
	ip := shimIP()
	if ip == "" {
		kernelns.Unavailable(t, "iproute2 `ip` is not installed")
	}
	f := newShimFixture(t)
	ns := f.ns(t)
	const n = 200
	var batch strings.Builder
	for i := range n {
		fmt.Fprintf(&batch, "rule add from 10.%d.%d.0/24 table 5 pref %d\n", i/256, i%256, 1000+i)
	}
	bf := filepath.Join(f.dir, "batch.txt")
	if err := os.WriteFile(bf, []byte(batch.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(f.dir, "strace.txt")
	f.runGuarded(t, ns, nil, "strace", "-f", "-c", "-o", out,
		"-e", "trace=sendmsg,sendto,recvmsg,recvfrom,recvmmsg", ip, "-batch", bf)
	text, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	calls := map[string]int{}
	for _, m := range straceCount.FindAllStringSubmatch(string(text), -1) {
		c, _ := strconv.Atoi(m[1])
		e, _ := strconv.Atoi(m[2])
		calls[m[3]] = c - e
	}
	send := calls["sendmsg"] + calls["sendto"]
	recv := calls["recvmsg"] + calls["recvfrom"] + calls["recvmmsg"]
	// Setup: HELLO and its reply, the receive size told to the server,
	// iproute2's own socket options. Far below one extra call per request.
	const setup = 10
	t.Logf("ip -batch of %d requests: %d sends, %d receives on the client", n, send, recv)
	if send < n || send > n+setup || recv < n || recv > n+setup {
		t.Errorf("ip -batch of %d requests: %d sends and %d receives on the client, want %d..%d each:\n%s",
			n, send, recv, n, n+setup, text)
	}
	rules := f.runGuarded(t, ns, nil, ip, "rule", "show")
	if got := strings.Count(rules, "lookup 5"); got != n {
		t.Errorf("after the batch: %d rules in table 5, want %d", got, n)
	}
}
