package integration

// Issue 7 item 4 over the LD_PRELOAD shim, against the kernel: memberships
// in effect when bind()/setsockopt() return, their errnos, and the group
// of a notification in nl_groups and NETLINK_PKTINFO. The C side is
// shim_prog.c (modes bindrace, membership_errors, groupinfo); each mode
// runs under the shim and natively in a throw-away kernel namespace, and
// the outputs must be equal.

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nlemu/nlemu/integration/kernelns"
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
	kns := kernelns.NewForTest(t, "bind")
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
	kns := kernelns.NewForTest(t, "bind")
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
		})
	}
}

// TestNotificationSenderGroup: netlink_recvmsg() reports a notification's
// group (NETLINK_CB(skb).dst_group) as the sender's nl_groups bit and, with
// NETLINK_PKTINFO, in a SOL_NETLINK cmsg (group 0 for acks); an NLM_F_ECHO
// copy has the group too. The shim used to report nl_groups 0 and no cmsg.
func TestNotificationSenderGroup(t *testing.T) {
	f := newShimFixture(t)
	kns := kernelns.NewForTest(t, "bind")
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
	kns := kernelns.NewForTest(t, "bind")
	shim, kernel := f.runBoth(t, kns, nil, "stash")
	if d := cmp.Diff(kernel, shim); d != "" {
		t.Errorf("(-kernel +shim):\n%s", d)
	}
}
