package integration

// Shared machinery of the iproute2 differential tests (ip_cases_test.go,
// ip_special_test.go): the real `ip` runs once against a fresh kernel network
// namespace (`ip -n NS ...`) and once against a fresh namespace of an
// in-process nlemu server (`nlemu exec -n NS -- ip ...`), and the two runs must
// print the same bytes.
//
// Both namespaces of a pair get the same name, so that nothing in the output
// needs rewriting; the only normalization anywhere is the nlmsg_seq and
// nlmsg_pid of the messages `ip rule save` writes (time(NULL) and the port id).

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nlemu/nlemu/integration/kernelns"
	"github.com/nlemu/nlemu/preload"
	"github.com/nlemu/nlemu/server"
)

// ipcTimeout bounds every single `ip` run; a hung nlemu fails the subtest.
const ipcTimeout = 60 * time.Second

// ipcEnv is one in-process nlemu server plus the binaries the tests run.
type ipcEnv struct {
	ip    string // iproute2 ip
	nlemu string // built nlemu binary (its exec subcommand)
	srv   *server.Server
	sock  string
}

var ipcNameSeq atomic.Int64

var (
	ipcBuildOnce sync.Once
	ipcBuildBin  string
	ipcBuildErr  error
)

// ipcNlemuBinary builds cmd/nlemu once per test binary.
func ipcNlemuBinary() (string, error) {
	ipcBuildOnce.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Dir(filepath.Dir(file))
		dir, err := os.MkdirTemp("", "nlemu-ipcases-")
		if err != nil {
			ipcBuildErr = err
			return
		}
		bin := filepath.Join(dir, "nlemu")
		cmd := exec.Command("go", "build", "-o", bin, "./cmd/nlemu")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			ipcBuildErr = fmt.Errorf("go build ./cmd/nlemu: %v\n%s", err, out)
			return
		}
		ipcBuildBin = bin
	})
	return ipcBuildBin, ipcBuildErr
}

// ipcFindIP returns iproute2's ip, or "".
func ipcFindIP() string {
	for _, p := range []string{"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("ip"); err == nil {
		return p
	}
	return ""
}

// newIPCEnv skips the test when the kernel side cannot run (no ip, not root,
// `ip netns add` fails) or the shim cannot be built — or fails it, when
// NLEMU_REQUIRE_KERNEL is set (kernelns.Unavailable) — and otherwise starts a
// server that lives until the test ends.
func newIPCEnv(t *testing.T) *ipcEnv {
	t.Helper()
	ip := ipcFindIP()
	if ip == "" {
		kernelns.Unavailable(t, "iproute2 `ip` is not installed: the kernel is the oracle of these tests")
	}
	probe := fmt.Sprintf("nlemu-ipc-%d-probe", os.Getpid())
	if out, err := exec.Command(ip, "netns", "add", probe).CombinedOutput(); err != nil {
		kernelns.Unavailable(t, "`ip netns add` fails (root is needed for the kernel side): %v: %s", err, bytes.TrimSpace(out))
	}
	exec.Command(ip, "netns", "del", probe).Run()
	if _, err := preload.Path(); err != nil {
		kernelns.Unavailable(t, "cannot build the LD_PRELOAD shim: %v", err)
	}
	bin, err := ipcNlemuBinary()
	if err != nil {
		t.Fatal(err)
	}
	srv, sock := startTestServer(t, t.TempDir())
	return &ipcEnv{ip: ip, nlemu: bin, srv: srv, sock: sock}
}

// startTestServer runs an nlemu server on dir/nlemu.sock until the test
// ends.
func startTestServer(t *testing.T, dir string) (*server.Server, string) {
	t.Helper()
	srv := server.New(server.Config{})
	sock := filepath.Join(dir, "nlemu.sock")
	ln, err := srv.ListenUnix(sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ln.Close()
		srv.Close()
	})
	return srv, sock
}

// ipcSide is one namespace that `ip` can be run against.
type ipcSide struct {
	env    *ipcEnv
	kernel bool
	ns     string
	guard  *hostGuard // nlemu side: the kernel namespace its commands run in
}

func (s *ipcSide) label() string {
	if s.kernel {
		return "kernel"
	}
	return "nlemu"
}

// pair creates a fresh kernel namespace and a fresh nlemu namespace with the
// same name; the kernel one is deleted when the test ends.
func (e *ipcEnv) pair(t *testing.T) (kernel, nlemu *ipcSide) {
	t.Helper()
	return e.kernelNS(t), e.nlemuNS(t)
}

func (e *ipcEnv) newName() string {
	return fmt.Sprintf("nlemu-ipc-%d-%d", os.Getpid(), ipcNameSeq.Add(1))
}

func (e *ipcEnv) kernelNS(t *testing.T) *ipcSide {
	t.Helper()
	name := e.newName()
	if out, err := exec.Command(e.ip, "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v: %s", name, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command(e.ip, "netns", "del", name).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v: %s", name, err, out)
		}
	})
	return &ipcSide{env: e, kernel: true, ns: name}
}

func (e *ipcEnv) nlemuNS(t *testing.T) *ipcSide {
	t.Helper()
	name := e.newName()
	if err := e.srv.Namespaces().Add(name); err != nil {
		t.Fatalf("nlemu namespace %s: %v", name, err)
	}
	t.Cleanup(func() { e.srv.Namespaces().Del(name) })
	return &ipcSide{env: e, kernel: false, ns: name, guard: newHostGuard(t)}
}

// command is `ip -n NS ARGS...` on the kernel side and
// `nlemu exec --socket S -n NS -- ip ARGS...` on the nlemu side, run inside
// the side's host guard (a throwaway kernel namespace that must not change).
func (s *ipcSide) command(ctx context.Context, args ...string) *exec.Cmd {
	if s.kernel {
		return exec.CommandContext(ctx, s.env.ip, append([]string{"-n", s.ns}, args...)...)
	}
	full := append([]string{s.env.nlemu, "exec", "--socket", s.env.sock, "-n", s.ns, "--", s.env.ip}, args...)
	return s.guard.command(ctx, s.env.ip, full...)
}

// ipcResult is what one run of ip printed.
type ipcResult struct {
	Stdout, Stderr []byte
	Code           int    // exit code; 128+N when killed by signal N
	Problem        string // the run itself went wrong (timeout, could not start)
}

// run runs ip with ARGS and stdin (may be nil) and waits for it.
func (s *ipcSide) run(stdin []byte, args ...string) ipcResult {
	return s.runIn("", stdin, args...)
}

// runIn is run in working directory dir ("" = the test's).
func (s *ipcSide) runIn(dir string, stdin []byte, args ...string) ipcResult {
	ctx, cancel := context.WithTimeout(context.Background(), ipcTimeout)
	defer cancel()
	cmd := s.command(ctx, args...)
	cmd.Dir = dir
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	return ipcWait(ctx, cmd)
}

// ipcWait runs cmd, made with ctx, to its end and collects its output, exit
// code and what went wrong with the run itself.
func ipcWait(ctx context.Context, cmd *exec.Cmd) ipcResult {
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	r := ipcResult{Stdout: out.Bytes(), Stderr: errb.Bytes()}
	if ctx.Err() != nil {
		r.Problem = fmt.Sprintf("still running after %v, killed (hang)", ipcTimeout)
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.Code = ipcExitCode(cmd.ProcessState)
	default:
		if r.Problem == "" {
			r.Problem = err.Error()
		}
		r.Code = -1
	}
	return r
}

func ipcExitCode(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// cmdline is how a person would type the command on this side.
func (s *ipcSide) cmdline(args ...string) string {
	if s.kernel {
		return "ip -n " + s.ns + " " + strings.Join(args, " ")
	}
	return "nlemu exec -n " + s.ns + " -- ip " + strings.Join(args, " ")
}

// ipcCompare reports (as a test error) every difference between the
// kernel's and nlemu's results of the same command; it reports whether they
// were identical.
func ipcCompare(t *testing.T, what string, k, n ipcResult, render func([]byte) []string) bool {
	t.Helper()
	if d := ipcDifference(k, n, render); d != "" {
		t.Errorf("`ip %s` differs:\n%s", what, d)
		return false
	}
	return true
}

// ipcDifference describes how n (nlemu) differs from k (kernel), with a
// readable diff of stdout and stderr, or returns "" when they are identical;
// render turns stdout into lines for the diff (nil: split at newlines).
func ipcDifference(k, n ipcResult, render func([]byte) []string) string {
	if render == nil {
		render = ipcLines
	}
	var b strings.Builder
	if n.Problem != "" {
		fmt.Fprintf(&b, "  nlemu side: %s\n", n.Problem)
	}
	if k.Problem != "" {
		fmt.Fprintf(&b, "  kernel side: %s\n", k.Problem)
	}
	if k.Code != n.Code {
		fmt.Fprintf(&b, "  exit code: kernel %d, nlemu %d\n", k.Code, n.Code)
	}
	if !bytes.Equal(k.Stdout, n.Stdout) {
		fmt.Fprintf(&b, "  stdout (-kernel +nlemu):\n%s", ipcDiff(render(k.Stdout), render(n.Stdout)))
	}
	if !bytes.Equal(k.Stderr, n.Stderr) {
		fmt.Fprintf(&b, "  stderr (-kernel +nlemu):\n%s", ipcDiff(ipcLines(k.Stderr), ipcLines(n.Stderr)))
	}
	return b.String()
}

// ipcLines splits output into lines for a diff; a missing final newline is
// shown as such.
func ipcLines(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	s := string(b)
	noEOL := !strings.HasSuffix(s, "\n")
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	if noEOL {
		lines[len(lines)-1] += "⏎(no newline at end)"
	}
	for i, l := range lines {
		lines[i] = strings.ReplaceAll(l, "\t", "\\t")
	}
	return lines
}

// ipcJSONLines puts each object of ip's one-line JSON array on its own line
// (for the diff display only; the comparison is on the exact bytes).
func ipcJSONLines(b []byte) []string {
	s := strings.ReplaceAll(string(b), "},{", "},\n{")
	return ipcLines([]byte(s))
}

// ipcNormalizeSave returns the output of `ip rule save` (a 4-byte magic and
// then the dumped netlink messages, verbatim) with nlmsg_seq and nlmsg_pid
// zeroed: the dump's sequence number is time(NULL) and the port id is the
// process's. Every other byte is kept.
func ipcNormalizeSave(b []byte) []byte {
	out := bytes.Clone(b)
	if len(out) < 4 {
		return out
	}
	ne := binary.NativeEndian
	for off := 4; off+16 <= len(out); {
		l := int(ne.Uint32(out[off:]))
		if l < 16 {
			break
		}
		clear(out[off+8 : off+16])
		off += (l + 3) &^ 3
	}
	return out
}

// ipcSaveLines renders a normalized save stream as one line per message.
func ipcSaveLines(b []byte) []string {
	if len(b) < 4 {
		return []string{fmt.Sprintf("short stream % x", b)}
	}
	ne := binary.NativeEndian
	lines := []string{fmt.Sprintf("magic %08x", ne.Uint32(b))}
	off := 4
	for i := 1; off+16 <= len(b); i++ {
		l := int(ne.Uint32(b[off:]))
		end := off + l
		if l < 16 || end > len(b) {
			lines = append(lines, fmt.Sprintf("bad message at %d: % x", off, b[off:]))
			return lines
		}
		lines = append(lines, fmt.Sprintf("msg %d len %d type %d flags %#x: % x",
			i, l, ne.Uint16(b[off+4:]), ne.Uint16(b[off+6:]), b[off+16:end]))
		off += (l + 3) &^ 3
	}
	if off < len(b) {
		lines = append(lines, fmt.Sprintf("trailing bytes: % x", b[off:]))
	}
	return lines
}

// ipcDiff is a line diff of a (kernel) and b (nlemu) in unified style, with
// three lines of context around each change.
func ipcDiff(a, b []string) string {
	// Longest common subsequence, by dynamic programming from the end.
	n, m := len(a), len(b)
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type op struct {
		kind byte
		text string
	}
	var ops []op
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			ops = append(ops, op{' ', a[i]})
			i++
			j++
		case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, op{'-', a[i]})
			i++
		default:
			ops = append(ops, op{'+', b[j]})
			j++
		}
	}
	const ctx = 3
	show := make([]bool, len(ops))
	for k, o := range ops {
		if o.kind != ' ' {
			for c := max(0, k-ctx); c <= min(len(ops)-1, k+ctx); c++ {
				show[c] = true
			}
		}
	}
	var sb strings.Builder
	gap := false
	for k, o := range ops {
		if !show[k] {
			gap = true
			continue
		}
		if gap {
			sb.WriteString("    ...\n")
			gap = false
		}
		fmt.Fprintf(&sb, "    %c %s\n", o.kind, o.text)
	}
	if gap {
		sb.WriteString("    ...\n")
	}
	if len(ops) == 0 {
		sb.WriteString("    (both empty)\n")
	}
	return sb.String()
}
