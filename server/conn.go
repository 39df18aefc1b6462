package server

import (
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/nlemu/nlemu/nsmgr"
	"github.com/nlemu/nlemu/rtnl"
)

// conn is the server side of one emulated netlink socket: its port id,
// options, multicast groups, receive queue and running dump. Requests are
// handled one datagram at a time, in order, like a netlink socket's
// netlink_rcv_skb().
type conn struct {
	srv    *Server
	ns     *nsmgr.Namespace
	portid uint32
	q      *queue

	mu      sync.Mutex // serializes request handling and dump batches
	extAck  bool       // guarded by mu: NETLINK_EXT_ACK
	capAck  bool       // guarded by mu: NETLINK_CAP_ACK
	strict  bool       // guarded by mu: NETLINK_GET_STRICT_CHK
	groups  uint64     // guarded by mu: bit g-1 for group g
	maxRecv int        // guarded by mu: largest receive buffer seen
	dump    *dumpState // guarded by mu
	// dumping mirrors dump != nil and maxRecvSeen maxRecv, so that a
	// reader can skip taking mu after each receive.
	dumping     atomic.Bool
	maxRecvSeen atomic.Int64
	closed      bool           // guarded by mu
	msgs        []rtnl.Message // guarded by mu: reused by handle
	// req is the nsmgr.Request of the message being handled, reused:
	// built on the stack it escaped to the heap once per message (the
	// dispatcher calls its handler through a function value). Handlers
	// and Dumpers keep copies of what they need, never the pointer (the
	// AF_UNSPEC dump copies the whole Request).
	req nsmgr.Request // guarded by mu
	// jcache is the journal's per-namespace state for ns, kept by the
	// journal (server/journal.go, cachingJournal).
	jcache any // guarded by mu
	// reply is the buffer lent to the handler for its reply
	// (Request.Reply): Deliver recognizes it and queues it lent, and the
	// queue hands back one that its reader has copied out (queue.free).
	reply []byte // guarded by mu
	// st counts this socket's messages and errors: written under mu, read
	// by STATS without it. Per socket, so that sockets on different cores
	// never share a cache line.
	st counts
	// readOnly is a socket whose opener may not change state: every
	// request but a GET is refused with EPERM (rtnetlink_rcv_msg()'s
	// CAP_NET_ADMIN check), and so are namespace changes.
	readOnly bool // guarded by mu
	// uid is the opener's uid (the kernel's current_uid() of the
	// requester, which `ip route get` reports without RTA_UID).
	uid uint32 // guarded by mu
	// hangup, when set, ends the transport (the Unix connection) so that
	// Server.Close also stops a reader blocked on its client.
	hangup func() // guarded by mu
	// priv is what the socket's opener may do (ns_capable() checks of
	// netlink_setsockopt() and rtnetlink_bind()). Its source is set before
	// the socket handles its first request.
	priv lazyPrivileges
	// groupNotes (and the per-socket state behind it) records the
	// multicast group of each queued notification, for clients that report
	// it (nl_groups, NETLINK_PKTINFO).
	groupNotes
}

// privileges are the capabilities that netlink checks on a socket.
type privileges struct {
	netAdmin     bool // CAP_NET_ADMIN: join RTNLGRP_IPV{4,6}_MROUTE_R
	netBroadcast bool // CAP_NET_BROADCAST: NETLINK_LISTEN_ALL_NSID
}

// groupNotes maps a queued notification (by its first byte, which is
// unique among the datagrams of one queue while it is queued) to its
// group: the queue itself stays a queue of plain datagrams, and only
// sockets whose client reports groups (track) pay for the map.
type groupNotes struct {
	track atomic.Bool
	n     atomic.Int32 // entries in m, to skip the lock when there are none
	gmu   sync.Mutex
	m     map[*byte]uint32 // guarded by gmu
	// frame is the Unix writer's buffer for a framed notification (used
	// only by the writer, under unixWriter.mu).
	frame []byte
}

type dumpState struct {
	d        nsmgr.Dumper
	seq      uint32
	doneOnly bool // the batch after the last one: NLMSG_DONE alone
}

// Deliver queues a unicast datagram (nsmgr.Listener). It is called by the
// handler of this socket's request (Request.Self), with mu held.
func (c *conn) Deliver(b []byte) {
	if cap(b) > 0 && cap(c.reply) > 0 && &b[:1][0] == &c.reply[:1][0] {
		// The handler encoded into the lent buffer: it is the queue's
		// until read, and the conn takes another for the next reply.
		c.reply = c.q.pushLent(b)
		c.req.Reply = nil
		return
	}
	c.q.push(b, false)
}

// replyBufLen is the capacity of a lent reply buffer: a route-get reply
// (an IPv6 one with cacheinfo and pref is 172 bytes) and most acks fit.
const replyBufLen = 256

// DeliverGroup queues a notification of a multicast group
// (nsmgr.GroupListener), remembering its group for a client that reports
// it.
func (c *conn) DeliverGroup(b []byte, group uint32) {
	if group == 0 || len(b) == 0 || !c.groupNotes.track.Load() {
		c.q.push(b, false)
		return
	}
	g := &c.groupNotes
	k := &b[0]
	g.gmu.Lock()
	if g.m == nil {
		g.m = map[*byte]uint32{}
	}
	g.m[k] = group
	g.n.Add(1)
	g.gmu.Unlock()
	if !c.q.push(b, false) {
		g.gmu.Lock()
		if _, ok := g.m[k]; ok {
			delete(g.m, k)
			g.n.Add(-1)
		}
		g.gmu.Unlock()
	}
}

// takeGroup returns the group of datagram b just taken from the queue (0
// for replies and unicast), forgetting it.
func (c *conn) takeGroup(b []byte) uint32 {
	g := &c.groupNotes
	if len(b) == 0 || g.n.Load() == 0 {
		return 0
	}
	g.gmu.Lock()
	grp, ok := g.m[&b[0]]
	if ok {
		delete(g.m, &b[0])
		g.n.Add(-1)
	}
	g.gmu.Unlock()
	return grp
}

// wireForm is datagram b as the Unix writer sends it: a notification is
// preceded, in the same datagram, by an NLEMU_GROUP message naming its
// group (docs/PROTOCOL.md). Called only by the writer; the result is valid
// until the next call.
func (c *conn) wireForm(b []byte) []byte {
	grp := c.takeGroup(b)
	if grp == 0 {
		return b
	}
	var p [4]byte
	ne.PutUint32(p[:], grp)
	f := rtnl.AppendMessage(c.groupNotes.frame[:0], rtnl.NLEMU_GROUP, 0, 0, 0, p[:])
	f = append(f, b...)
	c.groupNotes.frame = f
	return f
}

// handle processes one datagram from the client.
func (c *conn) handle(b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.tooBig(b) { // --max-msg (limits.go)
		return
	}
	c.st.countDatagram()
	c.msgs = rtnl.AppendMessages(c.msgs[:0], b)
	for i := range c.msgs {
		c.handleMsg(&c.msgs[i])
	}
	clear(c.msgs)
}

// tidy runs what the requests just handled left for after their replies
// (nsmgr.Namespace.Tidy: the folds of the route tables' change lists),
// once the replies are written or queued and before the connection's next
// request is read. Without mu: it takes the tables' writer locks itself.
func (c *conn) tidy() {
	if c.ns != nil {
		c.ns.Tidy()
	}
}

func (c *conn) handleMsg(m *rtnl.Message) {
	typ, flags := uint16(m.Header.Type), uint16(m.Header.Flags)
	if typ >= rtnl.NLEMU_CTRL_MIN && typ <= rtnl.NLEMU_CTRL_MAX {
		c.control(m)
		return
	}
	c.st.countType(typ)
	// netlink_rcv_skb(): non-requests and control types are only acked.
	if flags&rtnl.NLM_F_REQUEST == 0 || typ < rtnl.NLMSG_MIN_TYPE {
		if flags&rtnl.NLM_F_ACK != 0 {
			c.ack(m, nil)
		}
		return
	}
	if c.reply == nil {
		c.reply = make([]byte, 0, replyBufLen)
	}
	c.req = nsmgr.Request{Msg: m, PortID: c.portid, Strict: c.strict, Self: c, ReadOnly: c.readOnly, UID: c.uid, Reply: c.reply}
	d, err := c.do(&c.req)
	c.req.Msg, c.req.Reply = nil, nil // the message lives in the client's datagram
	if d != nil {
		if c.dump != nil {
			c.ack(m, rtnl.Errno(syscall.EBUSY))
			return
		}
		c.dump = &dumpState{d: d, seq: m.Header.Sequence}
		c.dumping.Store(true)
		c.dumpBatch()
		return
	}
	if (err != nil && err.Errno != 0) || flags&rtnl.NLM_F_ACK != 0 {
		c.ack(m, err)
	}
}

func (c *conn) ack(m *rtnl.Message, err *rtnl.Error) {
	if err != nil && err.Errno != 0 {
		c.st.countErr(err.Errno)
	}
	// Into the lent reply buffer when it fits (a success ACK is 36 bytes),
	// queued as Deliver queues a reply.
	if c.reply == nil {
		c.reply = make([]byte, 0, replyBufLen)
	}
	c.Deliver(rtnl.AppendAck(c.reply[:0], m, c.portid, err, rtnl.AckOptions{ExtAck: c.extAck, CapAck: c.capAck}))
}

// dumpBatch produces the next datagram of the running dump (netlink_dump()):
// as many whole messages as fit, and NLMSG_DONE when the dump is complete
// and there is room for it. Called with mu held.
func (c *conn) dumpBatch() {
	ds := c.dump
	size := rtnl.DumpSize(c.maxRecv)
	var buf []byte
	done := true
	if !ds.doneOnly {
		buf, done = ds.d.Fill(make([]byte, 0, size), size)
	}
	if done {
		var err *rtnl.Error
		if err = ds.d.Err(); err != nil {
			c.st.countErr(err.Errno)
		}
		var answer uint16
		if f, ok := ds.d.(nsmgr.AnswerFlagger); ok {
			answer = f.AnswerFlags()
		}
		withDone := rtnl.AppendDoneFlags(buf, ds.seq, c.portid, err, c.extAck, answer)
		if len(buf) > 0 && len(withDone) > size {
			ds.doneOnly = true
			c.q.push(buf, true)
			return
		}
		buf = withDone
		c.dump = nil
		c.dumping.Store(false)
	}
	c.q.push(buf, true)
}

// afterRead continues a dump once the reader has drained its queue to half
// the receive buffer, as netlink_recvmsg() does.
func (c *conn) afterRead(bufLen int) {
	if !c.dumping.Load() && bufLen <= int(c.maxRecvSeen.Load()) {
		return // the common case: nothing to do, no lock taken
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if bufLen > c.maxRecv {
		c.maxRecv = bufLen
		c.maxRecvSeen.Store(int64(bufLen))
	}
	if c.dump != nil && !c.closed && c.q.roomForDump() {
		c.dumpBatch()
	}
}

// control applies an nlemu control message (docs/PROTOCOL.md). SETSOCKOPT
// and BIND with NLM_F_ACK are answered with an NLEMU_ACK carrying the
// errno setsockopt(2)/bind(2) returns, so that a client can return only
// once the option (a membership above all) is in effect; without the flag
// they are applied silently, as for clients from before acks.
func (c *conn) control(m *rtnl.Message) {
	d := m.Data
	var errno syscall.Errno
	switch uint16(m.Header.Type) {
	case rtnl.NLEMU_SETSOCKOPT:
		if len(d) < 12 {
			errno = syscall.EINVAL
			break
		}
		errno = c.setsockopt(int(ne.Uint32(d)), int(ne.Uint32(d[4:])), ne.Uint32(d[8:]))
	case rtnl.NLEMU_BIND:
		if len(d) < 4 {
			errno = syscall.EINVAL
			break
		}
		errno = c.bind(ne.Uint32(d))
	case rtnl.NLEMU_NETNS_ADD, rtnl.NLEMU_NETNS_DEL, rtnl.NLEMU_NETNS_LIST, rtnl.NLEMU_STATS, rtnl.NLEMU_NETNS_EPHEMERAL:
		c.admin(m)
		return
	default:
		errno = syscall.EOPNOTSUPP
	}
	if uint16(m.Header.Flags)&rtnl.NLM_F_ACK != 0 {
		// Forced: the answer a client blocks for is never dropped.
		var p [4]byte
		ne.PutUint32(p[:], uint32(-int32(errno)))
		c.q.push(rtnl.AppendMessage(nil, rtnl.NLEMU_ACK, 0, m.Header.Sequence, 0, p[:]), true)
	}
}

// sockopt applies a socket option from the in-process client: the same
// as a SETSOCKOPT control message, with its errno returned directly.
func (c *conn) sockopt(level, name int, v uint32) syscall.Errno {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return syscall.EBADF
	}
	return c.setsockopt(level, name, v)
}

// bindGroups is bind(2) with nl_groups for the in-process client.
func (c *conn) bindGroups(mask uint32) syscall.Errno {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return syscall.EBADF
	}
	return c.bind(mask)
}

// setsockopt mirrors netlink_setsockopt() on a NETLINK_ROUTE socket (and
// SO_RCVBUF of sock_setsockopt()), returning its errno.
func (c *conn) setsockopt(level, name int, v uint32) syscall.Errno {
	switch {
	case level == rtnl.SOL_NETLINK:
		switch name {
		case rtnl.NETLINK_ADD_MEMBERSHIP, rtnl.NETLINK_DROP_MEMBERSHIP:
			// if (!val || val - 1 >= nlk->ngroups) return -EINVAL;
			if v == 0 || v-1 >= rtnl.RTNL_NGROUPS {
				return syscall.EINVAL
			}
			if name == rtnl.NETLINK_ADD_MEMBERSHIP {
				// nlk->netlink_bind(), only for a join
				if e := c.mayJoin(v); e != 0 {
					return e
				}
				c.groups |= 1 << (v - 1)
			} else {
				c.groups &^= 1 << (v - 1)
			}
			c.ns.SetGroups(c, c.groups)
		case rtnl.NETLINK_PKTINFO, netlinkBroadcastError:
			// Flags the client applies itself (what it reports on
			// receive); nothing changes here.
		case rtnl.NETLINK_LISTEN_ALL_NSID:
			// ns_capable(net->user_ns, CAP_NET_BROADCAST), for setting
			// and clearing alike. nlemu has no peer namespaces with
			// nsids, so for a privileged socket there is nothing more to
			// do.
			if !c.priv.get().netBroadcast {
				return syscall.EPERM
			}
		case rtnl.NETLINK_EXT_ACK:
			c.extAck = v != 0
		case rtnl.NETLINK_CAP_ACK:
			c.capAck = v != 0
		case rtnl.NETLINK_GET_STRICT_CHK:
			c.strict = v != 0
		case rtnl.NETLINK_NO_ENOBUFS:
			c.q.setNoENOBUFS(v != 0)
		case rtnl.NLEMU_RECVLEN:
			if int(v) > c.maxRecv {
				c.maxRecv = int(v)
				c.maxRecvSeen.Store(int64(v))
			}
		case rtnl.NLEMU_GROUPFRAMES:
			c.groupNotes.track.Store(v != 0)
		default:
			return syscall.ENOPROTOOPT
		}
	case level == rtnl.SOL_SOCKET && name == rtnl.SO_RCVBUF:
		// sock_setsockopt(): capped by rmem_max, then doubled.
		n := min(int(v), c.srv.rmemMax()) // --rmem-max (limits.go)
		c.q.setLimit(max(2*n, 2304))
	case level == rtnl.SOL_SOCKET:
		// Other socket-level options are the transport's business
		// (the shim applies them to its own socket): accepted, ignored.
	default:
		return syscall.ENOPROTOOPT
	}
	return 0
}

// netlinkBroadcastError is NETLINK_BROADCAST_ERROR.
const netlinkBroadcastError = 4

// mayJoin is rtnetlink_bind(): the multicast routing report groups need
// CAP_NET_ADMIN.
func (c *conn) mayJoin(g uint32) syscall.Errno {
	if (g == rtnl.RTNLGRP_IPV4_MROUTE_R || g == rtnl.RTNLGRP_IPV6_MROUTE_R) && !c.priv.get().netAdmin {
		return syscall.EPERM
	}
	return 0
}

// bind replaces groups 1..32 with the legacy nl_groups mask, as
// netlink_bind() does after checking each group with rtnetlink_bind() (an
// EPERM leaves the groups as they were).
func (c *conn) bind(mask uint32) syscall.Errno {
	for g := uint32(1); g <= 32; g++ {
		if mask&(1<<(g-1)) != 0 {
			if e := c.mayJoin(g); e != 0 {
				return e
			}
		}
	}
	c.groups = c.groups&^0xffffffff | uint64(mask)
	c.ns.SetGroups(c, c.groups)
	return 0
}

// close detaches the socket from its namespace and wakes its reader.
func (c *conn) close() {
	c.mu.Lock()
	first := !c.closed
	if first {
		c.closed = true
		c.ns.SetGroups(c, 0)
		c.dump = nil
		c.srv.retire(c)
	}
	hangup := c.hangup
	c.hangup = nil
	c.mu.Unlock()
	c.q.close()
	// Only the first close gives the port id back: by a second one
	// (Server.Close after the client's) the id may be another socket's.
	if first {
		c.srv.releasePort(c.portid)
	}
	if hangup != nil {
		hangup()
	}
}

// setReadOnly marks the socket as one whose opener may not change state.
func (c *conn) setReadOnly(v bool) {
	c.mu.Lock()
	c.readOnly = v
	c.mu.Unlock()
}

// setUID records the opener's uid.
func (c *conn) setUID(uid uint32) {
	c.mu.Lock()
	c.uid = uid
	c.mu.Unlock()
}

// onClose sets the transport's hangup, or runs it at once if the socket
// is already closed (Server.Close may have come first).
func (c *conn) onClose(hangup func()) {
	c.mu.Lock()
	if !c.closed {
		c.hangup = hangup
		hangup = nil
	}
	c.mu.Unlock()
	if hangup != nil {
		hangup()
	}
}
