// Package nsmgr holds the namespace registry and the Namespace, which
// composes a namespace's rule families, tables and devices with its
// notification bus, and routes each rtnetlink request to its handler.
//
// Concurrency: a Namespace is safe for concurrent use by any number of
// sockets. Rule changes serialize per (namespace, family) inside rulesops;
// dumps read immutable snapshots; notifications are sent after every lock
// is released.
package nsmgr

import (
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/nlemu/nlemu/fib"
	"github.com/nlemu/nlemu/netdev"
	"github.com/nlemu/nlemu/rtnl"
	"github.com/nlemu/nlemu/rulesops"
)

// Listener receives multicast notifications. Deliver must not block: a
// listener whose queue is full drops the datagram and reports ENOBUFS to
// its reader, as the kernel's netlink_broadcast() does.
type Listener interface {
	Deliver(datagram []byte)
}

// GroupListener is a Listener told the multicast group of each
// notification: the kernel's NETLINK_CB(skb).dst_group, which
// netlink_recvmsg() reports in the sender's nl_groups and in
// NETLINK_PKTINFO. A Listener without it gets Deliver.
type GroupListener interface {
	Listener
	DeliverGroup(datagram []byte, group uint32)
}

// deliverGroup hands l notification b of group.
func deliverGroup(l Listener, b []byte, group uint32) {
	if gl, ok := l.(GroupListener); ok {
		gl.DeliverGroup(b, group)
		return
	}
	l.Deliver(b)
}

// Namespace is one emulated network namespace.
type Namespace struct {
	name  string
	cfg   *rtnl.LockConfig // the server's RTNL and its mode
	rules []*rulesops.Ops  // AF_UNSPEC dump order: 2, 128, 129, 10
	v4    *fib.Tables
	v6    *fib.Tables
	devs  *netdev.Devices
	addr  *addrState // addresses (addrs.go)
	// fib4 and fib6 link each family's tables and rules for lookups
	// (routeget.go); set once at creation.
	fib4, fib6 *fib.FIB
	// limits are the registry's (limits.go); nil for none.
	limits *Limits
	// gc6 removes expired IPv6 routes (route_gc6.go).
	gc6 gc6State

	subMu sync.RWMutex
	subs  map[Listener]uint64 // guarded by subMu: group bit mask (1<<(g-1))
	nsubs atomic.Int32
}

func newNamespace(name string, cfg *rtnl.LockConfig) *Namespace {
	ns := &Namespace{name: name, cfg: cfg, v4: fib.NewIPv4(), v6: fib.NewIPv6(), devs: netdev.New(), addr: newAddrState(), subs: map[Listener]uint64{}}
	for _, id := range rulesops.Families() {
		env := rulesops.Env{Config: cfg, Devices: ns.devs}
		switch id {
		case rtnl.AF_INET:
			env.Tables = ns.v4
		case rtnl.AF_INET6:
			env.Tables = ns.v6
		}
		ns.rules = append(ns.rules, rulesops.NewOps(id, env))
	}
	ns.fib4 = fib.NewFIB(ns.v4, ns.Rules(rtnl.AF_INET))
	ns.fib6 = fib.NewFIB(ns.v6, ns.Rules(rtnl.AF_INET6))
	ns.fib4.SetGroups(devGroups{ns.devs})
	ns.fib6.SetGroups(devGroups{ns.devs})
	return ns
}

// Name returns the namespace's name.
func (ns *Namespace) Name() string { return ns.name }

// Rules returns the rule ops of family id, or nil.
func (ns *Namespace) Rules(id uint8) *rulesops.Ops {
	for _, o := range ns.rules {
		if o.Family() == id {
			return o
		}
	}
	return nil
}

// IPv4Tables returns the IPv4 table registry (for tests and stats).
func (ns *Namespace) IPv4Tables() *fib.Tables { return ns.v4 }

// SetGroups sets the multicast groups l listens to (bit g-1 for group g);
// an empty mask unsubscribes.
func (ns *Namespace) SetGroups(l Listener, mask uint64) {
	ns.subMu.Lock()
	defer ns.subMu.Unlock()
	if mask == 0 {
		delete(ns.subs, l)
	} else {
		ns.subs[l] = mask
	}
	ns.nsubs.Store(int32(len(ns.subs)))
}

// notify sends b to every listener of group except skip (netlink_broadcast()
// with an excluded port, as nlmsg_notify() does for NLM_F_ECHO requesters).
func (ns *Namespace) notify(group uint32, b []byte, skip Listener) {
	bit := uint64(1) << (group - 1)
	ns.subMu.RLock()
	defer ns.subMu.RUnlock()
	for l, mask := range ns.subs {
		if mask&bit != 0 && l != skip {
			deliverGroup(l, b, group)
		}
	}
}

func (ns *Namespace) hasListeners(group uint32, skip Listener) bool {
	if ns.nsubs.Load() == 0 {
		return false
	}
	bit := uint64(1) << (group - 1)
	ns.subMu.RLock()
	defer ns.subMu.RUnlock()
	for l, mask := range ns.subs {
		if mask&bit != 0 && l != skip {
			return true
		}
	}
	return false
}

// Request is one rtnetlink request as a handler sees it.
type Request struct {
	Msg    *rtnl.Message
	PortID uint32
	// Strict is NETLINK_GET_STRICT_CHK on the requesting socket.
	Strict bool
	// Self is the requesting socket, which receives NLM_F_ECHO copies.
	Self Listener
	// ReadOnly is a requester that may not change state: everything but
	// a GET is refused with EPERM.
	ReadOnly bool
	// UID is the requester's uid (current_uid() in the kernel): the flow
	// key's uid of a route get without RTA_UID.
	UID uint32
	// Reply, when it has capacity, is a buffer the requester lends for
	// one reply: a handler may encode into Reply[:0] and Deliver the
	// result to Self, which recognizes its buffer and reuses it once the
	// reply is read (server: no allocation per route get).
	Reply []byte
}

// Dumper produces the messages of a dump in batches, resuming from its
// cursor, as netlink_dump() calls a dumpit again for each datagram.
type Dumper interface {
	// Fill appends whole messages to dst while dst stays within limit bytes
	// and reports whether the dump is complete.
	Fill(dst []byte, limit int) ([]byte, bool)
	// Err is the error for the NLMSG_DONE, nil on success.
	Err() *rtnl.Error
}

// changeRule is fib_nl_newrule() / fib_nl_delrule() up to the notification.
func (ns *Namespace) changeRule(req *Request) *rtnl.Error {
	// fib_nl_newrule() and fib_nl_delrule() are registered for AF_UNSPEC
	// (any family reaches them) and look the family up themselves.
	m := req.Msg
	var rmv rtnl.RuleMsg
	rm := &rmv
	if err := rm.DecodeHeader(m); err != nil {
		return err
	}
	ops := ns.Rules(rm.Family)
	if ops == nil {
		return rtnl.Errorf(syscall.EAFNOSUPPORT, "Rule family not supported")
	}
	var (
		ch  rulesops.Change
		err *rtnl.Error
	)
	typ := uint16(m.Header.Type)
	if err := ns.checkRuleAdd(typ, ops.Len()); err != nil {
		return err
	}
	if typ == rtnl.RTM_NEWRULE {
		ch, err = ops.NewRule(rm, uint16(m.Header.Flags))
	} else {
		ch, err = ops.DelRule(rm)
	}
	if err != nil {
		// An error without its own text keeps the parser's warning.
		if rm.Warning != "" && err.Msg == "" {
			err.Msg = rm.Warning
		}
		return err
	}
	var result *rtnl.Error
	if rm.Warning != "" {
		result = &rtnl.Error{Msg: rm.Warning}
	}
	// notify_rule_change(): after the locks are released.
	echo := uint16(m.Header.Flags)&rtnl.NLM_F_ECHO != 0
	var skip Listener
	if echo {
		skip = req.Self
	}
	bcast := ns.hasListeners(ops.Group(), skip)
	if !bcast && !echo {
		return result
	}
	b := rtnl.AppendRule(nil, typ, 0, m.Header.Sequence, req.PortID, ch.Msg())
	if bcast {
		ns.notify(ops.Group(), b, skip)
	}
	if echo && req.Self != nil {
		// nlmsg_notify() unicasts the same skb it multicast, so the echo
		// carries the group too (measured: nl_groups 0x80 and
		// NETLINK_PKTINFO 8 on an IPv4 rule's echo).
		deliverGroup(req.Self, b, ops.Group())
	}
	return result
}

type emptyDump struct{}

func (emptyDump) Fill(dst []byte, _ int) ([]byte, bool) { return dst, true }
func (emptyDump) Err() *rtnl.Error                      { return nil }

type errDump struct{ err *rtnl.Error }

func (d errDump) Fill(dst []byte, _ int) ([]byte, bool) { return dst, true }
func (d errDump) Err() *rtnl.Error                      { return d.err }

// dumpRules is fib_nl_dumprule(): strict-check validation, then the rules
// of one family or of all families, resumable by (family, rule) index.
func (ns *Namespace) dumpRules(req *Request) Dumper {
	m := req.Msg
	if req.Strict {
		rm, err := rtnl.DecodeRuleHeader(m)
		if err != nil {
			return errDump{rtnl.Errorf(syscall.EINVAL, "Invalid header for fib rule dump request")}
		}
		if rm.DstLen != 0 || rm.SrcLen != 0 || rm.Tos != 0 || rm.Table != 0 || rm.Res1 != 0 ||
			rm.Res2 != 0 || rm.Action != 0 || rm.Flags != 0 {
			return errDump{rtnl.Errorf(syscall.EINVAL, "Invalid values in header for fib rule dump request")}
		}
		if rm.HasTrailingAttrs() {
			return errDump{rtnl.Errorf(syscall.EINVAL, "Invalid data after header in fib rule dump request")}
		}
	}
	fam := rtnl.RuleFamily(m)
	d := &ruleDump{seq: m.Header.Sequence, pid: req.PortID}
	if fam == rtnl.AF_UNSPEC {
		d.ops = ns.rules
	} else if o := ns.Rules(fam); o != nil {
		d.ops = []*rulesops.Ops{o}
	} else {
		return errDump{rtnl.Errno(syscall.EAFNOSUPPORT)}
	}
	return d
}

type ruleDump struct {
	ops      []*rulesops.Ops
	fi, ri   int // cursor: family index, rule index (cb->args[0], args[1])
	seq, pid uint32
}

func (d *ruleDump) Err() *rtnl.Error { return nil }

func (d *ruleDump) Fill(dst []byte, limit int) ([]byte, bool) {
	for ; d.fi < len(d.ops); d.fi++ {
		full := false
		d.ops[d.fi].Snapshot().Each(d.ri, func(i int, m *rtnl.RuleMsg) bool {
			n := len(dst)
			dst = rtnl.AppendRule(dst, rtnl.RTM_NEWRULE, rtnl.NLM_F_MULTI, d.seq, d.pid, m)
			if len(dst) > limit && n > 0 {
				dst, full = dst[:n], true
				return false
			}
			d.ri = i + 1
			return true
		})
		if full {
			return dst, false
		}
		d.ri = 0
	}
	return dst, true
}
