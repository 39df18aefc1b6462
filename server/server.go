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

	portMu sync.Mutex
	ports  map[uint32]bool // guarded by portMu
	rover  uint32          // guarded by portMu

	mu          sync.Mutex
	listeners   []*Listener        // guarded by mu
	conns       map[*conn]struct{} // guarded by mu: open sockets
	closedStats tally              // guarded by mu: counts of closed sockets
	closed      bool               // guarded by mu
	journal     Journal            // set once before serving (journal.go): nil without --state

	lim limitState // limits.go
	eph ephemerals // ephemeral.go
}

// New returns a server with one namespace, "default".
func New(cfg Config) *Server {
	s := &Server{ports: map[uint32]bool{}, rover: 0xFFFFF000, conns: map[*conn]struct{}{}, cfg: cfg}
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

// allocPort picks a port id the way netlink_autobind() does: the caller's
// pid when free, otherwise negative ids counting down from -4096.
func (s *Server) allocPort(pid uint32) uint32 {
	s.portMu.Lock()
	defer s.portMu.Unlock()
	if pid != 0 && !s.ports[pid] {
		s.ports[pid] = true
		return pid
	}
	for s.ports[s.rover] || s.rover == 0 {
		s.rover--
	}
	p := s.rover
	s.rover--
	s.ports[p] = true
	return p
}

func (s *Server) releasePort(p uint32) {
	s.portMu.Lock()
	delete(s.ports, p)
	s.portMu.Unlock()
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
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		s.detach(ns)
		return nil, net.ErrClosed
	}
	// An in-process socket's opener is this process (current_uid());
	// a Unix peer's uid replaces it at connect (SO_PEERCRED).
	c := &conn{srv: s, ns: ns, q: newQueue(), portid: s.allocPort(pid), uid: uint32(os.Getuid())}
	c.extAck = opts&optExtAck != 0
	c.capAck = opts&optCapAck != 0
	c.strict = opts&optStrict != 0
	c.q.setNoENOBUFS(opts&optNoENOBUFS != 0)
	c.q.setLimit(s.rmemDefault()) // --rmem-default (limits.go)
	if groups != 0 {
		c.bind(groups)
	}
	s.conns[c] = struct{}{}
	return c, nil
}

// Close stops every listener and closes every connection.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	ls := s.listeners
	s.listeners = nil
	cs := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		cs = append(cs, c)
	}
	s.mu.Unlock()
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
// the closed sockets' total, in one step under s.mu so that totals never
// counts a socket twice or not at all.
func (s *Server) retire(c *conn) {
	s.mu.Lock()
	if _, ok := s.conns[c]; ok {
		delete(s.conns, c)
		s.closedStats.add(&c.st)
	}
	s.mu.Unlock()
	s.detach(c.ns) // an ephemeral namespace goes with its last socket
}

// totals returns the counts of every socket, open or closed. It takes no
// socket's lock.
func (s *Server) totals() tally {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.closedStats
	for c := range s.conns {
		t.add(&c.st)
	}
	return t
}
