// Package server moves netlink datagrams between clients and namespaces:
// the Unix SOCK_SEQPACKET listener (docs/PROTOCOL.md), the in-process
// client with the same semantics, per-socket state (port id, options,
// groups) and bounded receive queues. It never parses an attribute: bytes
// are decoded by rtnl, requests are answered by nsmgr.
package server

import (
	"encoding/binary"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/nlemu/nlemu/nsmgr"
	"github.com/nlemu/nlemu/rtnl"
)

var ne = binary.NativeEndian

// Config configures a Server.
type Config struct {
	// RTNL is the RTNL policy for rule changes (default: the seed's
	// first-IPv4-rule-only design).
	RTNL rtnl.Mode
	// AllowGroups are the group ids whose members (primary or
	// supplementary group of the connecting process) may change state over
	// the Unix socket, besides uid 0 and the server's own uid.
	AllowGroups []uint32
	// SocketMode is the mode of the socket file ListenUnix creates
	// (0: 0666, since every change is checked per request).
	SocketMode os.FileMode
	// Limits bound namespaces, rules, routes, links, message size,
	// receive buffers and connections (limits.go).
	Limits
}

// Server is one nlemu instance: a namespace registry shared by every
// client, in-process or over Unix sockets.
type Server struct {
	rtnlLock rtnl.RTNL
	rcfg     rtnl.LockConfig
	cfg      Config
	nsm      *nsmgr.Manager

	// The open sockets and their port ids, in shards chosen by port id
	// (connShard): opening a socket takes no lock that every other
	// opener needs.
	shards [connShards]connShard
	rover  atomic.Uint32 // the next automatic port id (allocPort)
	shut   atomic.Bool   // set by Close before it collects the shards' sockets

	mu        sync.Mutex
	listeners []*Listener // guarded by mu
	closed    bool        // guarded by mu
	journal   Journal     // set once before serving (journal.go): nil without --state

	lim limitState // limits.go
	eph ephemerals // ephemeral.go
}

// New returns a server with one namespace, "default".
func New(cfg Config) *Server {
	s := &Server{cfg: cfg}
	for i := range s.shards {
		s.shards[i].ports = map[uint32]bool{}
		s.shards[i].conns = map[*conn]struct{}{}
	}
	s.rover.Store(0xFFFFF000)
	s.rcfg = rtnl.LockConfig{RTNL: &s.rtnlLock, Mode: cfg.RTNL}
	s.nsm = nsmgr.NewManager(&s.rcfg)
	s.initLimits()
	return s
}

// Namespaces returns the namespace registry.
func (s *Server) Namespaces() *nsmgr.Manager { return s.nsm }

// RTNLStats returns the RTNL lock counters.
func (s *Server) RTNLStats() rtnl.LockStats { return s.rtnlLock.Stats() }

// Mode returns the RTNL policy.
func (s *Server) Mode() rtnl.Mode { return s.rcfg.Mode }

// connShards is the number of shards of the socket registry. 512
// clients dialling at once (`nlemu load --netns 512`) met on the one mutex
// that used to guard every socket and port id: a holder preempted or
// descheduled in its few hundred nanoseconds stopped every opener behind it
// (docs/STATE.md, "The start-up queue"). With 64 shards two openers meet
// only when their port ids fall in one shard, and then for one map insert.
const connShards = 64

// connShard is one shard of the socket registry: the port ids in use
// whose value modulo connShards is its index, the open sockets whose port
// id is such, and the counts of the closed ones, each under its mutex.
// Padded to keep two shards' mutexes out of one cache line.
type connShard struct {
	mu          sync.Mutex
	ports       map[uint32]bool    // guarded by mu: port ids in use
	conns       map[*conn]struct{} // guarded by mu: open sockets
	closedStats tally              // guarded by mu: counts of closed sockets
	_           [64]byte
}

func (s *Server) shardOf(port uint32) *connShard { return &s.shards[port%connShards] }

// allocPort picks a port id the way netlink_autobind() does: the caller's
// pid when free, otherwise negative ids counting down from -4096. The
// rover is one atomic counter and each id is claimed in its own shard,
// so allocations take no lock in common.
func (s *Server) allocPort(pid uint32) uint32 {
	if pid != 0 && s.claimPort(pid) {
		return pid
	}
	for {
		p := s.rover.Add(^uint32(0)) + 1 // the value before the decrement
		if p != 0 && s.claimPort(p) {
			return p
		}
	}
}

// claimPort marks port id p in use unless it already is.
func (s *Server) claimPort(p uint32) bool {
	sh := s.shardOf(p)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.ports[p] {
		return false
	}
	sh.ports[p] = true
	return true
}

func (s *Server) releasePort(p uint32) {
	sh := s.shardOf(p)
	sh.mu.Lock()
	delete(sh.ports, p)
	sh.mu.Unlock()
}

// Options are the socket options of a new client connection.
type Options struct {
	// Namespace names the namespace ("" = "default").
	Namespace string
	// PID is a hint for the port id (0: allocate one).
	PID                                    uint32
	ExtAck, CapAck, StrictCheck, NoENOBUFS bool
	// Groups is the legacy nl_groups bind mask.
	Groups uint32
	// Create creates the namespace when it does not exist; Ephemeral
	// creates it as an ephemeral one, deleted when its last socket closes
	// (ephemeral.go).
	Create, Ephemeral bool
}

const (
	optExtAck = 1 << iota
	optCapAck
	optStrict
	optNoENOBUFS
	optCreate    // rtnl.NLEMU_HELLO_CREATE (ephemeral.go)
	optEphemeral // rtnl.NLEMU_HELLO_EPHEMERAL
)

func (o Options) bits() uint32 {
	var b uint32
	if o.ExtAck {
		b |= optExtAck
	}
	if o.CapAck {
		b |= optCapAck
	}
	if o.StrictCheck {
		b |= optStrict
	}
	if o.NoENOBUFS {
		b |= optNoENOBUFS
	}
	if o.Create {
		b |= optCreate
	}
	if o.Ephemeral {
		b |= optEphemeral
	}
	return b
}

// selfUID is this process's uid, an in-process socket's opener's: read
// once, as getuid(2) was 8% of an open's CPU (BenchmarkOpenParallel).
var selfUID = uint32(os.Getuid())

// ErrNoNamespace is returned when a client names a namespace that does not
// exist.
var ErrNoNamespace = nsmgr.ErrNotFound

// open creates the server side of a socket in namespace name.
func (s *Server) open(name string, pid, opts, groups uint32) (*conn, error) {
	if name == "" {
		name = nsmgr.DefaultName
	}
	ns, err := s.attach(name, opts) // ephemeral.go
	if err != nil {
		return nil, err
	}
	if s.shut.Load() {
		s.detach(ns)
		return nil, net.ErrClosed
	}
	// An in-process socket's opener is this process (current_uid());
	// a Unix peer's uid replaces it at connect (SO_PEERCRED).
	c := &conn{srv: s, ns: ns, q: newQueue(), portid: s.allocPort(pid), uid: selfUID}
	c.extAck = opts&optExtAck != 0
	c.capAck = opts&optCapAck != 0
	c.strict = opts&optStrict != 0
	c.q.setNoENOBUFS(opts&optNoENOBUFS != 0)
	c.q.setLimit(s.rmemDefault()) // --rmem-default (limits.go)
	if groups != 0 {
		c.bind(groups)
	}
	// Close sets shut before it collects the shards: a socket registered
	// before that is collected and closed by it, one registering after
	// sees shut under the shard's lock and is refused.
	sh := s.shardOf(c.portid)
	sh.mu.Lock()
	if s.shut.Load() {
		sh.mu.Unlock()
		if groups != 0 {
			ns.SetGroups(c, 0)
		}
		s.releasePort(c.portid)
		s.detach(ns)
		return nil, net.ErrClosed
	}
	sh.conns[c] = struct{}{}
	sh.mu.Unlock()
	return c, nil
}

// Close stops every listener and closes every connection.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	s.shut.Store(true)
	ls := s.listeners
	s.listeners = nil
	s.mu.Unlock()
	var cs []*conn
	s.eachConn(func(c *conn) { cs = append(cs, c) })
	for _, l := range ls {
		l.Close()
	}
	for _, c := range cs {
		c.close()
	}
	return nil
}

// DefaultSocketPath is the socket used when neither --socket nor
// $NLEMU_SOCKET is given: $XDG_RUNTIME_DIR/nlemu.sock, else
// $TMPDIR/nlemu-$UID/nlemu.sock. That directory is created 0700 by the
// server and refused by both sides unless it is the caller's own and not
// group/world-writable (ListenUnix, CheckSocketPath).
func DefaultSocketPath() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "nlemu.sock")
	}
	return filepath.Join(defaultSocketDir(), "nlemu.sock")
}

// SocketPath resolves the socket path: flag, else $NLEMU_SOCKET, else the
// default.
func SocketPath(flag string) string {
	if flag != "" {
		return flag
	}
	if e := os.Getenv("NLEMU_SOCKET"); e != "" {
		return e
	}
	return DefaultSocketPath()
}

// counts are one socket's message statistics. The socket's request
// handler, under its conn.mu, is the only writer; STATS reads them with
// atomic loads and never takes another socket's lock (two concurrent STATS
// once deadlocked, each holding its own conn.mu and waiting for the
// other's). With a single writer an increment is a load and a store, not
// a locked add, so counting stays as cheap as a plain increment.
type counts struct {
	datagrams atomic.Uint64
	byType    [128]atomic.Uint64 // rtnetlink types are < 128; others count at 127
	byErrno   [136]atomic.Uint64 // errnos are < 134; others count at 135
}

func bump(v *atomic.Uint64) { v.Store(v.Load() + 1) }

func (c *counts) countDatagram() { bump(&c.datagrams) }

func (c *counts) countType(t uint16) { bump(&c.byType[min(int(t), len(c.byType)-1)]) }

func (c *counts) countErr(e syscall.Errno) { bump(&c.byErrno[min(int(e), len(c.byErrno)-1)]) }

// tally is a sum of counts: the server's total of closed sockets, or a
// STATS snapshot.
type tally struct {
	datagrams uint64
	byType    [128]uint64
	byErrno   [136]uint64
}

func (t *tally) addTally(u *tally) {
	t.datagrams += u.datagrams
	for i := range t.byType {
		t.byType[i] += u.byType[i]
	}
	for i := range t.byErrno {
		t.byErrno[i] += u.byErrno[i]
	}
}

func (t *tally) add(c *counts) {
	t.datagrams += c.datagrams.Load()
	for i := range t.byType {
		t.byType[i] += c.byType[i].Load()
	}
	for i := range t.byErrno {
		t.byErrno[i] += c.byErrno[i].Load()
	}
}

// retire removes a closing socket from the server and adds its counts to
// the closed sockets' total, in one step under its shard's lock so that
// totals never counts a socket twice or not at all.
func (s *Server) retire(c *conn) {
	sh := s.shardOf(c.portid)
	sh.mu.Lock()
	if _, ok := sh.conns[c]; ok {
		delete(sh.conns, c)
		sh.closedStats.add(&c.st)
	}
	sh.mu.Unlock()
	s.detach(c.ns) // an ephemeral namespace goes with its last socket
}

// totals returns the counts of every socket, open or closed. It takes no
// socket's lock; each shard's is held while its sockets are added, so a
// socket retiring meanwhile is counted once, open or closed.
func (s *Server) totals() tally {
	var t tally
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		t.addTally(&sh.closedStats)
		for c := range sh.conns {
			t.add(&c.st)
		}
		sh.mu.Unlock()
	}
	return t
}

// eachConn calls f for every open socket, one shard at a time, with that
// shard's lock held: f must not open or close a socket.
func (s *Server) eachConn(f func(*conn)) {
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		for c := range sh.conns {
			f(c)
		}
		sh.mu.Unlock()
	}
}

// connCount is the number of open sockets.
func (s *Server) connCount() int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		n += len(sh.conns)
		sh.mu.Unlock()
	}
	return n
}
