package rtnl

import (
	"bytes"
	"testing"
)

// FuzzRouteDecode feeds arbitrary route messages (seeded with iproute2's
// recorded requests and the kernel's recorded replies) through every route
// decoder: nothing may panic, an error's offset must point inside the
// message, and encoding is stable: AppendRoute(DecodeRoute(x)) decodes to a
// value that encodes to the same bytes.
func FuzzRouteDecode(f *testing.F) {
	for _, q := range loadIPRequests(f) {
		f.Add(q.msg.Raw)
	}
	for _, c := range loadGoldenF(f) {
		f.Add(c.req)
		for _, r := range append(c.reps, c.ntfs...) {
			f.Add(r)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, m := range SplitDatagram(b) {
			check := func(what string, err *Error) {
				if err != nil && err.Offset != 0 && (err.Offset < routeAttrBase || int(err.Offset) >= len(m.Raw)) {
					t.Fatalf("%s: offset %d outside a %d-byte message: %v", what, err.Offset, len(m.Raw), err)
				}
			}
			r, err := DecodeRouteRequest(&m)
			check("request", err)
			if err == nil {
				_, _ = r.ConvertMetrics(nil)
				check("attribute loop", r.CheckAttrLoop4())
				check("multipath encap", ValidMultipathEncap(r.Multipath))
			}
			for _, strict := range []bool{false, true} {
				_, err = DecodeRouteGet(&m, strict)
				check("get", err)
				_, err = DecodeRouteDump(&m, strict)
				check("dump", err)
			}
			r, err = DecodeRoute(&m)
			if err != nil {
				continue
			}
			b1 := AppendRoute(nil, RTM_NEWROUTE, NLM_F_MULTI, 1, 2, r)
			ms := SplitDatagram(b1)
			if len(ms) != 1 || len(ms[0].Raw) != len(b1) {
				t.Fatalf("re-encoded route does not frame: %x", b1)
			}
			r2, err := DecodeRoute(&ms[0])
			if err != nil {
				t.Fatalf("re-encoded route does not decode: %v", err)
			}
			if b2 := AppendRoute(nil, RTM_NEWROUTE, NLM_F_MULTI, 1, 2, r2); !bytes.Equal(b1, b2) {
				t.Fatalf("encoding not stable:\n%x\n%x", b1, b2)
			}
		}
	})
}

// FuzzParseAck feeds arbitrary datagrams (seeded with the kernel's recorded
// acks and dump ends) to ParseAck and the attribute walker: nothing may
// panic, the echo stays inside the message, and a parsed NLMSG_DONE error
// re-encodes to a message that parses to the same error.
func FuzzParseAck(f *testing.F) {
	for _, c := range loadGoldenF(f) {
		for _, r := range c.reps {
			f.Add(r)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for a := range Attrs(b) {
			if a.Off < 0 || a.Off+nlaHdrLen+len(a.Data) > len(b) {
				t.Fatalf("attribute outside the buffer: %+v", a)
			}
		}
		if l := AttrsLeftover(b); l > len(b) || l < -3 {
			t.Fatalf("leftover %d of %d", l, len(b))
		}
		for _, m := range SplitDatagram(b) {
			a, ok := ParseAck(&m)
			if !ok {
				continue
			}
			if len(a.Echo) > len(m.Data) {
				t.Fatalf("echo longer than the message")
			}
			if a.Type != NLMSG_DONE {
				continue
			}
			err := a.Error()
			out := AppendDoneFlags(nil, 1, 2, err, true, 0)
			b2, ok := ParseAck(&SplitDatagram(out)[0])
			if !ok || b2.Err.Errno != a.Err.Errno {
				t.Fatalf("re-encoded done: %+v vs %+v", b2, a)
			}
			if err != nil && (b2.Err.Msg != a.Err.Msg || b2.Err.Offset != a.Err.Offset) {
				t.Fatalf("re-encoded done lost TLVs: %+v vs %+v", b2.Err, a.Err)
			}
		}
	})
}
