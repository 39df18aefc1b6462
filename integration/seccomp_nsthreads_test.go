package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nlemu/nlemu/integration/kernelns"
)

// TestSeccompThreadsInManyNamespaces: the threads of one supervised Go
// program, each locked to an OS thread in a namespace of its own choosing
// (three made by ip netns add, one of them shared by two threads; three
// unshared ones; the start namespace, twice), add a rule each and list the
// rules 20 times, all at once, every call a socket of its own
// (vishvananda/netlink's package-level calls): each thread sees exactly the
// rules of the threads in its namespace, as on the kernel. The supervisor
// answers each socket() from the calling thread's namespace while others
// are answered for other namespaces, with the /run/netns scan cached
// (supervise/netns.go).
func TestSeccompThreadsInManyNamespaces(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root: unshare(CLONE_NEWNET) and setns")
	}
	f := newSeccompFixture(t)
	prog := filepath.Join(f.dir, "nsthreads")
	_, file, _, _ := runtime.Caller(0)
	cmd := exec.Command("go", "build", "-o", prog, "./integration/testdata/seccomp/nsthreads")
	cmd.Dir = filepath.Dir(filepath.Dir(file))
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build nsthreads: %v\n%s", err, out)
	}
	var named []string
	for range 3 {
		named = append(named, kernelns.NewForTest(t, "h-sock").Name())
	}
	if err := f.srv.Namespaces().Add("seccomp-threads"); err != nil {
		t.Fatal(err)
	}
	argv := []string{prog, "20", ".", named[0], named[1], named[2], "-", "-", ".", named[0], "-"}
	var want strings.Builder
	for i := range len(argv) - 2 {
		fmt.Fprintf(&want, "%d ok\n", i)
	}
	k := kernelns.NewForTest(t, "h-sock-start")
	if got := kernelRun(t, k, argv...); got != want.String() {
		t.Fatalf("on the kernel:\n%s\nwant\n%s", got, want.String())
	}
	got := f.nlemuRun(t, "seccomp-threads", false, "", argv...)
	if d := cmp.Diff(want.String(), got); d != "" {
		t.Errorf("under nlemu exec (-want +got):\n%s", d)
	}
}
