// Package supervise runs a program under a seccomp user-notification
// filter and answers its NETLINK_ROUTE socket calls with connections to the
// nlemu server, for programs the LD_PRELOAD shim cannot reach (static and
// Go binaries). See docs/EXEC.md.
package supervise

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nlemu/nlemu/rtnl"
)

// Config is what a Supervisor needs.
type Config struct {
	// Socket is the server's path.
	Socket string
	// Namespace is the nlemu namespace of the kernel network namespace
	// the supervisor itself is in (where CMD starts).
	Namespace string
	// Range is where netlink descriptors are injected (the filter's).
	Range Range
	// Log receives one line per socket() the server refused (nil: none).
	Log io.Writer
}

// Supervisor answers the notifications of one listener.
type Supervisor struct {
	cfg     Config
	lfd     int
	startNS nsID

	mu      sync.Mutex
	socks   map[uint64]*sock // by the Unix socket's inode; guarded by mu
	made    uint64           // sockets made; guarded by mu
	sweep   int              // len(socks) at which sweepSocks runs next; guarded by mu
	pidfds  map[int]int      // tid -> pidfd; guarded by mu
	threads map[int]threadOf // tid -> its thread group and namespace (Supervisor.thread); guarded by mu
	nsMap   nsMap
	spare   sparePool   // server connections made ahead (spare.go)
	rmem    rmemDefault // net.core.rmem_default (spare.go)

	allocMu sync.Mutex // one descriptor allocation at a time

	counts [512]atomic.Uint64 // notifications by system call number
	waits  atomic.Uint64      // receives that found nothing queued and waited
	// inlineWaits is how many workers wait for data inline (takeWaitSlot);
	// inlineWaitCount how many receives did.
	inlineWaits     atomic.Int32
	dupWarned       atomic.Bool // dup2 warned of a copy outside the range
	inlineWaitCount atomic.Uint64
	// owedWaits counts the nonblocking receives that waited for the
	// reply to a request still queued to the server (owedWait).
	owedWaits atomic.Uint64
}

// New returns a supervisor for the listener lfd.
func New(lfd int, cfg Config) (*Supervisor, error) {
	id, err := nsOf("/proc/self/ns/net")
	if err != nil {
		return nil, err
	}
	s := &Supervisor{cfg: cfg, lfd: lfd, startNS: id, socks: map[uint64]*sock{}, pidfds: map[int]int{}, threads: map[int]threadOf{}}
	s.nsMap.init(id.dev)
	s.spare.init(cfg.Socket)
	return s, nil
}

// Serve answers notifications until the listener fails. It returns
// nothing when the supervised processes are gone: its caller (Run) exits
// once CMD has.
//
// Notifications are read by Workers goroutines, each blocked in
// SECCOMP_IOCTL_NOTIF_RECV on the same listener (seccomp_notify_recv()
// hands each notification to one of them; several may wait; worker).
// Calls that cannot block — a receive with a datagram queued, the names,
// most options, dup — are answered inline on the worker that read them:
// the notification, the receive on the supervisor's copy of the socket,
// process_vm_writev and NOTIF_SEND run on one thread with no goroutine
// hand-off in between. socket() is answered inline too: its HELLO is one
// round trip to a server that answers it without waiting for anything
// else, and a hand-off cost as much as the rest of the call on a loaded
// machine (vishvananda/netlink opens a socket per request;
// hack/sockbench.sh). bind() and the acked options wait for the
// server's ack behind whatever the socket has queued, and a receive with nothing queued on a blocking socket waits for
// data: those move to a goroutine of their own. The listener asks for
// synchronous wake-ups (SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP, 6.6): the
// calling thread blocks as it notifies, so the worker runs on its CPU
// instead of waking on another.
func (s *Supervisor) Serve() error {
	setSyncWakeup(s.lfd)
	s.spare.wake() // the first socket()'s connection, made ahead (spare.go)
	errs := make(chan error, Workers)
	for range Workers {
		go func() { errs <- s.worker() }()
	}
	return <-errs
}

// Workers is how many threads wait for notifications. One: on the 2-core
// machine this was measured on, a second worker (and the inline waits it
// allows, takeWaitSlot) made the route-get round trip slower, not faster
// (hack/exec-overhead.sh, docs/EXEC.md): one more thread contending for
// the CPUs the caller and the server need. Calls that block already move
// to goroutines, so one worker never holds another thread's call up for
// longer than a non-blocking answer takes.
const Workers = 1

// worker is one notification loop (Serve). Its notification and call are
// reused: an inline answer allocates nothing of its own.
//
// The worker is not locked to its thread, and it passes through the
// scheduler (runtime.Gosched) once schedEvery has gone by since it last
// did: a goroutine that only ever returns from one system call to make
// the next keeps its P's schedtick, so sysmon takes it for one running
// for forcePreemptNS (10 ms) and retakes its P from the ioctl (retake(),
// runtime/proc.go) every 10 ms of traffic; each retake resets sysmon to
// polling every 20 µs for the next millisecond and more. Measured with
// perf sched_switch stacks of hack/peer-suite.sh's TestRuleListFiltered
// (docs/EXEC.md): sysmon was the supervisor's most frequent sleeper after
// the worker. A locked goroutine's Gosched hands its P to another thread
// and back (two wake-ups); an unlocked one's is a turn of the scheduler
// on the same thread.
func (s *Supervisor) worker() error {
	n := new(notif)
	c := new(call)
	last := time.Now()
	for {
		if now := time.Now(); now.Sub(last) >= schedEvery {
			runtime.Gosched()
			last = now
		}
		if err := recvNotif(s.lfd, n); err != nil {
			if err == unix.ENOENT {
				continue // the caller was interrupted before we read it
			}
			return err
		}
		if nr := int(n.Data.Nr); nr >= 0 && nr < len(s.counts) {
			s.counts[nr].Add(1)
		}
		*c = call{s: s, n: n, tid: int(n.Pid), inline: true, cfd: -1}
		s.handle(c)
	}
}

// schedEvery is how often the worker passes through the scheduler: well
// within forcePreemptNS (10 ms) even when sysmon samples late.
const schedEvery = 2 * time.Millisecond

// Counts returns how many notifications each system call caused, by name,
// "total", "waits": the receives that found nothing queued and waited
// for data on a goroutine, and "inline_waits": those that waited on their
// worker's thread first (briefWait, takeWaitSlot); neither is a
// notification of its own. The test of "data calls do not enter the supervisor"
// reads it.
func (s *Supervisor) Counts() map[string]uint64 {
	out := map[string]uint64{}
	var total uint64
	for nr := range s.counts {
		if c := s.counts[nr].Load(); c > 0 {
			out[syscallName(nr)] = c
			total += c
		}
	}
	out["total"] = total
	if w := s.waits.Load(); w > 0 {
		out["waits"] = w
	}
	if w := s.inlineWaitCount.Load(); w > 0 {
		out["inline_waits"] = w
	}
	if w := s.owedWaits.Load(); w > 0 {
		out["owed_waits"] = w
	}
	if _, _, taken := s.spare.counts(); taken > 0 {
		out["spares_taken"] = uint64(taken)
	}
	if r := s.spare.readyCounts(); r > 0 {
		out["ready_taken"] = uint64(r)
	}
	return out
}

func syscallName(nr int) string {
	switch nr {
	case unix.SYS_SOCKET:
		return "socket"
	case unix.SYS_RECVMSG:
		return "recvmsg"
	case unix.SYS_RECVFROM:
		return "recvfrom"
	case unix.SYS_BIND:
		return "bind"
	case unix.SYS_CONNECT:
		return "connect"
	case unix.SYS_GETSOCKNAME:
		return "getsockname"
	case unix.SYS_GETPEERNAME:
		return "getpeername"
	case unix.SYS_SETSOCKOPT:
		return "setsockopt"
	case unix.SYS_GETSOCKOPT:
		return "getsockopt"
	case unix.SYS_DUP:
		return "dup"
	case unix.SYS_FCNTL:
		return "fcntl"
	case sysDup2:
		return "dup2"
	case unix.SYS_DUP3:
		return "dup3"
	case unix.SYS_READ:
		return "read"
	case unix.SYS_READV:
		return "readv"
	case unix.SYS_SETNS:
		return "setns"
	case unix.SYS_UNSHARE:
		return "unshare"
	case unix.SYS_EXECVE:
		return "execve"
	case unix.SYS_EXECVEAT:
		return "execveat"
	}
	return "syscall_" + strconv.Itoa(nr)
}

// call is one notification being answered.
type call struct {
	s   *Supervisor
	n   *notif
	tid int
	// inline: on Serve's goroutine, which must not block; a call that
	// would sets again and is handled anew on a goroutine.
	inline, again bool
	done          bool
	slot          bool // holds an inline wait slot (takeWaitSlot)
	spun          bool // waited briefly inline (briefWait)
	// owed: handed off while waiting for the reply to a request (recvOne):
	// the goroutine waits on for it.
	owed bool
	// cfd is the supervisor's copy of the caller's descriptor (lookup),
	// closed before the answer (release): the caller's close() right
	// after is then the socket's last, which the server sees at once.
	cfd int
}

// release closes the supervisor's copy of the descriptor, if it holds one.
func (c *call) release() {
	if c.cfd >= 0 {
		unix.Close(c.cfd)
		c.cfd = -1
	}
}

func (c *call) arg(i int) uint64 { return c.n.Data.Args[i] }

// fdArg is argument i as a descriptor (an int: the low 32 bits).
func (c *call) fdArg(i int) int { return int(int32(c.n.Data.Args[i])) }

func (c *call) ret(v int64) {
	if !c.done {
		c.done = true
		c.release()
		respond(c.s.lfd, c.n.ID, v, 0)
	}
}

func (c *call) fail(e syscall.Errno) {
	if !c.done {
		c.done = true
		c.release()
		respond(c.s.lfd, c.n.ID, 0, e)
	}
}

func (c *call) cont() {
	if !c.done {
		c.done = true
		c.release()
		continueCall(c.s.lfd, c.n.ID)
	}
}

// valid checks that the call still waits (before writing its memory).
func (c *call) valid() bool { return idValid(c.s.lfd, c.n.ID) }

func (s *Supervisor) handle(c *call) {
	n := c.n
	defer func() {
		if c.slot {
			s.inlineWaits.Add(-1)
		}
		c.release()
		if c.again {
			// the worker reuses its notification: the goroutine gets a copy
			own := *n
			go s.handle(&call{s: s, n: &own, tid: int(own.Pid), cfd: -1, owed: c.owed})
			return
		}
		c.cont() // whatever was not answered runs in the kernel
	}()
	if !emulated(s.cfg.Range, int(n.Data.Nr), n.Data.Args) {
		return // trapped beyond the policy (filter.go)
	}
	switch int(n.Data.Nr) {
	case unix.SYS_SOCKET:
		s.socket(c)
		return
	case unix.SYS_SETNS, unix.SYS_UNSHARE:
		s.forgetNS(c.tid, false) // then the call runs (threadOf)
		return
	case unix.SYS_EXECVE, unix.SYS_EXECVEAT:
		s.forgetNS(c.tid, true)
		return
	}
	fd := c.fdArg(0)
	if !s.cfg.Range.Contains(fd) {
		return
	}
	sk, cfd := s.lookup(c, fd)
	if sk == nil {
		return
	}
	c.cfd = cfd
	switch int(n.Data.Nr) {
	case unix.SYS_RECVMSG, unix.SYS_RECVFROM, unix.SYS_READ, unix.SYS_READV:
		s.recv(c, sk, cfd)
	case sysDup2, unix.SYS_DUP3:
		s.dup2(c)
	case unix.SYS_BIND:
		s.bind(c, sk, cfd)
	case unix.SYS_CONNECT:
		s.connect(c)
	case unix.SYS_GETSOCKNAME:
		sk.mu.Lock()
		g := sk.groups[0]
		sk.mu.Unlock()
		s.putName(c, c.arg(1), c.arg(2), sk.portid, g)
	case unix.SYS_GETPEERNAME:
		s.putName(c, c.arg(1), c.arg(2), 0, 0)
	case unix.SYS_SETSOCKOPT:
		s.setsockopt(c, sk, cfd)
	case unix.SYS_GETSOCKOPT:
		s.getsockopt(c, sk, cfd)
	case unix.SYS_DUP:
		s.dup(c, cfd, s.cfg.Range.Base, false)
	case unix.SYS_FCNTL:
		min := c.fdArg(2)
		if min >= s.cfg.Range.Base+s.cfg.Range.Len {
			return // beyond the range: the kernel's duplicate, not emulated
		}
		s.dup(c, cfd, max(min, s.cfg.Range.Base), c.arg(1) == unix.F_DUPFD_CLOEXEC)
	}
}

// maxPidfds bounds the pidfd cache.
const maxPidfds = 4096

// pidfd returns a pidfd for thread tid (PIDFD_THREAD: a thread that is not
// the group leader has one too), cached; owned says the caller must close
// it (the cache was full of live threads). A thread's calls come one at a
// time, so only its own handler uses or replaces its entry; entries of
// exited threads are swept when the cache is full.
func (s *Supervisor) pidfd(tid int, fresh bool) (pfd int, owned bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if pfd, ok := s.pidfds[tid]; ok {
		if !fresh {
			return pfd, false, nil
		}
		unix.Close(pfd)
		delete(s.pidfds, tid)
		delete(s.threads, tid) // a later pidfd may get the same number
	}
	pfd, err = unix.PidfdOpen(tid, unix.PIDFD_THREAD)
	if err != nil {
		return -1, false, err
	}
	if len(s.pidfds) >= maxPidfds {
		for t, f := range s.pidfds {
			if unix.PidfdSendSignal(f, 0, nil, 0) == unix.ESRCH {
				unix.Close(f)
				delete(s.pidfds, t)
				delete(s.threads, t)
			}
		}
		if len(s.pidfds) >= maxPidfds {
			return pfd, true, nil
		}
	}
	s.pidfds[tid] = pfd
	return pfd, false, nil
}

// lookup takes a copy of the caller's descriptor fd (pidfd_getfd) and
// returns it with the socket it is, or nil when it is not one the
// supervisor injected (then the call continues in the kernel). The copy
// shares the open file, so its status flags (O_NONBLOCK) are the caller's.
func (s *Supervisor) lookup(c *call, fd int) (*sock, int) {
	for fresh := false; ; fresh = true {
		pfd, owned, err := s.pidfd(c.tid, fresh)
		if err != nil {
			return nil, -1
		}
		cfd, err := unix.PidfdGetfd(pfd, fd, 0)
		if owned {
			unix.Close(pfd)
		}
		if err == unix.ESRCH && !fresh {
			continue // a cached pidfd of a thread that is gone: the tid was reused
		}
		if err != nil {
			return nil, -1
		}
		var st unix.Stat_t
		if unix.Fstat(cfd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFSOCK {
			unix.Close(cfd)
			return nil, -1
		}
		s.mu.Lock()
		sk := s.socks[st.Ino]
		s.mu.Unlock()
		if sk == nil {
			unix.Close(cfd)
			return nil, -1
		}
		return sk, cfd
	}
}

// threadOf is what is cached of a calling thread: its thread group, and
// the network namespace it is in while nsOK. Valid while the pidfd cache
// holds pfd for the thread and the thread it names lives (a tid is reused
// only once its thread is gone; Supervisor.thread checks with one
// pidfd_send_signal(0)). A thread changes namespace only by its own
// setns(2) or unshare(CLONE_NEWNET), and takes another's tid only in
// execve (de_thread() gives the exec'ing thread the leader's pid): the
// filter traps those calls and forgetNS clears nsOK before they run, so a
// cached namespace is always the one /proc/TID/ns/net would show.
type threadOf struct {
	pfd  int
	tgid uint32
	ns   nsID
	nsOK bool
}

// thread returns the thread group of tid and the network namespace it is
// in, cached (threadOf): reading /proc/TID/status for every socket() cost
// more than the rest of the call but the HELLO, and a stat of
// /proc/TID/ns/net ≈ 6 µs (a procfs path walk; go test -bench on the
// development machine) where the cache check is one system call of
// ≈ 0.5 µs. The notification's thread is blocked in its call, so neither
// changes while it is answered.
func (s *Supervisor) thread(tid int) (uint32, nsID, error) {
	uncached := func() (uint32, nsID, error) {
		id, err := nsOf(nsPath(tid))
		return tgid(tid), id, err
	}
	pfd, owned, err := s.pidfd(tid, false)
	if err != nil {
		return uncached()
	}
	if owned {
		unix.Close(pfd)
		return uncached()
	}
	s.mu.Lock()
	t, ok := s.threads[tid]
	s.mu.Unlock()
	ok = ok && t.pfd == pfd
	if ok && unix.PidfdSendSignal(pfd, 0, nil, 0) == unix.ESRCH {
		// the cached pidfd is of a thread that is gone: the tid was reused
		ok = false
		if pfd, owned, err = s.pidfd(tid, true); err != nil || owned {
			if owned {
				unix.Close(pfd)
			}
			return uncached()
		}
	}
	if ok && t.nsOK {
		return t.tgid, t.ns, nil
	}
	if !ok {
		t = threadOf{pfd: pfd, tgid: tgid(tid)}
	}
	id, err := nsOf(nsPath(tid))
	if err != nil {
		return t.tgid, id, err
	}
	t.ns, t.nsOK = id, true
	s.mu.Lock()
	if len(s.threads) >= maxPidfds {
		for k, e := range s.threads {
			if s.pidfds[k] != e.pfd {
				delete(s.threads, k)
			}
		}
	}
	s.threads[tid] = t
	s.mu.Unlock()
	return t.tgid, id, nil
}

// tgid is the thread group of tid (Supervisor.thread).
func (s *Supervisor) tgid(tid int) uint32 {
	g, _, _ := s.thread(tid)
	return g
}

// forgetNS drops the cached namespace of tid, and of its thread group's
// leader (execve: the exec'ing thread takes the leader's tid), before
// a setns, unshare(CLONE_NEWNET) or execve of tid runs: the next socket()
// reads it again.
func (s *Supervisor) forgetNS(tid int, exec bool) {
	s.mu.Lock()
	t, ok := s.threads[tid]
	if ok {
		t.nsOK = false
		s.threads[tid] = t
	}
	s.mu.Unlock()
	if !exec {
		return
	}
	leader := t.tgid
	if !ok {
		leader = tgid(tid)
	}
	s.mu.Lock()
	if e, ok := s.threads[int(leader)]; ok {
		e.nsOK = false
		s.threads[int(leader)] = e
	}
	s.mu.Unlock()
}

// nsPath is /proc/TID/ns/net.
func nsPath(tid int) string { return "/proc/" + strconv.Itoa(tid) + "/ns/net" }

// tgid reads the thread group of tid (the port id hint is the process id,
// as the kernel's first autobind).
func tgid(tid int) uint32 {
	f, err := os.Open("/proc/" + strconv.Itoa(tid) + "/status")
	if err != nil {
		return uint32(tid)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Tgid:"); ok {
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
				return uint32(n)
			}
		}
	}
	return uint32(tid)
}

// freeSlot returns the lowest number >= from in the range that is free in
// tid's descriptor table, or -1: pidfd_getfd(2) of a free number fails
// with EBADF (≈ 1 µs against ≈ 3 µs for an lstat of /proc/TID/fd/N, a
// procfs path walk; go test -bench on the development machine), and a
// number in use is a copy, closed at once. Without a pidfd, /proc/TID/fd.
func (s *Supervisor) freeSlot(tid, from int) int {
	r := s.cfg.Range
	pfd, owned, err := s.pidfd(tid, false)
	if err == nil && owned {
		defer unix.Close(pfd)
	}
	for fd := max(from, r.Base); fd < r.Base+r.Len; fd++ {
		if err != nil {
			var st unix.Stat_t
			if unix.Lstat("/proc/"+strconv.Itoa(tid)+"/fd/"+strconv.Itoa(fd), &st) == unix.ENOENT {
				return fd
			}
			continue
		}
		cfd, gerr := unix.PidfdGetfd(pfd, fd, 0)
		if gerr == unix.EBADF {
			return fd
		}
		if gerr == nil {
			unix.Close(cfd)
			continue
		}
		// ESRCH (the tid's cached pidfd is stale), EPERM: the slow way
		err = gerr
		fd--
	}
	return -1
}

// socket answers socket(AF_NETLINK, type, NETLINK_ROUTE) with a server
// connection injected at a free number of the range: a ready spare of the
// caller's namespace and process when there is one (its HELLO done ahead,
// sparePool.takeReady), else a HELLO on a spare connection or a new one,
// after which the filler makes ready spares for the next socket() of the
// same key.
func (s *Supervisor) socket(c *call) {
	typ := int(int32(c.arg(1)))
	base := typ &^ (unix.SOCK_CLOEXEC | unix.SOCK_NONBLOCK)
	if base != unix.SOCK_RAW && base != unix.SOCK_DGRAM {
		return // the kernel's ESOCKTNOSUPPORT
	}
	pid, nsid, err := s.thread(c.tid)
	if err != nil {
		s.logf("nlemu exec: the network namespace of thread %d: %v", c.tid, err)
		c.fail(errNoServer)
		return
	}
	ns := s.nsMap.targetFor(nsid, s.startNS, s.cfg.Namespace)
	key := helloKey{ns: ns.name, opts: ns.opts, pid: pid}
	// While the server answers the HELLO: the receive buffer's default
	// and the caller's lowest free descriptor of the range (under allocMu
	// until the descriptor is added there).
	var (
		rmem   int
		slot   = -1
		locked bool
		fd     int
		portid uint32
		ino    uint64
	)
	defer func() {
		if locked {
			s.allocMu.Unlock()
		}
	}()
	meanwhile := func() {
		rmem = s.rmem.get()
		s.allocMu.Lock()
		locked = true
		slot = s.freeSlot(c.tid, 0)
	}
	r, ok, refill := s.spare.takeReady(key)
	if ok {
		fd, portid, ino = r.fd, r.portid, r.ino
		meanwhile()
		s.nsMap.anchor(c.tid, nsid, ns, s.cfg.Socket) // made by the first socket(): a look-up
	} else {
		fd, portid, err = dialOn(s.spare.take(), s.cfg.Socket, ns.name, pid, ns.opts, meanwhile)
		if err != nil {
			s.logf("nlemu exec: %v", err)
			var hr *helloRefused
			if errors.As(err, &hr) {
				c.fail(hr.errno)
				return
			}
			c.fail(errNoServer)
			return
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			c.fail(errnoOf(err))
			return
		}
		ino = st.Ino
		s.nsMap.anchor(c.tid, nsid, ns, s.cfg.Socket) // netns.go
		s.spare.want(key)
		refill = true
	}
	defer unix.Close(fd)
	if refill {
		defer s.spare.wake() // after the answer (takeReady)
	}
	if typ&unix.SOCK_NONBLOCK != 0 {
		unix.SetNonblock(fd, true)
	}
	s.mu.Lock()
	sk := newSock(portid, base, rmem)
	s.made++
	sk.born = s.made
	s.socks[ino] = sk
	sweep := len(s.socks) >= max(s.sweep, sweepAt)
	if sweep {
		s.sweep = 1 << 62 // one sweep at a time
	}
	s.mu.Unlock()
	if sweep {
		go s.sweepSocks() // reads all of /proc: not on the worker
	}
	if slot < 0 {
		c.fail(unix.EMFILE)
		return
	}
	if _, err := addFD(s.lfd, c.n.ID, fd, slot, typ&unix.SOCK_CLOEXEC != 0); err != nil {
		if err == unix.EBADF { // the slot is at or above the caller's RLIMIT_NOFILE
			c.fail(unix.EMFILE)
			return
		}
		c.fail(errnoOf(err))
		return
	}
	c.done = true
}

// sweepAt is the size of the socket table at which closed sockets are
// first swept out of it.
const sweepAt = 4096

// sweepSocks forgets the sockets no process holds any more. close() is not
// trapped (it needs no answer), so the table only learns of closes here:
// every process's descriptors in the range (/proc/PID/fd, which threads
// share) are read, and sockets made before the scan that none of them is
// are dropped. A library opening one socket per request (vishvananda/netlink)
// makes thousands. The next sweep runs when the table has doubled.
func (s *Supervisor) sweepSocks() {
	s.mu.Lock()
	before := s.made
	s.mu.Unlock()
	live := map[uint64]bool{}
	procs, _ := os.ReadDir("/proc")
	r := s.cfg.Range
	for _, p := range procs {
		if p.Name()[0] < '0' || p.Name()[0] > '9' {
			continue
		}
		dir := "/proc/" + p.Name() + "/fd/"
		fds, err := os.ReadDir(dir) // not ours to read: another user's process
		if err != nil {
			continue
		}
		for _, e := range fds {
			fd, err := strconv.Atoi(e.Name())
			if err != nil || !r.Contains(fd) {
				continue
			}
			link, err := os.Readlink(dir + e.Name())
			if err != nil {
				continue
			}
			if v, ok := strings.CutPrefix(link, "socket:["); ok {
				if ino, err := strconv.ParseUint(strings.TrimSuffix(v, "]"), 10, 64); err == nil {
					live[ino] = true
				}
			}
		}
	}
	s.mu.Lock()
	for ino, sk := range s.socks {
		if sk.born <= before && !live[ino] {
			delete(s.socks, ino)
		}
	}
	s.sweep = 2 * len(s.socks)
	s.mu.Unlock()
}

// dup answers dup/fcntl(F_DUPFD*) of a netlink descriptor with a number in
// the range, where the copy stays emulated.
func (s *Supervisor) dup(c *call, cfd, from int, cloexec bool) {
	s.allocMu.Lock()
	defer s.allocMu.Unlock()
	slot := s.freeSlot(c.tid, from)
	if slot < 0 {
		return // the kernel's duplicate, outside the range (docs/EXEC.md)
	}
	if _, err := addFD(s.lfd, c.n.ID, cfd, slot, cloexec); err != nil {
		c.fail(errnoOf(err))
		return
	}
	c.done = true
}

// dup2 lets dup2/dup3 of a netlink descriptor run in the kernel (the
// copy shares the open file, so in the range it stays emulated: sockets
// are known by inode), and warns once when the copy is outside the range,
// where the filter does not see its calls (docs/EXEC.md).
func (s *Supervisor) dup2(c *call) {
	if dupLeavesRange(s.cfg.Range, int(c.n.Data.Nr), c.fdArg(0), c.fdArg(1), c.arg(2)) &&
		s.dupWarned.CompareAndSwap(false, true) {
		s.logf("nlemu exec: %s(%d, %d) copies a netlink socket outside descriptors [%d,%d): calls on the copy are not emulated",
			syscallName(int(c.n.Data.Nr)), c.fdArg(0), c.fdArg(1), s.cfg.Range.Base, s.cfg.Range.Base+s.cfg.Range.Len)
	}
}

// dupLeavesRange reports whether dup2/dup3(old, newfd, flags), which the
// kernel answers, makes a copy outside r: not when it fails (ksys_dup3():
// dup3 with old == newfd or flags other than O_CLOEXEC is EINVAL; dup2
// with old == newfd returns newfd, copying nothing).
func dupLeavesRange(r Range, nr, old, newfd int, flags uint64) bool {
	if old == newfd || newfd < 0 || r.Contains(newfd) {
		return false
	}
	if nr != sysDup2 && flags&^unix.O_CLOEXEC != 0 {
		return false
	}
	return true
}

func (s *Supervisor) logf(format string, args ...any) {
	if s.cfg.Log != nil {
		fmt.Fprintf(s.cfg.Log, format+"\n", args...)
	}
}

// putName writes a sockaddr_nl for getsockname/getpeername (put_nladdr()).
func (s *Supervisor) putName(c *call, addr, lenp uint64, pid, groups uint32) {
	l, err := readU32(c.tid, lenp)
	if err != nil {
		c.fail(unix.EFAULT)
		return
	}
	if int32(l) < 0 {
		c.fail(unix.EINVAL)
		return
	}
	sa := sockaddrNL(pid, groups)
	if !c.valid() {
		return
	}
	// the address and its length in one process_vm_writev
	var w memWrites
	w.add(addr, sa[:min(int(l), len(sa))])
	w.add(lenp, u32bytes(uint32(len(sa))))
	if err := w.do(c.tid); err != nil {
		c.fail(unix.EFAULT)
		return
	}
	c.ret(0)
}

// bind is netlink_bind() for an injected socket: a full sockaddr_nl of
// family AF_NETLINK; its groups go to the server (BIND, acked, so they are
// in effect on return; EPERM for privileged groups comes from the server).
func (s *Supervisor) bind(c *call, sk *sock, cfd int) {
	alen := int(int32(c.arg(2)))
	if alen < 12 {
		c.fail(unix.EINVAL)
		return
	}
	var sa [12]byte
	if err := readMem(c.tid, c.arg(1), sa[:]); err != nil {
		c.fail(unix.EFAULT)
		return
	}
	if ne.Uint16(sa[0:]) != unix.AF_NETLINK {
		c.fail(unix.EINVAL)
		return
	}
	groups := ne.Uint32(sa[8:])
	sk.mu.Lock()
	same := sk.groups[0] == groups
	sk.mu.Unlock()
	if same {
		// The groups are those already in effect (vishvananda/netlink binds
		// every request's socket with none): nothing for the server to do.
		c.ret(0)
		return
	}
	if c.inline {
		c.again = true // the server's ack may wait behind queued data
		return
	}
	if e := sk.ctlCall(cfd, rtnl.NLEMU_BIND, groups); e != 0 {
		c.fail(e)
		return
	}
	sk.mu.Lock()
	sk.groups[0] = groups
	sk.mu.Unlock()
	c.ret(0)
}

// connect is netlink_connect(): only the kernel (nl_pid 0) is reachable,
// so AF_UNSPEC and AF_NETLINK are accepted and change nothing.
func (s *Supervisor) connect(c *call) {
	alen := int(int32(c.arg(2)))
	var fam [2]byte
	if alen < 2 || readMem(c.tid, c.arg(1), fam[:]) != nil {
		c.fail(unix.EINVAL)
		return
	}
	switch ne.Uint16(fam[:]) {
	case unix.AF_UNSPEC:
	case unix.AF_NETLINK:
		if alen < 12 {
			c.fail(unix.EINVAL)
			return
		}
	default:
		c.fail(unix.EINVAL)
		return
	}
	c.ret(0)
}

// waitTimeout is how often a blocked receive checks that its caller still
// waits (a killed caller leaves no notification to answer).
const waitTimeout = 200 * time.Millisecond
