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
	// ready holds connections with their HELLO done, by what the HELLO
	// named (readySpare); wants the keys the filler is to top up.
	ready map[helloKey]*readyList // guarded by mu
	wants map[helloKey]bool       // guarded by mu
	// readyMade and readyTaken count ready spares (for tests).
	readyMade, readyTaken int // guarded by mu
}

// helloKey is what a HELLO names besides the connection: the namespace,
// its HELLO option bits and the port id hint (the caller's process id).
// Two socket() calls with one key get the same answer from the server but
// for the port id, which the server picks among the free ones either way.
type helloKey struct {
	ns   string
	opts uint32
	pid  uint32
}

// readySpare is a connection made ahead with its HELLO answered and
// NLEMU_GROUPFRAMES sent behind it: what a socket() of its key needs, but
// for the receive buffer's default, the descriptor flags and the
// injection. Taking one costs a socket() no server round trip: the HELLO
// was ≈ 100 µs of the ≈ 170 µs a supervised socket() took
// (hack/exec-overhead.sh, docs/EXEC.md).
type readySpare struct {
	fd     int
	ino    uint64 // the Unix socket's inode (the supervisor's table key)
	portid uint32
	made   time.Time
}

// readyList is the ready spares of one key, oldest first, and when a
// socket() last asked for the key (the least recently used key is
// dropped first, readyKeys).
type readyList struct {
	spares []readySpare
	used   time.Time
}

// readyPerKey is how many ready spares a key keeps, and readyLow the
// number left at which a take asks the filler for more: vishvananda/netlink
// opens one socket per request, one after the other, so the filler is
// woken once per readyPerKey-readyLow+1 socket() calls and makes that many
// at once, their HELLOs sent before any answer is read (makeReadyBatch):
// one turn of the filler, and of the server's acceptor, for several
// sockets. With two kept and each take waking the filler, its goroutine,
// the thread that ran it and the acceptor woke for every socket() (perf
// sched_switch stacks, docs/EXEC.md). The readyLow left cover the
// requests made before the filler has run.
const (
	readyPerKey = 4
	readyLow    = 2
)

// readyKeys bounds the keys that keep ready spares (each spare is a server
// connection in its namespace, holding a port id).
const readyKeys = 16

// readyMaxAge is how long a ready spare is kept unused: a socket() is
// answered from the server's state as of its HELLO, so a namespace
// deleted on the server meanwhile (nlemu netns del) would still be the
// spare's. A socket() made that long after the HELLO gets a fresh one.
const readyMaxAge = 2 * time.Second

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
	p.ready = map[helloKey]*readyList{}
	p.wants = map[helloKey]bool{}
}

// takeReady returns a ready spare of key k, if one is, and whether the
// filler is to make more (fewer than readyLow are left; it records the
// want): O(1), a map look-up and a slice pop under the pool's lock, with
// no system call but the stale spares' closes. The caller wakes the
// filler (wake) once it has answered, if asked to: its wake-up (a futex
// wake of an idle thread) then runs beside the caller instead of before
// its answer.
func (p *sparePool) takeReady(k helloKey) (r readySpare, ok, refill bool) {
	if p.kick == nil {
		return readySpare{}, false, false
	}
	now := time.Now()
	var stale []int
	p.mu.Lock()
	if l := p.ready[k]; l != nil {
		l.used = now
		for len(l.spares) > 0 && !ok {
			r = l.spares[0]
			l.spares = l.spares[1:]
			if now.Sub(r.made) > readyMaxAge {
				stale = append(stale, r.fd)
				continue
			}
			ok = true
			p.readyTaken++
		}
		if len(l.spares) < readyLow && !p.wants[k] {
			p.wants[k] = true
			refill = true
		}
	}
	p.mu.Unlock()
	for _, fd := range stale {
		unix.Close(fd)
	}
	return r, ok, refill
}

// want records that the filler is to make ready spares of key k (after a
// socket() of k that found none); the caller wakes it.
func (p *sparePool) want(k helloKey) {
	if p.kick == nil {
		return
	}
	p.mu.Lock()
	if p.ready[k] == nil {
		p.ready[k] = &readyList{}
	}
	p.ready[k].used = time.Now()
	p.wants[k] = true
	p.mu.Unlock()
}

// fillReady makes the ready spares the wanted keys lack, dropping the
// least recently used keys beyond readyKeys and the spares older than
// readyMaxAge. A HELLO that fails drops the key's want: the next socket()
// of the key takes the ordinary way and reports the server's answer.
func (p *sparePool) fillReady() {
	for {
		var (
			k       helloKey
			found   bool
			toClose []int
		)
		now := time.Now()
		p.mu.Lock()
		for len(p.ready) > readyKeys {
			var oldest helloKey
			var t time.Time
			first := true
			for key, l := range p.ready {
				if first || l.used.Before(t) {
					oldest, t, first = key, l.used, false
				}
			}
			for _, r := range p.ready[oldest].spares {
				toClose = append(toClose, r.fd)
			}
			delete(p.ready, oldest)
			delete(p.wants, oldest)
		}
		for _, l := range p.ready {
			for len(l.spares) > 0 && now.Sub(l.spares[0].made) > readyMaxAge {
				toClose = append(toClose, l.spares[0].fd)
				l.spares = l.spares[1:]
			}
		}
		need := 0
		for key := range p.wants {
			l := p.ready[key]
			if l == nil || len(l.spares) >= readyPerKey {
				delete(p.wants, key)
				continue
			}
			k, found, need = key, true, readyPerKey-len(l.spares)
			break
		}
		p.mu.Unlock()
		for _, fd := range toClose {
			unix.Close(fd)
		}
		if !found {
			return
		}
		made, err := makeReadyBatch(p.path, k, need)
		p.mu.Lock()
		l := p.ready[k]
		if err != nil {
			p.fillErr = err
		}
		if err != nil || l == nil {
			delete(p.wants, k)
		}
		if l != nil {
			l.spares = append(l.spares, made...)
			p.readyMade += len(made)
			made = nil
		}
		p.mu.Unlock()
		for _, r := range made {
			unix.Close(r.fd)
		}
	}
}

// makeReadyBatch connects n times and runs the HELLO of key k on each
// (what socket() would), every HELLO sent before the first answer is read:
// the server's acceptor finds them together. It returns the spares made,
// in the order they were connected, and the first error, after which it
// makes no more.
func makeReadyBatch(path string, k helloKey, n int) ([]readySpare, error) {
	made := make([]readySpare, n)
	ok := make([]bool, n)
	var first error
	// helloAt(i) sends the i-th HELLO, runs helloAt(i+1) while the server
	// answers, then reads its own answer.
	var helloAt func(i int)
	helloAt = func(i int) {
		if i == n {
			return
		}
		fd, err := connectNonblock(path)
		if err != nil {
			first = err
			return
		}
		fd, portid, err, _ := hello(fd, path, k.ns, k.pid, k.opts, func() {
			if first == nil {
				helloAt(i + 1)
			}
		})
		if err == nil {
			var st unix.Stat_t
			if err = unix.Fstat(fd, &st); err != nil {
				unix.Close(fd)
			} else {
				made[i], ok[i] = readySpare{fd: fd, ino: st.Ino, portid: portid, made: time.Now()}, true
			}
		}
		if err != nil && first == nil {
			first = err
		}
	}
	helloAt(0)
	out := made[:0]
	for i := range made {
		if ok[i] {
			out = append(out, made[i])
		}
	}
	return out, first
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
		p.fillReady()
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

// readyCounts returns how many ready spares socket() calls took.
func (p *sparePool) readyCounts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.readyTaken
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
