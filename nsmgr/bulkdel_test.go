package nsmgr

import (
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nlemu/nlemu/rtnl"
)

// TestBulkDeleteNotSupported: rtnetlink_rcv_msg() refuses NLM_F_BULK on a
// delete whose handler lacks RTNL_FLAG_BULK_DEL_SUPPORTED with EOPNOTSUPP
// "Bulk delete is not supported" before the handler runs (measured:
// integration's malformed corpus, case "del rule with dump flags", which
// sets NLM_F_DUMP = NLM_F_BULK|NLM_F_ROOT on RTM_DELRULE). No rtnetlink
// family nlemu serves supports it; a delete without the flag reaches the
// handler.
func TestBulkDeleteNotSupported(t *testing.T) {
	ns := newNamespace("bulk", &rtnl.LockConfig{RTNL: &rtnl.RTNL{}})
	bodies := map[uint16][]byte{
		rtnl.RTM_DELRULE:  {rtnl.AF_INET, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0},
		rtnl.RTM_DELROUTE: {rtnl.AF_INET, 32, 0, 0, 254, 0, 0, 0, 0, 0, 0, 0},
		rtnl.RTM_DELADDR:  {rtnl.AF_INET, 24, 0, 0, 1, 0, 0, 0},
		rtnl.RTM_DELLINK:  make([]byte, 16),
	}
	for typ, body := range bodies {
		for _, flags := range []uint16{0x200, 0x300} {
			m := rtnl.SplitDatagram(rtnl.AppendMessage(nil, typ, rtnl.NLM_F_REQUEST|rtnl.NLM_F_ACK|flags, 1, 0, body))[0]
			_, err := ns.Do(&Request{Msg: &m})
			want := rtnl.Errorf(syscall.EOPNOTSUPP, "Bulk delete is not supported")
			if d := cmp.Diff(want, err); d != "" {
				t.Errorf("type %d flags %#x: (-want +got)\n%s", typ, flags, d)
			}
		}
		m := rtnl.SplitDatagram(rtnl.AppendMessage(nil, typ, rtnl.NLM_F_REQUEST|rtnl.NLM_F_ACK, 1, 0, body))[0]
		if _, err := ns.Do(&Request{Msg: &m}); err != nil && err.Msg == "Bulk delete is not supported" {
			t.Errorf("type %d without NLM_F_BULK refused as bulk", typ)
		}
	}
}
