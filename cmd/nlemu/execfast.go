package main

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nlemu/nlemu/internal/privdir"
	"github.com/nlemu/nlemu/server"
)

// The fast path of `nlemu exec` (execfast_cgo.go) runs before the Go
// runtime and cannot build or hash the shim. It finds the library through
// a record this Go code writes once it has verified the library
// (preload.Path: SHA-256 against the hash recorded at build time):
//
//	<os.UserCacheDir()>/nlemu/exec-fast-<dev>-<ino>-<mtime>-<size>
//
// named after this nlemu binary's own file (a rebuilt binary has another
// name, so a record never outlives the binary that wrote it), holding the
// library's path, then its device, inode, size and mtime and the ELF class
// and machine it was built for. The fast path uses the library only while
// that file is still exactly the one described, in a directory private to
// the caller; otherwise it leaves the run to this Go code, which verifies
// and rewrites the record.

// fastRecordPath returns the record's path for the running binary, or ""
// when there is no usable cache directory or binary file.
func fastRecordPath() string {
	base, err := os.UserCacheDir()
	if err != nil || !filepath.IsAbs(base) {
		return ""
	}
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/exe", &st); err != nil {
		return ""
	}
	return filepath.Join(base, "nlemu", fmt.Sprintf("exec-fast-%x-%x-%d.%09d-%d",
		st.Dev, st.Ino, st.Mtim.Sec, st.Mtim.Nsec, st.Size))
}

// fastRecord is the record's content for the library at lib.
func fastRecord(lib string) ([]byte, error) {
	var st unix.Stat_t
	if err := unix.Lstat(lib, &st); err != nil {
		return nil, err
	}
	f, err := elf.Open(lib)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return fmt.Appendf(nil, "%s\n%x %x %d %d.%09d %d %d\n", lib, st.Dev, st.Ino, st.Size,
		st.Mtim.Sec, st.Mtim.Nsec, int(f.Class), int(f.Machine)), nil
}

// writeFastRecord records lib (a library preload.Path has just verified)
// for the fast path, unless the record already says so. Failures only
// mean the next run takes the Go path again.
func writeFastRecord(lib string) {
	path := fastRecordPath()
	if path == "" || strings.ContainsAny(lib, "\n") ||
		!strings.HasPrefix(lib, filepath.Dir(path)+string(filepath.Separator)) {
		return // a library outside the user cache (the temp-dir fallback)
	}
	want, err := fastRecord(lib)
	if err != nil {
		return
	}
	if have, err := os.ReadFile(path); err == nil && bytes.Equal(have, want) {
		return
	}
	if privdir.Check(filepath.Dir(path)) != nil {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".exec-fast-*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(want)
	cerr := tmp.Close()
	if werr != nil || cerr != nil || os.Chmod(tmp.Name(), 0o600) != nil || os.Rename(tmp.Name(), path) != nil {
		os.Remove(tmp.Name())
		return
	}
	// Every build of nlemu gets its own record (a test run builds one per
	// run): records not rewritten for a week are of binaries long gone or
	// unused, and a later run would only write them again.
	old, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "exec-fast-*"))
	for _, o := range old {
		if fi, err := os.Lstat(o); err == nil && o != path && time.Since(fi.ModTime()) > 7*24*time.Hour {
			os.Remove(o)
		}
	}
}

// execCheckConnect makes sure a server accepts connections at path: one
// connect(), no handshake (about 20 µs; a HELLO would add a server round
// trip to every exec). A missing namespace is reported by CMD's first
// NETLINK_ROUTE socket(), which fails with ENOENT and one line from the
// shim. The fast path makes the same check. Its errors are one line.
func execCheckConnect(path string) error {
	if err := server.CheckSocketPath(path); err != nil {
		return err // the default socket directory is not private: say so as is
	}
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("no server at %s: %v", path, err)
	}
	defer unix.Close(fd)
	for {
		err = unix.Connect(fd, &unix.SockaddrUnix{Name: path})
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("no server at %s: %v", path, err)
	}
	return nil
}
