// Package kernelns gives tests a throw-away kernel network namespace and raw
// NETLINK_ROUTE sockets inside it, so that a scenario can be replayed against
// the live kernel (the oracle) and against nlemu and the answers compared byte
// for byte.
//
// A namespace is created with `ip netns add <prefix>-<random>` and removed with
// `ip netns del` by Close; callers register Close with t.Cleanup so nothing
// leaks (CI checks that `ip netns list` is empty afterwards). When namespaces
// cannot be created (no `ip`, not root, no CAP_SYS_ADMIN, a sandbox) New
// returns an error wrapping ErrNotPermitted, which NewForTest turns into a
// skip, or into a failure when NLEMU_REQUIRE_KERNEL is set (as in CI).
//
// Sockets are created inside the namespace by a goroutine that locks its OS
// thread, enters the namespace with setns(2), creates the socket and returns
// to the original namespace. A socket keeps the namespace it was created in
// for its whole life, so after that it is used from any goroutine.
//
// The methods of Socket mirror nlemu's in-process client (PortID, Send, Recv,
// SetSockopt, Bind, Close): one call moves exactly one netlink datagram.
package kernelns

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// ErrNotPermitted is wrapped by the error New returns when kernel network
// namespaces are not available here: the `ip` binary is missing, or
// `ip netns add` was refused. Tests end with Unavailable on it (a skip, or a
// failure when RequireEnv is set):
//
//	ns, err := kernelns.New("diff")
//	if errors.Is(err, kernelns.ErrNotPermitted) {
//		kernelns.Unavailable(t, "kernel netns not available: %v", err)
//	}
var ErrNotPermitted = errors.New("kernelns: not permitted")

// runDir is where iproute2 bind-mounts named namespaces.
const runDir = "/run/netns"

// NS is a named kernel network namespace created by New.
type NS struct {
	name string
	ip   string // path of the ip binary

	closeOnce sync.Once
	closeErr  error
}

// New creates a fresh network namespace named prefix-<8 hex digits>. The
// namespace has the kernel defaults of a new netns (only `lo`, down; default
// rules of every rule family). The caller must Close it.
func New(prefix string) (*NS, error) {
	ipPath, err := exec.LookPath("ip")
	if err != nil {
		return nil, fmt.Errorf("%w: iproute2 `ip` not found: %v", ErrNotPermitted, err)
	}
	var rnd [4]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return nil, fmt.Errorf("kernelns: random name: %w", err)
	}
	ns := &NS{name: prefix + "-" + hex.EncodeToString(rnd[:]), ip: ipPath}
	if out, err := exec.Command(ipPath, "netns", "add", ns.name).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("%w: `ip netns add %s`: %v: %s", ErrNotPermitted, ns.name, err, bytes.TrimSpace(out))
	}
	// Make sure the namespace is really usable (setns needs CAP_SYS_ADMIN).
	if err := ns.probe(); err != nil {
		_ = ns.Close()
		return nil, fmt.Errorf("%w: cannot enter %s: %v", ErrNotPermitted, ns.name, err)
	}
	return ns, nil
}

// RequireEnv names the environment variable that makes the kernel side
// mandatory: when it is set to anything but "" or "0", Unavailable (and so
// NewForTest) fails a test instead of skipping it. .ci/run sets it, because
// CI runs as root where every differential test must really compare with the
// kernel; a skip there would be a test that passes without testing.
const RequireEnv = "NLEMU_REQUIRE_KERNEL"

// Required reports whether RequireEnv is set (see there).
func Required() bool {
	v := os.Getenv(RequireEnv)
	return v != "" && v != "0"
}

// Unavailable ends tb because its kernel side (the oracle: `ip`, kernel
// network namespaces, root) cannot run here. It skips with the reason, or,
// when Required, fails with the reason and a note that RequireEnv is set.
// Use it for every kernel-side precondition of a differential test, so that
// an unprivileged `go test ./...` passes with messages and CI cannot.
func Unavailable(tb testing.TB, format string, args ...any) {
	tb.Helper()
	reason := fmt.Sprintf(format, args...)
	if Required() {
		tb.Fatalf("%s (%s is set: the kernel side is required, a skip is a failure)", reason, RequireEnv)
	}
	tb.Skipf("%s", reason)
}

// NewForTest is New for tests: when namespaces are not available it ends tb
// with Unavailable (skip, or failure when RequireEnv is set), it fails tb on
// any other error, and registers Close with tb.Cleanup.
func NewForTest(tb testing.TB, prefix string) *NS {
	tb.Helper()
	ns, err := New(prefix)
	if errors.Is(err, ErrNotPermitted) {
		Unavailable(tb, "kernel netns not available: %v", err)
	}
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := ns.Close(); err != nil {
			tb.Errorf("kernelns: %v", err)
		}
	})
	return ns
}

// Name returns the namespace's name as shown by `ip netns list`.
func (n *NS) Name() string { return n.name }

// Path returns the namespace's bind mount (/run/netns/NAME).
func (n *NS) Path() string { return filepath.Join(runDir, n.name) }

// Close deletes the namespace with `ip netns del`. Sockets still open inside
// it keep the namespace alive in the kernel, but it is no longer listed.
// Close is idempotent.
func (n *NS) Close() error {
	n.closeOnce.Do(func() {
		out, err := exec.Command(n.ip, "netns", "del", n.name).CombinedOutput()
		if err != nil {
			n.closeErr = fmt.Errorf("`ip netns del %s`: %v: %s", n.name, err, bytes.TrimSpace(out))
		}
	})
	return n.closeErr
}

// IP runs `ip -n NAME args...` and returns its output and exit status
// (-1 when it could not be run at all).
func (n *NS) IP(args ...string) (stdout, stderr string, code int) {
	var o, e bytes.Buffer
	cmd := exec.Command(n.ip, append([]string{"-n", n.name}, args...)...)
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	code = 0
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else {
			code = -1
			e.WriteString(err.Error())
		}
	}
	return o.String(), e.String(), code
}

// probe enters and leaves the namespace once.
func (n *NS) probe() error {
	return n.inNS(func() error { return nil })
}

// inNS runs fn on a locked OS thread that has joined the namespace. The
// thread returns to its original namespace afterwards; if that fails the
// thread stays locked so the runtime discards it when the goroutine exits.
func (n *NS) inNS(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("open own netns: %w", err)
			return
		}
		defer unix.Close(orig)
		target, err := unix.Open(n.Path(), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("open %s: %w", n.Path(), err)
			return
		}
		defer unix.Close(target)
		if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("setns %s: %w", n.Path(), err)
			return
		}
		ferr := fn()
		if err := unix.Setns(orig, unix.CLONE_NEWNET); err != nil {
			// Leave the thread locked: it is in the wrong namespace and
			// must die with this goroutine.
			errc <- fmt.Errorf("setns back to original netns: %w", err)
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// Exists reports whether the namespace's bind mount is still present.
func (n *NS) Exists() bool {
	_, err := os.Stat(n.Path())
	return err == nil
}
