package server

import (
	"github.com/nlemu/nlemu/nsmgr"
	"github.com/nlemu/nlemu/rtnl"
)

// Journal makes accepted changes durable (journal.Journal, `nlemu serve
// --state`). Apply runs do, which applies request m to ns, records m if it
// succeeded and returns do's result once the record is durable; a change
// it cannot record it refuses before do runs.
type Journal interface {
	Apply(ns *nsmgr.Namespace, m *rtnl.Message, strict bool, do func() *rtnl.Error) *rtnl.Error
}

// requestJournal is a Journal that applies a request itself
// (journal.Journal.Do): do then makes no closure per change, which,
// passed through the Journal interface, escapes to the heap.
type requestJournal interface {
	Do(ns *nsmgr.Namespace, req *nsmgr.Request) *rtnl.Error
}

// cachingJournal is a requestJournal that keeps what it needs of a
// namespace in a socket's cache (journal.Journal.DoCached): the socket's
// namespace never changes, and a load from its cache replaces a lookup
// in the journal's map of namespaces at each change.
type cachingJournal interface {
	DoCached(cache *any, ns *nsmgr.Namespace, req *nsmgr.Request) *rtnl.Error
}

// SetJournal sends every later change through j. Call it before the
// server has clients (after restoring the state j holds).
func (s *Server) SetJournal(j Journal) { s.journal = j }

// journalEphemeral tells the journal that namespace ns is ephemeral, so
// that a restart does not bring it back without its sockets. It returns
// the wait for the record, which the caller runs once it has released
// its locks (attach).
func (s *Server) journalEphemeral(ns *nsmgr.Namespace) func() error {
	switch j := s.journal.(type) {
	case interface {
		EphemeralThen(*nsmgr.Namespace) (func() error, error)
	}:
		if wait, err := j.EphemeralThen(ns); err == nil {
			return wait
		}
	case interface{ Ephemeral(*nsmgr.Namespace) error }:
		j.Ephemeral(ns)
	}
	return func() error { return nil }
}

// mutates reports whether request m is one a journal records when it
// succeeds: every rtnetlink request but a GET (rtnetlink_rcv_msg()'s
// kinds), with the family byte every handler needs.
func mutates(m *rtnl.Message) bool {
	typ := uint16(m.Header.Type)
	return typ >= rtnl.NLMSG_MIN_TYPE && typ <= rtnl.RTM_MAX && (typ-16)&3 != 2 && len(m.Data) >= 1
}

// do is handleMsg's call of the namespace: through the journal for a
// change when the server keeps state.
func (c *conn) do(req *nsmgr.Request) (nsmgr.Dumper, *rtnl.Error) {
	if j := c.srv.journal; j != nil && !req.ReadOnly && mutates(req.Msg) {
		if cj, ok := j.(cachingJournal); ok {
			return nil, cj.DoCached(&c.jcache, c.ns, req)
		}
		if rj, ok := j.(requestJournal); ok {
			return nil, rj.Do(c.ns, req)
		}
		return nil, j.Apply(c.ns, req.Msg, req.Strict, func() *rtnl.Error {
			_, err := c.ns.Do(req)
			return err
		})
	}
	return c.ns.Do(req)
}
