package nsmgr

// The dispatch table: the kernel's rtnl_register() table and
// rtnetlink_rcv_msg(). Every rtnetlink request is routed by (message type,
// family) to a row that names its doit and its dumpit and says which lock
// the dispatcher takes for it. A family without its own row for the type
// falls back to the AF_UNSPEC row, as rtnl_get_link() does; a type with no
// row at all is EOPNOTSUPP.
//
// To add a handler, add a row to rtnlTable (one line per (family, type)); a
// (family, type) may have two rows, one with the doit and one with the
// dumpit. A family whose dump startup.go answers today (startupFamilies)
// leaves that list when it gets its own dumpit row; the AF_UNSPEC
// rtnl_dump_all() row then runs the new one, in family order. Rows with
// lockRTNL run with RTNL held: their handlers must not take it again.

import (
	"syscall"

	"github.com/nlemu/nlemu/rtnl"
)

// doitFunc handles a non-dump request; its result is acknowledged.
type doitFunc func(ns *Namespace, req *Request) *rtnl.Error

// dumpitFunc starts a dump. An error returned here ends the request with an
// NLMSG_ERROR (netlink_dump_start() failing); errors found while dumping
// belong in the Dumper's Err, which ends the dump's NLMSG_DONE.
type dumpitFunc func(ns *Namespace, req *Request) (Dumper, *rtnl.Error)

// rowFlags are a row's rtnl_link flags.
type rowFlags uint8

const (
	// lockRTNL: the dispatcher holds RTNL around the doit — the kernel's
	// default for a handler registered without RTNL_FLAG_DOIT_UNLOCKED.
	// Rows without it (rules, IPv6 routes, gets) take whatever lock they
	// need themselves.
	lockRTNL rowFlags = 1 << iota
	// dumpAll marks an AF_UNSPEC dump row whose dumpit is rtnl_dump_all():
	// every family's own dumpit of the type, in family order, until one
	// fails. Such a row has no dumpit of its own.
	dumpAll
)

// row is one entry of rtnlTable.
type row struct {
	family uint8
	typ    uint16
	doit   doitFunc
	dumpit dumpitFunc
	flags  rowFlags
}

// rtnlTable lists every registered (family, type). Permission is not a row
// property: rtnetlink_rcv_msg() requires CAP_NET_ADMIN for every kind but
// GET, before the table is consulted (see Namespace.Do).
var rtnlTable = []row{
	// Rules: fib_rules_init() registers AF_UNSPEC handlers, unlocked; the
	// rule ops decide per request whether to take RTNL (seed 004).
	{family: rtnl.AF_UNSPEC, typ: rtnl.RTM_NEWRULE, doit: (*Namespace).changeRule},
	{family: rtnl.AF_UNSPEC, typ: rtnl.RTM_DELRULE, doit: (*Namespace).changeRule},
	{family: rtnl.AF_UNSPEC, typ: rtnl.RTM_GETRULE, dumpit: dumpRulesRow},

	// Links: rtnetlink_init().
	{family: rtnl.AF_UNSPEC, typ: rtnl.RTM_GETLINK, doit: (*Namespace).getLink, dumpit: dumpLinksRow},
	{family: rtnl.AF_UNSPEC, typ: rtnl.RTM_NEWLINK, doit: (*Namespace).setLink, flags: lockRTNL},
	{family: rtnl.AF_UNSPEC, typ: rtnl.RTM_SETLINK, doit: (*Namespace).setLink, flags: lockRTNL},
	{family: rtnl.AF_UNSPEC, typ: rtnl.RTM_DELLINK, doit: (*Namespace).delLink, flags: lockRTNL},

	// Namespace ids: net_ns_init().
	{family: rtnl.AF_UNSPEC, typ: rtnl.RTM_GETNSID, doit: (*Namespace).getNSID},
}

// dispatchKey indexes the table.
type dispatchKey struct {
	typ    uint16
	family uint8
}

var dispatch = buildDispatch(append(append(append(append(rtnlTable, startupRows()...), routeRows()...), addrRows()...), routeGetRows()...))

func buildDispatch(rows []row) map[dispatchKey]row {
	t := make(map[dispatchKey]row, len(rows))
	for _, r := range rows {
		// One (family, type) may be registered twice, once with its doit
		// and once with its dumpit (rtnl_register() takes both at once,
		// but here a family's get and its dump live in different files).
		k := dispatchKey{r.typ, r.family}
		if o, ok := t[k]; ok {
			if (o.doit != nil && r.doit != nil) || (o.dumpit != nil && r.dumpit != nil) || o.flags&dumpAll != 0 && r.flags&dumpAll != 0 {
				panic("nsmgr: two rtnetlink handlers for one (family, type)")
			}
			if r.doit != nil {
				o.doit = r.doit
			}
			if r.dumpit != nil {
				o.dumpit = r.dumpit
			}
			o.flags |= r.flags
			r = o
		}
		t[k] = r
	}
	return t
}

// lookupRow is rtnl_get_link() with the AF_UNSPEC fallback of
// rtnetlink_rcv_msg(): the family's row if it has the wanted handler, else
// the AF_UNSPEC row.
func lookupRow(family uint8, typ uint16, dump bool) (row, bool) {
	has := func(r *row) bool {
		if dump {
			return r.dumpit != nil || r.flags&dumpAll != 0
		}
		return r.doit != nil
	}
	if r := dispatchRow(typ, family); r != nil && has(r) {
		return *r, true
	}
	if r := dispatchRow(typ, rtnl.AF_UNSPEC); r != nil && has(r) {
		return *r, true
	}
	return row{}, false
}

// dispatchByType is dispatch indexed by type, then family (up to the
// type's highest registered family): the per-request lookup, where the
// map's hashing was a twentieth of an in-process route get.
var dispatchByType = indexDispatch(dispatch)

// indexDispatch builds dispatchByType from the map (a test that replaces
// dispatch rebuilds it).
func indexDispatch(d map[dispatchKey]row) (t *[rtnl.RTM_MAX + 1][]row) {
	t = new([rtnl.RTM_MAX + 1][]row)
	for k, r := range d {
		rs := t[k.typ]
		if int(k.family) >= len(rs) {
			rs = append(rs, make([]row, int(k.family)+1-len(rs))...)
		}
		rs[k.family] = r
		t[k.typ] = rs
	}
	return t
}

// dispatchRow is the row of (typ, family), nil when none is registered.
func dispatchRow(typ uint16, family uint8) *row {
	if int(typ) >= len(dispatchByType) {
		return nil
	}
	rs := dispatchByType[typ]
	if int(family) >= len(rs) {
		return nil
	}
	return &rs[family]
}

// dumpFamilies lists, in family order, the families with their own dumpit
// of typ: what rtnl_dump_all() iterates.
func dumpFamilies(typ uint16) []uint8 {
	var fams []uint8
	for f := 1; f < 256; f++ {
		if r, ok := dispatch[dispatchKey{typ, uint8(f)}]; ok && r.dumpit != nil {
			fams = append(fams, uint8(f))
		}
	}
	return fams
}

// nlmFBulk is NLM_F_BULK, a delete's modifier (NLM_F_EXCL's bit).
const nlmFBulk = 0x200

// Do handles one request (rtnetlink_rcv_msg()). It returns a Dumper when the
// request started a dump (no ACK follows), or the outcome to acknowledge: an
// error, or nil; an *rtnl.Error with Errno 0 is a success carrying a
// warning for the ACK.
func (ns *Namespace) Do(req *Request) (Dumper, *rtnl.Error) {
	m := req.Msg
	typ := uint16(m.Header.Type)
	if typ > rtnl.RTM_MAX {
		return nil, rtnl.Errno(syscall.EOPNOTSUPP)
	}
	// "All the messages must have at least 1 byte length".
	if len(m.Data) < 1 {
		return nil, nil
	}
	family := m.Data[0] // rtnl_msg_family()
	isGet := (typ-16)&3 == 2
	// rtnetlink_rcv_msg(): every kind but GET needs CAP_NET_ADMIN, checked
	// after the length and before the family or the handler is looked up.
	if !isGet && req.ReadOnly {
		return nil, rtnl.Errno(syscall.EPERM)
	}
	if isGet && uint16(m.Header.Flags)&rtnl.NLM_F_DUMP != 0 {
		r, ok := lookupRow(family, typ, true)
		if !ok {
			return nil, rtnl.Errno(syscall.EOPNOTSUPP)
		}
		if r.flags&dumpAll != 0 {
			// The families after the first start in later datagrams,
			// after the server has reused the request's buffer: keep a
			// copy of the request.
			rq, mc := *req, *m
			mc.Data = append([]byte(nil), m.Data...)
			rq.Msg = &mc
			// The lent reply buffer is the socket's again once this
			// request returns; later batches must not write into it.
			rq.Reply = nil
			return &allDump{ns: ns, req: &rq, fams: dumpFamilies(typ), typ: typ}, nil
		}
		return r.dumpit(ns, req)
	}
	r, ok := lookupRow(family, typ, false)
	if !ok {
		return nil, rtnl.Errno(syscall.EOPNOTSUPP)
	}
	// rtnetlink_rcv_msg(): NLM_F_BULK (0x200, NLM_F_EXCL's bit) on a
	// delete is refused unless the handler has
	// RTNL_FLAG_BULK_DEL_SUPPORTED, which none of nlemu's families has
	// (only neighbours and the bridge FDB do).
	if (typ-16)&3 == 1 && uint16(m.Header.Flags)&nlmFBulk != 0 {
		return nil, rtnl.Errorf(syscall.EOPNOTSUPP, "Bulk delete is not supported")
	}
	if r.flags&lockRTNL != 0 && ns.cfg != nil && ns.cfg.RTNL != nil {
		ns.cfg.RTNL.Lock()
		defer ns.cfg.RTNL.Unlock()
	}
	return nil, r.doit(ns, req)
}

// allDump is rtnl_dump_all(): each family's dumpit in turn, started when the
// one before it is complete (so its request checks run then, as in the
// kernel), until one fails; the failing family's error ends the dump.
type allDump struct {
	ns     *Namespace
	req    *Request
	typ    uint16
	fams   []uint8
	i      int    // cb->family: the family being dumped
	cur    Dumper // its dumper, nil before it starts
	err    *rtnl.Error
	answer uint16
}

func (d *allDump) Err() *rtnl.Error { return d.err }

// AnswerFlags is the union of the families' answer flags.
func (d *allDump) AnswerFlags() uint16 { return d.answer }

func (d *allDump) Fill(dst []byte, limit int) ([]byte, bool) {
	for d.i < len(d.fams) {
		if d.cur == nil {
			r := dispatch[dispatchKey{d.typ, d.fams[d.i]}]
			cur, err := r.dumpit(d.ns, d.req)
			if err != nil && err.Errno != 0 {
				d.err = err
				return dst, true
			}
			d.cur = cur
		}
		var done bool
		dst, done = d.cur.Fill(dst, limit)
		if f, ok := d.cur.(AnswerFlagger); ok {
			d.answer |= f.AnswerFlags()
		}
		if !done {
			return dst, false
		}
		if err := d.cur.Err(); err != nil {
			d.err = err
			if err.Errno != 0 {
				return dst, true
			}
		}
		d.cur = nil
		d.i++
	}
	return dst, true
}

func dumpRulesRow(ns *Namespace, req *Request) (Dumper, *rtnl.Error) { return ns.dumpRules(req), nil }
func dumpLinksRow(ns *Namespace, req *Request) (Dumper, *rtnl.Error) { return ns.dumpLinks(req), nil }

// getNSID is rtnl_net_getid(): nlemu namespaces have no ids for kernel netns
// files, so every peer is "not assigned" (-1), as for a namespace the
// kernel has not numbered (`ip monitor` asks for each one).
func (ns *Namespace) getNSID(req *Request) *rtnl.Error {
	if req.Self != nil {
		var body [4]byte
		nsid := []byte{8, 0, 1, 0, 0xff, 0xff, 0xff, 0xff} // NETNSA_NSID = -1
		req.Self.Deliver(rtnl.AppendMessage(nil, rtnl.RTM_NEWNSID, 0, req.Msg.Header.Sequence, req.PortID, body[:], nsid))
	}
	return nil
}
