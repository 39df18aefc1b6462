package server

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nlemu/nlemu/internal/privdir"
	"github.com/nlemu/nlemu/internal/sysctl"
)

// ListenUnix listens on path (mode Config.SocketMode, default 0666:
// every change is checked against the peer's credentials, mayChange) and serves connections in the background until the
// Listener or the Server is closed.
//
// Whatever is at path already is kept unless it is provably a dead server's
// socket: a socket file (lstat S_ISSOCK) whose SOCK_SEQPACKET connect is
// refused with ECONNREFUSED (unix_find_other found the inode, nobody
// listens). A live nlemu server is refused with ErrInUse, and so is one whose
// backlog is full (EAGAIN); anything else — a regular file, a directory, a
// symlink, another program's SOCK_STREAM or SOCK_DGRAM socket (connect gives
// EPROTOTYPE, as unix_connect requires matching types), a socket that cannot
// be probed (EACCES) — is refused with a one-line error and left in place.
//
// The default directory, $TMPDIR/nlemu-<uid>, is created 0700 and used only
// if it is the caller's own and private (internal/privdir).
func (s *Server) ListenUnix(path string) (*Listener, error) {
	if err := prepareSocketDir(path); err != nil {
		return nil, err
	}
	if err := removeStaleSocket(path); err != nil {
		return nil, err
	}
	lfd, err := listenSeqpacket(path)
	if err != nil {
		return nil, err
	}
	mode := s.cfg.SocketMode
	if mode == 0 {
		mode = 0o666
	}
	if err := os.Chmod(path, mode); err != nil {
		unix.Close(lfd)
		unix.Unlink(path)
		return nil, err
	}
	a, err := newAcceptor(s, lfd) // accept.go
	if err != nil {
		unix.Close(lfd)
		unix.Unlink(path)
		return nil, err
	}
	l := &Listener{s: s, a: a, path: path}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		go a.run()
		l.Close()
		return nil, net.ErrClosed
	}
	s.listeners = append(s.listeners, l)
	s.mu.Unlock()
	go a.run()
	return l, nil
}

// listenSeqpacket makes the listening socket at path: non-blocking (the
// acceptor's epoll set says when to accept), its backlog as large as
// net.core.somaxconn allows (what net.Listen asks for: listen() caps it).
// Not a net.UnixListener: its descriptor would be in the Go netpoller,
// waking a netpoller thread at every connect besides the acceptor.
func listenSeqpacket(path string) (int, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return -1, os.NewSyscallError("socket", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		unix.Close(fd)
		return -1, &net.OpError{Op: "listen", Net: "unixpacket", Addr: &net.UnixAddr{Name: path, Net: "unixpacket"}, Err: os.NewSyscallError("bind", err)}
	}
	if err := unix.Listen(fd, sysctl.Int("/proc/sys/net/core/somaxconn", 4096)); err != nil {
		unix.Close(fd)
		unix.Unlink(path)
		return -1, &net.OpError{Op: "listen", Net: "unixpacket", Addr: &net.UnixAddr{Name: path, Net: "unixpacket"}, Err: os.NewSyscallError("listen", err)}
	}
	return fd, nil
}

// defaultSocketDir is the per-user directory of the default socket when
// $XDG_RUNTIME_DIR is unset: a predictable path in a shared directory, so
// another user may have created it first.
func defaultSocketDir() string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("nlemu-%d", os.Getuid()))
}

// isDefaultSocketDir reports whether path's directory is defaultSocketDir,
// however the path was given (flag, $NLEMU_SOCKET or the default).
func isDefaultSocketDir(path string) bool {
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return false
	}
	return dir == filepath.Clean(defaultSocketDir())
}

// prepareSocketDir makes the directory of a socket the server is about to
// create: the default directory 0700 and checked; any other (the user chose
// it with --socket or $NLEMU_SOCKET) as before, 0755 with its parents.
func prepareSocketDir(path string) error {
	dir := filepath.Dir(path)
	if isDefaultSocketDir(path) {
		return privdir.Ensure(dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cannot create %s: %w", dir, unwrapPathError(err))
	}
	return nil
}

// CheckSocketPath is what a client checks before connecting to path: in the
// default directory it refuses a directory another user could write to or
// owns (their socket could be there in place of the server's). A missing
// directory is not an error here; connecting reports it.
func CheckSocketPath(path string) error {
	if !isDefaultSocketDir(path) {
		return nil
	}
	if err := privdir.Check(filepath.Dir(path)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// removeStaleSocket removes path if it is a dead server's socket, does
// nothing if path does not exist, and otherwise says (one line) why it is
// left alone.
func removeStaleSocket(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cannot check %s: %w", path, unwrapPathError(err))
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("%s exists and is %s, not a socket: not replacing it", path, describeType(fi.Mode()))
	}
	c, err := net.DialTimeout("unixpacket", path, time.Second)
	switch {
	case err == nil:
		c.Close()
		return fmt.Errorf("%w: %s", ErrInUse, path)
	case errors.Is(err, syscall.ECONNREFUSED):
		// stale: removed below
	case errors.Is(err, syscall.EPROTOTYPE):
		return fmt.Errorf("%s is the socket of another program (stream or datagram, not an nlemu server's): not replacing it", path)
	case errors.Is(err, syscall.EAGAIN):
		return fmt.Errorf("%w: %s (its listen backlog is full)", ErrInUse, path)
	default:
		var se *os.SyscallError
		if errors.As(err, &se) {
			err = se.Err
		}
		return fmt.Errorf("cannot tell whether the socket %s is in use (%v): not replacing it", path, err)
	}
	// Remove the inode that was probed, not one put there since.
	now, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil || !os.SameFile(fi, now) {
		return fmt.Errorf("%s changed while it was being checked: not replacing it", path)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cannot remove the stale socket %s: %w", path, unwrapPathError(err))
	}
	return nil
}

// describeType names a file type for an error message.
func describeType(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return "not a socket"
}

// unwrapPathError drops the *PathError wrapper, whose text repeats the path.
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
