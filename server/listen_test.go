package server_test

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/nlemu/nlemu/server"
)

// TestListenRefusesLiveServerAndReplacesStaleSocket: `nlemu serve` must not
// steal a live server's socket, but may reuse a dead one's file; closing
// removes the file.
func TestListenRefusesLiveServerAndReplacesStaleSocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nlemu.sock")
	a := server.New(server.Config{})
	la, err := a.ListenUnix(path)
	if err != nil {
		t.Fatal(err)
	}
	b := server.New(server.Config{})
	defer b.Close()
	if _, err := b.ListenUnix(path); !errors.Is(err, server.ErrInUse) {
		t.Fatalf("second server on a live socket: %v", err)
	}
	la.Close()
	a.Close()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("socket file left behind: %v", err)
	}
	// A stale socket file (no one listening) is replaced.
	l, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: path, Net: "unixpacket"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()
	if _, err := b.ListenUnix(path); err != nil {
		t.Fatalf("stale socket not replaced: %v", err)
	}
	c, err := server.DialUnix(path, server.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if _, err := server.DialUnix(path, server.Options{Namespace: "nope"}); !errors.Is(err, server.ErrNoNamespace) {
		t.Fatalf("unknown namespace: %v", err)
	}
}

// TestListenUnixReplacesStaleSocket: the one thing ListenUnix may unlink is
// a socket file whose connect(2) is refused (ECONNREFUSED: the kernel's
// unix_find_other found the inode but no one listens on it).
func TestListenUnixReplacesStaleSocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nlemu.sock")
	l, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: path, Net: "unixpacket"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()
	s := server.New(server.Config{})
	defer s.Close()
	if _, err := s.ListenUnix(path); err != nil {
		t.Fatalf("stale socket not replaced: %v", err)
	}
	c, err := server.DialUnix(path, server.Options{})
	if err != nil {
		t.Fatalf("the new server does not answer: %v", err)
	}
	c.Close()
}

// TestListenUnixKeepsWhatIsNotAStaleSocket: `nlemu serve --socket PATH`
// unlinked whatever was at PATH when a SOCK_SEQPACKET dial to it failed: a
// regular file, a directory's entry, a symlink, another program's
// SOCK_STREAM or SOCK_DGRAM socket (connect gives EPROTOTYPE: unix_connect
// requires the peer's type to match), or a live nlemu server whose backlog
// was full (EAGAIN). Each must be refused with a one-line error and left in
// place.
func TestListenUnixKeepsWhatIsNotAStaleSocket(t *testing.T) {
	type setup func(t *testing.T, path string) (check func() error)
	stillThere := func(path string, mode fs.FileMode) func() error {
		return func() error {
			fi, err := os.Lstat(path)
			if err != nil {
				return err
			}
			if fi.Mode().Type() != mode {
				return fmt.Errorf("%s is now %v, want type %v", path, fi.Mode().Type(), mode)
			}
			return nil
		}
	}
	dials := func(path, network string) func() error {
		return func() error {
			if err := stillThere(path, fs.ModeSocket)(); err != nil {
				return err
			}
			c, err := net.Dial(network, path)
			if err != nil {
				return fmt.Errorf("the other program's socket no longer answers: %v", err)
			}
			return c.Close()
		}
	}
	cases := []struct {
		name  string
		setup setup
		want  string // in the error
	}{
		{"RegularFile", func(t *testing.T, path string) func() error {
			if err := os.WriteFile(path, []byte("precious\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			return func() error {
				b, err := os.ReadFile(path)
				if err != nil || string(b) != "precious\n" {
					return fmt.Errorf("regular file lost: %q, %v", b, err)
				}
				return nil
			}
		}, "not a socket"},
		{"Directory", func(t *testing.T, path string) func() error {
			if err := os.Mkdir(path, 0o755); err != nil {
				t.Fatal(err)
			}
			return stillThere(path, fs.ModeDir)
		}, "not a socket"},
		{"Symlink", func(t *testing.T, path string) func() error {
			target := filepath.Join(filepath.Dir(path), "target")
			if err := os.WriteFile(target, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, path); err != nil {
				t.Fatal(err)
			}
			return stillThere(path, fs.ModeSymlink)
		}, "not a socket"},
		{"StreamSocket", func(t *testing.T, path string) func() error {
			l, err := net.Listen("unix", path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })
			return dials(path, "unix")
		}, "another program"},
		{"DatagramSocket", func(t *testing.T, path string) func() error {
			c, err := net.ListenPacket("unixgram", path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			return dials(path, "unixgram")
		}, "another program"},
		{"BusySeqpacketServer", func(t *testing.T, path string) func() error {
			// listen(fd, 0) and one pending connection: the next connect
			// fails with EAGAIN (unix_wait_for_peer, nonblocking), yet
			// the server is alive.
			fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { syscall.Close(fd) })
			if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: path}); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Listen(fd, 0); err != nil {
				t.Fatal(err)
			}
			c, err := net.Dial("unixpacket", path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			return stillThere(path, fs.ModeSocket)
		}, "live nlemu server"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "nlemu.sock")
			check := tc.setup(t, path)
			s := server.New(server.Config{})
			defer s.Close()
			l, err := s.ListenUnix(path)
			if err == nil {
				l.Close()
				t.Fatalf("ListenUnix replaced it")
			}
			if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, tc.want) || !strings.Contains(msg, path) {
				t.Errorf("error %q: want one line naming %s and saying %q", msg, path, tc.want)
			}
			if err := check(); err != nil {
				t.Error(err)
			}
		})
	}
}

// defaultEnv points the default socket path at a fresh $TMPDIR and returns
// the default directory, $TMPDIR/nlemu-<uid>.
func defaultEnv(t *testing.T) string {
	t.Helper()
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	t.Setenv("XDG_RUNTIME_DIR", "")
	t.Setenv("NLEMU_SOCKET", "")
	dir := filepath.Join(tmp, fmt.Sprintf("nlemu-%d", os.Getuid()))
	if got := filepath.Dir(server.DefaultSocketPath()); got != dir {
		t.Fatalf("default socket directory %s, want %s", got, dir)
	}
	return dir
}

// TestDefaultSocketDirIsCreatedPrivate: serve creates $TMPDIR/nlemu-<uid>
// mode 0700 (it was 0755).
func TestDefaultSocketDirIsCreatedPrivate(t *testing.T) {
	dir := defaultEnv(t)
	s := server.New(server.Config{})
	defer s.Close()
	if _, err := s.ListenUnix(server.DefaultSocketPath()); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m := fi.Mode().Perm(); m != 0o700 {
		t.Errorf("%s has mode %04o, want 0700", dir, m)
	}
	c, err := server.DialUnix(server.DefaultSocketPath(), server.Options{})
	if err != nil {
		t.Fatalf("client refuses the server's own directory: %v", err)
	}
	c.Close()
}

// TestDefaultSocketDirRefusesForeignOwner: a directory at the predictable
// default path that another user could write to (0777, another owner, or a
// symlink to somewhere else) was used by serve and by clients, so that user
// could put their own server's socket there. Both sides must refuse it.
func TestDefaultSocketDirRefusesForeignOwner(t *testing.T) {
	cases := []struct {
		name string
		make func(t *testing.T, dir string)
		want string
	}{
		{"WorldWritable", func(t *testing.T, dir string) {
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, 0o777); err != nil {
				t.Fatal(err)
			}
		}, "mode 0777"},
		{"OtherOwner", func(t *testing.T, dir string) {
			if os.Getuid() != 0 {
				t.Skip("chown to another uid needs root")
			}
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(dir, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, "owned by uid 65534"},
		{"Symlink", func(t *testing.T, dir string) {
			other := filepath.Join(filepath.Dir(dir), "elsewhere")
			if err := os.Mkdir(other, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(other, dir); err != nil {
				t.Fatal(err)
			}
		}, "symbolic link"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := defaultEnv(t)
			tc.make(t, dir)
			path := server.DefaultSocketPath()

			// The other user's server, listening in the directory: a real
			// nlemu server's socket, renamed in (a bound socket inode
			// keeps answering at its new name).
			evil := server.New(server.Config{})
			defer evil.Close()
			evilPath := filepath.Join(t.TempDir(), "evil.sock")
			if _, err := evil.ListenUnix(evilPath); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(evilPath, path); err != nil {
				t.Fatal(err)
			}

			if c, err := server.DialUnix(path, server.Options{}); err == nil || !strings.Contains(err.Error(), tc.want) {
				if c != nil {
					c.Close()
				}
				t.Errorf("client on %s: %v, want an error saying %q", path, err, tc.want)
			}
			os.Remove(path)
			s := server.New(server.Config{})
			defer s.Close()
			if l, err := s.ListenUnix(path); err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				if l != nil {
					l.Close()
				}
				t.Errorf("serve on %s: %v, want one line saying %q", path, err, tc.want)
			}
		})
	}
}
