package kernelns

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// dumpReq is an AF_UNSPEC RTM_GETRULE dump request (fib_rule_hdr of zeros).
func dumpReq(seq uint32) []byte {
	b := make([]byte, 28)
	binary.NativeEndian.PutUint32(b[0:], 28)
	binary.NativeEndian.PutUint16(b[4:], 34)        // RTM_GETRULE
	binary.NativeEndian.PutUint16(b[6:], 0x1|0x300) // REQUEST|DUMP
	binary.NativeEndian.PutUint32(b[8:], seq)
	return b
}

// countRules reads one dump and returns how many RTM_NEWRULE messages it had
// and the nlmsg_pid of the last message.
func countRules(t *testing.T, s *Socket) (n int, pid uint32) {
	t.Helper()
	for {
		d, err := s.Recv()
		if err != nil {
			t.Fatalf("Recv: %v", err)
		}
		for len(d) >= 16 {
			l := binary.NativeEndian.Uint32(d)
			typ := binary.NativeEndian.Uint16(d[4:])
			pid = binary.NativeEndian.Uint32(d[12:])
			switch typ {
			case 32:
				n++
			case 3: // NLMSG_DONE
				return n, pid
			default:
				t.Fatalf("unexpected message type %d", typ)
			}
			d = d[(l+3)&^3:]
		}
	}
}

func TestNamespaceLifecycle(t *testing.T) {
	ns := NewForTest(t, "kernelns-test")
	if !strings.HasPrefix(ns.Name(), "kernelns-test-") || !ns.Exists() {
		t.Fatalf("namespace %q not created", ns.Name())
	}
	out, errOut, code := ns.IP("-4", "rule", "show")
	if code != 0 || !strings.Contains(out, "32766:\tfrom all lookup main") {
		t.Fatalf("ip rule show: code %d, stdout %q, stderr %q", code, out, errOut)
	}

	s, err := ns.Dial(Options{ExtAck: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.PortID() == 0 {
		t.Error("port id 0")
	}
	if err := s.Send(dumpReq(1)); err != nil {
		t.Fatal(err)
	}
	// A fresh namespace has 3 + 2 + 1 + 1 default rules.
	if n, pid := countRules(t, s); n != 7 || pid != s.PortID() {
		t.Errorf("dump: %d rules, pid %d; want 7 rules, pid %d", n, pid, s.PortID())
	}

	// Nothing queued: Recv times out instead of hanging.
	if err := s.SetRecvTimeout(20 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := s.Recv(); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("Recv on empty socket: %v, want deadline exceeded", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("timeout took %v", d)
	}

	// A listener sees a rule added with `ip`.
	l, err := ns.Dial(Options{Groups: 1 << 7}) // RTNLGRP_IPV4_RULE
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.SetSockopt(SolNetlink, AddMembership, 19); err != nil {
		t.Fatal(err)
	}
	if _, e, code := ns.IP("-6", "rule", "add", "pref", "5", "table", "5"); code != 0 {
		t.Fatalf("ip -6 rule add: %s", e)
	}
	d, err := l.Recv()
	if err != nil || binary.NativeEndian.Uint16(d[4:]) != 32 || d[16] != 10 {
		t.Fatalf("listener: %x, %v; want an IPv6 RTM_NEWRULE", d, err)
	}
	if err := l.Bind(0); err != nil {
		t.Fatal(err)
	}

	if err := ns.Close(); err != nil {
		t.Fatal(err)
	}
	if ns.Exists() {
		t.Error("namespace still listed after Close")
	}
	if err := ns.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestNotPermittedWithoutIP(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := New("kernelns-test")
	if !errors.Is(err, ErrNotPermitted) {
		t.Fatalf("New without ip: %v, want ErrNotPermitted", err)
	}
}

// fakeTB records how NewForTest ends a test. Skip and Fatal stop the calling
// goroutine with runtime.Goexit, as the testing package's do, so code after
// them never runs.
type fakeTB struct {
	testing.TB // nil: only the methods below may be called
	ended      string
	msg        string
	cleanups   []func()
}

func (f *fakeTB) Helper()           {}
func (f *fakeTB) Cleanup(fn func()) { f.cleanups = append(f.cleanups, fn) }
func (f *fakeTB) Skipf(format string, args ...any) {
	f.ended, f.msg = "skip", fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (f *fakeTB) Skip(args ...any) {
	f.ended, f.msg = "skip", fmt.Sprint(args...)
	runtime.Goexit()
}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.ended, f.msg = "fatal", fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (f *fakeTB) Fatal(args ...any) {
	f.ended, f.msg = "fatal", fmt.Sprint(args...)
	runtime.Goexit()
}
func (f *fakeTB) Errorf(format string, args ...any) {
	f.ended, f.msg = "error", fmt.Sprintf(format, args...)
}

// runFake runs NewForTest on a fake TB in its own goroutine (Goexit ends only
// that goroutine) and reports how it ended.
func runFake(prefix string) *fakeTB {
	f := &fakeTB{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if ns := NewForTest(f, prefix); ns != nil {
			f.ended = "ok"
		}
	}()
	<-done
	for _, fn := range f.cleanups {
		fn()
	}
	return f
}

// TestSkipBecomesFailureWhenKernelRequired: a differential test whose kernel
// side cannot be set up skips, which on a developer's unprivileged machine
// is right, but in CI (root, where the oracle must run) a skip would let a
// differential test "pass" without comparing anything. With
// NLEMU_REQUIRE_KERNEL set (as .ci/run does) the same setup failure must end
// the test with Fatal, carrying the reason. The failure is provoked by an
// empty PATH (no `ip`), which works as root and as any other user.
func TestSkipBecomesFailureWhenKernelRequired(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	for _, tc := range []struct {
		env  string
		want string
	}{
		{"", "skip"},
		{"0", "skip"},
		{"1", "fatal"},
	} {
		t.Run("NLEMU_REQUIRE_KERNEL="+tc.env, func(t *testing.T) {
			t.Setenv("NLEMU_REQUIRE_KERNEL", tc.env)
			f := runFake("kernelns-test")
			if f.ended != tc.want {
				t.Fatalf("NewForTest ended with %q (%s), want %q", f.ended, f.msg, tc.want)
			}
			if !strings.Contains(f.msg, "`ip` not found") {
				t.Errorf("message %q does not give the reason", f.msg)
			}
			if tc.want == "fatal" && !strings.Contains(f.msg, "NLEMU_REQUIRE_KERNEL") {
				t.Errorf("message %q does not say why a skip became a failure", f.msg)
			}
		})
	}
}
