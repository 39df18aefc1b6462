package integration

// Issue 7 item 4 over the LD_PRELOAD shim, against the kernel: memberships
// in effect when bind()/setsockopt() return, their errnos, and the group
// of a notification in nl_groups and NETLINK_PKTINFO. The C side is
// shim_prog.c (modes bindrace, membership_errors, groupinfo); each mode
// runs under the shim and natively in a throw-away kernel namespace, and
// the outputs must be equal.

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nlemu/nlemu/integration/kernelns"
	"github.com/nlemu/nlemu/server"
)

// unprivileged runs a command as root without any capability: what
// ns_capable() refuses (CAP_NET_BROADCAST, CAP_NET_ADMIN) while files stay
// reachable.
var unprivileged = []string{"setpriv", "--bounding-set=-all", "--inh-caps=-all"}

// runBoth runs shim_prog args under the shim in a fresh nlemu namespace
// and natively in kernel namespace kns, both behind wrapper, and returns
// the two outputs.
func (f *shimFixture) runBoth(t *testing.T, kns *kernelns.NS, wrapper []string, args ...string) (shim, kernel string) {
	t.Helper()
	run := func(argv []string, env []string) string {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		done := shimWatchdog(t, cmd, 120*time.Second)
		out, err := cmd.Output()
		done()
		if err != nil {
			t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(argv, " "), err, out, stderr.String())
		}
		return string(out)
	}
	prog := append(append(append([]string(nil), wrapper...), f.prog), args...)
	shim = run(prog, f.env(f.ns(t)))
	kernel = run(append([]string{"ip", "netns", "exec", kns.Name()}, prog...), nil)
	return shim, kernel
}

// TestBindMembershipInEffectOnReturn: 100 fresh listeners, each followed at
// once by a rule add from another socket, see 100 of 100 rules on the
// kernel (netlink_bind() and netlink_setsockopt() join the multicast table
// before returning). The shim used to send BIND/SETSOCKOPT and return, and
// 60–80 of 100 arrived.
func TestBindMembershipInEffectOnReturn(t *testing.T) {
	f := newShimFixture(t)
	kns := kernelns.NewForTest(t, "nlemu-bind")
	for _, way := range []string{"bind", "join"} {
		t.Run(way, func(t *testing.T) {
			shim, kernel := f.runBoth(t, kns, nil, "bindrace", "100", way)
			want := "bindrace_" + way + "=100 of 100\n"
			if kernel != want {
				t.Fatalf("kernel: %q, want %q", kernel, want)
			}
			if d := cmp.Diff(kernel, shim); d != "" {
				t.Errorf("(-kernel +shim):\n%s", d)
			}
		})
	}
}

// TestAddMembershipErrorsMatchKernel compares the errnos of
// NETLINK_ADD_MEMBERSHIP/DROP_MEMBERSHIP (group 0, 39 = RTNLGRP_MAX on
// 6.18, 40, -1, the CAP_NET_ADMIN groups 30 and 31), unknown SOL_NETLINK
// options (ENOPROTOOPT), NETLINK_LISTEN_ALL_NSID (EPERM without
// CAP_NET_BROADCAST), short and NULL option buffers, and bind() with
// privileged groups, with and without capabilities.
func TestAddMembershipErrorsMatchKernel(t *testing.T) {
	f := newShimFixture(t)
	kns := kernelns.NewForTest(t, "nlemu-bind")
	for name, wrapper := range map[string][]string{"privileged": nil, "unprivileged": unprivileged} {
		t.Run(name, func(t *testing.T) {
			if wrapper != nil {
				if _, err := exec.LookPath(wrapper[0]); err != nil {
					t.Skipf("%s is not installed", wrapper[0])
				}
			}
			shim, kernel := f.runBoth(t, kns, wrapper, "membership_errors")
			if d := cmp.Diff(kernel, shim); d != "" {
				t.Errorf("(-kernel +shim):\n%s", d)
			}
			// The Go client (server.DialUnix) in a process with the same
			// privileges: the rows its API can express.
			exe, err := os.Executable()
			if err != nil {
				t.Fatal(err)
			}
			argv := append(append([]string(nil), wrapper...), exe, "-test.run=^TestBindHelperGoClient$")
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Env = append(os.Environ(), "NLEMU_BIND_HELPER="+f.sock, "NLEMU_BIND_HELPER_NS=default")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("Go client helper: %v\n%s", err, out)
			}
			var goLines, kernelLines []string
			for _, line := range strings.Split(string(out), "\n") {
				if strings.Contains(line, " errno=") {
					goLines = append(goLines, line)
				}
			}
			for _, line := range strings.Split(kernel, "\n") {
				if strings.Contains(line, "null_optval") || strings.Contains(line, "short_optlen") || !strings.Contains(line, " errno=") {
					continue // not expressible with the Go API
				}
				line, _, _ = strings.Cut(line, " memberships=")
				kernelLines = append(kernelLines, line)
			}
			if d := cmp.Diff(kernelLines, goLines); d != "" {
				t.Errorf("Go client (-kernel +nlemu):\n%s", d)
			}
		})
	}
}

// TestBindHelperGoClient is run by TestAddMembershipErrorsMatchKernel in a
// child process (with the privileges under test): it prints, for the Go
// client, the lines shim_prog's membership_errors mode prints.
func TestBindHelperGoClient(t *testing.T) {
	path := os.Getenv("NLEMU_BIND_HELPER")
	if path == "" {
		return // only a helper process: nothing to test on its own
	}
	o := server.Options{Namespace: os.Getenv("NLEMU_BIND_HELPER_NS")}
	c, err := server.DialUnix(path, o)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	show := func(label string, err error) {
		r, e := 0, syscall.Errno(0)
		if err != nil {
			r = -1
			if !errorsAs(err, &e) {
				t.Fatalf("%s: %v", label, err)
			}
		}
		fmt.Printf("%s=%d errno=%d\n", label, r, int(e))
	}
	rows := []struct {
		label     string
		name, val int
	}{
		{"add_0", 1, 0}, {"drop_0", 2, 0}, {"add_8", 1, 8}, {"add_39", 1, 39}, {"add_40", 1, 40},
		{"drop_40", 2, 40}, {"add_minus1", 1, -1}, {"add_30_mroute", 1, 30}, {"add_31_mroute6", 1, 31},
		{"drop_30", 2, 30}, {"drop_8", 2, 8}, {"unknown_0", 0, 1}, {"rx_ring_6", 6, 1}, {"unknown_99", 99, 1},
		{"listen_all_nsid_on", 8, 1}, {"listen_all_nsid_off", 8, 0},
	}
	for _, r := range rows {
		show(r.label, c.SetSockopt(270, r.name, uint32(r.val)))
	}
	for _, b := range []struct {
		label  string
		groups uint32
	}{{"bind_rules", 1 << 7}, {"bind_mroute", 1 << 29}, {"bind_all", 0xffffffff}} {
		bc, err := server.DialUnix(path, o)
		if err != nil {
			t.Fatal(err)
		}
		show(b.label, bc.Bind(b.groups))
		bc.Close()
	}
}

func errorsAs(err error, e *syscall.Errno) bool {
	v, ok := err.(syscall.Errno)
	*e = v
	return ok
}

// TestNotificationSenderGroup: netlink_recvmsg() reports a notification's
// group (NETLINK_CB(skb).dst_group) as the sender's nl_groups bit and, with
// NETLINK_PKTINFO, in a SOL_NETLINK cmsg (group 0 for acks); an NLM_F_ECHO
// copy has the group too. The shim used to report nl_groups 0 and no cmsg.
func TestNotificationSenderGroup(t *testing.T) {
	f := newShimFixture(t)
	kns := kernelns.NewForTest(t, "nlemu-bind")
	shim, kernel := f.runBoth(t, kns, nil, "groupinfo")
	if d := cmp.Diff(kernel, shim); d != "" {
		t.Errorf("(-kernel +shim):\n%s", d)
	}
}

// TestMembershipCallKeepsEarlierDatagrams: notifications already queued
// when a socket joins another group are still received afterwards, in
// order, MSG_PEEK leaves them queued and poll() reports them, as on the
// kernel. The shim reads them while it waits for the server's ack to the
// membership and keeps them for the next receive calls.
func TestMembershipCallKeepsEarlierDatagrams(t *testing.T) {
	f := newShimFixture(t)
	kns := kernelns.NewForTest(t, "nlemu-bind")
	shim, kernel := f.runBoth(t, kns, nil, "stash")
	if d := cmp.Diff(kernel, shim); d != "" {
		t.Errorf("(-kernel +shim):\n%s", d)
	}
}
