package main

import (
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestFastRecordDescribesTheLibrary: the record the Go path writes for
// the fast path names the library and pins its device, inode, size, mtime
// and ELF class and machine in the format execfast_cgo.go's sscanf reads,
// is private (0600 in a 0700 directory), and is rewritten when the library
// changes; a library outside the user cache (the temp-dir fallback) gets
// no record.
func TestFastRecordDescribesTheLibrary(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	base := filepath.Join(cache, "nlemu")
	if err := os.Mkdir(base, 0o700); err != nil {
		t.Fatal(err)
	}
	libdir := filepath.Join(base, "0123456789abcdef")
	if err := os.Mkdir(libdir, 0o700); err != nil {
		t.Fatal(err)
	}
	// Any ELF file of this machine stands for the library: this test binary.
	self, err := os.ReadFile("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	lib := filepath.Join(libdir, "libnlemu_preload.so")
	if err := os.WriteFile(lib, self, 0o555); err != nil {
		t.Fatal(err)
	}
	path := fastRecordPath()
	if filepath.Dir(path) != base || !strings.HasPrefix(filepath.Base(path), "exec-fast-") {
		t.Fatalf("fastRecordPath() = %q, want exec-fast-* in %s", path, base)
	}
	want := func() string {
		var st unix.Stat_t
		if err := unix.Lstat(lib, &st); err != nil {
			t.Fatal(err)
		}
		f, err := elf.Open(lib)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		return fmt.Sprintf("%s\n%x %x %d %d.%09d %d %d\n", lib, st.Dev, st.Ino, st.Size,
			st.Mtim.Sec, st.Mtim.Nsec, int(f.Class), int(f.Machine))
	}
	writeFastRecord(lib)
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no record written: %v", err)
	}
	if string(got) != want() {
		t.Errorf("record:\n%q\nwant\n%q", got, want())
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("record mode %v (%v), want 0600", fi.Mode().Perm(), err)
	}
	// A changed library is recorded again.
	fixed := time.Date(2020, 1, 2, 3, 4, 5, 6, time.UTC)
	if err := os.Chtimes(lib, fixed, fixed); err != nil {
		t.Fatal(err)
	}
	writeFastRecord(lib)
	if got, _ := os.ReadFile(path); string(got) != want() {
		t.Errorf("after the library changed, record:\n%q\nwant\n%q", got, want())
	}
	// Records of other binaries are removed once a week old, not before.
	stale, fresh := filepath.Join(base, "exec-fast-1-2-3.000000004-5"), filepath.Join(base, "exec-fast-6-7-8.000000009-10")
	for _, p := range []string{stale, fresh} {
		if err := os.WriteFile(p, []byte("x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	weekAgo := time.Now().Add(-8 * 24 * time.Hour)
	if err := os.Chtimes(stale, weekAgo, weekAgo); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(lib, weekAgo, weekAgo); err != nil { // a new record to write
		t.Fatal(err)
	}
	writeFastRecord(lib)
	if _, err := os.Stat(stale); err == nil {
		t.Errorf("a week-old record of another binary was kept")
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("a recent record of another binary was removed: %v", err)
	}
	// Outside the cache: no record, and the existing one is left alone.
	before, _ := os.ReadFile(path)
	other := filepath.Join(t.TempDir(), "libnlemu_preload.so")
	if err := os.WriteFile(other, self, 0o555); err != nil {
		t.Fatal(err)
	}
	writeFastRecord(other)
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Errorf("a library outside the cache was recorded: %q", after)
	}
}
