package server

import (
	"fmt"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nlemu/nlemu/nsmgr"
)

// Limits bound what clients can make the server hold (`nlemu serve
// --max-*` and `--rmem-*`). A zero field takes its default, a negative one
// is no limit.
type Limits struct {
	// MaxNetns bounds the namespaces, "default" included (ENOSPC, as
	// unshare(CLONE_NEWNET) past /proc/sys/user/max_net_namespaces).
	MaxNetns int
	// MaxRules bounds the rules of one family in one namespace, default
	// rules included (ENOSPC with an extack).
	MaxRules int
	// MaxRoutes bounds the routes of one namespace, both families
	// (ENOSPC with an extack).
	MaxRoutes int
	// MaxLinks bounds the devices of one namespace (ENOSPC with an
	// extack).
	MaxLinks int
	// MaxMsg bounds one datagram a client sends, in bytes: the kernel's
	// netlink_sendmsg() refuses len > sk_sndbuf - 32 with EMSGSIZE at
	// send, and so does an in-process Client.Send; over the Unix socket,
	// whose send cannot be failed afterwards, the datagram is dropped and
	// the socket's next receive fails with EMSGSIZE. At most 1 MiB, the
	// reader's buffer.
	MaxMsg int
	// RmemDefault is a new socket's receive buffer and RmemMax the most
	// SO_RCVBUF can ask for (doubled, as sock_setsockopt() does):
	// net.core.rmem_default and net.core.rmem_max, read from this machine
	// by default. A queue past its buffer drops multicast and unicast
	// with ENOBUFS to that socket only (netlink_overrun()).
	RmemDefault, RmemMax int
	// MaxConns bounds the Unix connections served at once and
	// MaxConnsPerUID those of one peer uid (SO_PEERCRED). A connection
	// past either is answered at HELLO with EAGAIN and a message naming
	// the flag (what fork() says past RLIMIT_NPROC: retry later), which
	// the shim returns from socket(2). In-process sockets are not counted.
	MaxConns, MaxConnsPerUID int
	// uidDefault: MaxConnsPerUID was left to its default, which binds
	// unprivileged peers only (uid 0 and the server's own uid may change
	// everything anyway, and the seed's 4,096 parallel `ip -batch` run as
	// one of them: TestDefaultPerUIDLimitSparesPrivilegedPeers).
	uidDefault bool
}

// The defaults: far above the seed's load (4,096 namespaces of 1,024
// rules) and a full Internet table in both families, well below what
// exhausts the server.
const (
	DefaultMaxNetns  = 32768
	DefaultMaxRules  = 65536
	DefaultMaxRoutes = 2 << 20
	DefaultMaxLinks  = 65536
	DefaultMaxMsg    = maxDatagram
)

// DefaultMaxConns is a third of the descriptors this process may open
// (RLIMIT_NOFILE, which Go raises to the hard limit at start): a served
// connection holds up to three (its socket, the duplicate the netpoller
// waits on, and one more while a writer waits for room), so the server
// refuses connections with EAGAIN before accept(2) runs out of descriptors
// (EMFILE). The per-uid default is half of the connection limit, so that
// one user cannot take them all.
func DefaultMaxConns() int {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil || rl.Cur == 0 {
		return 256
	}
	return int(max(min(rl.Cur, 1<<20)/3, 1))
}

// Resolved returns l with every zero field replaced by its default.
func (l Limits) Resolved() Limits {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&l.MaxNetns, DefaultMaxNetns)
	def(&l.MaxRules, DefaultMaxRules)
	def(&l.MaxRoutes, DefaultMaxRoutes)
	def(&l.MaxLinks, DefaultMaxLinks)
	def(&l.MaxMsg, DefaultMaxMsg)
	def(&l.RmemDefault, defaultRcvbuf)
	def(&l.RmemMax, rmemMax)
	def(&l.MaxConns, DefaultMaxConns())
	if l.MaxConnsPerUID == 0 {
		l.uidDefault = true
		l.MaxConnsPerUID = max(l.MaxConns/2, 1)
		if l.MaxConns < 0 {
			l.MaxConnsPerUID = -1
		}
	}
	return l
}

// limitState is the server's resolved limits and its connection counts.
type limitState struct {
	l Limits // resolved; read-only after New

	mu       sync.Mutex
	conns    int                      // guarded by mu: connections holding a slot
	perUID   map[uint32]int           // guarded by mu
	held     map[*net.UnixConn]uint32 // guarded by mu: slot holders and their uid
	refusing int                      // guarded by mu: refusals being answered
}

// maxRefusing bounds the refusals answered at once; past it a connection
// is closed without an answer (the client sees its HELLO unanswered).
const maxRefusing = 64

// refusalWait bounds how long a refused connection may take to send its
// HELLO.
const refusalWait = 2 * time.Second

// initLimits resolves cfg's limits and hands the namespace ones to the
// registry (called by New).
func (s *Server) initLimits() {
	s.lim.l = s.cfg.Limits.Resolved()
	s.lim.perUID = map[uint32]int{}
	s.lim.held = map[*net.UnixConn]uint32{}
	pos := func(v int) int { return max(v, 0) } // negative: no limit
	s.nsm.SetLimits(nsmgr.Limits{
		Netns: pos(s.lim.l.MaxNetns), Rules: pos(s.lim.l.MaxRules),
		Routes: pos(s.lim.l.MaxRoutes), Links: pos(s.lim.l.MaxLinks),
	})
}

// Limits returns the server's limits, defaults resolved.
func (s *Server) Limits() Limits { return s.lim.l }

// maxMsg is the largest datagram a client may send.
func (s *Server) maxMsg() int {
	if s.lim.l.MaxMsg < 0 || s.lim.l.MaxMsg > maxDatagram {
		return maxDatagram
	}
	return s.lim.l.MaxMsg
}

// tooBig reports whether datagram b passes MaxMsg; the socket then gets
// EMSGSIZE from its next receive and b is dropped (conn.handle).
func (c *conn) tooBig(b []byte) bool {
	if len(b) <= c.srv.maxMsg() {
		return false
	}
	c.q.fail(syscall.EMSGSIZE)
	return true
}

// rmemMax is the cap of SO_RCVBUF before doubling.
func (s *Server) rmemMax() int {
	if s.lim.l.RmemMax < 0 {
		return 1 << 30
	}
	return s.lim.l.RmemMax
}

// rmemDefault is a new socket's receive buffer.
func (s *Server) rmemDefault() int {
	if s.lim.l.RmemDefault <= 0 {
		return defaultRcvbuf
	}
	return s.lim.l.RmemDefault
}

// admit takes a connection slot for key, a connection of a peer of uid
// (SO_PEERCRED), and returns ""; past MaxConns or MaxConnsPerUID it
// returns the refusal the connection's HELLO is answered with (EAGAIN),
// and answer is false past maxRefusing refusals being answered at once:
// the connection is then closed without one. The listener answers a
// refusal (refused when done) and gives a slot back by leaveConn.
func (s *Server) admit(key *net.UnixConn, uid uint32) (refusal string, answer bool) {
	ls := &s.lim
	ls.mu.Lock()
	defer ls.mu.Unlock()
	var msg string
	switch {
	case ls.l.MaxConns > 0 && ls.conns >= ls.l.MaxConns:
		msg = fmt.Sprintf("nlemu: too many connections (limit %d, --max-conns)", ls.l.MaxConns)
	case ls.l.MaxConnsPerUID > 0 && ls.perUID[uid] >= ls.l.MaxConnsPerUID && !(ls.l.uidDefault && privilegedUID(uid)):
		msg = fmt.Sprintf("nlemu: too many connections of uid %d (limit %d, --max-conns-per-uid)", uid, ls.l.MaxConnsPerUID)
	default:
		ls.conns++
		ls.perUID[uid]++
		ls.held[key] = uid
		return "", true
	}
	if ls.refusing >= maxRefusing {
		return msg, false
	}
	ls.refusing++
	return msg, true
}

// refused ends the answering of a refusal admit counted.
func (s *Server) refused() {
	s.lim.mu.Lock()
	s.lim.refusing--
	s.lim.mu.Unlock()
}

// leaveConn gives back uc's connection slot, if it holds one.
func (s *Server) leaveConn(uc *net.UnixConn) {
	ls := &s.lim
	ls.mu.Lock()
	defer ls.mu.Unlock()
	uid, ok := ls.held[uc]
	if !ok {
		return
	}
	delete(ls.held, uc)
	ls.conns--
	if ls.perUID[uid]--; ls.perUID[uid] <= 0 {
		delete(ls.perUID, uid)
	}
}

// connSlots returns the connections holding a slot (for tests and stats).
func (s *Server) connSlots() int {
	s.lim.mu.Lock()
	defer s.lim.mu.Unlock()
	return s.lim.conns
}

// privilegedUID reports whether a peer of uid may change state without
// --allow-group: uid 0 or the server's own uid (privileges.go).
func privilegedUID(uid uint32) bool {
	return uid == 0 || uid == uint32(os.Getuid())
}
