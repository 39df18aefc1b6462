package nsmgr

import (
	"syscall"

	"github.com/nlemu/nlemu/netdev"
	"github.com/nlemu/nlemu/rtnl"
)

func linkMsg(l netdev.Link) *rtnl.LinkMsg {
	return &rtnl.LinkMsg{Type: l.Type, Index: l.Index, Flags: l.Flags, Name: []byte(l.Name), MTU: l.MTU}
}

// getLink answers RTM_GETLINK by index or name (rtnl_getlink()): one
// RTM_NEWLINK unicast, or ENODEV.
func (ns *Namespace) getLink(req *Request) *rtnl.Error {
	q := rtnl.DecodeLinkRequest(req.Msg)
	var (
		l  netdev.Link
		ok bool
	)
	switch {
	case q.Index > 0:
		l, ok = ns.devs.ByIndex(q.Index)
	case q.HasName:
		l, ok = ns.devs.ByIndex(ns.devs.IndexByName(q.Name))
	default:
		return rtnl.Errorf(syscall.EINVAL, "Invalid interface name or index")
	}
	if !ok {
		return rtnl.Errno(syscall.ENODEV)
	}
	if req.Self != nil {
		req.Self.Deliver(rtnl.AppendLink(nil, 0, req.Msg.Header.Sequence, req.PortID, linkMsg(l)))
	}
	return nil
}

type linkDump struct {
	links    []netdev.Link
	i        int
	seq, pid uint32
}

func (ns *Namespace) dumpLinks(req *Request) Dumper {
	return &linkDump{links: ns.devs.Links(), seq: req.Msg.Header.Sequence, pid: req.PortID}
}

func (d *linkDump) Err() *rtnl.Error { return nil }

func (d *linkDump) Fill(dst []byte, limit int) ([]byte, bool) {
	for ; d.i < len(d.links); d.i++ {
		n := len(dst)
		dst = rtnl.AppendLink(dst, rtnl.NLM_F_MULTI, d.seq, d.pid, linkMsg(d.links[d.i]))
		if len(dst) > limit && n > 0 {
			return dst[:n], false
		}
	}
	return dst, true
}
