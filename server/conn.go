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
	// st counts this socket's messages and errors: written under mu, read
	// by STATS without it. Per socket, so that sockets on different cores
	// never share a cache line.
	st counts
	// hangup, when set, ends the transport (the Unix connection) so that
	// Server.Close also stops a reader blocked on its client.
	hangup func() // guarded by mu
}

type dumpState struct {
	d        nsmgr.Dumper
	seq      uint32
	doneOnly bool // the batch after the last one: NLMSG_DONE alone
}

// Deliver queues a multicast or unicast datagram (nsmgr.Listener).
func (c *conn) Deliver(b []byte) { c.q.push(b, false) }

// handle processes one datagram from the client.
func (c *conn) handle(b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.st.countDatagram()
	c.msgs = rtnl.AppendMessages(c.msgs[:0], b)
	for i := range c.msgs {
		c.handleMsg(&c.msgs[i])
	}
	clear(c.msgs)
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
	d, err := c.ns.Do(&nsmgr.Request{Msg: m, PortID: c.portid, Strict: c.strict, Self: c})
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
	c.q.push(rtnl.AppendAck(nil, m, c.portid, err, rtnl.AckOptions{ExtAck: c.extAck, CapAck: c.capAck}), false)
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
		withDone := rtnl.AppendDone(buf, ds.seq, c.portid, err, c.extAck)
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

// control applies an nlemu control message (docs/PROTOCOL.md).
func (c *conn) control(m *rtnl.Message) {
	d := m.Data
	switch uint16(m.Header.Type) {
	case rtnl.NLEMU_SETSOCKOPT:
		if len(d) >= 12 {
			c.setsockopt(int(ne.Uint32(d)), int(ne.Uint32(d[4:])), ne.Uint32(d[8:]))
		}
	case rtnl.NLEMU_BIND:
		if len(d) >= 4 {
			c.bind(ne.Uint32(d))
		}
	case rtnl.NLEMU_NETNS_ADD, rtnl.NLEMU_NETNS_DEL, rtnl.NLEMU_NETNS_LIST, rtnl.NLEMU_STATS:
		c.admin(m)
	}
}

func (c *conn) setsockopt(level, name int, v uint32) {
	switch {
	case level == rtnl.SOL_NETLINK:
		switch name {
		case rtnl.NETLINK_ADD_MEMBERSHIP, rtnl.NETLINK_DROP_MEMBERSHIP:
			if v == 0 || v > 64 {
				return
			}
			if name == rtnl.NETLINK_ADD_MEMBERSHIP {
				c.groups |= 1 << (v - 1)
			} else {
				c.groups &^= 1 << (v - 1)
			}
			c.ns.SetGroups(c, c.groups)
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
		}
	case level == rtnl.SOL_SOCKET && name == rtnl.SO_RCVBUF:
		// sock_setsockopt(): capped by rmem_max, then doubled.
		n := min(int(v), rmemMax)
		c.q.setLimit(max(2*n, 2304))
	}
}

// bind replaces groups 1..32 with the legacy nl_groups mask.
func (c *conn) bind(mask uint32) {
	c.groups = c.groups&^0xffffffff | uint64(mask)
	c.ns.SetGroups(c, c.groups)
}

// close detaches the socket from its namespace and wakes its reader.
func (c *conn) close() {
	c.mu.Lock()
	if !c.closed {
		c.closed = true
		c.ns.SetGroups(c, 0)
		c.dump = nil
		c.srv.retire(c)
	}
	hangup := c.hangup
	c.hangup = nil
	c.mu.Unlock()
	c.q.close()
	c.srv.releasePort(c.portid)
	if hangup != nil {
		hangup()
	}
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
