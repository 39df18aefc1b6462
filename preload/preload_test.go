package preload

import (
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func needCC(t *testing.T) {
	t.Helper()
	if _, err := compiler(); err != nil {
		t.Skipf("no C compiler: %v", err)
	}
}

// isolate points the user cache at a fresh directory and forgets what this
// process built before.
func isolate(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", dir)
	mu.Lock()
	cached = ""
	mu.Unlock()
	t.Cleanup(func() {
		mu.Lock()
		cached = ""
		mu.Unlock()
	})
	return dir
}

func TestPathBuildsIntoHashedCacheDir(t *testing.T) {
	needCC(t)
	dir := isolate(t)
	p, err := Path()
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(dir, "nlemu", Hash(), LibName)
	if p != want {
		t.Fatalf("Path() = %q, want %q", p, want)
	}
	f, err := elf.Open(p)
	if err != nil {
		t.Fatalf("not an ELF file: %v", err)
	}
	defer f.Close()
	if f.Type != elf.ET_DYN {
		t.Fatalf("ELF type %v, want ET_DYN", f.Type)
	}
	syms, err := f.DynamicSymbols()
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, s := range syms {
		if s.Section != elf.SHN_UNDEF {
			have[s.Name] = true
		}
	}
	for _, name := range []string{"socket", "bind", "getsockname", "setsockopt", "getsockopt",
		"send", "sendto", "sendmsg", "recv", "recvfrom", "recvmsg", "read", "write", "close",
		"connect", "dup", "dup2", "dup3", "fcntl", "if_nametoindex", "if_indextoname"} {
		if !have[name] {
			t.Errorf("library does not export %s", name)
		}
	}
	// No temporary files are left behind.
	ents, err := os.ReadDir(filepath.Dir(p))
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Fatalf("cache dir holds %v, want only %s", names, LibName)
	}

	// A second call reuses the library without rebuilding it.
	st1, _ := os.Stat(p)
	mu.Lock()
	cached = ""
	mu.Unlock()
	p2, err := Path()
	if err != nil || p2 != p {
		t.Fatalf("second Path() = %q, %v", p2, err)
	}
	st2, _ := os.Stat(p2)
	if !st1.ModTime().Equal(st2.ModTime()) {
		t.Fatal("library was rebuilt although the source did not change")
	}
}

func TestFallsBackToTempDir(t *testing.T) {
	needCC(t)
	isolate(t)
	t.Setenv("XDG_CACHE_HOME", "/dev/null/not-a-directory")
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	p, err := Path()
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(tmp, fmt.Sprintf("nlemu-cache-%d", os.Getuid()), Hash(), LibName)
	if p != want {
		t.Fatalf("Path() = %q, want %q", p, want)
	}
}

func TestHashChangesWithSource(t *testing.T) {
	h1 := Hash()
	old := source
	t.Cleanup(func() { source = old })
	source = append(append([]byte{}, old...), "\n/* changed */\n"...)
	if h2 := Hash(); h2 == h1 {
		t.Fatal("hash did not change with the source")
	}
}

func TestConcurrentBuildersRace(t *testing.T) {
	needCC(t)
	base := t.TempDir()
	const n = 6
	var wg sync.WaitGroup
	paths := make([]string, n)
	errs := make([]error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			paths[i], errs[i] = build(base) // no process lock: like separate processes
		}(i)
	}
	wg.Wait()
	for i := 0; i < n; i++ {
		if errs[i] != nil {
			t.Fatalf("builder %d: %v", i, errs[i])
		}
		if paths[i] != paths[0] {
			t.Fatalf("builder %d got %q, builder 0 %q", i, paths[i], paths[0])
		}
	}
	if _, err := elf.Open(paths[0]); err != nil {
		t.Fatalf("raced build is not a valid ELF file: %v", err)
	}
	ents, _ := os.ReadDir(filepath.Dir(paths[0]))
	if len(ents) != 1 {
		t.Fatalf("%d files left in the cache dir, want 1", len(ents))
	}
}

func TestMissingCompiler(t *testing.T) {
	isolate(t)
	t.Setenv("CC", "")
	t.Setenv("PATH", t.TempDir())
	_, err := Path()
	if err == nil || !strings.Contains(err.Error(), "nlemu exec needs a C compiler: set $CC or install gcc") {
		t.Fatalf("err = %v", err)
	}

	t.Setenv("CC", "no-such-cc-nlemu")
	_, err = Path()
	if err == nil || !strings.Contains(err.Error(), "no-such-cc-nlemu") {
		t.Fatalf("err = %v, want it to name $CC", err)
	}
}

func TestCompilerFailureIsReported(t *testing.T) {
	needCC(t)
	isolate(t)
	old := source
	t.Cleanup(func() { source = old })
	source = []byte("this is not C\n")
	_, err := Path()
	if err == nil || !strings.Contains(err.Error(), "compiling the LD_PRELOAD shim") {
		t.Fatalf("err = %v", err)
	}
}

// With NLEMU_SOCKET unset the shim must be invisible: a real netlink client
// (iproute2) talks to the kernel as before.
func TestPassThroughWithoutServer(t *testing.T) {
	needCC(t)
	ip, err := exec.LookPath("ip")
	if err != nil {
		for _, p := range []string{"/usr/sbin/ip", "/sbin/ip"} {
			if _, err2 := os.Stat(p); err2 == nil {
				ip, err = p, nil
			}
		}
	}
	if err != nil {
		t.Skip("iproute2 not installed")
	}
	isolate(t)
	lib, err := Path()
	if err != nil {
		t.Fatal(err)
	}
	plain, err := exec.Command(ip, "rule", "show").CombinedOutput()
	if err != nil {
		t.Skipf("ip rule show does not work here: %v: %s", err, plain)
	}
	cmd := exec.Command(ip, "rule", "show")
	cmd.Env = append(os.Environ(), "LD_PRELOAD="+lib, "NLEMU_SOCKET=", "NLEMU_NETNS=")
	shimmed, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("ip rule show under the shim without a server: %v: %s", err, shimmed)
	}
	if string(shimmed) != string(plain) {
		t.Fatalf("output differs:\nplain:\n%s\nshimmed:\n%s", plain, shimmed)
	}
}
