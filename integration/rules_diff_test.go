package integration

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nlemu/nlemu/integration/kernelns"
)

// The differential rule tests replay the scenarios of diff_steps_test.go over
// raw netlink on a fresh kernel network namespace (the oracle) and on nlemu,
// and require byte-identical answers: every reply of every step (errno,
// extack TLVs with offsets, policy nests and miss-types, echoed request
// bytes), what the group listeners receive, and the full AF_UNSPEC rule dump
// after every step. Run them as root:
//
//	go test ./integration/ -run Diff -v
//
// They skip when `ip netns add` is not permitted, and fail instead when
// NLEMU_REQUIRE_KERNEL is set (.ci/run sets it). Environment knobs:
//
//	NLEMU_DIFF_TRACE=1          log the kernel's replies and notifications of every step
//	NLEMU_DIFF_SETTLE=50ms      quiet period on the nlemu side (default 10ms in-process)
//	NLEMU_DIFF_TRANSPORT=unix   talk to nlemu over its SOCK_SEQPACKET listener
//
// TestDiffHarnessKernelVsKernel runs the same scenarios on two kernel
// namespaces: it must always pass, or the harness is not deterministic.

// kernelSide opens a fresh kernel namespace for one scenario.
func kernelSide(t *testing.T, name string) *Side {
	t.Helper()
	ns := kernelns.NewForTest(t, "nlemu-diff")
	return &Side{
		Name: name,
		// The kernel answers synchronously inside sendmsg(2): everything a
		// request causes is queued before Send returns, so a short quiet
		// period is exact.
		Timing: Timing{Wait: 5 * time.Second, Settle: 2 * time.Millisecond},
		Dial: func(spec SockSpec) (Socket, error) {
			return ns.Dial(kernelns.Options{
				ExtAck: spec.ExtAck, CapAck: spec.CapAck, StrictCheck: spec.StrictCheck, Groups: spec.Groups,
			})
		},
	}
}

// requireKernelNS skips the whole test (rather than each scenario) when
// kernel namespaces cannot be created here (fails it under
// NLEMU_REQUIRE_KERNEL, see kernelns.Unavailable).
func requireKernelNS(t *testing.T) {
	t.Helper()
	ns := kernelns.NewForTest(t, "nlemu-diff")
	if err := ns.Close(); err != nil {
		t.Fatal(err)
	}
}

func init() { Trace = os.Getenv("NLEMU_DIFF_TRACE") != "" }

func settleFromEnv(def time.Duration) time.Duration {
	if v := os.Getenv("NLEMU_DIFF_SETTLE"); v != "" {
		if d, err := time.ParseDuration(v); err == nil {
			return d
		}
	}
	return def
}

func countSteps() int {
	n := 0
	for _, sc := range diffScenarios() {
		n += len(sc.steps)
	}
	return n
}

// TestDiffHarnessKernelVsKernel runs every scenario against two fresh kernel
// namespaces. It proves the harness itself is deterministic: any difference
// here is a harness bug (or a kernel nondeterminism worth knowing), not an
// nlemu bug.
func TestDiffHarnessKernelVsKernel(t *testing.T) {
	requireKernelNS(t)
	t.Logf("%d scenarios, %d steps", len(diffScenarios()), countSteps())
	for _, sc := range diffScenarios() {
		t.Run(sc.name, func(t *testing.T) {
			a := kernelSide(t, "kernelA")
			b := kernelSide(t, "kernelB")
			RunDiff(t, diffSockets, sc.steps, a, b)
		})
	}
}

// TestDiffRulesKernel is the differential test proper: kernel (-) versus
// nlemu (+).
func TestDiffRulesKernel(t *testing.T) {
	requireKernelNS(t)
	var summary []string
	for _, sc := range diffScenarios() {
		t.Run(sc.name, func(t *testing.T) {
			k := kernelSide(t, "kernel")
			n := nlemuSide(t, "nlemu")
			for _, d := range RunDiff(t, diffSockets, sc.steps, k, n) {
				summary = append(summary, fmt.Sprintf("%s step %d %q: %s", sc.name, d.Index, d.Step, d.What))
			}
		})
	}
	if len(summary) > 0 {
		t.Errorf("%d differences in %d steps:\n  %s", len(summary), countSteps(), strings.Join(summary, "\n  "))
	}
}
