package integration

// The shim's hot path allocates nothing (preload/nlemu_preload.c, "peeking
// at the floor"): shim_alloc_prog.c counts malloc/free/mmap/munmap calls
// made while it receives replies the way iproute2 does.
//
//	go test ./integration -run TestShimHotPath -v

import (
	"bytes"
	_ "embed"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nlemu/nlemu/integration/kernelns"
)

//go:embed shim_alloc_prog.c
var shimAllocProgSource []byte

// TestShimHotPathAllocatesNothing: after the first reply (which maps the
// socket's read-ahead buffer), 200 requests received with iproute2's
// sizing peek and read, 200 received into two iovecs and 200 peeked and
// read into a short buffer make no malloc, free, mmap or munmap call, in
// the program or in the shim: the read-ahead buffer is the socket's, kept
// and reused, and an unframed reply spread over several iovecs is moved
// into place through the stack. Every reply is the right one with its
// bytes where the kernel puts them, and the kernel's run prints the same
// lines (its recvmsg allocates nothing in user space either).
func TestShimHotPathAllocatesNothing(t *testing.T) {
	f := newShimFixture(t)
	src := filepath.Join(f.dir, "shim_alloc_prog.c")
	if err := os.WriteFile(src, shimAllocProgSource, 0o644); err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(f.dir, "shim_alloc_prog")
	if out, err := exec.Command("gcc", "-O1", "-Wall", "-o", prog, src).CombinedOutput(); err != nil {
		t.Fatalf("compiling shim_alloc_prog.c: %v\n%s", err, out)
	}
	want := []string{
		"peek ok=200 mallocs=0 frees=0 mmaps=0 munmaps=0",
		"iov2 ok=200 mallocs=0 frees=0 mmaps=0 munmaps=0",
		"small ok=200 mallocs=0 frees=0 mmaps=0 munmaps=0",
		"",
	}
	shim := f.runGuarded(t, f.ns(t), nil, prog)
	if d := cmp.Diff(want, strings.Split(shim, "\n")); d != "" {
		t.Errorf("under the shim (-want +got):\n%s", d)
	}

	kns := kernelns.NewForTest(t, "nlemu-alloc")
	kcmd := exec.Command(ipcFindIP(), "netns", "exec", kns.Name(), prog)
	var kerr bytes.Buffer
	kcmd.Stderr = &kerr
	kernel, err := kcmd.Output()
	if err != nil {
		t.Fatalf("shim_alloc_prog on the kernel: %v\n%s", err, kerr.String())
	}
	if d := cmp.Diff(want, strings.Split(string(kernel), "\n")); d != "" {
		t.Errorf("on the kernel (-want +got):\n%s", d)
	}
}
