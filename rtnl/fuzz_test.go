package rtnl

import (
	"testing"
)

// FuzzDecoders feeds arbitrary datagrams through every decoder: framing,
// rule header and attribute policy, link requests, and the reply encoders.
// Nothing may panic, and a rule that parses must re-encode.
func FuzzDecoders(f *testing.F) {
	f.Add([]byte{36, 0, 0, 0, 32, 0, 5, 6, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 8, 0, 5, 0, 0, 1, 0, 0, 0, 0, 8, 0, 2, 0, 10, 0, 0, 0})
	f.Add([]byte{20, 0, 0, 0, 34, 0, 1, 3, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0})
	f.Add([]byte{16, 0, 0, 0, 18, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, m := range SplitDatagram(b) {
			if int(m.Header.Length) != len(m.Raw) || len(m.Data) != len(m.Raw)-NLMSG_HDRLEN {
				t.Fatalf("bad framing: %+v", m.Header)
			}
			_ = AppendAck(nil, &m, 1, Errorf(22, "x"), AckOptions{ExtAck: true})
			_ = AppendAck(nil, &m, 1, nil, AckOptions{})
			for kind := range LinkDump + 1 {
				_, _, _ = DecodeLinkRequest(&m, kind)
			}
			r, err := DecodeRuleHeader(&m)
			if err != nil {
				continue
			}
			if perr := r.ParseAttrs(); perr != nil {
				if perr.Msg != "Error parsing msg" || perr.Offset < ruleAttrBase {
					t.Fatalf("policy error without offset: %+v", perr)
				}
				continue
			}
			out := AppendRule(nil, RTM_NEWRULE, 0, 0, 0, r)
			if len(SplitDatagram(out)) != 1 {
				t.Fatalf("re-encoded rule does not frame")
			}
		}
	})
}
