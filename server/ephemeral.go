package server

import (
	"errors"
	"fmt"
	"sync"
	"syscall"

	"github.com/nlemu/nlemu/nsmgr"
)

// Ephemeral namespaces (issue 11 item 2). A program under `nlemu exec`
// that makes a kernel network namespace of its own (unshare(CLONE_NEWNET),
// netns.New()) gets a fresh nlemu namespace for it: its first socket's
// HELLO asks for the namespace with "create if missing, ephemeral"
// (optCreate|optEphemeral), the server creates it and counts the sockets
// open in it, and the namespace is deleted when the last of them closes,
// as a kernel namespace goes with its last reference. Every socket in an
// ephemeral namespace counts, whatever its HELLO asked; a socket opening
// while the last one closes either finds the namespace and keeps it, or
// finds it gone and (with optCreate) creates a new one: attach and detach
// run under one lock. NETNS_DEL deletes an ephemeral namespace like any
// other (its sockets then delete nothing: detach checks the name still
// means the same namespace). NETNS_EPHEMERAL lists them.
type ephemerals struct {
	mu   sync.Mutex
	refs map[*nsmgr.Namespace]int // guarded by mu: open sockets of each ephemeral namespace
}

func (e *ephemerals) lock() {
	e.mu.Lock()
	if e.refs == nil {
		e.refs = map[*nsmgr.Namespace]int{}
	}
}

// attach looks up namespace name for a new socket, creating it when the
// HELLO asked (optCreate; ephemeral with optEphemeral), and counts the
// socket when the namespace is ephemeral.
func (s *Server) attach(name string, opts uint32) (*nsmgr.Namespace, error) {
	e := &s.eph
	e.lock()
	defer e.mu.Unlock()
	ns, ok := s.nsm.Get(name)
	if !ok {
		if opts&(optCreate|optEphemeral) == 0 {
			return nil, fmt.Errorf("%w: %q", ErrNoNamespace, name)
		}
		if err := s.nsm.Add(name); err != nil && !errors.Is(err, nsmgr.ErrExists) {
			return nil, err
		}
		if ns, ok = s.nsm.Get(name); !ok {
			return nil, fmt.Errorf("%w: %q", ErrNoNamespace, name)
		}
		if opts&optEphemeral != 0 {
			e.refs[ns] = 0
			s.journalEphemeral(ns) // --state (journal.go)
		}
	}
	if n, ok := e.refs[ns]; ok {
		e.refs[ns] = n + 1
	}
	return ns, nil
}

// detach uncounts a closed socket; the last socket of an ephemeral
// namespace deletes it (unless NETNS_DEL did, or the name now belongs to
// another namespace).
func (s *Server) detach(ns *nsmgr.Namespace) {
	e := &s.eph
	e.lock()
	defer e.mu.Unlock()
	n, ok := e.refs[ns]
	if !ok {
		return
	}
	if n > 1 {
		e.refs[ns] = n - 1
		return
	}
	delete(e.refs, ns)
	if cur, ok := s.nsm.Get(ns.Name()); ok && cur == ns {
		s.nsm.Del(ns.Name())
	}
}

// Ephemeral returns the names of the ephemeral namespaces, sorted.
func (s *Server) Ephemeral() []string {
	e := &s.eph
	e.lock()
	defer e.mu.Unlock()
	var names []string
	for _, n := range s.nsm.List() {
		if ns, ok := s.nsm.Get(n); ok {
			if _, eph := e.refs[ns]; eph {
				names = append(names, n)
			}
		}
	}
	return names
}

// helloCreate clears the create bits of a HELLO whose peer may not change
// state (uid 0, the server's uid or an allowed group: mayChange, given as
// may), and reports whether it did.
func helloCreate(may bool, opts uint32) (uint32, bool) {
	if opts&(optCreate|optEphemeral) == 0 || may {
		return opts, false
	}
	return opts &^ (optCreate | optEphemeral), true
}

// helloCreateError is the HELLO's refusal when creating its namespace
// failed: EPERM for a peer that may not create one, EINVAL for a bad name,
// ENOSPC past --max-netns; else errno and msg as they were.
func helloCreateError(err error, errno syscall.Errno, msg string, mayNotCreate bool) (syscall.Errno, string) {
	switch {
	case errors.Is(err, ErrNoNamespace) && mayNotCreate:
		return syscall.EPERM, errReadOnly.Error()
	case errors.Is(err, nsmgr.ErrInvalid):
		return syscall.EINVAL, err.Error()
	}
	var en syscall.Errno
	if errors.As(err, &en) {
		return en, err.Error()
	}
	return errno, msg
}
