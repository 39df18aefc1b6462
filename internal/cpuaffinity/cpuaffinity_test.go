package cpuaffinity

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestChildRunsOnTheCPUAsked: the child's allowed CPU list (taskset -p's view,
// /proc/self/status) is the one CPU asked for, and the caller's own
// affinity is unchanged afterwards.
func TestChildRunsOnTheCPUAsked(t *testing.T) {
	var before unix.CPUSet
	if err := unix.SchedGetaffinity(0, &before); err != nil {
		t.Fatal(err)
	}
	cpu := -1
	for i := 0; i < 1024; i++ {
		if before.IsSet(i) {
			cpu = i
			break
		}
	}
	if cpu < 0 {
		t.Fatal("no CPU in the affinity mask")
	}
	out, err := CombinedOutput(exec.Command("grep", "^Cpus_allowed_list:", "/proc/self/status"), cpu)
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(strings.TrimPrefix(out, "Cpus_allowed_list:")); got != strconv.Itoa(cpu) {
		t.Errorf("child's CPUs %q, want %d", got, cpu)
	}
	var after unix.CPUSet
	if err := unix.SchedGetaffinity(0, &after); err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Errorf("caller's affinity changed: %v -> %v", before, after)
	}
}
