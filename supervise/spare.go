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

// sparePool holds connections to the server made ahead of the socket()
// calls that will use them, their HELLO not sent yet (the HELLO names the
// namespace and the port id hint, known only then): the connect, the
// server's accept and its wait for the HELLO (server/accept.go: in its
// epoll set, costing it no thread) happen off the caller's time. A filler
// goroutine tops them up to spareCount, woken when a take leaves
// spareLow or fewer (one wake-up for several spares: waking it for each
// cost a futex wake and a context switch per socket(), measured with perf
// stat): a burst of socket() calls (vishvananda/netlink opens one per
// request, a test suite's goroutines at once) finds one ready as long as
// the filler keeps up, and the worker that answers socket() makes none
// itself (it did, one spare after each socket(), ≈ 10-20 µs of the
// worker's time before the next notification). The server closes a connection that
// sends no HELLO within 30 s; a spare older than spareMaxAge is closed
// instead of used, and one the server has closed anyway fails its HELLO,
// which is then sent on a fresh connection (dialOn).
type sparePool struct {
	path string
	// kick wakes the filler (buffered: one pending wake is enough).
	kick chan struct{}
	once sync.Once

	mu    sync.Mutex
	fds   []spare // guarded by mu: oldest first
	made  int     // guarded by mu: spares connected (for tests)
	taken int     // guarded by mu: spares handed out (for tests)
	// fillErr is the filler's last failed connect (for tests).
	fillErr error // guarded by mu
}

// spare is one connection made ahead.
type spare struct {
	fd   int
	made time.Time
}

// spareCount is how many spares the pool keeps: enough for the socket()
// calls of a burst between two turns of the filler.
const spareCount = 4

// spareLow is the number of spares left at which a take wakes the filler.
const spareLow = 1

// spareMaxAge is how long a spare connection is kept unused.
const spareMaxAge = 10 * time.Second

// init sets the server's path; the filler starts at the first wake.
func (p *sparePool) init(path string) {
	p.path = path
	p.kick = make(chan struct{}, 1)
}

// take returns a spare connection, or -1 when none is ready, and wakes the
// filler when few are left.
func (p *sparePool) take() int {
	if p.kick == nil {
		return -1
	}
	fd := -1
	now := time.Now()
	p.mu.Lock()
	for len(p.fds) > 0 && fd < 0 {
		sp := p.fds[0]
		p.fds = p.fds[1:]
		if now.Sub(sp.made) > spareMaxAge {
			unix.Close(sp.fd)
			continue
		}
		fd = sp.fd
		p.taken++
	}
	low := len(p.fds) <= spareLow
	p.mu.Unlock()
	if low {
		p.wake()
	}
	return fd
}

// wake asks the filler to top the pool up.
func (p *sparePool) wake() {
	if p.kick == nil {
		return
	}
	p.once.Do(func() { go p.filler() })
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// filler makes spares until the pool holds spareCount, each time it is
// woken; it lives as long as the supervisor (the process). A connect
// that fails (no server, the listener's backlog full) ends the turn: the
// next socket() connects itself.
func (p *sparePool) filler() {
	for range p.kick {
		for {
			p.mu.Lock()
			n := len(p.fds)
			p.mu.Unlock()
			if n >= spareCount {
				break
			}
			fd, err := connectNonblock(p.path)
			if err != nil {
				p.mu.Lock()
				p.fillErr = err
				p.mu.Unlock()
				break
			}
			p.mu.Lock()
			p.fds = append(p.fds, spare{fd, time.Now()})
			p.made++
			p.mu.Unlock()
		}
	}
}

// counts returns the spares ready, connected and handed out.
func (p *sparePool) counts() (ready, made, taken int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.fds), p.made, p.taken
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
