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

	"github.com/google/go-cmp/cmp"
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
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if diff := cmp.Diff([]string{LibName, LibName + SumSuffix}, names); diff != "" {
		t.Fatalf("cache dir holds (-want +got):\n%s", diff)
	}
	// ... and no build directories are left in the base either.
	if ents, _ := os.ReadDir(filepath.Join(dir, "nlemu")); len(ents) != 1 {
		t.Fatalf("%d entries in the cache base, want only %s", len(ents), Hash())
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
	if len(ents) != 2 {
		t.Fatalf("%d files left in the cache dir, want the library and its hash", len(ents))
	}
	if ents, _ := os.ReadDir(base); len(ents) != 1 {
		t.Fatalf("%d entries left in the cache base, want only %s", len(ents), Hash())
	}
	if err := verify(filepath.Dir(paths[0])); err != nil {
		t.Fatalf("raced build does not verify: %v", err)
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

// TestShimCacheRejectsPlantedLibrary: the cache fallback
// $TMPDIR/nlemu-cache-<uid>/<hash>/ is a predictable path, and Path() used
// any non-empty file it found there, so a library planted by another user
// was loaded into the victim's `nlemu exec`. A cached library is used only
// when the directories are the caller's and private, and the file is a
// regular file of the caller's, not group/other-writable, whose SHA-256 is
// the one recorded when this process family built it; anything else is
// rebuilt (or, for a directory that is not the caller's, refused).
func TestShimCacheRejectsPlantedLibrary(t *testing.T) {
	needCC(t)
	const planted = "planted library\n"
	type layout struct {
		baseMode, hashMode, libMode os.FileMode
		baseUID, libUID             int // -1: the caller
		sum                         bool
	}
	cases := []struct {
		name string
		l    layout
		root bool // needs chown
	}{
		{"WorldWritableBase", layout{0o777, 0o755, 0o755, -1, -1, false}, false},
		{"WorldWritableHashDir", layout{0o700, 0o777, 0o755, -1, -1, false}, false},
		{"GroupWritableLibrary", layout{0o700, 0o700, 0o775, -1, -1, false}, false},
		{"LibraryWithoutRecordedHash", layout{0o700, 0o700, 0o755, -1, -1, false}, false},
		{"LibraryWithWrongHash", layout{0o700, 0o700, 0o755, -1, -1, true}, false},
		{"BaseOwnedByOtherUser", layout{0o755, 0o755, 0o755, 65534, 65534, false}, true},
		{"LibraryOwnedByOtherUser", layout{0o700, 0o700, 0o755, -1, 65534, false}, true},
	}
	for _, tc := range cases {
		for _, where := range []string{"tmp", "usercache"} {
			t.Run(tc.name+"/"+where, func(t *testing.T) {
				if tc.root && os.Getuid() != 0 {
					t.Skip("chown to another uid needs root")
				}
				cache := isolate(t)
				tmp := t.TempDir()
				t.Setenv("TMPDIR", tmp)
				base := filepath.Join(cache, "nlemu")
				if where == "tmp" {
					t.Setenv("XDG_CACHE_HOME", "/dev/null/not-a-directory")
					base = filepath.Join(tmp, fmt.Sprintf("nlemu-cache-%d", os.Getuid()))
				}
				lib := plant(t, base, planted, tc.l.baseMode, tc.l.hashMode, tc.l.libMode, tc.l.baseUID, tc.l.libUID, tc.l.sum)
				p, err := Path()
				badBase := tc.l.baseMode&0o022 != 0 || tc.l.baseUID >= 0
				switch {
				case badBase && where == "tmp" && err == nil:
					t.Fatalf("Path() = %s in a base directory it must refuse", p)
				case badBase && where == "usercache" && (err != nil || !strings.HasPrefix(p, tmp)):
					t.Fatalf("Path() = %q, %v: want a fresh build in the temp-dir fallback", p, err)
				case !badBase && (err != nil || p != lib):
					t.Fatalf("Path() = %q, %v: want %s rebuilt", p, err, lib)
				}
				if err == nil {
					b, rerr := os.ReadFile(p)
					if rerr != nil {
						t.Fatal(rerr)
					}
					if string(b) == planted {
						t.Fatalf("Path() = %s: the planted library", p)
					}
					if _, eerr := elf.Open(p); eerr != nil {
						t.Fatalf("Path() = %s, not an ELF file: %v", p, eerr)
					}
				} else if strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "refusing "+base) {
					t.Fatalf("Path() error %q, want one line saying it refuses %s", err, base)
				} else {
					t.Logf("refused: %v", err)
				}
				if b, _ := os.ReadFile(lib); string(b) == planted && err == nil && p == lib {
					t.Fatalf("planted library kept and used")
				}
			})
		}
	}
}

// plant lays out base/<hash>/libnlemu_preload.so holding content, as
// another user (uid >= 0) or a careless earlier run could have left it.
func plant(t *testing.T, base, content string, baseMode, hashMode, libMode os.FileMode, baseUID, libUID int, sum bool) string {
	t.Helper()
	dir := filepath.Join(base, Hash())
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	lib := filepath.Join(dir, LibName)
	if err := os.WriteFile(lib, []byte(content), 0o700); err != nil {
		t.Fatal(err)
	}
	if sum {
		// a recorded hash that is not the file's
		if err := os.WriteFile(lib+".sha256", []byte(strings.Repeat("0", 64)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		p   string
		m   os.FileMode
		uid int
	}{{lib, libMode, libUID}, {dir, hashMode, baseUID}, {base, baseMode, baseUID}} {
		if err := os.Chmod(c.p, c.m); err != nil {
			t.Fatal(err)
		}
		if c.uid >= 0 {
			if err := os.Chown(c.p, c.uid, c.uid); err != nil {
				t.Fatal(err)
			}
		}
	}
	return lib
}

// TestShimCacheDirsArePrivate: the directories Path() creates are 0700 (they
// were 0755) and the library is not writable by group or others.
func TestShimCacheDirsArePrivate(t *testing.T) {
	needCC(t)
	cache := isolate(t)
	p, err := Path()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		want os.FileMode
	}{
		{filepath.Join(cache, "nlemu"), 0o700},
		{filepath.Dir(p), 0o700},
		{p, 0o555},
	} {
		fi, err := os.Lstat(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if m := fi.Mode().Perm(); m != c.want {
			t.Errorf("%s: mode %04o, want %04o", c.path, m, c.want)
		}
	}
}
