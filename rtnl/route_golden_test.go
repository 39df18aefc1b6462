package rtnl

import (
	"bufio"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// goldenCase is one request recorded by testdata/capture_routes.py and the
// kernel's reply messages.
type goldenCase struct {
	name   string
	strict bool
	req    []byte
	reps   [][]byte
	ntfs   [][]byte // notifications a "notify" case recorded
}

func loadGolden(t *testing.T) []goldenCase { return loadGoldenF(t) }

func loadGoldenF(t testing.TB) []goldenCase {
	t.Helper()
	f, err := os.Open("testdata/routes.golden")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cs []goldenCase
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), " ")
		switch k {
		case "case":
			name, strict, _ := strings.Cut(v, " ")
			cs = append(cs, goldenCase{name: name, strict: strict == "strict=1"})
		case "req", "rep", "ntf":
			b, err := hex.DecodeString(v)
			if err != nil {
				t.Fatal(err)
			}
			c := &cs[len(cs)-1]
			switch k {
			case "req":
				c.req = b
			case "rep":
				c.reps = append(c.reps, b)
			default:
				c.ntfs = append(c.ntfs, b)
			}
		}
	}
	if len(cs) == 0 {
		t.Fatal("no golden cases")
	}
	return cs
}

// TestRouteGoldenReplies decodes every route message the kernel sent
// (dumps of both families with every route type, multipath, metrics,
// realms, via, expiring and source routes; route-get replies of the output
// and input paths, fibmatch, IPv6 selected source; RTM_NEWROUTE and
// RTM_DELROUTE notifications of adds, replaces, appends, deletes, ECMP
// siblings and flushes) and asserts that AppendRoute of the decoded value
// reproduces it byte for byte.
func TestRouteGoldenReplies(t *testing.T) {
	n := 0
	for _, c := range loadGolden(t) {
		for i, rep := range append(append([][]byte{}, c.reps...), c.ntfs...) {
			msgs := SplitDatagram(rep)
			if len(msgs) != 1 {
				t.Fatalf("%s[%d]: %d messages", c.name, i, len(msgs))
			}
			m := &msgs[0]
			if m.Header.Type != RTM_NEWROUTE && m.Header.Type != RTM_DELROUTE {
				continue
			}
			r, err := DecodeRoute(m)
			if err != nil {
				t.Fatalf("%s[%d]: %v", c.name, i, err)
			}
			h := m.Header
			got := AppendRoute(nil, uint16(h.Type), uint16(h.Flags), h.Sequence, h.PID, r)
			if d := cmp.Diff(hex.EncodeToString(rep), hex.EncodeToString(got)); d != "" {
				t.Errorf("%s[%d]: re-encoding differs (-kernel +ours):\n%s", c.name, i, d)
			}
			n++
		}
	}
	if n < 150 {
		t.Errorf("only %d route messages in the golden file", n)
	}
}

// TestRouteGoldenDecodeErrors replays the recorded malformed requests
// through the decoder a handler would use (DecodeRouteRequest for
// NEWROUTE/DELROUTE, DecodeRouteGet for a get, DecodeRouteDumpDev for a
// dump, with devices 1..9)
// and asserts that our NLMSG_ERROR (or, for dumps, NLMSG_DONE) is the
// kernel's byte for byte: errno, extack text, offset, policy. Cases named
// "-ok" or "-ignored" are requests the kernel's decoding accepts (its
// reply comes from a later, semantic check): the decoder must accept them.
func TestRouteGoldenDecodeErrors(t *testing.T) {
	n := 0
	for _, c := range loadGolden(t) {
		if !strings.HasPrefix(c.name, "err-") {
			continue
		}
		n++
		t.Run(c.name, func(t *testing.T) {
			msgs := SplitDatagram(c.req)
			if len(msgs) != 1 {
				t.Fatalf("request: %d messages", len(msgs))
			}
			m := &msgs[0]
			last := c.reps[len(c.reps)-1]
			kern := SplitDatagram(last)[0]
			pid := kern.Header.PID
			accept := strings.HasSuffix(c.name, "-ok") || strings.HasSuffix(c.name, "-ignored")
			var err *Error
			dump := false
			switch {
			case m.Header.Type == RTM_GETROUTE && m.Header.Flags&NLM_F_DUMP == NLM_F_DUMP:
				dump = true
				_, err = DecodeRouteDumpDev(m, c.strict, func(i int32) bool { return i > 0 && i < 10 })
			case m.Header.Type == RTM_GETROUTE:
				_, err = DecodeRouteGet(m, c.strict)
			case len(m.Data) == 0:
				// rtnetlink_rcv_msg() acks a body without even a
				// family byte as a success before any handler; the
				// dispatcher does that, not the decoder.
				accept = true
			default:
				_, err = DecodeRouteRequest(m)
			}
			if accept {
				if err != nil {
					t.Fatalf("decode failed: %v (kernel: %x)", err, last)
				}
				return
			}
			if err == nil {
				t.Fatalf("decode accepted; kernel answered %x", last)
			}
			var got []byte
			if dump {
				got = AppendDone(nil, m.Header.Sequence, pid, err, true)
			} else {
				got = AppendAck(nil, m, pid, err, AckOptions{ExtAck: true})
			}
			if d := cmp.Diff(hex.EncodeToString(last), hex.EncodeToString(got)); d != "" {
				t.Errorf("ack differs (-kernel +ours) for %v:\n%s", err, d)
			}
		})
	}
	if n < 40 {
		t.Errorf("only %d error cases", n)
	}
}

// TestRouteGoldenMetrics replays the recorded RTA_METRICS requests through
// ConvertMetrics (ip_metrics_convert()): failures must produce the
// kernel's ack byte for byte; successes ("-ok") must store what the
// kernel's following fibmatch reply ("-show") reports, clamps included
// (TestMetricsClampQuirk covers the clamps alone).
func TestRouteGoldenMetrics(t *testing.T) {
	cs := loadGolden(t)
	n := 0
	for i, c := range cs {
		if !strings.HasPrefix(c.name, "met-") || strings.HasSuffix(c.name, "-show") {
			continue
		}
		n++
		m := &SplitDatagram(c.req)[0]
		r, err := DecodeRouteRequest(m)
		if err != nil {
			t.Fatalf("%s: decode: %v", c.name, err)
		}
		x, err := r.ConvertMetrics(nil)
		if !strings.HasSuffix(c.name, "-ok") {
			if err == nil {
				t.Errorf("%s: converted; kernel refused", c.name)
				continue
			}
			kern := c.reps[0]
			got := AppendAck(nil, m, SplitDatagram(kern)[0].Header.PID, err, AckOptions{ExtAck: true})
			if d := cmp.Diff(hex.EncodeToString(kern), hex.EncodeToString(got)); d != "" {
				t.Errorf("%s: ack differs (-kernel +ours):\n%s", c.name, d)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v; kernel accepted", c.name, err)
			continue
		}
		if i+1 >= len(cs) || !strings.HasSuffix(cs[i+1].name, "-show") {
			continue
		}
		shown, derr := DecodeRoute(&SplitDatagram(cs[i+1].reps[0])[0])
		if derr != nil {
			t.Fatal(derr)
		}
		if d := cmp.Diff(appendMetrics(nil, &shown.Metrics), appendMetrics(nil, &x)); d != "" {
			t.Errorf("%s: stored metrics differ (-kernel +ours):\n%s", c.name, d)
		}
	}
	if n < 8 {
		t.Errorf("only %d metrics cases", n)
	}
}

// TestRouteGoldenEncap replays the recorded RTA_ENCAP_TYPE requests through
// ValidEncapType / ValidMultipathEncap: the kernel's unknown / unsupported
// answers byte for byte, and nil for the types it has built in ("-ok",
// which the kernel then fails on the prefix length the case sets).
func TestRouteGoldenEncap(t *testing.T) {
	n := 0
	for _, c := range loadGolden(t) {
		if !strings.HasPrefix(c.name, "enc-") || strings.HasSuffix(c.name, "-order") {
			continue
		}
		n++
		m := &SplitDatagram(c.req)[0]
		r, err := DecodeRouteRequest(m)
		if err != nil {
			t.Fatalf("%s: decode: %v", c.name, err)
		}
		if r.Has(RTA_MULTIPATH) {
			err = ValidMultipathEncap(r.Multipath)
		} else {
			err = ValidEncapType(r.EncapType)
		}
		if strings.HasSuffix(c.name, "-ok") {
			if err != nil {
				t.Errorf("%s: %v; the kernel accepts the type", c.name, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: accepted; the kernel refused", c.name)
			continue
		}
		kern := c.reps[0]
		got := AppendAck(nil, m, SplitDatagram(kern)[0].Header.PID, err, AckOptions{ExtAck: true})
		if d := cmp.Diff(hex.EncodeToString(kern), hex.EncodeToString(got)); d != "" {
			t.Errorf("%s: ack differs (-kernel +ours):\n%s", c.name, d)
		}
	}
	if n < 9 {
		t.Errorf("only %d encap cases", n)
	}
}

// TestRouteGoldenAttrLoop replays the recorded requests whose answer comes
// from rtm_to_fib_config()'s attribute loop through CheckAttrLoop4: RTA_VIA
// errors, and the message order between RTA_VIA, RTA_MULTIPATH and
// RTA_ENCAP_TYPE failures, byte for byte; "-ok" requests pass the loop.
// ("-order" cases record that the tos and type checks come first, which
// is the caller's part.)
func TestRouteGoldenAttrLoop(t *testing.T) {
	n := 0
	for _, c := range loadGolden(t) {
		if !strings.HasPrefix(c.name, "loop-") || strings.HasSuffix(c.name, "-order") {
			continue
		}
		n++
		m := &SplitDatagram(c.req)[0]
		r, err := DecodeRouteRequest(m)
		if err != nil {
			t.Fatalf("%s: decode: %v", c.name, err)
		}
		err = r.CheckAttrLoop4()
		if strings.HasSuffix(c.name, "-ok") {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: passed; the kernel refused", c.name)
			continue
		}
		kern := c.reps[0]
		got := AppendAck(nil, m, SplitDatagram(kern)[0].Header.PID, err, AckOptions{ExtAck: true})
		if d := cmp.Diff(hex.EncodeToString(kern), hex.EncodeToString(got)); d != "" {
			t.Errorf("%s: ack differs (-kernel +ours):\n%s", c.name, d)
		}
	}
	if n < 9 {
		t.Errorf("only %d loop cases", n)
	}
}
