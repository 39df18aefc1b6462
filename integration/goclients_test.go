package integration

// Differential runs of Go programs built on the Go netlink libraries
// (issue 11): goprogs/vnl (github.com/vishvananda/netlink) and goprogs/jsr
// (github.com/jsimonetti/rtnetlink), built static with CGO_ENABLED=0, run
// in a fresh kernel namespace and under `nlemu exec --seccomp` (inside the
// host guard), as root and as an unprivileged user; the Go API path runs
// jsr's script in process over client.DialServer. Every transcript must be
// the kernel's.

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mdlayher/netlink"

	"github.com/nlemu/nlemu/client"
	"github.com/nlemu/nlemu/integration/goprogs/jsrscript"
	"github.com/nlemu/nlemu/integration/kernelns"
	"github.com/nlemu/nlemu/server"
)

// goprogs builds nlemu, vnl and jsr (static) into a directory of the
// test's that every user may read (uid 65534 runs them), removed when the
// test ends; the go build cache makes a second build cheap.
func goprogs(t *testing.T) string {
	t.Helper()
	nlemuBin, err := ipcNlemuBinary()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// t.TempDir is DIR/NNN with both 0700.
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command("cp", nlemuBin, filepath.Join(dir, "nlemu")).CombinedOutput(); err != nil {
		t.Fatal(&buildError{"cp nlemu", err, out})
	}
	root := filepath.Dir(mustGetwd())
	for _, prog := range []string{"vnl", "jsr"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, prog), "./integration/goprogs/"+prog)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatal(&buildError{"go build " + prog, err, out})
		}
	}
	return dir
}

type buildError struct {
	what string
	err  error
	out  []byte
}

func (e *buildError) Error() string { return e.what + ": " + e.err.Error() + "\n" + string(e.out) }

func mustGetwd() string {
	wd, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	return wd
}

// kernelTranscript runs prog (as user when non-nil: a setpriv prefix) in a
// fresh kernel namespace and returns its output.
func kernelTranscript(t *testing.T, prog string, user []string) string {
	t.Helper()
	ns := kernelns.NewForTest(t, "h-go")
	ip := ipcFindIP()
	argv := append([]string{"netns", "exec", ns.Name()}, append(user, prog)...)
	ctx, cancel := context.WithTimeout(context.Background(), hangLimit)
	defer cancel()
	out, err := exec.CommandContext(ctx, ip, argv...).CombinedOutput()
	if err != nil {
		t.Fatalf("kernel: %s: %v\n%s", strings.Join(argv, " "), err, out)
	}
	return string(out)
}

// goServer is an `nlemu serve` run as a given user (setpriv prefix, or
// none for this process's), with its socket in a directory that user owns.
type goServer struct {
	bin, sock string
}

func startGoServer(t *testing.T, dir string, user []string, uid int) *goServer {
	t.Helper()
	sockDir, err := os.MkdirTemp("", "nlemu-gosrv-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	if uid >= 0 {
		if err := os.Chown(sockDir, uid, uid); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(sockDir, 0o755)
	s := &goServer{bin: filepath.Join(dir, "nlemu"), sock: filepath.Join(sockDir, "nlemu.sock")}
	argv := append(append([]string{}, user...), s.bin, "serve", "--socket", s.sock)
	cmd := exec.Command(argv[0], argv[1:]...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	for end := time.Now().Add(hangLimit); ; time.Sleep(5 * time.Millisecond) {
		c, err := server.DialUnix(s.sock, server.Options{})
		if err == nil {
			c.Close()
			return s
		}
		select {
		case <-exited:
			t.Fatalf("nlemu serve exited: %s", stderr.String())
		default:
		}
		if time.Now().After(end) {
			t.Fatalf("server never listened: %v\n%s", err, stderr.String())
		}
	}
}

// nlemuTranscript runs prog under `nlemu exec --seccomp` in a fresh nlemu
// namespace of s, as user (a setpriv prefix, or nil), inside a host guard,
// and returns its output.
func nlemuTranscript(t *testing.T, s *goServer, prog string, user []string) string {
	t.Helper()
	name := "go-" + filepath.Base(prog)
	c, err := server.DialUnix(s.sock, server.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.NetnsAdd(name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if c, err := server.DialUnix(s.sock, server.Options{}); err == nil {
			c.NetnsDel(name)
			c.Close()
		}
	})
	g := newHostGuard(t)
	ctx, cancel := context.WithTimeout(context.Background(), hangLimit)
	defer cancel()
	argv := append(append([]string{}, user...), s.bin, "exec", "--seccomp", "-n", name, "--", prog)
	cmd := g.command(ctx, ipcFindIP(), argv...)
	cmd.Env = append(os.Environ(), "NLEMU_SOCKET="+s.sock)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("nlemu: %s: %v\n%s", strings.Join(argv, " "), err, out)
	}
	return string(out)
}

func requireSetpriv(t *testing.T) {
	t.Helper()
	if os.Getuid() != 0 {
		kernelns.Unavailable(t, "the unprivileged runs need root to switch users")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		kernelns.Unavailable(t, "setpriv (util-linux) is not installed: %v", err)
	}
}

// TestGoProgramsMatchKernel: vnl and jsr print the kernel's transcript
// under `nlemu exec --seccomp`: as root; as uid 65534 against a server of
// that uid (the server's own uid may change state); and as uid 65534
// against root's server, where every change is refused with EPERM as the
// kernel refuses an unprivileged caller (kernel side run as 65534 too).
func TestGoProgramsMatchKernel(t *testing.T) {
	dir := goprogs(t)
	nobodyUser := asNobody("")
	for _, prog := range []string{"vnl", "jsr"} {
		bin := filepath.Join(dir, prog)
		t.Run(prog, func(t *testing.T) {
			want := kernelTranscript(t, bin, nil)
			t.Run("root", func(t *testing.T) {
				s := startGoServer(t, dir, nil, -1)
				if d := cmp.Diff(want, nlemuTranscript(t, s, bin, nil)); d != "" {
					t.Errorf("transcript differs (-kernel +nlemu):\n%s", d)
				}
			})
			t.Run("unprivileged_own_server", func(t *testing.T) {
				requireSetpriv(t)
				s := startGoServer(t, dir, nobodyUser, nobody)
				if d := cmp.Diff(want, nlemuTranscript(t, s, bin, nobodyUser)); d != "" {
					t.Errorf("transcript differs (-kernel as root +nlemu as 65534 on its own server):\n%s", d)
				}
			})
			t.Run("unprivileged_caller", func(t *testing.T) {
				requireSetpriv(t)
				wantEPERM := kernelTranscript(t, bin, nobodyUser)
				if !strings.Contains(wantEPERM, "operation not permitted") {
					t.Fatalf("the kernel let uid 65534 change things?\n%s", wantEPERM)
				}
				s := startGoServer(t, dir, nil, -1)
				if d := cmp.Diff(wantEPERM, nlemuTranscript(t, s, bin, nobodyUser)); d != "" {
					t.Errorf("transcript differs (-kernel as 65534 +nlemu as 65534 on root's server):\n%s", d)
				}
			})
		})
	}
}

// TestGoAPIMatchesKernel: jsr's script over the Go API in process
// (client.DialServer and netlink.NewConn) prints what the static jsr
// program prints in a kernel namespace.
func TestGoAPIMatchesKernel(t *testing.T) {
	dir := goprogs(t)
	want := kernelTranscript(t, filepath.Join(dir, "jsr"), nil)
	srv := server.New(server.Config{})
	defer srv.Close()
	if err := srv.Namespaces().Add("api"); err != nil {
		t.Fatal(err)
	}
	sock, err := client.DialServer(srv, "api")
	if err != nil {
		t.Fatal(err)
	}
	c := netlink.NewConn(sock, sock.PortID())
	defer c.Close()
	var got strings.Builder
	jsrscript.Run(jsrscript.FromNetlink(c), &got)
	if d := cmp.Diff(want, got.String()); d != "" {
		t.Errorf("transcript differs (-kernel +Go API):\n%s", d)
	}
}
