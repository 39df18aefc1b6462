package server

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
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
//
// Most sockets open in namespaces that are not ephemeral, and they take no
// lock here: 512 clients dialling at once (`nlemu load --netns 512`) queued
// on mu, and a holder preempted in its microsecond stopped them all
// (docs/STATE.md, "The start-up queue"). The fast path needs to know that
// the namespace it found is not ephemeral without reading refs: word
// counts the ephemeral namespaces that exist or are being created (low
// 32 bits: from before nsm.Add until after nsm.Del) and every change of
// that count (high 32 bits). An opener that reads the same word, with a
// count of 0, before and after its nsm.Get found a namespace that no
// ephemeral one could have been at that moment.
type ephemerals struct {
	mu   sync.Mutex
	refs map[*nsmgr.Namespace]int // guarded by mu: open sockets of each ephemeral namespace
	word atomic.Uint64            // changed under mu: ephemeral count | changes<<32
}

// ephOne adds one to word's count and one to its changes; ephGone takes
// one from its count and adds one to its changes.
const (
	ephOne  = 1<<32 | 1
	ephGone = 1<<32 - 1
)

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
	if w := e.word.Load(); uint32(w) == 0 {
		// The fast path: no ephemeral namespace, none being created.
		if ns, ok := s.nsm.Get(name); ok && e.word.Load() == w {
			return ns, nil
		}
	}
	ns, waits, err := s.attachLocked(name, opts)
	if err != nil {
		return nil, err
	}
	// The journal's records of a namespace made here are awaited with
	// e.mu released: under --fsync group or always a wait is an
	// fdatasync, and the other sockets of ephemeral namespaces need e.mu.
	// The HELLO is answered only once they return.
	for _, w := range waits {
		if err := w(); err != nil {
			s.detach(ns)
			return nil, err
		}
	}
	return ns, nil
}

// attachLocked is attach's slow path, under e.mu; it returns the waits
// for the journal's records of the namespace it made, if it made one.
func (s *Server) attachLocked(name string, opts uint32) (*nsmgr.Namespace, []func() error, error) {
	e := &s.eph
	e.lock()
	defer e.mu.Unlock()
	var waits []func() error
	ns, ok := s.nsm.Get(name)
	if !ok {
		if opts&(optCreate|optEphemeral) == 0 {
			return nil, nil, fmt.Errorf("%w: %q", ErrNoNamespace, name)
		}
		eph := opts&optEphemeral != 0
		if eph {
			e.word.Add(ephOne) // before the namespace can be found
		}
		wait, err := s.nsm.AddThen(name)
		if err != nil && !errors.Is(err, nsmgr.ErrExists) {
			if eph {
				e.word.Add(ephGone)
			}
			return nil, nil, err
		}
		if err == nil {
			waits = append(waits, wait)
		}
		if ns, ok = s.nsm.Get(name); !ok {
			if eph {
				e.word.Add(ephGone)
			}
			return nil, nil, fmt.Errorf("%w: %q", ErrNoNamespace, name)
		}
		if eph {
			if _, had := e.refs[ns]; had {
				e.word.Add(ephGone) // counted already
			} else {
				e.refs[ns] = 0
			}
			waits = append(waits, s.journalEphemeral(ns)) // --state (journal.go)
		}
	}
	if n, ok := e.refs[ns]; ok {
		e.refs[ns] = n + 1
	}
	return ns, waits, nil
}

// detach uncounts a closed socket; the last socket of an ephemeral
// namespace deletes it (unless NETNS_DEL did, or the name now belongs to
// another namespace).
func (s *Server) detach(ns *nsmgr.Namespace) {
	e := &s.eph
	if uint32(e.word.Load()) == 0 {
		// No ephemeral namespace: ns is none, and a socket of one keeps
		// the count above 0 until it is gone.
		return
	}
	if wait := s.detachLocked(ns); wait != nil {
		wait() // the deletion's record, awaited with e.mu released
	}
}

// detachLocked is detach's slow path, under e.mu; it returns the wait for
// the journal's record of the deletion, if it deleted ns.
func (s *Server) detachLocked(ns *nsmgr.Namespace) func() error {
	e := &s.eph
	e.lock()
	defer e.mu.Unlock()
	n, ok := e.refs[ns]
	if !ok {
		return nil
	}
	if n > 1 {
		e.refs[ns] = n - 1
		return nil
	}
	delete(e.refs, ns)
	var wait func() error
	if cur, ok := s.nsm.Get(ns.Name()); ok && cur == ns {
		wait, _ = s.nsm.DelThen(ns.Name())
	}
	e.word.Add(ephGone) // after the namespace can no longer be found
	return wait
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
