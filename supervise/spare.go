package supervise

import (
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nlemu/nlemu/internal/sysctl"
)

// rmemDefault reads net.core.rmem_default for each new socket, as
// sock_init_data() does, through a descriptor held open: a pread of it
// regenerates the value (proc_sys_read()) without the path walk, open and
// close of sysctl.Int, which cost 30 µs of a supervised socket() on the
// loaded 2-core machine against 2 µs (measured with go test -bench).
type rmemDefault struct {
	once sync.Once
	fd   int
}

const rmemPath = "/proc/sys/net/core/rmem_default"

func (r *rmemDefault) get() int {
	r.once.Do(func() {
		fd, err := unix.Open(rmemPath, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			fd = -1
		}
		r.fd = fd
	})
	const def = 212992
	if r.fd < 0 {
		return sysctl.Int(rmemPath, def)
	}
	var b [24]byte
	n, err := unix.Pread(r.fd, b[:], 0)
	if err != nil || n <= 0 {
		return sysctl.Int(rmemPath, def)
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(b[:n])))
	if err != nil || v <= 0 {
		return def
	}
	return v
}

// spareConn is one connection to the server made ahead of the socket()
// that will use it, its HELLO not sent yet (the HELLO names the namespace
// and the port id hint, known only then): the connect and the server's
// accept and the goroutine it starts happen off the caller's time. The
// server waits up to 30 s for a HELLO (serveUnix); a spare older than
// spareMaxAge is closed instead of used, and one the server has closed
// anyway fails its HELLO, which is then sent on a fresh connection.
type spareConn struct {
	mu   sync.Mutex
	fd   int       // guarded by mu, when ok
	ok   bool      // guarded by mu: fd is a spare
	made time.Time // guarded by mu
}

// spareMaxAge is how long a spare connection is kept unused.
const spareMaxAge = 10 * time.Second

// take returns the spare connection, or -1.
func (c *spareConn) take() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	fd := c.fd
	if !c.ok {
		return -1
	}
	c.ok = false
	if time.Since(c.made) > spareMaxAge {
		unix.Close(fd)
		return -1
	}
	return fd
}

// fill makes a new spare if there is none. It runs on the worker after
// the socket() it follows is answered: a Unix connect returns once the
// connection is queued on the server's listener, without waiting for the
// accept. Made on a goroutine instead, the spare was not ready for one
// socket() in five of a tight socket/close loop (hack/sockbench). The
// connect does not block: with the listener's backlog full there is no
// spare, and the next socket() connects itself.
func (c *spareConn) fill(path string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ok {
		return
	}
	fd, err := connectNonblock(path)
	if err != nil {
		return
	}
	c.fd, c.ok, c.made = fd, true, time.Now()
}

// connectNonblock is connectServer without waiting for room in the
// listener's backlog; the descriptor is left blocking (it becomes the
// caller's socket, whose flags are its own).
func connectNonblock(path string) (int, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return -1, err
	}
	for {
		err = unix.Connect(fd, &unix.SockaddrUnix{Name: path})
		if err != unix.EINTR {
			break
		}
	}
	if err == nil {
		err = unix.SetNonblock(fd, false)
	}
	if err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}
