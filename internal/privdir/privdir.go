// Package privdir creates and checks directories that must belong to the
// calling user alone: nlemu's default socket directory under $TMPDIR and the
// shim's build cache. Such a directory at a predictable path (/tmp/nlemu-0)
// can be created in advance by another local user; whatever that user puts
// there (a socket of their own server, a shared library) would then be
// trusted by the victim. So a directory is used only when it is a real
// directory (not a symlink), owned by the caller, and not writable by group
// or others, and its parent cannot be used to swap it (owned by the caller
// or root, and sticky if others can write to it, as /tmp is) — the checks
// OpenSSH's safe_path makes of ~/.ssh.
package privdir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Error says why a directory or file is refused. Its message is one line.
type Error struct {
	Path   string
	Reason string
}

func (e *Error) Error() string {
	return fmt.Sprintf("refusing %s: %s", e.Path, e.Reason)
}

// Ensure creates dir with mode 0700 if it does not exist (its parent must
// exist) and then checks it as Check does.
func Ensure(dir string) error {
	if err := checkParent(dir); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("cannot create %s: %w", dir, unwrapPath(err))
	}
	return Check(dir)
}

// Check returns nil when dir is a directory (by lstat: a symlink is refused
// even if it points at a good directory) owned by the caller's uid, not
// writable by group or others, in a parent that no one else can use to
// replace it. A missing dir is reported as an error wrapping fs.ErrNotExist.
func Check(dir string) error {
	if err := checkParent(dir); err != nil {
		return err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return fmt.Errorf("cannot check %s: %w", dir, unwrapPath(err))
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return &Error{dir, "it is a symbolic link, not a directory"}
	}
	if !fi.IsDir() {
		return &Error{dir, "it is not a directory"}
	}
	return checkOwnerMode(dir, fi)
}

// CheckFile returns the lstat of path when it is a regular file (not a
// symlink) owned by the caller and not writable by group or others.
func CheckFile(path string) (fs.FileInfo, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &Error{path, "it is not a regular file"}
	}
	return fi, checkOwnerMode(path, fi)
}

func checkOwnerMode(path string, fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return &Error{path, "cannot read its owner"}
	}
	if uid := os.Getuid(); int(st.Uid) != uid {
		return &Error{path, fmt.Sprintf("it is owned by uid %d, not by you (uid %d)", st.Uid, uid)}
	}
	if m := fi.Mode().Perm(); m&0o022 != 0 {
		return &Error{path, fmt.Sprintf("its mode %04o lets other users write to it (want no group/other write, e.g. 0700)", m)}
	}
	return nil
}

// checkParent refuses a parent directory in which someone other than the
// caller or root could rename dir away and put their own in its place: one
// owned by another user, or group/world-writable without the sticky bit.
// The parent is stat'ed through symlinks (/tmp may be one); it is the
// last component that must not be a link.
func checkParent(dir string) error {
	parent := filepath.Dir(filepath.Clean(dir))
	fi, err := os.Stat(parent)
	if err != nil {
		return fmt.Errorf("cannot check %s: %w", parent, unwrapPath(err))
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return &Error{parent, "cannot read its owner"}
	}
	if uid := os.Getuid(); st.Uid != 0 && int(st.Uid) != uid {
		return &Error{parent, fmt.Sprintf("the parent of %s is owned by uid %d, neither you (uid %d) nor root", dir, st.Uid, uid)}
	}
	if fi.Mode().Perm()&0o022 != 0 && fi.Mode()&fs.ModeSticky == 0 {
		return &Error{parent, fmt.Sprintf("the parent of %s has mode %04o: other users can write to it and it is not sticky", dir, fi.Mode().Perm())}
	}
	return nil
}

// unwrapPath drops the *PathError wrapper (its text repeats the path).
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
