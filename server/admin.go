package server

import (
	"encoding/json"
	"errors"
	"strings"
	"syscall"

	"github.com/nlemu/nlemu/nsmgr"
	"github.com/nlemu/nlemu/rtnl"
)

// errReadOnly refuses a namespace change from a socket that may not change
// state.
var errReadOnly = errors.New("nlemu: changing namespaces needs uid 0, the server's uid or a member of an allowed group")

// listChunk bounds the names in one NETNS_LIST datagram, well inside the
// server's send buffer and a client's 64 KiB read.
const listChunk = 16 << 10

// admin answers the administration control messages (docs/PROTOCOL.md).
// Called with c.mu held.
func (c *conn) admin(m *rtnl.Message) {
	name := string(m.Data)
	if i := strings.IndexByte(name, 0); i >= 0 {
		name = name[:i]
	}
	var err error
	switch uint16(m.Header.Type) {
	case rtnl.NLEMU_NETNS_ADD, rtnl.NLEMU_NETNS_DEL:
		if c.readOnly {
			err = errReadOnly
			break
		}
		if uint16(m.Header.Type) == rtnl.NLEMU_NETNS_ADD {
			err = c.srv.nsm.Add(name)
		} else {
			err = c.srv.nsm.Del(name)
		}
	case rtnl.NLEMU_NETNS_LIST:
		c.pushNames(m, c.srv.nsm.List())
	case rtnl.NLEMU_NETNS_EPHEMERAL:
		c.pushNames(m, c.srv.Ephemeral())
	case rtnl.NLEMU_STATS:
		b, _ := json.Marshal(c.srv.Stats())
		c.q.push(rtnl.AppendMessage(nil, rtnl.NLEMU_STATS, 0, m.Header.Sequence, c.portid, b), true)
	}
	var rerr *rtnl.Error
	if err != nil {
		errno := syscall.EINVAL
		switch {
		case errors.Is(err, nsmgr.ErrExists):
			errno = syscall.EEXIST
		case errors.Is(err, syscall.ENOSPC): // --max-netns (nsmgr/limits.go)
			errno = syscall.ENOSPC
		case errors.Is(err, nsmgr.ErrNotFound):
			errno = syscall.ENOENT
		case errors.Is(err, nsmgr.ErrDefault), errors.Is(err, errReadOnly):
			errno = syscall.EPERM
		}
		rerr = rtnl.Errorf(errno, err.Error())
	}
	c.q.push(rtnl.AppendAck(nil, m, c.portid, rerr, rtnl.AckOptions{ExtAck: true, CapAck: true}), true)
}

// pushNames answers a NETNS_LIST or NETNS_EPHEMERAL: one message of the
// request's type per datagram of at most listChunk bytes, split between
// names (a single datagram for 9,000 names outgrew the socket buffer).
func (c *conn) pushNames(m *rtnl.Message, names []string) {
	typ := uint16(m.Header.Type)
	var b []byte
	for _, n := range names {
		if len(b) > 0 && len(b)+len(n)+1 > listChunk {
			c.q.push(rtnl.AppendMessage(nil, typ, 0, m.Header.Sequence, c.portid, b), true)
			b = nil
		}
		b = append(append(b, n...), 0)
	}
	c.q.push(rtnl.AppendMessage(nil, typ, 0, m.Header.Sequence, c.portid, b), true)
}

// Stats is a snapshot of the server's counters (`nlemu stats --json`).
type Stats struct {
	RTNLMode         string            `json:"rtnl_mode"`
	RTNLAcquisitions uint64            `json:"rtnl_acquisitions"`
	RTNLWaitS        float64           `json:"rtnl_wait_s"`
	RTNLHoldS        float64           `json:"rtnl_hold_s"`
	Namespaces       int               `json:"namespaces"`
	Sockets          int               `json:"sockets"`
	Datagrams        uint64            `json:"datagrams"`
	Messages         map[string]uint64 `json:"messages"`
	Errors           map[string]uint64 `json:"errors"`
	Rules            map[string]int    `json:"rules"`
	PeakRSSBytes     uint64            `json:"peak_rss_bytes"` // the server process's VmHWM (rss.go)
	// Routes counts stored routes per family (an IPv6 ECMP set once);
	// RouteChanges counts route requests by the lock they took:
	// "inet_rtnl" (IPv4, under RTNL) and "inet6_writer" (IPv6, the
	// namespace's IPv6 FIB writer lock only).
	Routes       map[string]int    `json:"routes"`
	RouteChanges map[string]uint64 `json:"route_changes"`
}

var typeNames = map[int]string{
	rtnl.RTM_NEWLINK: "RTM_NEWLINK", rtnl.RTM_GETLINK: "RTM_GETLINK", rtnl.RTM_GETADDR: "RTM_GETADDR",
	rtnl.RTM_GETROUTE: "RTM_GETROUTE", rtnl.RTM_NEWROUTE: "RTM_NEWROUTE", rtnl.RTM_NEWRULE: "RTM_NEWRULE",
	rtnl.RTM_DELROUTE: "RTM_DELROUTE", rtnl.RTM_NEWADDR: "RTM_NEWADDR", rtnl.RTM_DELADDR: "RTM_DELADDR",
	rtnl.RTM_DELLINK: "RTM_DELLINK", rtnl.RTM_SETLINK: "RTM_SETLINK",
	rtnl.RTM_DELRULE: "RTM_DELRULE", rtnl.RTM_GETRULE: "RTM_GETRULE",
	// The startup dumps and gets (nsmgr/startup.go).
	rtnl.RTM_GETNEIGH: "RTM_GETNEIGH", rtnl.RTM_GETNETCONF: "RTM_GETNETCONF", rtnl.RTM_GETNEXTHOP: "RTM_GETNEXTHOP",
	rtnl.RTM_GETNEXTHOPBUCKET: "RTM_GETNEXTHOPBUCKET", rtnl.RTM_GETADDRLABEL: "RTM_GETADDRLABEL",
	rtnl.RTM_GETMULTICAST: "RTM_GETMULTICAST", rtnl.RTM_GETANYCAST: "RTM_GETANYCAST", rtnl.RTM_GETSTATS: "RTM_GETSTATS",
	rtnl.RTM_GETQDISC: "RTM_GETQDISC", rtnl.RTM_GETTCLASS: "RTM_GETTCLASS", rtnl.RTM_GETTFILTER: "RTM_GETTFILTER",
	rtnl.RTM_GETCHAIN: "RTM_GETCHAIN", rtnl.RTM_GETACTION: "RTM_GETACTION", rtnl.RTM_GETNSID: "RTM_GETNSID",
	rtnl.RTM_GETMDB: "RTM_GETMDB",
}

var familyNames = map[uint8]string{rtnl.AF_INET: "inet", rtnl.AF_INET6: "inet6", rtnl.RTNL_FAMILY_IPMR: "ipmr", rtnl.RTNL_FAMILY_IP6MR: "ip6mr"}

// Stats returns the server's counters. It takes no socket's lock, so it may
// be called from any socket's handler.
func (s *Server) Stats() Stats {
	ls := s.rtnlLock.Stats()
	tot := s.totals()
	st := Stats{
		RTNLMode: s.rcfg.Mode.String(), RTNLAcquisitions: ls.Acquisitions,
		RTNLWaitS: ls.Wait.Seconds(), RTNLHoldS: ls.Hold.Seconds(),
		Namespaces: s.nsm.Len(), Datagrams: tot.datagrams,
		Messages: map[string]uint64{}, Errors: map[string]uint64{}, Rules: map[string]int{},
		Routes: map[string]int{}, RouteChanges: map[string]uint64{
			"inet_rtnl":    nsmgr.RouteChanges.IPv4RTNL.Load(),
			"inet6_writer": nsmgr.RouteChanges.IPv6Writer.Load(),
		},
		PeakRSSBytes: peakRSSBytes(),
	}
	st.Sockets = s.connCount()
	for t := range tot.byType {
		if n := tot.byType[t]; n > 0 {
			name, ok := typeNames[t]
			if !ok {
				name = "type_" + itoa(t)
			}
			st.Messages[name] = n
		}
	}
	for e := range tot.byErrno {
		if n := tot.byErrno[e]; n > 0 {
			st.Errors[errnoName(syscall.Errno(e))] = n
		}
	}
	s.nsm.Each(func(ns *nsmgr.Namespace) {
		for id, name := range familyNames {
			st.Rules[name] += ns.Rules(id).Len()
		}
		st.Routes["inet"] += ns.IPv4Tables().Routes()
		st.Routes["inet6"] += ns.IPv6Tables().Routes()
	})
	return st
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}

var errnoNames = map[syscall.Errno]string{
	syscall.EPERM: "EPERM", syscall.ENOENT: "ENOENT", syscall.EEXIST: "EEXIST", syscall.EINVAL: "EINVAL",
	syscall.ERANGE: "ERANGE", syscall.EOPNOTSUPP: "EOPNOTSUPP", syscall.EAFNOSUPPORT: "EAFNOSUPPORT",
	syscall.ENOBUFS: "ENOBUFS", syscall.EBUSY: "EBUSY", syscall.ENODEV: "ENODEV", syscall.ENOMEM: "ENOMEM",
}

func errnoName(e syscall.Errno) string {
	if n, ok := errnoNames[e]; ok {
		return n
	}
	return "errno_" + itoa(int(e))
}
