package loadgen

import (
	"bytes"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestMain lets the test binary be the floor's processes, as the nlemu
// binary is (`nlemu load --floor-child ...`).
func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == "load" && os.Args[2] == FloorChildArg {
		if err := FloorChild(os.Args[3:]); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestMeasureFloorRuns: the floor's process pairs make their round trips
// and give a positive time per round trip, one pair and several.
func TestMeasureFloorRuns(t *testing.T) {
	for _, pairs := range []int{1, 4} {
		us, err := MeasureFloor(os.Args[0], pairs, 200)
		if err != nil {
			t.Fatalf("%d pairs: %v", pairs, err)
		}
		if us <= 0 {
			t.Errorf("%d pairs: %v us per round trip", pairs, us)
		}
	}
}

// TestFloorChildRefusesBadArguments: a floor process with no role, or a
// client without a count, fails instead of waiting forever.
func TestFloorChildRefusesBadArguments(t *testing.T) {
	for _, args := range [][]string{nil, {"client"}, {"client", "x"}, {"other"}} {
		if err := FloorChild(args); err == nil {
			t.Errorf("FloorChild(%q) succeeded", args)
		}
	}
}

// TestParsePerf reads the raw_syscalls:sys_enter count from `perf stat
// -x,` output, and refuses output without one.
func TestParsePerf(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    uint64
		isOK bool
	}{
		{"# started on Tue Dec  1 16:00:00 2026\n\n2451,,raw_syscalls:sys_enter,884478,100.00,,\n", 2451, true},
		{"<not counted>,,raw_syscalls:sys_enter,0,100.00,,\n", 0, false},
		{"", 0, false},
		{"12,,context-switches,100,100.00,,\n", 0, false},
	} {
		n, ok := parsePerf([]byte(tc.in))
		if d := cmp.Diff([]any{tc.n, tc.isOK}, []any{n, ok}); d != "" {
			t.Errorf("parsePerf(%q) (-want +got):\n%s", tc.in, d)
		}
	}
}

// TestVerifyReportsProgress: verification tells its progress, ending at
// every namespace done (the progress line of `nlemu load`).
func TestVerifyReportsProgress(t *testing.T) {
	c := Config{Netns: 3, Rules: 4, Families: []int{4}}
	var phases []string
	var last int
	c.Phase = func(p string, done, total int) {
		if len(phases) == 0 || phases[len(phases)-1] != p {
			phases = append(phases, p)
		}
		if p == "verifying IPv4" {
			last = done
		}
	}
	rep, err := Execute(c)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Runs[0].Verified {
		t.Fatal(rep.Runs[0].FirstError)
	}
	if d := cmp.Diff([]string{"creating namespaces", "verifying IPv4", "deleting namespaces"}, phases); d != "" {
		t.Errorf("phases (-want +got):\n%s", d)
	}
	if last != 3 {
		t.Errorf("verification ended at %d of 3", last)
	}
}

// FuzzParsePerf: any perf output parses without a panic, and a count it
// returns is the first field of a raw_syscalls line.
func FuzzParsePerf(f *testing.F) {
	f.Add([]byte("2451,,raw_syscalls:sys_enter,884478,100.00,,\n"))
	f.Add([]byte("<not counted>,,raw_syscalls:sys_enter,0,100.00,,\n"))
	f.Add([]byte(",,,\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, ok := parsePerf(b); ok && !bytes.Contains(b, []byte("raw_syscalls:sys_enter")) {
			t.Errorf("parsePerf(%q) found a count without the event", b)
		}
	})
}
