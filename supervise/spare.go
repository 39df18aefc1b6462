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
	mu      sync.Mutex
	fd      int       // guarded by mu, when ok
	ok      bool      // guarded by mu: fd is a spare
	made    time.Time // guarded by mu
	filling bool      // guarded by mu: a fill is under way
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

// fill makes a new spare if there is none, on a goroutine of its own (the
// worker goes back to its notifications at once).
func (c *spareConn) fill(path string) {
	c.mu.Lock()
	if c.ok || c.filling {
		c.mu.Unlock()
		return
	}
	c.filling = true
	c.mu.Unlock()
	go func() {
		fd, err := connectServer(path)
		c.mu.Lock()
		defer c.mu.Unlock()
		c.filling = false
		if err != nil {
			return
		}
		if c.ok {
			unix.Close(c.fd)
		}
		c.fd, c.ok, c.made = fd, true, time.Now()
	}()
}
