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
// rebuilt into a new directory and an old binary keeps using its own.
//
// The library is loaded into every program `nlemu exec` runs, so whoever can
// write it can run code as the user. The cache directories are therefore
// created 0700 and used only when they are the caller's own and not
// writable by group or others (see internal/privdir; the temp-dir path is
// predictable, and another user may have created it first). A cached library
// is used only when it is a regular file of the caller's, not writable by
// group or others, whose SHA-256 matches the one recorded beside it
// (libnlemu_preload.so.sha256) when it was built; anything else is rebuilt
// and replaced.
//
// Builds are atomic: each builder compiles into a private directory
// (<base>/.build-*) and renames the whole directory to <hash>, so a library
// and its recorded hash always appear together, and any number of processes
// may race to build; each one ends up with a complete, verified library.
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
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/nlemu/nlemu/internal/privdir"
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

// SumSuffix is appended to LibName for the file recording the library's
// SHA-256 (hex and a newline), written by the build that made it.
const SumSuffix = ".sha256"

var (
	mu     sync.Mutex
	cached string // path of a library built or found by this process
)

// Path returns the path of the shim library for this version of the source,
// compiling it first if the cache does not hold a verified copy yet. Errors
// name what is missing (e.g. the C compiler) or refused, on one line; a
// failed compile adds the compiler's output after it.
func Path() (string, error) {
	mu.Lock()
	defer mu.Unlock()
	if cached != "" {
		if verify(filepath.Dir(cached)) == nil {
			return cached, nil
		}
		cached = ""
	}
	var errs []string
	for _, dir := range cacheDirs() {
		p, err := build(dir)
		if err == nil {
			cached = p
			return p, nil
		}
		var fe *fsError
		if !errors.As(err, &fe) {
			return "", err // no compiler, or the source does not compile: no use retrying
		}
		errs = append(errs, fe.err.Error())
	}
	return "", fmt.Errorf("preload: no usable cache directory for the shim: %s", strings.Join(errs, "; "))
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

// fileSum returns the hex SHA-256 of the file at path.
func fileSum(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// verify checks a <hash> directory before its library may be loaded: the
// directory private and the caller's, the library and its recorded hash
// regular files of the caller's that no one else can write, and the
// library's content matching the recorded hash.
func verify(dir string) error {
	if err := privdir.Check(dir); err != nil {
		return err
	}
	lib := filepath.Join(dir, LibName)
	if _, err := privdir.CheckFile(lib); err != nil {
		return err
	}
	if _, err := privdir.CheckFile(lib + SumSuffix); err != nil {
		return err
	}
	want, err := os.ReadFile(lib + SumSuffix)
	if err != nil {
		return err
	}
	got, err := fileSum(lib)
	if err != nil {
		return err
	}
	if strings.TrimSpace(string(want)) != got {
		return &privdir.Error{Path: lib, Reason: "its SHA-256 is not the one recorded when it was built"}
	}
	return nil
}

// ensureBase creates base (0700) and checks that it is private to the
// caller. The user cache directory's own parents (~/.cache) are created
// 0700 as well if missing.
func ensureBase(base string) error {
	if err := os.MkdirAll(filepath.Dir(base), 0o700); err != nil {
		return fmt.Errorf("cannot create cache directory: %w", err)
	}
	return privdir.Ensure(base)
}

// build returns base/<hash>/libnlemu_preload.so, compiling it unless a
// verified copy is already there. A copy that fails verification (planted,
// truncated, from an older nlemu without a recorded hash) is replaced.
func build(base string) (string, error) {
	if err := ensureBase(base); err != nil {
		return "", &fsError{err}
	}
	dir := filepath.Join(base, Hash())
	lib := filepath.Join(dir, LibName)
	if verify(dir) == nil {
		return lib, nil
	}
	cc, err := compiler()
	if err != nil {
		return "", err
	}
	tmp, err := compile(base, cc)
	if tmp != "" {
		defer os.RemoveAll(tmp)
	}
	if err != nil {
		return "", err
	}
	// Install the build: rename fails if dir exists (ENOTEMPTY/EEXIST),
	// then either another builder won (its copy verifies) or what is
	// there is bad and is moved aside first. A few rounds settle any race.
	for range 4 {
		err = os.Rename(tmp, dir)
		if err == nil {
			return lib, nil
		}
		if verify(dir) == nil {
			return lib, nil
		}
		stale, serr := os.MkdirTemp(base, ".stale-*")
		if serr != nil {
			return "", &fsError{serr}
		}
		if rerr := os.Rename(dir, filepath.Join(stale, "old")); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			os.RemoveAll(stale)
			return "", &fsError{fmt.Errorf("cannot replace %s: %w", dir, rerr)}
		}
		os.RemoveAll(stale)
	}
	return "", &fsError{fmt.Errorf("cannot install the shim in %s: %w", dir, err)}
}

// compile builds the library and its recorded hash into a new private
// directory under base and returns that directory (to be renamed into
// place; the caller removes it if it is still there).
func compile(base string, cc []string) (string, error) {
	tmp, err := os.MkdirTemp(base, ".build-*")
	if err != nil {
		return "", &fsError{err}
	}
	src := filepath.Join(tmp, "nlemu_preload.c")
	if err := os.WriteFile(src, source, 0o600); err != nil {
		return tmp, &fsError{err}
	}
	lib := filepath.Join(tmp, LibName)
	args := append([]string{}, cc[1:]...)
	args = append(args, cflags...)
	args = append(args, "-o", lib, src)
	args = append(args, ldflags...)
	cmd := exec.Command(cc[0], args...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Run(); err != nil {
		return tmp, fmt.Errorf("preload: compiling the LD_PRELOAD shim with %s failed: %v\n%s",
			strings.Join(cc, " "), err, strings.TrimSpace(out.String()))
	}
	if err := os.Remove(src); err != nil {
		return tmp, &fsError{err}
	}
	// Read-only: the library is mapped by running programs, and an
	// in-place write would corrupt them; replacing it is a rename.
	if err := os.Chmod(lib, 0o555); err != nil {
		return tmp, &fsError{err}
	}
	sum, err := fileSum(lib)
	if err != nil {
		return tmp, &fsError{err}
	}
	if err := os.WriteFile(lib+SumSuffix, []byte(sum+"\n"), 0o400); err != nil {
		return tmp, &fsError{err}
	}
	return tmp, nil
}
