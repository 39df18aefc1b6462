package server_test

import (
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nlemu/nlemu/rtnl"
	T "github.com/nlemu/nlemu/rtnl/rtnltest"
	"github.com/nlemu/nlemu/server"
)

// step is one rule operation and the errno it must get.
type step struct {
	op    string // "add", "addnx" (no NLM_F_EXCL), "del"
	body  []byte
	errno syscall.Errno
	msg   string
}

func add(b []byte) step { return step{op: "add", body: b} }
func addErr(b []byte, e syscall.Errno, m string) step {
	return step{op: "add", body: b, errno: e, msg: m}
}
func del(b []byte) step { return step{op: "del", body: b} }
func delErr(b []byte, e syscall.Errno, m string) step {
	return step{op: "del", body: b, errno: e, msg: m}
}

// short renders a family's rules as "pref:table[:action][ extra]" the way
// the spec's `ip rule show` transcripts read.
func short(s *sess, fam uint8) []string {
	rules, done, _ := s.dump(famRules(fam))
	if done.Errno != 0 {
		s.t.Fatalf("dump: %v", done)
	}
	out := make([]string, 0, len(rules))
	for _, r := range rules {
		pref, table := "0", ""
		act := ""
		var extra []string
		i := strings.Index(r, "'action': ")
		a := strings.SplitN(r[i+10:], ",", 2)[0]
		if a != "1" {
			act = ":act" + a
		}
		if strings.Contains(r, "'flags': '0x4'") {
			extra = append(extra, "unresolved")
		}
		for _, f := range strings.Split(r[strings.Index(r, "[")+1:len(r)-1], "), (") {
			f = strings.Trim(f, "()")
			kv := strings.SplitN(f, ", ", 2)
			if len(kv) != 2 {
				continue
			}
			switch kv[0] {
			case "'PRIORITY'":
				pref = kv[1]
			case "'TABLE'":
				table = kv[1]
			case "'SUPPRESS_PREFIXLEN'", "'PROTOCOL'", "'FWMASK'":
			default:
				extra = append(extra, strings.Trim(kv[0], "'")+"="+strings.Trim(kv[1], "'"))
			}
		}
		line := pref + ":" + table + act
		if len(extra) > 0 {
			line += " " + strings.Join(extra, " ")
		}
		out = append(out, line)
	}
	return out
}

func run(t *testing.T, s *sess, steps []step) {
	t.Helper()
	for i, st := range steps {
		var a T.Ack
		switch st.op {
		case "add":
			a = s.add(st.body)
		case "addnx":
			a, _ = s.request(rtnl.RTM_NEWRULE, rtnl.NLM_F_CREATE, st.body)
		case "del":
			a = s.del(st.body)
		}
		if syscall.Errno(a.Errno) != st.errno || a.Msg != st.msg {
			t.Errorf("step %d (%s): got %v, want errno=%d msg=%q", i, st.op, a, st.errno, st.msg)
		}
	}
}

func v4(table uint8, attrs ...T.Attr) []byte { return T.Body(T.V4(table), attrs...) }
func v6(table uint8, attrs ...T.Attr) []byte { return T.Body(T.V6(table), attrs...) }
func src4(a string, l uint8, table uint8, attrs ...T.Attr) []byte {
	h := T.V4(table)
	h.SrcLen = l
	return T.Body(h, append([]T.Attr{T.Addr(rtnl.FRA_SRC, a)}, attrs...)...)
}
func delHdr(fam uint8, attrs ...T.Attr) []byte { return T.Body(T.Hdr{Family: fam}, attrs...) }

// Each test below is named for the kernel quirk it pins down; the expected
// lists are the kernel transcripts of RULES-SPEC.md Appendix A.
func TestQuirkAutoPrioritySecondRuleMinusOne(t *testing.T) { // A3
	s := newSess(t, nil, optsExtAck)
	run(t, s, []step{
		add(src4("10.0.0.1", 32, 100)), add(src4("10.0.0.2", 32, 100)),
		add(src4("10.0.0.3", 32, 100, T.Pref(100))), add(src4("10.0.0.4", 32, 100)),
		add(src4("10.0.0.5", 32, 100, T.Pref(1))), add(src4("10.0.0.6", 32, 100)), add(src4("10.0.0.7", 32, 100)),
		add(src4("10.0.0.1", 32, 100)),
		addErr(src4("10.0.0.1", 32, 100, T.Pref(32765)), syscall.EEXIST, ""),
		add(src4("10.0.0.1", 32, 101, T.Pref(32765))),
	})
	want := []string{"0:255", "0:100 SRC=10.0.0.6", "0:100 SRC=10.0.0.7", "0:100 SRC=10.0.0.1", "1:100 SRC=10.0.0.5",
		"99:100 SRC=10.0.0.4", "100:100 SRC=10.0.0.3", "32764:100 SRC=10.0.0.2", "32765:100 SRC=10.0.0.1",
		"32765:101 SRC=10.0.0.1", "32766:254", "32767:253"}
	if d := cmp.Diff(want, short(s, rtnl.AF_INET)); d != "" {
		t.Errorf("(-kernel +nlemu):\n%s", d)
	}
}

func TestQuirkDefaultRulesDeletableAndAutoPriorityAfterLocalGone(t *testing.T) { // A4
	s := newSess(t, nil, optsExtAck)
	run(t, s, []step{
		del(delHdr(rtnl.AF_INET, T.Pref(0))),
		add(src4("10.0.0.1", 32, 100)),
	})
	if d := cmp.Diff([]string{"32766:254", "32766:100 SRC=10.0.0.1", "32767:253"}, short(s, rtnl.AF_INET)); d != "" {
		t.Errorf("(-kernel +nlemu):\n%s", d)
	}
	run(t, s, []step{
		del(T.Body(T.Hdr{Family: rtnl.AF_INET, Table: 254})),
		del(T.Body(T.Hdr{Family: rtnl.AF_INET, Table: 253})),
		add(src4("10.0.0.2", 32, 100)),
	})
	if d := cmp.Diff([]string{"0:100 SRC=10.0.0.2", "32766:100 SRC=10.0.0.1"}, short(s, rtnl.AF_INET)); d != "" {
		t.Errorf("(-kernel +nlemu):\n%s", d)
	}
	run(t, s, []step{
		delErr(src4("10.0.0.9", 32, 0), syscall.ENOENT, ""),
		del(T.Body(T.Hdr{Family: rtnl.AF_INET, Table: 100})),
		del(T.Body(T.Hdr{Family: rtnl.AF_INET, Table: 100})),
		delErr(T.Body(T.Hdr{Family: rtnl.AF_INET, Table: 100}), syscall.ENOENT, ""),
	})
	if got := short(s, rtnl.AF_INET); len(got) != 0 {
		t.Errorf("list not empty: %v", got)
	}
}

func TestQuirkMrouteAutoPriorityZeroThen32766(t *testing.T) { // A5
	s := newSess(t, nil, optsExtAck)
	mr := func(table uint8) []byte {
		return T.Body(T.Hdr{Family: rtnl.RTNL_FAMILY_IPMR, Table: table, Action: 1}, T.Str(rtnl.FRA_IIFNAME, "lo"))
	}
	run(t, s, []step{add(mr(10)), add(mr(11))})
	want := []string{"0:10 IIFNAME=lo", "32766:11 IIFNAME=lo", "32767:253"}
	if d := cmp.Diff(want, short(s, rtnl.RTNL_FAMILY_IPMR)); d != "" {
		t.Errorf("(-kernel +nlemu):\n%s", d)
	}
}

func gotoRule(pref, target uint32) []byte {
	return T.Body(T.Hdr{Family: rtnl.AF_INET, Action: rtnl.FR_ACT_GOTO}, T.Pref(pref), T.U32(rtnl.FRA_GOTO, target))
}

func TestQuirkGotoResolvesToFirstAndRetargetsToNextEqualPriority(t *testing.T) { // A6
	s := newSess(t, nil, optsExtAck)
	run(t, s, []step{add(gotoRule(100, 200))})
	if d := cmp.Diff([]string{"0:255", "100:0:act2 unresolved GOTO=200", "32766:254", "32767:253"}, short(s, rtnl.AF_INET)); d != "" {
		t.Errorf("(-kernel +nlemu):\n%s", d)
	}
	run(t, s, []step{
		add(v4(100, T.Pref(200))), add(v4(101, T.Pref(200))),
		del(T.Body(T.Hdr{Family: rtnl.AF_INET, Table: 100}, T.Pref(200))),
	})
	if d := cmp.Diff([]string{"0:255", "100:0:act2 GOTO=200", "200:101", "32766:254", "32767:253"}, short(s, rtnl.AF_INET)); d != "" {
		t.Errorf("(-kernel +nlemu):\n%s", d)
	}
	run(t, s, []step{
		del(delHdr(rtnl.AF_INET, T.Pref(200))),
		addErr(gotoRule(300, 250), syscall.EINVAL, "Backward goto not supported"),
		addErr(gotoRule(300, 300), syscall.EINVAL, "Backward goto not supported"),
		add(T.Body(T.Hdr{Family: rtnl.AF_INET, Action: rtnl.FR_ACT_GOTO}, T.U32(rtnl.FRA_GOTO, 100))),
		addErr(T.Body(T.Hdr{Family: rtnl.AF_INET, Action: rtnl.FR_ACT_GOTO}, T.Pref(174)), syscall.EINVAL, "Missing goto target for action goto"),
	})
	want := []string{"0:255", "99:0:act2 GOTO=100", "100:0:act2 unresolved GOTO=200", "32766:254", "32767:253"}
	if d := cmp.Diff(want, short(s, rtnl.AF_INET)); d != "" {
		t.Errorf("(-kernel +nlemu):\n%s", d)
	}
}

func TestQuirkGotoIgnoredByExclAndDeleteAndDeleteRunsBackwardGotoCheck(t *testing.T) { // A7
	s := newSess(t, nil, optsExtAck)
	run(t, s, []step{
		add(gotoRule(100, 200)),
		addErr(gotoRule(100, 300), syscall.EEXIST, ""),
		del(T.Body(T.Hdr{Family: rtnl.AF_INET, Action: rtnl.FR_ACT_GOTO}, T.Pref(100), T.U32(rtnl.FRA_GOTO, 999))),
		del(delHdr(rtnl.AF_INET, T.Pref(0))),
		add(gotoRule(100, 200)),
		// Without a priority the delete gets an automatic one (32766) and
		// the goto 200 is "backward".
		delErr(T.Body(T.Hdr{Family: rtnl.AF_INET, Action: rtnl.FR_ACT_GOTO}, T.U32(rtnl.FRA_GOTO, 200)), syscall.EINVAL, "Backward goto not supported"),
		del(T.Body(T.Hdr{Family: rtnl.AF_INET, Action: rtnl.FR_ACT_GOTO}, T.U32(rtnl.FRA_GOTO, 200), T.Pref(100))),
	})
	if d := cmp.Diff([]string{"32766:254", "32767:253"}, short(s, rtnl.AF_INET)); d != "" {
		t.Errorf("(-kernel +nlemu):\n%s", d)
	}
}

func TestQuirkDeleteMatchesOnlySpecifiedFieldsWithImplicitMasksAndRawAddresses(t *testing.T) { // A8
	s := newSess(t, nil, optsExtAck)
	invert := T.V4(100)
	invert.Flags = rtnl.FIB_RULE_INVERT
	invert.SrcLen = 8
	run(t, s, []step{
		add(v4(100, T.U32(rtnl.FRA_FWMARK, 5), T.U32(rtnl.FRA_FWMASK, 0xff), T.Pref(500))),
		delErr(delHdr(rtnl.AF_INET, T.U32(rtnl.FRA_FWMARK, 5)), syscall.ENOENT, ""),
		del(delHdr(rtnl.AF_INET, T.U32(rtnl.FRA_FWMARK, 5), T.U32(rtnl.FRA_FWMASK, 0xff))),
		add(v4(100, T.U32(rtnl.FRA_FWMARK, 5), T.Pref(501))),
		del(delHdr(rtnl.AF_INET, T.U32(rtnl.FRA_FWMARK, 5), T.U32(rtnl.FRA_FWMASK, 0xffffffff))),
		add(src4("10.1.2.3", 8, 100, T.Pref(600))),
		delErr(src4("10.0.0.0", 8, 0), syscall.ENOENT, ""),
		del(src4("10.1.2.3", 8, 0)),
		add(T.Body(invert, T.Addr(rtnl.FRA_SRC, "10.0.0.0"), T.Pref(700))),
		del(src4("10.0.0.0", 8, 0, T.Pref(700))),
		add(src4("10.0.0.0", 8, 100, T.Pref(800))),
		addErr(v4(100, T.Pref(800)), syscall.EEXIST, ""),
		addErr(T.Body(invert, T.Addr(rtnl.FRA_SRC, "10.0.0.0"), T.Pref(800)), syscall.EEXIST, ""),
		add(src4("11.0.0.0", 8, 100, T.Pref(800))),
		add(v4(100, T.Str(rtnl.FRA_IIFNAME, "lo"), T.Pref(800))),
		del(delHdr(rtnl.AF_INET, T.Pref(800))),
	})
	want := []string{"0:255", "800:100 SRC=11.0.0.0", "800:100 IIFNAME=lo", "32766:254", "32767:253"}
	if d := cmp.Diff(want, short(s, rtnl.AF_INET)); d != "" {
		t.Errorf("(-kernel +nlemu):\n%s", d)
	}
	run(t, s, []step{
		del(delHdr(rtnl.AF_INET, T.Str(rtnl.FRA_IIFNAME, "lo"))),
		add(v4(100, T.Str(rtnl.FRA_IIFNAME, "lo"), T.Str(rtnl.FRA_OIFNAME, "nosuchdev"), T.Pref(900))),
	})
	rules, _, _ := s.dump(famRules(rtnl.AF_INET))
	wantRule := "NEWRULE {'family': 2, 'dst_len': 0, 'src_len': 0, 'tos': 0, 'table': 100, 'res1': 0, 'res2': 0, 'action': 1, 'flags': '0x10'} [('TABLE', 100), ('SUPPRESS_PREFIXLEN', -1), ('PROTOCOL', 0), ('IIFNAME', 'lo'), ('OIFNAME', 'nosuchdev'), ('PRIORITY', 900)]"
	if rules[2] != wantRule {
		t.Errorf("iif lo (attached) + oif nosuchdev (detached):\n got %s\nwant %s", rules[2], wantRule)
	}
}

func TestQuirkDeleteValidatesLikeAdd(t *testing.T) { // A9
	s := newSess(t, nil, optsExtAck)
	tos := func(v uint8, attrs ...T.Attr) []byte {
		h := T.Hdr{Family: rtnl.AF_INET, Tos: v}
		return T.Body(h, attrs...)
	}
	run(t, s, []step{
		add(v4(100, T.Pref(10), T.UIDRange(5, 10))),
		delErr(delHdr(rtnl.AF_INET, T.UIDRange(10, 5)), syscall.EINVAL, "Invalid uid range"),
		del(delHdr(rtnl.AF_INET, T.UIDRange(5, 10))),
		add(T.Body(T.Hdr{Family: rtnl.AF_INET, Tos: 0x10, Table: 100, Action: 1}, T.Pref(11))),
		delErr(tos(0x08), syscall.ENOENT, ""),
		del(tos(0x10)),
		delErr(delHdr(rtnl.AF_INET, T.PortRange(rtnl.FRA_SPORT_RANGE, 0, 0)), syscall.EINVAL, "Invalid sport range"),
		delErr(T.Body(T.Hdr{Family: rtnl.AF_INET, Table: 100, Action: rtnl.FR_ACT_PROHIBIT}), syscall.ENOENT, ""),
	})
}

func TestQuirkUserPermanentFlagMakesRuleUndeletable(t *testing.T) { // A15
	s := newSess(t, nil, optsExtAck)
	perm := T.V4(100)
	perm.Flags = rtnl.FIB_RULE_PERMANENT
	odd := T.V4(100)
	odd.Flags = 0x1c
	run(t, s, []step{
		add(T.Body(perm, T.Pref(50))),
		add(T.Body(odd, T.Pref(60))),
		delErr(delHdr(rtnl.AF_INET, T.Pref(50)), syscall.EPERM, ""),
	})
	rules, _, _ := s.dump(famRules(rtnl.AF_INET))
	if !strings.Contains(rules[2], "'flags': '0x1c'") {
		t.Errorf("stored flags not echoed: %s", rules[2])
	}
}

func TestQuirkIPv4TableZeroAllocatesLowestFreeTable(t *testing.T) { // A23
	s := newSess(t, nil, optsExtAck)
	run(t, s, []step{
		add(src4("10.9.9.9", 32, 0, T.Pref(5))), add(src4("10.9.9.8", 32, 0, T.Pref(6))),
		addErr(v6(0, T.Pref(10)), syscall.EINVAL, "Invalid table"),
	})
	want := []string{"0:255", "5:1 SRC=10.9.9.9", "6:2 SRC=10.9.9.8", "32766:254", "32767:253"}
	if d := cmp.Diff(want, short(s, rtnl.AF_INET)); d != "" {
		t.Errorf("(-kernel +nlemu):\n%s", d)
	}
}

func TestQuirkEmptyIifNameNeverShownNorDetached(t *testing.T) { // A22
	s := newSess(t, nil, optsExtAck)
	run(t, s, []step{add(T.Body(T.Hdr{Family: rtnl.AF_INET, Action: rtnl.FR_ACT_PROHIBIT}, T.Pref(50), T.Attr{Type: rtnl.FRA_IIFNAME, Data: []byte{0}}))})
	rules, _, _ := s.dump(famRules(rtnl.AF_INET))
	want := "NEWRULE {'family': 2, 'dst_len': 0, 'src_len': 0, 'tos': 0, 'table': 0, 'res1': 0, 'res2': 0, 'action': 8, 'flags': '0x0'} [('TABLE', 0), ('SUPPRESS_PREFIXLEN', -1), ('PROTOCOL', 0), ('PRIORITY', 50)]"
	if rules[1] != want {
		t.Errorf("got %s\nwant %s", rules[1], want)
	}
	// An empty name on delete is "unspecified".
	run(t, s, []step{del(T.Body(T.Hdr{Family: rtnl.AF_INET}, T.Pref(50), T.Attr{Type: rtnl.FRA_IIFNAME, Data: []byte{0}}))})
}

func TestQuirkAddressesComparedRawNotMasked(t *testing.T) { // A22 (IPv6)
	s := newSess(t, nil, optsExtAck)
	h := T.V6(254)
	h.SrcLen = 64
	dh := T.Hdr{Family: rtnl.AF_INET6, SrcLen: 64}
	run(t, s, []step{
		add(T.Body(h, T.Pref(60), T.Addr(rtnl.FRA_SRC, "2001:db8::1"))),
		delErr(T.Body(dh, T.Addr(rtnl.FRA_SRC, "2001:db8::")), syscall.ENOENT, ""),
		del(T.Body(dh, T.Addr(rtnl.FRA_SRC, "2001:db8::1"))),
	})
}

func TestQuirkMiscDeleteSemantics(t *testing.T) { // A22
	s := newSess(t, nil, optsExtAck)
	run(t, s, []step{
		add(v4(254, T.Pref(55), T.U8(rtnl.FRA_DSCP, 10))),
		delErr(T.Body(T.Hdr{Family: rtnl.AF_INET, Tos: 0x28}, T.Pref(55)), syscall.ENOENT, ""),
		add(v4(254, T.Pref(56), T.PortRange(rtnl.FRA_SPORT_RANGE, 80, 80))),
		del(delHdr(rtnl.AF_INET, T.Pref(56), T.PortRange(rtnl.FRA_SPORT_RANGE, 80, 80), T.U16(rtnl.FRA_SPORT_MASK, 0xffff))),
		add(v4(100, T.Pref(57))),
		del(T.Body(T.Hdr{Family: rtnl.AF_INET, Table: 7}, T.Pref(57), T.Table(100))),
		add(v4(100, T.Pref(58), T.U8(rtnl.FRA_PROTOCOL, 42))),
		delErr(delHdr(rtnl.AF_INET, T.Pref(58), T.U8(rtnl.FRA_PROTOCOL, 43)), syscall.ENOENT, ""),
		del(delHdr(rtnl.AF_INET, T.Pref(58), T.U8(rtnl.FRA_PROTOCOL, 0))),
	})
}

func TestQuirkStrictDumpChecks(t *testing.T) { // A12
	strict := optsExtAck
	strict.StrictCheck = true
	s := newSess(t, nil, strict)
	for _, h := range []T.Hdr{{Table: 5}, {Action: 1}, {Flags: 1}, {Tos: 4}, {Res1: 1}, {DstLen: 1}} {
		h.Family = rtnl.AF_INET
		rules, done, _ := s.dump(T.Body(h))
		if len(rules) != 0 || done.Errno != 22 || done.Msg != "Invalid values in header for fib rule dump request" {
			t.Errorf("%+v: %d rules, %v", h, len(rules), done)
		}
	}
	cases := []struct {
		body []byte
		msg  string
	}{
		{T.Body(T.Hdr{Family: rtnl.AF_INET}, T.Pref(5)), "Invalid data after header in fib rule dump request"},
		{[]byte{2}, "Invalid header for fib rule dump request"},
	}
	for _, c := range cases {
		if _, done, _ := s.dump(c.body); done.Errno != 22 || done.Msg != c.msg {
			t.Errorf("%x: %v, want %q", c.body, done, c.msg)
		}
	}
	loose := newSess(t, s.srv, optsExtAck)
	if rules, done, _ := loose.dump(T.Body(T.Hdr{Family: rtnl.AF_INET, Action: 1, Table: 5}, T.Pref(5))); done.Errno != 0 || len(rules) != 3 {
		t.Errorf("non-strict junk dump: %d rules %v", len(rules), done)
	}
	if rules, done, _ := loose.dump([]byte{2, 0, 0, 0}); done.Errno != 0 || len(rules) != 3 {
		t.Errorf("rtgenmsg dump: %d rules %v", len(rules), done)
	}
	if _, done, _ := loose.dump(T.Body(T.Hdr{Family: 7})); done.Errno != int(syscall.EAFNOSUPPORT) {
		t.Errorf("family 7 dump: %v", done)
	}
	if a, _ := loose.request(rtnl.RTM_GETRULE, 0, T.Body(T.Hdr{Family: rtnl.AF_INET})); a.Errno != int(syscall.EOPNOTSUPP) {
		t.Errorf("GETRULE without NLM_F_DUMP: %v", a)
	}
}

func TestQuirkUnspecDumpFamilyOrder(t *testing.T) { // A2
	s := newSess(t, nil, optsExtAck)
	rules, _, _ := s.dump(allRules())
	var fams []string
	for _, r := range rules {
		fams = append(fams, strings.SplitN(strings.SplitN(r, "'family': ", 2)[1], ",", 2)[0])
	}
	if d := cmp.Diff([]string{"2", "2", "2", "128", "129", "10", "10"}, fams); d != "" {
		t.Error(d)
	}
}

func TestQuirkLargeDumpBatchesLikeKernel(t *testing.T) { // A24: 3003 rules, 8 batches
	s := newSess(t, nil, optsExtAck)
	for i := 0; i < 3000; i++ {
		if a, _ := s.request(rtnl.RTM_NEWRULE, rtnl.NLM_F_CREATE, v4(100, T.Pref(uint32(1000+i)), T.Str(rtnl.FRA_IIFNAME, fmt.Sprintf("if%d", i)))); a.Errno != 0 {
			t.Fatal(a)
		}
	}
	l := newSess(t, s.srv, optsExtAck)
	rules, _, batches := l.dump(famRules(rtnl.AF_INET))
	if len(rules) != 3003 || batches != 8 {
		t.Errorf("dumped %d rules in %d datagrams, kernel: 3003 in 8", len(rules), batches)
	}
}

// TestQuirkLeftoverBytesWarningInSuccessAck: bytes after the last whole
// attribute make the kernel's parser leave "bytes leftover after parsing
// attributes" in the extack, which even a success ACK carries (ext-ack
// sockets only), and errors without their own text (EEXIST) keep.
func TestQuirkLeftoverBytesWarningInSuccessAck(t *testing.T) {
	s := newSess(t, nil, optsExtAck)
	body := append(v4(100, T.Pref(10)), 0, 0)
	a := s.add(body)
	if a.Errno != 0 || a.Msg != "bytes leftover after parsing attributes" || a.Flags != rtnl.NLM_F_CAPPED|rtnl.NLM_F_ACK_TLVS {
		t.Errorf("success with leftover: %v flags %#x", a, a.Flags)
	}
	if a := s.add(body); a.Errno != int(syscall.EEXIST) || a.Msg != "bytes leftover after parsing attributes" {
		t.Errorf("EEXIST with leftover: %v", a)
	}
	bad := append(T.Body(T.Hdr{Family: rtnl.AF_INET, Tos: 0x20, Table: 5, Action: 1}), 0, 0)
	if a := s.add(bad); a.Msg != "Invalid tos" {
		t.Errorf("own message replaces the warning: %v", a)
	}
	plain := newSess(t, s.srv, server.Options{})
	if a := plain.add(append(v4(100, T.Pref(11)), 0, 0)); a.Errno != 0 || a.Msg != "" || a.Flags != rtnl.NLM_F_CAPPED {
		t.Errorf("no ext-ack: %v flags %#x", a, a.Flags)
	}
}
