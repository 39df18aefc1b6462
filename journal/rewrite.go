package journal

import (
	"bytes"
	"encoding/binary"
	"errors"

	"github.com/nlemu/nlemu/nsmgr"
	"github.com/nlemu/nlemu/rtnl"
)

// Compaction of live namespaces. A snapshot holds the history of the
// namespaces that still exist, and a namespace whose rules are added and
// deleted again and again would keep every one of those records. For a
// namespace whose folded history is rules only (RTM_NEWRULE and
// RTM_DELRULE requests: what `ip rule` and rule churn send), compact
// replaces that history with the requests that rebuild its rules from a
// fresh namespace: the deletion of each rule a fresh namespace starts with,
// then the addition of each rule its dump shows, in dump order (the kernel
// inserts a rule after those of its priority, so the order comes out the
// same), as iproute2's `ip rule restore` replays `ip rule save`. The state
// is the one at the folded journals' end, so the rewrite is consistent with
// the journal position by construction: it is computed by replaying the
// history in a shadow namespace, off every lock, while the server runs;
// the live namespaces are not touched. A rewrite is kept only when it is
// shorter and when replaying it in another fresh namespace gives the same
// rule dump bytes as the history did; otherwise the history stays (a
// namespace with links, addresses or routes keeps its history: their
// ifindexes, random MACs and derived state depend on it).

var ne = binary.NativeEndian

// minRewrite is the shortest request history worth rewriting.
const minRewrite = 16

// isRuleRequest reports whether a request record's payload is an
// RTM_NEWRULE or RTM_DELRULE message.
func isRuleRequest(p []byte) bool {
	if len(p) < 16 {
		return false
	}
	t := ne.Uint16(p[4:])
	return t == rtnl.RTM_NEWRULE || t == rtnl.RTM_DELRULE
}

// rewriteRuleHistories returns body with the rule-only histories of its
// namespaces rewritten (above), and how many were.
func rewriteRuleHistories(body []record) ([]record, int) {
	type hist struct {
		rulesOnly bool
		add       int // index of its add record (-1: the default namespace)
		reqs      int
		recs      []record // its requests, in order
	}
	hs := map[uint64]*hist{}
	for i, r := range body {
		h := hs[r.NSID]
		if h == nil {
			h = &hist{rulesOnly: true, add: -1}
			hs[r.NSID] = h
		}
		switch r.Kind {
		case kindNetnsAdd:
			h.add = i
		case kindRequest:
			h.reqs++
			h.recs = append(h.recs, r)
			if !isRuleRequest(r.Payload) {
				h.rulesOnly = false
			}
		}
	}
	rewritten := map[uint64][]record{}
	for id, h := range hs {
		if !h.rulesOnly || h.reqs < minRewrite || (id != 0 && h.add < 0) {
			continue
		}
		var name string
		if id != 0 {
			name = string(body[h.add].Payload[32:])
		}
		recs, err := rebuildRules(id, name, h.recs)
		if err != nil || len(recs) >= h.reqs {
			continue
		}
		rewritten[id] = recs
	}
	if len(rewritten) == 0 {
		return body, 0
	}
	out := make([]record, 0, len(body))
	// The default namespace's rebuilt rules go first: it exists before any
	// record (its seed record, when folded, stays where it is).
	out = append(out, rewritten[0]...)
	for _, r := range body {
		if _, ok := rewritten[r.NSID]; ok && r.Kind == kindRequest {
			continue
		}
		out = append(out, r)
		if r.Kind == kindNetnsAdd {
			out = append(out, rewritten[r.NSID]...)
		}
	}
	return out, len(rewritten)
}

// shadow returns a fresh namespace like the one records of namespace id
// rebuild: the default namespace of a new registry, or a namespace added to
// one (their starting rules may differ).
func shadow(id uint64, name string) (*nsmgr.Namespace, error) {
	m := nsmgr.NewManager(&rtnl.LockConfig{})
	if id == 0 {
		ns, _ := m.Get(nsmgr.DefaultName)
		return ns, nil
	}
	if err := m.Add(name); err != nil {
		return nil, err
	}
	ns, _ := m.Get(name)
	return ns, nil
}

var errRebuild = errors.New("rules not rebuilt")

// rebuildRules replays namespace id's rule history reqs in a shadow
// namespace and returns the requests that rebuild its rules from a fresh
// one, checked by replaying them in another.
func rebuildRules(id uint64, name string, reqs []record) ([]record, error) {
	hist, err := shadow(id, name)
	if err != nil {
		return nil, err
	}
	for _, r := range reqs {
		if err := doRecord(hist, r.Payload, r.Flags&flagStrict != 0); err != nil {
			return nil, err
		}
	}
	want, err := dumpRules(hist)
	if err != nil {
		return nil, err
	}
	fresh, err := shadow(id, name)
	if err != nil {
		return nil, err
	}
	start, err := dumpRules(fresh)
	if err != nil {
		return nil, err
	}
	var out []record
	for _, m := range rtnl.SplitDatagram(start) {
		out = append(out, ruleRecord(id, m.Raw, rtnl.RTM_DELRULE, rtnl.NLM_F_REQUEST|rtnl.NLM_F_ACK))
	}
	for _, m := range rtnl.SplitDatagram(want) {
		out = append(out, ruleRecord(id, m.Raw, rtnl.RTM_NEWRULE, rtnl.NLM_F_REQUEST|rtnl.NLM_F_ACK|rtnl.NLM_F_CREATE))
	}
	for _, r := range out {
		if err := doRecord(fresh, r.Payload, false); err != nil {
			return nil, err
		}
	}
	got, err := dumpRules(fresh)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(got, want) {
		return nil, errRebuild
	}
	return out, nil
}

// ruleRecord is a request record of namespace id made from a dumped rule
// message: its type and flags replaced, its sequence number and port zero.
func ruleRecord(id uint64, dumped []byte, typ, flags uint16) record {
	p := append([]byte(nil), dumped...)
	ne.PutUint16(p[4:], typ)
	ne.PutUint16(p[6:], flags)
	ne.PutUint32(p[8:], 0)
	ne.PutUint32(p[12:], 0)
	return record{Kind: kindRequest, NSID: id, Payload: p}
}

// doRecord applies one recorded request to ns.
func doRecord(ns *nsmgr.Namespace, payload []byte, strict bool) error {
	msgs := rtnl.SplitDatagram(payload)
	if len(msgs) != 1 {
		return errRebuild
	}
	if _, err := ns.Do(&nsmgr.Request{Msg: &msgs[0], Strict: strict}); err != nil && err.Errno != 0 {
		return errRebuild
	}
	return nil
}

// dumpRules is ns's rule dump (both families), its messages' bytes with
// sequence numbers and ports as a dump request of 0 gets them.
func dumpRules(ns *nsmgr.Namespace) ([]byte, error) {
	req := rtnl.AppendMessage(nil, rtnl.RTM_GETRULE, rtnl.NLM_F_REQUEST|rtnl.NLM_F_DUMP, 0, 0, make([]byte, 12))
	msgs := rtnl.SplitDatagram(req)
	d, rerr := ns.Do(&nsmgr.Request{Msg: &msgs[0]})
	if rerr != nil && rerr.Errno != 0 || d == nil {
		return nil, errRebuild
	}
	var out []byte
	for {
		var done bool
		out, done = d.Fill(out, len(out)+64<<10)
		if done {
			break
		}
	}
	if e := d.Err(); e != nil && e.Errno != 0 {
		return nil, errRebuild
	}
	return out, nil
}
