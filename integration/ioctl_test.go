package integration

// Issue 8 item 0, "nothing escapes to the host": the interface ioctls
// (SIOCGIF* / SIOCSIF*, routes, ARP, bridge, VLAN, ethtool) of a program
// under the shim are answered from nlemu's namespace, as the kernel answers
// them in a fresh namespace, and never reach the kernel namespace the
// program runs in. ioctl_prog.c issues them; each case runs it natively in a
// fresh kernel namespace (the oracle) and under the shim inside a host guard
// (hostguard_test.go), whose configuration must not change.
//
//	go test ./integration -run 'TestShimAnswersInterfaceIoctls|TestNothingEscapesToHost' -v

import (
	"bytes"
	"context"
	_ "embed"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nlemu/nlemu/integration/kernelns"
)

//go:embed ioctl_prog.c
var ioctlProgSource []byte

// ioctlFixture is a shim fixture (server, library) plus ioctl_prog.
type ioctlFixture struct {
	*shimFixture
	ip     string
	ioprog string
}

func newIoctlFixture(t *testing.T) *ioctlFixture {
	t.Helper()
	ip := ipcFindIP()
	if ip == "" {
		kernelns.Unavailable(t, "iproute2 `ip` is not installed: the kernel is the oracle of these tests")
	}
	f := newShimFixture(t)
	// ioctl_prog unpriv runs as nobody: it must reach the server's socket
	// (0666) through the test's directories.
	for d := f.dir; d != filepath.Dir(d) && strings.HasPrefix(d, os.TempDir()); d = filepath.Dir(d) {
		if d == filepath.Clean(os.TempDir()) {
			break
		}
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	src := filepath.Join(f.dir, "ioctl_prog.c")
	if err := os.WriteFile(src, ioctlProgSource, 0o644); err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(f.dir, "ioctl_prog")
	if out, err := exec.Command("gcc", "-O1", "-Wall", "-o", prog, src).CombinedOutput(); err != nil {
		t.Fatalf("compiling ioctl_prog.c: %v\n%s", err, out)
	}
	return &ioctlFixture{shimFixture: f, ip: ip, ioprog: prog}
}

// ioctlRun is what one command printed and its exit code.
type ioctlRun struct {
	stdout, stderr string
	code           int
}

func ioctlExec(t *testing.T, cmd *exec.Cmd) ioctlRun {
	t.Helper()
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	r := ioctlRun{stdout: o.String(), stderr: e.String()}
	if err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatalf("%s: %v", strings.Join(cmd.Args, " "), err)
		}
		r.code = ipcExitCode(cmd.ProcessState)
	}
	return r
}

// kernel runs argv natively in kernel namespace k.
func (f *ioctlFixture) kernel(t *testing.T, k *kernelns.NS, argv ...string) ioctlRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ipcTimeout)
	defer cancel()
	return ioctlExec(t, exec.CommandContext(ctx, f.ip, append([]string{"netns", "exec", k.Name()}, argv...)...))
}

// shim runs argv under the shim for nlemu namespace ns, inside guard g.
func (f *ioctlFixture) shim(t *testing.T, g *hostGuard, ns string, argv ...string) ioctlRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ipcTimeout)
	defer cancel()
	cmd := g.command(ctx, f.ip, argv...)
	cmd.Env = f.env(ns)
	return ioctlExec(t, cmd)
}

// lines splits a program's output (a failed run fails t).
func ioctlLines(t *testing.T, what string, r ioctlRun) []string {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("%s: exit %d\nstdout:\n%s\nstderr:\n%s", what, r.code, r.stdout, r.stderr)
	}
	return strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
}

// nlemuLoUp reports whether nlemu's lo in ns is up, as `ip -o link show lo`
// under the shim prints it.
func (f *ioctlFixture) nlemuLoUp(t *testing.T, g *hostGuard, ns string) bool {
	t.Helper()
	r := f.shim(t, g, ns, f.ip, "-o", "link", "show", "lo")
	if r.code != 0 {
		t.Fatalf("ip link show lo under the shim: exit %d: %s", r.code, r.stderr)
	}
	return strings.Contains(r.stdout, ",UP")
}

// TestShimAnswersInterfaceIoctlsFromNlemu: every ioctl of ioctl_prog's
// modes read, flags and unpriv gets the same answer under the shim as on the
// kernel in a fresh namespace. lo is down on the kernel side and in nlemu
// but up in the guard, so an ioctl answered by the guard's kernel (the shim
// before issue 8 let them through) shows flags 0x49 and lo's 127.0.0.1
// instead of 0x8 and EADDRNOTAVAIL, and SIOCSIFFLAGS changes the guard.
// The kernel functions mirrored are named in nlemu_preload.c (dev_ioctl(),
// devinet_ioctl(), ip_rt_ioctl(), arp_ioctl(), inet6_ioctl(), ...).
func TestShimAnswersInterfaceIoctlsFromNlemu(t *testing.T) {
	f := newIoctlFixture(t)
	for _, mode := range []string{"read", "flags", "unpriv"} {
		t.Run(mode, func(t *testing.T) {
			k := kernelns.NewForTest(t, "nlemu-ioctl-k")
			g := newHostGuard(t, []string{"link", "set", "lo", "up"})
			ns := f.ns(t)
			want := ioctlLines(t, "kernel", f.kernel(t, k, f.ioprog, mode))
			got := ioctlLines(t, "shim", f.shim(t, g, ns, f.ioprog, mode))
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("ioctl_prog %s: shim differs from the kernel (-kernel +shim):\n%s", mode, d)
			}
		})
	}

	// Requests nlemu has no feature for yet (addresses, routes, ARP
	// entries, bridges, MTU/txqlen/address changes) fail instead of
	// reaching the kernel; on a missing device every one of them fails as
	// the kernel's does (the kernel checks the device first).
	t.Run("unsupported", func(t *testing.T) {
		k := kernelns.NewForTest(t, "nlemu-ioctl-k")
		g := newHostGuard(t)
		ns := f.ns(t)
		kernel := ioctlLines(t, "kernel", f.kernel(t, k, f.ioprog, "unsup"))
		shim := ioctlLines(t, "shim", f.shim(t, g, ns, f.ioprog, "unsup"))
		missing := func(lines []string) []string {
			var m []string
			for _, l := range lines {
				if strings.Contains(l, "(nosuch0)") {
					m = append(m, l)
				}
			}
			return m
		}
		if d := cmp.Diff(missing(kernel), missing(shim)); d != "" {
			t.Errorf("requests on a missing device (-kernel +shim):\n%s", d)
		}
		// nlemu's own answers where the kernel would change something.
		want := []string{
			"inet/SIOCSIFADDR(lo) rc=-1 errno=EOPNOTSUPP",       // no addresses yet
			"inet/SIOCSIFNETMASK(lo) rc=-1 errno=EADDRNOTAVAIL", // devinet_ioctl(): lo has no address
			"inet/SIOCSARP(lo) rc=-1 errno=EINVAL",              // arp_ioctl(): ATF_COM with an Ethernet address on lo
			"inet/SIOCADDRT(lo) rc=-1 errno=EOPNOTSUPP",         // no routes yet
			"inet/SIOCDELRT(lo) rc=-1 errno=E3",                 // ESRCH: no such route
			"inet/SIOCBRADDBR rc=-1 errno=EOPNOTSUPP",           // no bridges yet
			"inet/SIOCBRDELBR rc=-1 errno=ENXIO",                // br_del_bridge(): no such device
			"inet6/SIOCSIFADDR(lo) rc=-1 errno=ENODEV",          // addrconf_add_ifaddr(): ifr6_ifindex 0
			"unix/SIOCADDRT(lo) rc=-1 errno=ENOTTY",             // not an inet socket, as the kernel
		}
		set := map[string]bool{}
		for _, l := range shim {
			set[l] = true
		}
		for _, w := range want {
			if !set[w] {
				t.Errorf("shim did not print %q; it printed:\n%s", w, strings.Join(shim, "\n"))
			}
		}
	})

	// FIONREAD on nlemu's own netlink fd still answers (the shim passes
	// non-0x89xx requests to the real AF_UNIX socket; the kernel's
	// netlink sockets answer ENOTTY there, measured on 6.18).
	t.Run("FIONREAD on the nlemu socket", func(t *testing.T) {
		g := newHostGuard(t)
		got := ioctlLines(t, "shim", f.shim(t, g, f.ns(t), f.ioprog, "nlfd"))
		if d := cmp.Diff([]string{"netlink/FIONREAD queued=1"}, got); d != "" {
			t.Errorf("(-want +got):\n%s", d)
		}
	})
}

// TestNothingEscapesToHost: a program under the shim, run inside a kernel
// namespace whose lo is down, changes nlemu's lo and never the kernel's —
// through iproute2, through ioctl(SIOCSIFFLAGS) on an AF_INET socket, or
// through net-tools when installed — and creates no tun device there. Before
// issue 8 the shim let every ioctl through: the guard's lo came up,
// SIOCADDRT added a route to it and TUNSETIFF a device.
func TestNothingEscapesToHost(t *testing.T) {
	f := newIoctlFixture(t)
	cases := []struct {
		name    string
		tool    string // skip unless installed (a command, or a /dev path)
		argv    func() []string
		code    int    // expected exit code
		stdout  string // expected stdout ("" = not checked)
		stderr  string // expected in stderr ("" = not checked)
		loAfter bool   // nlemu's lo afterwards
	}{
		{name: "ip link set lo up", argv: func() []string { return []string{f.ip, "link", "set", "lo", "up"} }, loAfter: true},
		{
			name: "ioctl SIOCSIFFLAGS and SIOCADDRT on AF_INET",
			argv: func() []string { return []string{f.ioprog, "escape"} },
			stdout: "inet/SIOCSIFFLAGS(lo,up) rc=0 errno=0\n" +
				"inet/SIOCADDRT(lo) rc=-1 errno=EOPNOTSUPP\n",
			loAfter: true,
		},
		{
			name: "TUNSETIFF on /dev/net/tun", tool: "/dev/net/tun",
			argv: func() []string { return []string{f.ioprog, "tun"} },
			stdout: "tun/TUNSETIFF rc=-1 errno=EOPNOTSUPP\n" +
				"tun/TUNSETPERSIST rc=-1 errno=EOPNOTSUPP\n",
		},
		{name: "ifconfig lo up", tool: "ifconfig", argv: func() []string { return []string{"ifconfig", "lo", "up"} }, loAfter: true},
		{
			name: "route add", tool: "route",
			argv:   func() []string { return []string{"route", "add", "-net", "10.0.0.0/8", "dev", "lo"} },
			code:   7,
			stderr: "SIOCADDRT: Operation not supported",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			argv := tc.argv()
			switch {
			case strings.HasPrefix(tc.tool, "/dev/"):
				if _, err := os.Stat(tc.tool); err != nil {
					t.Skipf("%s: %v", tc.tool, err)
				}
			case tc.tool != "":
				p, err := exec.LookPath(tc.tool)
				if err != nil {
					t.Skipf("%s is not installed", tc.tool)
				}
				argv[0] = p
			}
			g := newHostGuard(t) // fails the test if the guard changes
			ns := f.ns(t)
			r := f.shim(t, g, ns, argv...)
			if r.code != tc.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, tc.code, r.stdout, r.stderr)
			}
			if tc.stdout != "" {
				if d := cmp.Diff(tc.stdout, r.stdout); d != "" {
					t.Errorf("stdout (-want +got):\n%s", d)
				}
			}
			if tc.stderr != "" && !strings.Contains(r.stderr, tc.stderr) {
				t.Errorf("stderr %q does not contain %q", r.stderr, tc.stderr)
			}
			if up := f.nlemuLoUp(t, g, ns); up != tc.loAfter {
				t.Errorf("nlemu's lo up = %v after %s, want %v", up, tc.name, tc.loAfter)
			}
			if out, _, _ := g.ns.IP("-o", "link", "show", "lo"); strings.Contains(out, ",UP") {
				t.Errorf("the guard's (kernel) lo is up after %s: %s", tc.name, out)
			}
		})
	}
}
