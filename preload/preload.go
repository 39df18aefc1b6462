// Package preload holds nlemu's LD_PRELOAD shim, libnlemu_preload.so, which
// redirects a libc program's NETLINK_ROUTE sockets to an nlemu server (see
// nlemu_preload.c for what it emulates and docs/PROTOCOL.md for the wire).
//
// The C source is embedded in the Go binary and compiled on first use with the
// system C compiler ($CC, else cc, else gcc) into a per-user cache directory:
//
//	<os.UserCacheDir()>/nlemu/<hash>/libnlemu_preload.so
//
// (or <temp dir>/nlemu-cache-<uid>/<hash>/ when the user cache is unusable),
// where <hash> covers the source and the compiler flags, so a changed shim is
// rebuilt into a new directory and an old binary keeps using its own. Builds
// are atomic (temporary file + rename), so any number of processes may race to
// build the same library; each one ends up with a complete file.
//
// Path is safe for concurrent use.
package preload

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// source is the C source of the shim.
//
//go:embed nlemu_preload.c
var source []byte

// LibName is the file name of the built library.
const LibName = "libnlemu_preload.so"

// cflags are the compiler arguments besides the output and input files.
var cflags = []string{"-shared", "-fPIC", "-O2", "-Wall"}

// ldflags come after the source file.
var ldflags = []string{"-ldl", "-lpthread"}

var (
	mu     sync.Mutex
	cached string // path of a library built or found by this process
)

// Path returns the path of the shim library for this version of the source,
// compiling it first if the cache does not hold it yet. Errors name what is
// missing, e.g. the C compiler.
func Path() (string, error) {
	mu.Lock()
	defer mu.Unlock()
	if cached != "" {
		if _, err := os.Stat(cached); err == nil {
			return cached, nil
		}
	}
	var firstErr error
	for _, dir := range cacheDirs() {
		p, err := build(dir)
		if err == nil {
			cached = p
			return p, nil
		}
		if firstErr == nil {
			firstErr = err
		}
		var fe *fsError
		if !errors.As(err, &fe) {
			break // no compiler, or the source does not compile: no use retrying
		}
	}
	return "", firstErr
}

// fsError marks a failure to use a cache directory (another one may work).
type fsError struct{ err error }

func (e *fsError) Error() string { return "preload: " + e.err.Error() }
func (e *fsError) Unwrap() error { return e.err }

// Hash identifies the library built from source with the current flags; it
// names the cache subdirectory.
func Hash() string {
	h := sha256.New()
	h.Write(source)
	fmt.Fprintf(h, "\x00%s\x00%s", strings.Join(cflags, " "), strings.Join(ldflags, " "))
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// cacheDirs returns the base directories to build in, in order: the per-user
// cache directory, then one under the system temp dir (per uid) for users
// without a usable home.
func cacheDirs() []string {
	var dirs []string
	if d, err := os.UserCacheDir(); err == nil {
		dirs = append(dirs, filepath.Join(d, "nlemu"))
	}
	return append(dirs, filepath.Join(os.TempDir(), fmt.Sprintf("nlemu-cache-%d", os.Getuid())))
}

// compiler returns the compiler command ($CC may carry flags, as in make).
func compiler() ([]string, error) {
	if cc := strings.Fields(os.Getenv("CC")); len(cc) > 0 {
		if _, err := exec.LookPath(cc[0]); err != nil {
			return nil, fmt.Errorf("nlemu exec needs a C compiler: $CC=%q is not runnable: %v", os.Getenv("CC"), err)
		}
		return cc, nil
	}
	for _, c := range []string{"cc", "gcc"} {
		if _, err := exec.LookPath(c); err == nil {
			return []string{c}, nil
		}
	}
	return nil, errors.New("nlemu exec needs a C compiler: set $CC or install gcc")
}

// build compiles the library into base/<hash>/ unless it is already there.
func build(base string) (string, error) {
	dir := filepath.Join(base, Hash())
	lib := filepath.Join(dir, LibName)
	if st, err := os.Stat(lib); err == nil && st.Mode().IsRegular() && st.Size() > 0 {
		return lib, nil
	}
	cc, err := compiler()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", &fsError{fmt.Errorf("cannot create cache directory: %w", err)}
	}
	// Private names for the source and the output, so concurrent builders
	// never see each other's half-written files.
	src, err := os.CreateTemp(dir, "nlemu_preload-*.c")
	if err != nil {
		return "", &fsError{err}
	}
	defer os.Remove(src.Name())
	if _, err := src.Write(source); err != nil {
		src.Close()
		return "", &fsError{err}
	}
	if err := src.Close(); err != nil {
		return "", &fsError{err}
	}
	tmp := strings.TrimSuffix(src.Name(), ".c") + ".so.tmp"
	defer os.Remove(tmp)

	args := append([]string{}, cc[1:]...)
	args = append(args, cflags...)
	args = append(args, "-o", tmp, src.Name())
	args = append(args, ldflags...)
	cmd := exec.Command(cc[0], args...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("preload: compiling the LD_PRELOAD shim with %s failed: %v\n%s",
			strings.Join(cc, " "), err, strings.TrimSpace(out.String()))
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", &fsError{err}
	}
	if err := os.Rename(tmp, lib); err != nil {
		return "", &fsError{err}
	}
	return lib, nil
}
