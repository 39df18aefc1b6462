package integration

import (
	"encoding/binary"
	"net/netip"
)

// Step constructors for the differential scenarios. Every request is built
// from raw bytes so malformed input is as easy to express as good input.

const (
	fAckExcl = nlmFRequest | nlmFAck | nlmFCreate | nlmFExcl // what `ip rule add` sends
	fAck     = nlmFRequest | nlmFAck
)

func ipb(s string) []byte { return netip.MustParseAddr(s).AsSlice() }

func v4() *RuleReq   { return Rule(afInet) }
func v6() *RuleReq   { return Rule(afInet6) }
func ipmr() *RuleReq { return Rule(afIPMR) }

// del builders start with action 0 (unspecified), as `ip rule del` does.
func d4() *RuleReq { return Rule(afInet).Act(0) }
func d6() *RuleReq { return Rule(afInet6).Act(0) }

// add is `ip rule add`: RTM_NEWRULE with REQUEST|ACK|CREATE|EXCL.
func ruleAdd(name string, r *RuleReq) Step { return ruleAddF(name, fAckExcl, r) }

// addF is RTM_NEWRULE with explicit nlmsg_flags.
func ruleAddF(name string, flags uint16, r *RuleReq) Step {
	return Step{Name: name, Build: func(seq uint32) []byte { return r.Request(rtmNewRule, flags, seq) }}
}

// del is `ip rule del`: RTM_DELRULE with REQUEST|ACK.
func ruleDel(name string, r *RuleReq) Step { return ruleDelF(name, fAck, r) }

func ruleDelF(name string, flags uint16, r *RuleReq) Step {
	return Step{Name: name, Build: func(seq uint32) []byte { return r.Request(rtmDelRule, flags, seq) }}
}

// on sends s from socket sock.
func onSock(sock string, s Step) Step { s.Sock = sock; return s }

// raw is a step with a hand-made datagram.
func rawStep(name string, build func(seq uint32) []byte) Step { return Step{Name: name, Build: build} }

// dumpReq is RTM_GETRULE with the given flags and body.
func dumpReq(name string, flags uint16, body []byte) Step {
	return rawStep(name, func(seq uint32) []byte { return Msg(rtmGetRule, flags, seq, 0, body) })
}

// dumpFam is a plain dump of one family.
func dumpFam(name string, fam uint8) Step {
	return dumpReq(name, nlmFRequest|nlmFDump, RuleHdr{Family: fam}.Bytes())
}

// concat joins messages into one datagram.
func catMsgs(ms ...[]byte) []byte {
	var b []byte
	for _, m := range ms {
		b = append(b, m...)
	}
	return b
}

// setLen overwrites the nlmsg_len of the message at the start of m.
func setLen(m []byte, l uint32) []byte {
	m = append([]byte(nil), m...)
	binary.NativeEndian.PutUint32(m, l)
	return m
}

// sockopt is a Setup that sets one SOL_NETLINK option.
func sockopt(name int, v uint32) func(Socket) error {
	return func(s Socket) error { return s.SetSockopt(solNetlink, name, v) }
}

// diffSockets are opened on every side for every scenario.
var diffSockets = []SockSpec{
	{Name: "main", ExtAck: true},
	{Name: "plain"},
	{Name: "cap", ExtAck: true, CapAck: true},
	{Name: "caponly", CapAck: true},
	{Name: "strict", ExtAck: true, StrictCheck: true},
	{Name: "toggle"}, // options flipped by steps
	// Listeners: groups 8 (bind mask 0x80) and 19 (membership), group 8
	// only (membership), group 19 only (legacy bind mask bit 18).
	{Name: "mon", Groups: 1 << (rtnlgrpIPv4Rule - 1), AddMemberships: []uint32{rtnlgrpIPv6Rule}, ExtAck: true, Listener: true},
	{Name: "mon4", AddMemberships: []uint32{rtnlgrpIPv4Rule}, Listener: true},
	{Name: "mon6", Rebind: 1 << (rtnlgrpIPv6Rule - 1), Listener: true},
	{Name: "monall", Groups: 0xffffffff, Listener: true},
}

type diffScenario struct {
	name  string
	steps []Step
}

func repeat16(c byte) string {
	b := make([]byte, 16)
	for i := range b {
		b[i] = c
	}
	return string(b)
}

// diffScenarios is the replay list. Each scenario starts from a fresh
// namespace on every side, so a divergence stays inside its scenario.
func diffScenarios() []diffScenario {
	return []diffScenario{
		{"priorities", priorityScenario()},
		{"selectors", selectorScenario()},
		{"validation", validationScenario()},
		{"goto", gotoScenario()},
		{"goto-quirk", gotoQuirkScenario()},
		{"delete", deleteScenario()},
		{"tables", tableScenario()},
		{"dumps", dumpScenario()},
		{"framing", framingScenario()},
		{"notify", notifyScenario()},
		{"bulk", bulkScenario()},
	}
}

func priorityScenario() []Step {
	src := func(a string) *RuleReq { return v4().Src(ipb(a), 32).Table(100) }
	return []Step{
		ruleAdd("v4 auto prio from 10.0.0.1 (32765)", src("10.0.0.1")),
		ruleAdd("v4 auto prio from 10.0.0.2 (32764)", src("10.0.0.2")),
		ruleAdd("v4 explicit pref 100", src("10.0.0.3").Pref(100)),
		ruleAdd("v4 auto prio after pref 100 (99)", src("10.0.0.4")),
		ruleAdd("v4 pref 1", src("10.0.0.5").Pref(1)),
		ruleAdd("v4 auto prio -> 0", src("10.0.0.6")),
		ruleAdd("v4 auto prio -> 0 again, after equals", src("10.0.0.7")),
		ruleAdd("v4 EXCL duplicate -> EEXIST", src("10.0.0.1").Pref(32765)),
		ruleAdd("v4 same selector other table: not a dup", v4().Src(ipb("10.0.0.1"), 32).Table(101).Pref(32765)),
		ruleAddF("v4 duplicate without EXCL (CREATE)", nlmFRequest|nlmFAck|nlmFCreate, src("10.0.0.1").Pref(32765)),
		ruleAddF("v4 duplicate with no create flags", fAck, src("10.0.0.1").Pref(32765)),
		ruleAddF("v4 duplicate with REPLACE", fAck|nlmFReplace, src("10.0.0.1").Pref(32765)),
		ruleAdd("v4 auto prio duplicate is never EEXIST", src("10.0.0.1")),
		ruleAdd("v6 auto prio (32765)", v6().Src(ipb("2001:db8::1"), 64).Table(100)),
		ruleAdd("v6 explicit pref 0", v6().Table(100).Pref(0)),
		ruleAdd("v6 auto prio with pref 0 second -> 0", v6().Table(101)),
		ruleAdd("ipmr auto prio (0)", ipmr().Iif("lo").Table(10)),
		ruleAdd("ipmr auto prio (32766)", ipmr().Iif("lo").Table(11)),
		ruleAdd("ip6mr auto prio (0)", Rule(afIP6MR).Iif("lo").Table(10)),
		ruleAdd("ip6mr pref 5 with FRA_DSCP (ignored)", Rule(afIP6MR).Table(10).Pref(5).U8(fraDSCP, 7)),
		ruleDel("v4 del pref 0 (first: local)", d4().Pref(0)),
		ruleAdd("v4 auto prio after deleting local", src("10.0.0.8")),
		ruleDel("v6 del local", d6().Table(rtTableLocal)),
		dumpFam("dump AF_INET only", afInet),
		dumpFam("dump AF_INET6 only", afInet6),
		dumpFam("dump IPMR only", afIPMR),
		dumpFam("dump IP6MR only", afIP6MR),
	}
}

func selectorScenario() []Step {
	return []Step{
		ruleAdd("v4 not from 10.1.2.3/8 to 192.168.1.7/24 (raw addrs)",
			v4().Flags(fibRuleInvert).Src(ipb("10.1.2.3"), 8).Dst(ipb("192.168.1.7"), 24).Table(100).Pref(10)),
		ruleAdd("v4 iif lo oif nosuchdev (detached)", v4().Iif("lo").Oif("nosuchdev").Table(100).Pref(11)),
		ruleAdd("v4 empty iif name, prohibit", v4().Act(frActProhibit).Iif("").Pref(12)),
		ruleAdd("v4 fwmark 5 (implicit mask)", v4().Mark(5).Table(100).Pref(13)),
		ruleAdd("v4 fwmark/mask tun_id suppress protocol table 1000",
			v4().Mark(0x10).Mask(0xf0).BE64(fraTunID, 99).U32(fraSuppressPrefixlen, 0).
				U32(fraSuppressIfgroup, 7).Table(1000).U8(fraProtocol, 42).Pref(14)),
		ruleAdd("v4 realms", v4().U32(fraFlow, 0x50003).Table(100).Pref(15)),
		ruleAdd("v4 uid ipproto sport range dport single",
			v4().UIDRange(1000, 2000).U8(fraIPProto, 6).PortRange(fraSportRange, 1024, 2048).
				PortRange(fraDportRange, 80, 80).Table(100).Pref(16)),
		ruleAdd("v4 sport 80 mask 0xfff0, dport 0x100 mask 0xff00",
			v4().PortRange(fraSportRange, 80, 80).U16(fraSportMask, 0xfff0).
				PortRange(fraDportRange, 0x100, 0x100).U16(fraDportMask, 0xff00).Table(100).Pref(17)),
		ruleAdd("v4 dscp 10 (default mask)", v4().U8(fraDSCP, 10).Table(100).Pref(18)),
		ruleAdd("v4 dscp 0x30 mask 0x30", v4().U8(fraDSCP, 0x30).U8(fraDSCPMask, 0x30).Table(100).Pref(19)),
		ruleAdd("v4 tos 0x10", v4().TOS(0x10).Table(100).Pref(20)),
		ruleAdd("v4 l3mdev", v4().U8(fraL3mdev, 1).Pref(21)),
		ruleAdd("v4 dscp 0", v4().U8(fraDSCP, 0).Table(100).Pref(22)),
		ruleAdd("v4 unused/pad/unknown attrs ignored",
			v4().Table(100).Pref(23).U32(fraUnused2, 1).U32(fraUnused3, 2).U32(fraUnused4, 3).
				U32(fraUnused5, 4).U32(fraPad, 5).U32(31, 6).U32(40, 7).U32(0x7fff, 8)),
		ruleAdd("v4 liberal 8-byte PRIORITY and TABLE", v4().Bytes(fraPriority, []byte{24, 0, 0, 0, 9, 9, 9, 9}).
			Bytes(fraTable, []byte{100, 0, 0, 0, 1, 2, 3, 4})),
		ruleAdd("v4 stored flags 0x101c", v4().Flags(0x101c).Table(100).Pref(25)),
		ruleAdd("v4 res1/res2, hdr.table 5 overridden by FRA_TABLE 1000", v4().Res(7, 9).HTable(5).Table(1000).Pref(26)),
		ruleAdd("v4 hdr.table only", v4().HTable(77).Pref(27)),
		ruleAdd("v4 15-char iif", v4().Iif("aaaaaaaaaaaaaaa").Table(100).Pref(28)),
		ruleAdd("v4 iif without NUL", v4().Bytes(fraIifname, []byte("dummy7")).Table(100).Pref(29)),
		ruleAdd("v4 iif with bytes after NUL", v4().Bytes(fraIifname, []byte("ab\x00cd")).Table(100).Pref(30)),
		ruleAdd("v4 action 200", v4().Act(200).Table(rtTableMain).Pref(31)),
		ruleAdd("v4 action 0 table 0", v4().Act(0).Pref(32)),
		ruleAdd("v4 nop", v4().Act(frActNop).Pref(33)),
		ruleAdd("v4 blackhole", v4().Act(frActBlackhole).Pref(34)),
		ruleAdd("v4 unreachable", v4().Act(frActUnreachable).Pref(35)),
		ruleAdd("v4 prohibit", v4().Act(frActProhibit).Pref(36)),
		ruleAdd("v4 src_len 0 with FRA_SRC present (ignored)", v4().Bytes(fraSrc, ipb("1.2.3.4")).Table(100).Pref(37)),
		ruleAdd("v4 fwmask only", v4().Mask(0xff).Table(100).Pref(38)),
		ruleAdd("v4 fwmark 0 only", v4().Mark(0).Table(100).Pref(39)),
		ruleAdd("v4 suppress_prefixlen -1 explicit", v4().U32(fraSuppressPrefixlen, 0xffffffff).Table(100).Pref(40)),
		ruleAdd("v4 uid range unset-equivalent 0-0xfffffffe", v4().UIDRange(0, 0xfffffffe).Table(100).Pref(41)),
		ruleAdd("v6 from/to raw addrs", v6().Src(ipb("2001:db8::1"), 64).Dst(ipb("2001:db8:1::5"), 48).Table(100).Pref(40)),
		ruleAdd("v6 flowlabel 0x12345/0xfffff dscp 46",
			v6().BE32(fraFlowlabel, 0x12345).BE32(fraFlowlabelMask, 0xfffff).U8(fraDSCP, 46).Table(100).Pref(41)),
		ruleAdd("v6 tos 0xb8", v6().TOS(0xb8).Table(100).Pref(42)),
		ruleAdd("v6 flowlabel 0 mask 0 (not dumped)", v6().BE32(fraFlowlabel, 0).BE32(fraFlowlabelMask, 0).Table(100).Pref(43)),
		ruleAdd("v6 FIND_SADDR src 2001:db8::/64", v6().Flags(fibRuleFindSaddr).Src(ipb("2001:db8::"), 64).Table(100).Pref(44)),
		ruleAdd("v6 flow ignored, fwmark, iif lo, uid, ports, dscp/mask",
			v6().U32(fraFlow, 0x50003).Mark(3).Iif("lo").UIDRange(5, 6).U8(fraIPProto, 17).
				PortRange(fraSportRange, 53, 53).PortRange(fraDportRange, 1000, 2000).
				U8(fraDSCP, 0x20).U8(fraDSCPMask, 0x30).Table(100).Pref(45)),
		ruleAdd("v6 tos 0xfc", v6().TOS(0xfc).Table(100).Pref(46)),
		ruleAdd("v6 dst /128", v6().Dst(ipb("2001:db8::ff"), 128).Table(200).Pref(47)),
		ruleAdd("v6 l3mdev", v6().U8(fraL3mdev, 1).Pref(48)),
		ruleAdd("v6 unreachable table 0", v6().Act(frActUnreachable).Pref(49)),
		ruleAdd("ipmr with selectors (ignored family parts)",
			ipmr().Iif("lo").Mark(9).Src(ipb("10.0.0.1"), 32).U8(fraDSCP, 3).TOS(0x10).Table(5).Pref(50)),
		ruleAdd("ip6mr with oif and table 1000", Rule(afIP6MR).Oif("lo").Table(1000).Pref(51)),
		ruleAdd("v4 tos 0x1c", v4().TOS(0x1c).Table(100).Pref(52)),
		ruleAdd("v4 tos 0x04", v4().TOS(0x04).Table(100).Pref(53)),
		ruleAdd("v4 tos 0x02 (ECN)", v4().TOS(0x02).Table(100).Pref(54)),
		ruleAdd("v4 dscp 0 mask 0", v4().U8(fraDSCP, 0).U8(fraDSCPMask, 0).Table(100).Pref(55)),
		ruleAdd("v4 dscp 63 mask 0x3f", v4().U8(fraDSCP, 63).U8(fraDSCPMask, 0x3f).Table(100).Pref(56)),
		ruleAdd("v6 flowlabel 1 mask 0: do not match", v6().BE32(fraFlowlabel, 1).BE32(fraFlowlabelMask, 0).Table(100).Pref(57)),
		ruleAdd("v6 flowlabel 0xfffff/0xfffff", v6().BE32(fraFlowlabel, 0xfffff).BE32(fraFlowlabelMask, 0xfffff).Table(100).Pref(58)),
		ruleAdd("v4 sport 65534 (implicit mask)", v4().PortRange(fraSportRange, 65534, 65534).Table(100).Pref(59)),
		ruleAdd("v4 dport 7 explicit mask 0xffff", v4().PortRange(fraDportRange, 7, 7).U16(fraDportMask, 0xffff).Table(100).Pref(60)),
		ruleAdd("v4 uid 0-0", v4().UIDRange(0, 0).Table(100).Pref(61)),
		ruleAdd("v4 goto pref+1", v4().Act(frActGoto).Goto(63).Pref(62)),
		ruleAdd("v4 iif 14 chars + 2 NULs (ok)", v4().Bytes(fraIifname, []byte("bbbbbbbbbbbbbb\x00\x00")).Table(100).Pref(63)),
		ruleAdd("v4 iif 15 chars + 2 NULs (ERANGE)", v4().Bytes(fraIifname, []byte("bbbbbbbbbbbbbbb\x00\x00")).Table(100).Pref(64)),
		ruleAdd("v4 iif of one NUL byte and oif empty payload", v4().Bytes(fraIifname, []byte{0}).Bytes(fraOifname, nil).Table(100).Pref(65)),
		rawStep("type 35 (unassigned rule-range type)", func(seq uint32) []byte { return v4().Table(100).Request(35, fAck, seq) }),
		rawStep("RTM_GETRULE+dump flags on NEWRULE type is just EXCL|REPLACE", func(seq uint32) []byte {
			return v4().Table(100).Pref(66).Request(rtmNewRule, fAck|nlmFDump, seq)
		}),
	}
}

func validationScenario() []Step {
	p := func(r *RuleReq) *RuleReq { return r.Pref(100) }
	return []Step{
		// V1, V2
		rawStep("V1 body 8 bytes", func(seq uint32) []byte { return Msg(rtmNewRule, fAckExcl, seq, 0, v4().Table(254).Body()[:8]) }),
		rawStep("V1 body 11 bytes (plain socket)", func(seq uint32) []byte { return Msg(rtmNewRule, fAckExcl, seq, 0, v4().Body()[:11]) }),
		ruleAdd("V2 family 7", Rule(7).HTable(254)),
		ruleAdd("V2 family 0", Rule(0).HTable(254)),
		ruleAdd("V2 family 7 beats bad attribute", Rule(7).Bytes(fraPriority, []byte{1})),
		// V3 policy
		ruleAdd("V3 iifname 16 chars", v4().Iif(repeat16('a')).Table(100)),
		ruleAdd("V3 oifname 16 chars", v4().Oif(repeat16('b')).Table(100)),
		ruleAdd("V3 iifname 16 chars without NUL", v4().Bytes(fraIifname, []byte(repeat16('c'))).Table(100)),
		ruleAdd("V3 PRIORITY 2 bytes", v4().Bytes(fraPriority, []byte{1, 0}).Table(100)),
		ruleAdd("V3 TABLE 2 bytes after PRIORITY (offset 36)", p(v4()).Bytes(fraTable, []byte{1, 0})),
		ruleAdd("V3 GOTO 3 bytes", p(v4()).Act(frActGoto).Bytes(fraGoto, []byte{1, 2, 3})),
		ruleAdd("V3 FWMARK empty", p(v4()).Bytes(fraFwmark, nil)),
		ruleAdd("V3 L3MDEV empty", p(v4()).Bytes(fraL3mdev, nil)),
		ruleAdd("V3 PROTOCOL 2 bytes (liberal u8)", p(v4()).Table(100).Bytes(fraProtocol, []byte{5, 6})),
		ruleAdd("V3 TUN_ID 4 bytes", p(v4()).Table(100).Bytes(fraTunID, []byte{0, 0, 0, 1})),
		ruleAdd("V3 UID_RANGE 4 bytes", p(v4()).Table(100).Bytes(fraUIDRange, []byte{0, 0, 0, 0})),
		ruleAdd("V3 SPORT_RANGE 2 bytes", p(v4()).Table(100).Bytes(fraSportRange, []byte{80, 0})),
		ruleAdd("V3 DSCP 64", p(v4()).Table(100).U8(fraDSCP, 64)),
		ruleAdd("V3 DSCP 4 bytes (strict length)", p(v4()).Table(100).U32(fraDSCP, 1)),
		ruleAdd("V3 DSCP_MASK 0x40", p(v4()).Table(100).U8(fraDSCP, 1).U8(fraDSCPMask, 0x40)),
		ruleAdd("V3 SPORT_MASK 4 bytes", p(v4()).Table(100).PortRange(fraSportRange, 80, 80).U32(fraSportMask, 0xffff)),
		ruleAdd("V3 DPORT_MASK 1 byte", p(v4()).Table(100).PortRange(fraDportRange, 80, 80).U8(fraDportMask, 0xff)),
		ruleAdd("V3 FLOWLABEL 8 bytes (v6)", p(v6()).Table(100).Bytes(fraFlowlabel, make([]byte, 8)).BE32(fraFlowlabelMask, 1)),
		ruleAdd("V3 FLOWLABEL 2 bytes (v6)", p(v6()).Table(100).Bytes(fraFlowlabel, []byte{0, 1}).BE32(fraFlowlabelMask, 1)),
		ruleAdd("V3 DSCP_MASK empty", p(v4()).Table(100).U8(fraDSCP, 1).Bytes(fraDSCPMask, nil)),
		ruleAdd("V3 policy error beats V4", v4().Lens(0, 24).Bytes(fraPriority, []byte{1})),
		ruleAdd("V3 NLA_F_NESTED on FRA_DSCP (strict attr)", p(v4()).Table(100).U8(0x8000|fraDSCP, 1)),
		ruleAdd("V3 NLA_F_NET_BYTEORDER on FRA_DSCP (strict attr)", p(v4()).Table(100).U8(0x4000|fraDSCP, 1).Pref(101)),
		ruleAdd("V3 first of two FRA_PRIORITY is short", v4().Bytes(fraPriority, []byte{1}).Pref(102).Table(100)),
		ruleAdd("V3 attr type 0 with payload is ignored", v4().U32(0, 5).Table(100).Pref(103)),
		ruleAdd("duplicate FRA_PRIORITY and FRA_TABLE: last wins", v4().Pref(104).Table(100).Pref(105).Table(101)),
		ruleAdd("ipmr with flowlabel attrs (ignored)", ipmr().BE32(fraFlowlabel, 1).Table(5).Pref(106)),
		ruleAdd("v6 dst_len 0 with FRA_DST (ignored)", v6().Bytes(fraDst, ipb("2001:db8::9")).Table(100).Pref(107)),
		ruleAdd("v4 src_len 32 with 5-byte FRA_SRC", p(v4()).Lens(0, 32).Bytes(fraSrc, []byte{1, 2, 3, 4, 5}).Table(100)),
		ruleAdd("V3 NLA_F_NESTED on FWMARK is ignored (ok)", p(v4()).Table(100).U32(0x8000|fraFwmark, 1)),
		ruleAdd("V3 NLA_F_NET_BYTEORDER on TABLE is ignored (ok)", p(v4()).U32(0x4000|fraTable, 9).Mark(2)),
		// V4, V5
		ruleAdd("V4 src_len 24 without FRA_SRC", p(v4()).Lens(0, 24).Table(100)),
		ruleAdd("V4 src_len 33", p(v4()).Src(ipb("10.0.0.0"), 33).Table(100)),
		ruleAdd("V4 src_len 24 with 16-byte FRA_SRC", p(v4()).Src(ipb("2001:db8::"), 24).Table(100)),
		ruleAdd("V4 v6 src_len 129", p(v6()).Src(ipb("2001:db8::"), 129).Table(100)),
		ruleAdd("V5 dst_len 24 without FRA_DST", p(v4()).Lens(24, 0).Table(100)),
		ruleAdd("V5 v6 dst 4 bytes", p(v6()).Dst(ipb("10.0.0.0"), 8).Table(100)),
		ruleAdd("V4 before V5", p(v4()).Lens(8, 8).Table(100)),
		// V6 - V9
		ruleAdd("V6 L3MDEV=2", p(v4()).U8(fraL3mdev, 2)),
		ruleAdd("V7 GOTO with action TO_TBL", p(v4()).Table(100).Goto(200)),
		ruleAdd("V8 action GOTO without FRA_GOTO", p(v4()).Act(frActGoto)),
		ruleAdd("V9 l3mdev + hdr.table 254", p(v4()).HTable(254).U8(fraL3mdev, 1)),
		ruleAdd("V9 l3mdev + FRA_TABLE 1000", p(v4()).Table(1000).U8(fraL3mdev, 1)),
		ruleAdd("V9 l3mdev + FRA_TABLE 0 overrides hdr.table (ok)", p(v4()).HTable(254).Table(0).U8(fraL3mdev, 1)),
		// V11 - V19
		ruleAdd("V11 uid start > end", p(v4()).Table(100).UIDRange(10, 5)),
		ruleAdd("V11 uid end 0xffffffff", p(v4()).Table(100).UIDRange(0, 0xffffffff)),
		ruleAdd("V12 sport 0-10", p(v4()).Table(100).PortRange(fraSportRange, 0, 10)),
		ruleAdd("V12 sport 10-65535", p(v4()).Table(100).PortRange(fraSportRange, 10, 65535)),
		ruleAdd("V12 sport 20-10", p(v4()).Table(100).PortRange(fraSportRange, 20, 10)),
		ruleAdd("V13 sport mask without range", p(v4()).Table(100).U16(fraSportMask, 0xff)),
		ruleAdd("V14 sport mask with range 10-20", p(v4()).Table(100).PortRange(fraSportRange, 10, 20).U16(fraSportMask, 0xff)),
		ruleAdd("V15 sport mask 0xf0 port 0x1ff", p(v4()).Table(100).PortRange(fraSportRange, 0x1ff, 0x1ff).U16(fraSportMask, 0xf0)),
		ruleAdd("V15 sport mask 0", p(v4()).Table(100).PortRange(fraSportRange, 80, 80).U16(fraSportMask, 0)),
		ruleAdd("V16 dport 0-0", p(v4()).Table(100).PortRange(fraDportRange, 0, 0)),
		ruleAdd("V16 dport 65535", p(v4()).Table(100).PortRange(fraDportRange, 65535, 65535)),
		ruleAdd("V17 dport mask without range", p(v4()).Table(100).U16(fraDportMask, 0xff)),
		ruleAdd("V18 dport mask with range", p(v4()).Table(100).PortRange(fraDportRange, 1, 2).U16(fraDportMask, 0xffff)),
		ruleAdd("V19 dport mask invalid", p(v4()).Table(100).PortRange(fraDportRange, 0x1ff, 0x1ff).U16(fraDportMask, 0xf0)),
		ruleAdd("V12 before V16", p(v4()).Table(100).PortRange(fraDportRange, 0, 0).PortRange(fraSportRange, 0, 0)),
		// L2 backward goto
		ruleAdd("L2 goto == pref", v4().Act(frActGoto).Goto(100).Pref(100)),
		ruleAdd("L2 goto < pref", v4().Act(frActGoto).Goto(99).Pref(100)),
		ruleAdd("L2 goto 100 without pref (auto prio from the list)", v4().Act(frActGoto).Goto(100)),
		ruleAdd("L2 goto 0 pref 0", v4().Act(frActGoto).Goto(0).Pref(0)),
		ruleAdd("L2 pref 0 goto 1 (ok)", v4().Act(frActGoto).Goto(1).Pref(0)),
		ruleAdd("ipmr l3mdev", ipmr().U8(fraL3mdev, 1).Pref(7)),
		ruleAdd("ipmr PERMANENT", ipmr().Flags(fibRulePermanent).Table(9).Pref(8)),
		ruleDel("ipmr del PERMANENT: EPERM", Rule(afIPMR).Act(0).Pref(8)),
		// family configure (IPv4)
		ruleAdd("v4 FLOWLABEL", p(v4()).Table(100).BE32(fraFlowlabel, 1).BE32(fraFlowlabelMask, 0xfffff)),
		ruleAdd("v4 FLOWLABEL_MASK only", p(v4()).Table(100).BE32(fraFlowlabelMask, 0xfffff)),
		ruleAdd("v4 tos 0x01 (ECN)", p(v4()).Table(100).TOS(1)),
		ruleAdd("v4 tos 0x20", p(v4()).Table(100).TOS(0x20)),
		ruleAdd("v4 tos 0x10 + DSCP", p(v4()).Table(100).TOS(0x10).U8(fraDSCP, 4)),
		ruleAdd("v4 DSCP_MASK without DSCP", p(v4()).Table(100).U8(fraDSCPMask, 0x3f)),
		ruleAdd("v4 DSCP 0x30 mask 0x0f", p(v4()).Table(100).U8(fraDSCP, 0x30).U8(fraDSCPMask, 0x0f)),
		// family configure (IPv6)
		ruleAdd("v6 table 0", p(v6())),
		ruleAdd("v6 FLOWLABEL without mask (miss-type)", p(v6()).Table(100).BE32(fraFlowlabel, 1)),
		ruleAdd("v6 FLOWLABEL_MASK without label (miss-type)", p(v6()).Table(100).BE32(fraFlowlabelMask, 1)),
		ruleAdd("v6 flowlabel mask 0x100000", p(v6()).Table(100).BE32(fraFlowlabel, 0).BE32(fraFlowlabelMask, 0x100000)),
		ruleAdd("v6 flowlabel 3 mask 1", p(v6()).Table(100).BE32(fraFlowlabel, 3).BE32(fraFlowlabelMask, 1)),
		ruleAdd("v6 tos 0x02 (ECN)", p(v6()).Table(100).TOS(2)),
		ruleAdd("v6 tos 0x10 + DSCP", p(v6()).Table(100).TOS(0x10).U8(fraDSCP, 4)),
		ruleAdd("v6 DSCP_MASK without DSCP", p(v6()).Table(100).U8(fraDSCPMask, 0x3f)),
		ruleAdd("ipmr ignores v4 tos validation", ipmr().TOS(1).Table(5).Pref(100)),
		// socket variants: no ext-ack, cap-ack, cap-ack only
		onSock("plain", ruleAdd("plain: V3 iifname 16 chars", v4().Iif(repeat16('a')).Table(100))),
		onSock("plain", ruleAdd("plain: V12 sport 0-10", p(v4()).Table(100).PortRange(fraSportRange, 0, 10))),
		onSock("plain", ruleAdd("plain: v6 FLOWLABEL without mask", p(v6()).Table(100).BE32(fraFlowlabel, 1))),
		onSock("plain", ruleAdd("plain: EEXIST-free success", v4().Table(100).Pref(500))),
		onSock("cap", ruleAdd("cap: V3 PRIORITY 2 bytes", v4().Bytes(fraPriority, []byte{1, 0}).Table(100))),
		onSock("cap", ruleAdd("cap: V14 mask with range (offset)", p(v4()).Table(100).PortRange(fraSportRange, 10, 20).U16(fraSportMask, 0xff))),
		onSock("cap", ruleAdd("cap: v6 FLOWLABEL_MASK without label", p(v6()).Table(100).BE32(fraFlowlabelMask, 1))),
		onSock("cap", ruleAdd("cap: success", v4().Table(100).Pref(501))),
		onSock("cap", ruleAdd("cap: EEXIST", v4().Table(100).Pref(501))),
		onSock("caponly", rawStep("caponly: V1 short body", func(seq uint32) []byte { return Msg(rtmNewRule, fAckExcl, seq, 0, v4().Body()[:6]) })),
		onSock("caponly", ruleAdd("caponly: V3 DSCP 64", p(v4()).Table(100).U8(fraDSCP, 64))),
		onSock("caponly", ruleAdd("caponly: success", v4().Table(100).Pref(502))),
		{Name: "toggle: ext-ack on", Sock: "toggle", Setup: sockopt(netlinkExtAck, 1),
			Build: func(seq uint32) []byte { return p(v4()).Table(100).U8(fraDSCP, 64).Request(rtmNewRule, fAckExcl, seq) }},
		{Name: "toggle: cap-ack on", Sock: "toggle", Setup: sockopt(netlinkCapAck, 1),
			Build: func(seq uint32) []byte { return p(v4()).Table(100).U8(fraDSCP, 64).Request(rtmNewRule, fAckExcl, seq) }},
		{Name: "toggle: ext-ack off (cap stays)", Sock: "toggle", Setup: sockopt(netlinkExtAck, 0),
			Build: func(seq uint32) []byte { return p(v4()).Table(100).U8(fraDSCP, 64).Request(rtmNewRule, fAckExcl, seq) }},
		{Name: "toggle: cap-ack off", Sock: "toggle", Setup: sockopt(netlinkCapAck, 0),
			Build: func(seq uint32) []byte { return p(v4()).Table(100).U8(fraDSCP, 64).Request(rtmNewRule, fAckExcl, seq) }},
		{Name: "toggle: ext-ack value 2 means on", Sock: "toggle", Setup: sockopt(netlinkExtAck, 2),
			Build: func(seq uint32) []byte { return p(v4()).Table(100).U8(fraDSCP, 64).Request(rtmNewRule, fAckExcl, seq) }},
		// DELRULE runs the same generic validation
		ruleDel("del V11 uid 10-5", d4().UIDRange(10, 5)),
		ruleDel("del V12 sport 0", d4().PortRange(fraSportRange, 0, 0)),
		ruleDel("del V2 family 7", Rule(7)),
		rawStep("del V1 short body", func(seq uint32) []byte { return Msg(rtmDelRule, fAck, seq, 0, d4().Body()[:4]) }),
		ruleDel("del V3 policy", d4().Bytes(fraTable, []byte{1})),
		ruleDel("del V7 unexpected goto", d4().Goto(5)),
		ruleDel("del v6 table 0 is fine (no configure): ENOENT", d6().Pref(7)),
		ruleDel("del v4 tos 0x20: no configure check: ENOENT", d4().TOS(0x20)),
		ruleDel("del v4 with only flowlabel attrs: ignored, deletes the first rule", d4().BE32(fraFlowlabel, 1).BE32(fraFlowlabelMask, 1)),
	}
}

func gotoScenario() []Step {
	return []Step{
		ruleAdd("pref 100 goto 200 (unresolved)", v4().Act(frActGoto).Goto(200).Pref(100)),
		ruleAdd("pref 200 table 100 resolves it", v4().Table(100).Pref(200)),
		ruleAdd("pref 200 table 101", v4().Table(101).Pref(200)),
		ruleDel("del pref 200 table 100 -> retarget to next 200", d4().Table(100).Pref(200)),
		ruleDel("del pref 200 -> unresolved", d4().Pref(200)),
		ruleAdd("pref 300 goto 250: backward", v4().Act(frActGoto).Goto(250).Pref(300)),
		ruleAdd("goto 100 without pref (auto 99)", v4().Act(frActGoto).Goto(100)),
		ruleAdd("pref 100 goto 300: EEXIST (target not compared)", v4().Act(frActGoto).Goto(300).Pref(100)),
		ruleAdd("pref 150 goto 160", v4().Act(frActGoto).Goto(160).Pref(150)),
		ruleAdd("pref 160 nop", v4().Act(frActNop).Pref(160)),
		ruleAdd("pref 160 table 5 (later equal prio)", v4().Table(5).Pref(160)),
		ruleDel("del pref 160 nop -> goto 150 retargets to 160 table 5", d4().Act(frActNop).Pref(160)),
		ruleDel("del pref 160 -> goto 150 unresolved", d4().Pref(160)),
		ruleAdd("pref 160 blackhole: goto 150 resolves on add", v4().Act(frActBlackhole).Pref(160)),
		ruleDel("del pref 100 goto 999 (target ignored)", d4().Act(frActGoto).Goto(999).Pref(100)),
		ruleAdd("pref 400 goto 500, two unresolved to 500", v4().Act(frActGoto).Goto(500).Pref(400)),
		ruleAdd("pref 410 goto 500", v4().Act(frActGoto).Goto(500).Pref(410)),
		ruleAdd("pref 500 resolves both", v4().Act(frActProhibit).Pref(500)),
		ruleAdd("second pref 500 does not steal", v4().Act(frActUnreachable).Pref(500)),
		ruleDel("del first 500 -> both retarget to second", d4().Act(frActProhibit).Pref(500)),
		ruleDel("del v4 local", d4().Pref(0)),
		ruleDel("del goto 500 without pref: first goto rule (target ignored)", d4().Act(frActGoto).Goto(500)),
		ruleDel("del goto 500 pref 400", d4().Act(frActGoto).Goto(500).Pref(400)),
		ruleDel("del goto 16 without pref: ENOENT", d4().Goto(16).Act(frActGoto).Pref(1)),
		ruleAdd("v6 pref 10 goto 20", v6().Act(frActGoto).Goto(20).Pref(10)),
		ruleAdd("v6 pref 20 table 100", v6().Table(100).Pref(20)),
		ruleAdd("ipmr pref 10 goto 20 (unresolved)", ipmr().Act(frActGoto).Goto(20).Pref(10)),
		ruleAdd("ipmr goto 32767 auto prio (0)", ipmr().Act(frActGoto).Goto(32767)),
		ruleAdd("ip6mr goto 32767 pref 1", Rule(afIP6MR).Act(frActGoto).Goto(32767).Pref(1)),
		ruleDel("del v6 pref 20", d6().Pref(20)),
	}
}

func deleteScenario() []Step {
	return []Step{
		ruleAdd("fwmark 5/0xff pref 500", v4().Mark(5).Mask(0xff).Table(100).Pref(500)),
		ruleDel("del fwmark 5 (implicit mask): ENOENT", d4().Mark(5)),
		ruleDel("del fwmark 5/0xff", d4().Mark(5).Mask(0xff)),
		ruleAdd("fwmark 5 pref 501", v4().Mark(5).Table(100).Pref(501)),
		ruleDel("del fwmark 5/0xffffffff", d4().Mark(5).Mask(0xffffffff)),
		ruleAdd("from 10.1.2.3/8 pref 600", v4().Src(ipb("10.1.2.3"), 8).Table(100).Pref(600)),
		ruleDel("del from 10.0.0.0/8: ENOENT (raw compare)", d4().Src(ipb("10.0.0.0"), 8)),
		ruleDel("del from 10.1.2.3/8", d4().Src(ipb("10.1.2.3"), 8)),
		ruleAdd("not from 10/8 pref 700", v4().Flags(fibRuleInvert).Src(ipb("10.0.0.0"), 8).Table(100).Pref(700)),
		ruleDel("del from 10/8 pref 700 (invert ignored)", d4().Src(ipb("10.0.0.0"), 8).Pref(700)),
		ruleAdd("from 10/8 table 100 pref 800", v4().Src(ipb("10.0.0.0"), 8).Table(100).Pref(800)),
		ruleAdd("table 100 pref 800: EEXIST (family part absent)", v4().Table(100).Pref(800)),
		ruleAdd("not from 10/8 pref 800: EEXIST (flags ignored)", v4().Flags(fibRuleInvert).Src(ipb("10.0.0.0"), 8).Table(100).Pref(800)),
		ruleAdd("from 11/8 pref 800: ok", v4().Src(ipb("11.0.0.0"), 8).Table(100).Pref(800)),
		ruleAdd("iif lo pref 800: ok", v4().Iif("lo").Table(100).Pref(800)),
		ruleAdd("to 10/8 pref 800: ok (dst differs)", v4().Dst(ipb("10.0.0.0"), 8).Table(100).Pref(800)),
		ruleAdd("from 10/8 tos 0x10 pref 800: ok (tos differs)", v4().Src(ipb("10.0.0.0"), 8).TOS(0x10).Table(100).Pref(800)),
		ruleDel("del pref 800 (first)", d4().Pref(800)),
		ruleDel("del iif lo", d4().Iif("lo")),
		ruleAdd("iif lo oif nosuchdev pref 900", v4().Iif("lo").Oif("nosuchdev").Table(100).Pref(900)),
		ruleDel("del iif lo oif nosuchdev table 100 pref 900", d4().Iif("lo").Oif("nosuchdev").Table(100).Pref(900)),
		ruleAdd("PERMANENT pref 50", v4().Flags(fibRulePermanent).Table(100).Pref(50)),
		ruleDel("del pref 50: EPERM", d4().Pref(50)),
		ruleDel("del table 100: first match is PERMANENT: EPERM", d4().Table(100)),
		ruleDel("del pref 12345: ENOENT", d4().Pref(12345)),
		ruleAdd("uid 5-10 pref 10", v4().UIDRange(5, 10).Table(100).Pref(10)),
		ruleDel("del uid 5-11: ENOENT", d4().UIDRange(5, 11)),
		ruleDel("del uid 5-10", d4().UIDRange(5, 10)),
		ruleAdd("tos 0x10 pref 11", v4().TOS(0x10).Table(100).Pref(11)),
		ruleDel("del tos 0x08: ENOENT", d4().TOS(0x08)),
		ruleDel("del tos 0x10", d4().TOS(0x10)),
		ruleAdd("dscp 10 pref 55", v4().U8(fraDSCP, 10).Table(100).Pref(55)),
		ruleDel("del tos 0x28 (same dscp, TOS mode): ENOENT", d4().TOS(0x28).Pref(55)),
		ruleDel("del dscp 10 mask 0x3f", d4().U8(fraDSCP, 10).U8(fraDSCPMask, 0x3f).Pref(55)),
		ruleAdd("sport 80 pref 56", v4().PortRange(fraSportRange, 80, 80).Table(100).Pref(56)),
		ruleDel("del sport 80 mask 0xffff", d4().PortRange(fraSportRange, 80, 80).U16(fraSportMask, 0xffff).Pref(56)),
		ruleAdd("protocol 42 pref 58", v4().U8(fraProtocol, 42).Table(100).Pref(58)),
		ruleDel("del protocol 43: ENOENT", d4().U8(fraProtocol, 43).Pref(58)),
		ruleDel("del protocol 0 (unspecified)", d4().U8(fraProtocol, 0).Pref(58)),
		ruleAdd("prohibit iif '' pref 59", v4().Act(frActProhibit).Iif("").Pref(59)),
		ruleDel("del iif '' pref 59 (empty = unspecified)", d4().Iif("").Pref(59)),
		ruleAdd("realm rule pref 60", v4().U32(fraFlow, 7).Table(100).Pref(60)),
		ruleAdd("realm-less rule pref 60: EEXIST (FRA_FLOW absent)", v4().Table(100).Pref(60)),
		ruleDel("del FRA_FLOW 0 pref 60: ENOENT", d4().U32(fraFlow, 0).Pref(60)),
		ruleAdd("suppress_prefixlen 0 pref 61", v4().U32(fraSuppressPrefixlen, 0).Table(100).Pref(61)),
		ruleDel("del suppress_prefixlen -1 (unspecified)", d4().U32(fraSuppressPrefixlen, 0xffffffff).Pref(61)),
		ruleAdd("table 100 pref 62", v4().Table(100).Pref(62)),
		ruleDel("del table 100 unreachable: ENOENT", d4().Act(frActUnreachable).Table(100).Pref(62)),
		ruleDel("del with FRA_TABLE 100 and hdr.table 7", d4().HTable(7).Table(100).Pref(62)),
		ruleAdd("v6 from 2001:db8::1/64 pref 60", v6().Src(ipb("2001:db8::1"), 64).Table(100).Pref(60)),
		ruleDel("v6 del from 2001:db8::/64: ENOENT", d6().Src(ipb("2001:db8::"), 64)),
		ruleAdd("v6 flowlabel rule pref 61", v6().BE32(fraFlowlabel, 5).BE32(fraFlowlabelMask, 0xff).Table(100).Pref(61)),
		ruleDel("v6 del flowlabel 5/0xfff: ENOENT", d6().BE32(fraFlowlabel, 5).BE32(fraFlowlabelMask, 0xfff)),
		ruleDel("v6 del flowlabel 5/0xff", d6().BE32(fraFlowlabel, 5).BE32(fraFlowlabelMask, 0xff)),
		ruleDel("del v4 main", d4().Table(rtTableMain)),
		ruleDel("del v4 default", d4().Table(253)),
		ruleDel("del v4 pref 0 (local)", d4().Pref(0)),
		ruleDel("del v4 everything left but 50: table 100 -> EPERM", d4().Table(100)),
		ruleAdd("v4 auto prio with one rule left", v4().Table(100)),
		ruleAdd("v4 auto prio again", v4().Table(101)),
		ruleDel("v6 del local", d6().Pref(0)),
		ruleDel("v6 del main", d6().Pref(32766)),
		ruleDel("v6 del pref 61 again: ENOENT", d6().Pref(61)),
		ruleDel("v6 del 2001:db8::1/64", d6().Src(ipb("2001:db8::1"), 64)),
		ruleAdd("v6 auto prio on empty list (0)", v6().Table(100)),
		ruleAdd("v6 auto prio with one rule (0)", v6().Table(101)),
		ruleDel("ipmr del default", Rule(afIPMR).Act(0).Pref(32767)),
		ruleDel("ipmr del again: ENOENT", Rule(afIPMR).Act(0)),
		ruleAdd("ipmr auto prio on empty list", ipmr().Table(7)),
		ruleDel("ip6mr del default", Rule(afIP6MR).Act(0).Table(rtTableMain)),
		ruleAdd("v6 flowlabel 5/0xff pref 70", v6().BE32(fraFlowlabel, 5).BE32(fraFlowlabelMask, 0xff).Table(100).Pref(70)),
		ruleAdd("v6 flowlabel 6/0xff pref 70: not EEXIST", v6().BE32(fraFlowlabel, 6).BE32(fraFlowlabelMask, 0xff).Table(100).Pref(70)),
		ruleAdd("v6 no flowlabel pref 70: EEXIST", v6().Table(100).Pref(70)),
		ruleAdd("v6 dscp 5 pref 70: not EEXIST", v6().U8(fraDSCP, 5).Table(100).Pref(70)),
		ruleAdd("v6 PERMANENT pref 71", v6().Flags(fibRulePermanent).Table(100).Pref(71)),
		ruleDel("v6 del pref 71: EPERM", d6().Pref(71)),
		ruleDel("v6 del uid 0-0xfffffffe: ENOENT (unset range differs)", d6().UIDRange(0, 0xfffffffe)),
		ruleAdd("v4 suppress_ifgroup 3 pref 72", v4().U32(fraSuppressIfgroup, 3).Table(100).Pref(72)),
		ruleDel("v4 del suppress_ifgroup 4: ENOENT", d4().U32(fraSuppressIfgroup, 4).Pref(72)),
		ruleDel("v4 del suppress_ifgroup -1 (unspecified)", d4().U32(fraSuppressIfgroup, 0xffffffff).Pref(72)),
		ruleAdd("v4 tun_id 5 pref 73", v4().BE64(fraTunID, 5).Table(100).Pref(73)),
		ruleDel("v4 del tun_id 6: ENOENT", d4().BE64(fraTunID, 6)),
		ruleDel("v4 del tun_id 5", d4().BE64(fraTunID, 5)),
		ruleAdd("v4 l3mdev pref 74", v4().U8(fraL3mdev, 1).Pref(74)),
		ruleDel("v4 del l3mdev", d4().U8(fraL3mdev, 1)),
		ruleAdd("v4 ipproto 17 pref 75", v4().U8(fraIPProto, 17).Table(100).Pref(75)),
		ruleDel("v4 del ipproto 6: ENOENT", d4().U8(fraIPProto, 6)),
		ruleDel("v4 del ipproto 17", d4().U8(fraIPProto, 17)),
		ruleAdd("v4 dport 1000-2000 pref 76", v4().PortRange(fraDportRange, 1000, 2000).Table(100).Pref(76)),
		ruleDel("v4 del dport 1000-2001: ENOENT", d4().PortRange(fraDportRange, 1000, 2001)),
		ruleDel("v4 del dport 1000-2000", d4().PortRange(fraDportRange, 1000, 2000)),
		ruleAdd("v4 to 192.168.0.0/16 pref 77", v4().Dst(ipb("192.168.0.0"), 16).Table(100).Pref(77)),
		ruleDel("v4 del to 192.168.0.0/24: ENOENT (dst_len differs)", d4().Dst(ipb("192.168.0.0"), 24)),
		ruleDel("v4 del to 192.168.0.0/16", d4().Dst(ipb("192.168.0.0"), 16)),
		ruleAdd("v4 oif lo pref 78", v4().Oif("lo").Table(100).Pref(78)),
		ruleDel("v4 del oif lo0: ENOENT", d4().Oif("lo0")),
		ruleDel("v4 del oif lo", d4().Oif("lo")),
		ruleAdd("v4 iif \"ab\\0cd\" pref 79 (stored raw)", v4().Bytes(fraIifname, []byte("ab\x00cd")).Table(100).Pref(79)),
		ruleAdd("v4 iif \"ab\" pref 79: not EEXIST (16-byte compare)", v4().Iif("ab").Table(100).Pref(79)),
		ruleDel("v4 del iif \"ab\\0cd\"", d4().Bytes(fraIifname, []byte("ab\x00cd"))),
		ruleDel("v4 del iif \"ab\\0cd\" again: ENOENT", d4().Bytes(fraIifname, []byte("ab\x00cd"))),
		ruleDel("v4 del iif \"ab\"", d4().Iif("ab")),
		ruleDelF("del with ECHO that fails: no echo", fAck|nlmFEcho, d4().Pref(4242)),
	}
}

// gotoQuirkScenario reproduces RULES-SPEC A7: a delete without FRA_PRIORITY
// still computes an automatic priority and fails the backward-goto check.
func gotoQuirkScenario() []Step {
	return []Step{
		ruleDel("del local", d4().Pref(0)),
		ruleAdd("pref 100 goto 200", v4().Act(frActGoto).Goto(200).Pref(100)),
		ruleDel("del goto 200 without pref: Backward goto", d4().Act(frActGoto).Goto(200)),
		ruleDel("del goto 200 pref 100", d4().Act(frActGoto).Goto(200).Pref(100)),
		ruleAdd("goto 40000 without pref (auto 32765)", v4().Act(frActGoto).Goto(40000)),
		ruleAdd("pref 40000 resolves it", v4().Act(frActBlackhole).Pref(40000)),
		ruleDel("del main", d4().Table(rtTableMain)),
		ruleDel("del default", d4().Table(253)),
		ruleAdd("auto prio with [32765 goto, 40000]: 39999", v4().Table(100)),
		ruleDel("del pref 40000: goto unresolved", d4().Pref(40000)),
	}
}

func tableScenario() []Step {
	return []Step{
		ruleAdd("v4 table 0 TO_TBL -> table 1", v4().Src(ipb("10.9.9.9"), 32).Pref(5)),
		ruleAdd("v4 table 0 again -> table 2", v4().Src(ipb("10.9.9.8"), 32).Pref(6)),
		ruleAdd("v4 FRA_TABLE 0 overrides hdr.table 100 -> table 3", v4().HTable(100).Table(0).Pref(7)),
		ruleAdd("v4 same table-0 rule with EXCL: not EEXIST (table compared before alloc)", v4().Src(ipb("10.9.9.9"), 32).Pref(5)),
		ruleAdd("v4 action 0 table 0: no allocation", v4().Act(0).Pref(8)),
		ruleAdd("v4 unreachable table 0: no allocation", v4().Act(frActUnreachable).Pref(9)),
		ruleAdd("v4 goto table 0: no allocation", v4().Act(frActGoto).Goto(100).Pref(10)),
		ruleAdd("v4 l3mdev table 0: no allocation", v4().U8(fraL3mdev, 1).Pref(11)),
		ruleAdd("v4 table 0 -> 5 (lowest free)", v4().Pref(12)),
		ruleAdd("v4 table 4 explicit", v4().Table(4).Pref(13)),
		ruleAdd("v4 table 0 after an explicit table-4 rule", v4().Pref(14)),
		ruleAdd("v6 table 0: Invalid table", v6().Pref(5)),
		ruleAdd("v6 FRA_TABLE 0 with hdr.table 100: Invalid table", v6().HTable(100).Table(0).Pref(5)),
		ruleAdd("v6 hdr.table 100", v6().HTable(100).Pref(5)),
		ruleAdd("v6 action 0 table 0 ok", v6().Act(0).Pref(6)),
		ruleAdd("v6 blackhole table 0 ok", v6().Act(frActBlackhole).Pref(7)),
		ruleAdd("v4 table 1000 -> hdr 252", v4().Table(1000).Pref(20)),
		ruleAdd("v4 table 252", v4().Table(252).Pref(21)),
		ruleAdd("v4 table 256", v4().Table(256).Pref(22)),
		ruleAdd("v4 table 0xffffffff", v4().Table(0xffffffff).Pref(23)),
		ruleAdd("v6 table 0x10000", v6().Table(0x10000).Pref(20)),
		ruleAdd("ipmr table 0", ipmr().Pref(20)),
		ruleAdd("ip6mr table 0", Rule(afIP6MR).Pref(20)),
		ruleDel("del table 0 (unspecified) pref 5", d4().Table(0).Pref(5)),
		ruleDel("del table 3", d4().Table(3)),
		ruleAdd("v4 table 0 after deleting the table-3 rule", v4().Pref(30)),
	}
}

func dumpScenario() []Step {
	hdr := func(h RuleHdr) []byte { return h.Bytes() }
	return []Step{
		dumpReq("GETRULE without NLM_F_DUMP (ACK)", fAck, hdr(RuleHdr{Family: afInet})),
		dumpReq("GETRULE without NLM_F_DUMP, no ACK", nlmFRequest, hdr(RuleHdr{Family: afInet})),
		dumpFam("dump unknown family 7", 7),
		onSock("plain", dumpFam("plain: dump unknown family 7", 7)),
		dumpReq("dump family 7 with ACK flag", nlmFRequest|nlmFDump|nlmFAck, hdr(RuleHdr{Family: 7})),
		dumpFam("dump AF_UNSPEC", afUnspec),
		dumpFam("dump AF_INET", afInet),
		dumpFam("dump AF_INET6", afInet6),
		dumpFam("dump IPMR", afIPMR),
		dumpFam("dump IP6MR", afIP6MR),
		dumpReq("dump with NLM_F_ROOT only", nlmFRequest|nlmFRoot, hdr(RuleHdr{Family: afInet})),
		dumpReq("dump with NLM_F_MATCH only", nlmFRequest|nlmFMatch, hdr(RuleHdr{Family: afInet})),
		dumpReq("dump with ACK", nlmFRequest|nlmFDump|nlmFAck, hdr(RuleHdr{Family: afInet6})),
		dumpReq("non-strict dump with junk header and attr", nlmFRequest|nlmFDump,
			v4().HTable(5).Pref(5).Body()),
		dumpReq("non-strict dump with 4-byte rtgenmsg body", nlmFRequest|nlmFDump, []byte{afInet, 0, 0, 0}),
		dumpReq("non-strict dump with 1-byte body", nlmFRequest|nlmFDump, []byte{afInet6}),
		dumpReq("non-strict dump with empty body", nlmFRequest|nlmFDump, nil),
		onSock("strict", dumpReq("strict: table 5", nlmFRequest|nlmFDump, hdr(RuleHdr{Family: afInet, Table: 5}))),
		onSock("strict", dumpReq("strict: action 1", nlmFRequest|nlmFDump, hdr(RuleHdr{Family: afInet, Action: 1}))),
		onSock("strict", dumpReq("strict: flags 1", nlmFRequest|nlmFDump, hdr(RuleHdr{Family: afInet, Flags: 1}))),
		onSock("strict", dumpReq("strict: tos 4", nlmFRequest|nlmFDump, hdr(RuleHdr{Family: afInet, TOS: 4}))),
		onSock("strict", dumpReq("strict: res1 1", nlmFRequest|nlmFDump, hdr(RuleHdr{Family: afInet, Res1: 1}))),
		onSock("strict", dumpReq("strict: res2 1", nlmFRequest|nlmFDump, hdr(RuleHdr{Family: afInet, Res2: 1}))),
		onSock("strict", dumpReq("strict: dst_len 1", nlmFRequest|nlmFDump, hdr(RuleHdr{Family: afInet, DstLen: 1}))),
		onSock("strict", dumpReq("strict: src_len 1", nlmFRequest|nlmFDump, hdr(RuleHdr{Family: afInet, SrcLen: 1}))),
		onSock("strict", dumpReq("strict: attribute after header", nlmFRequest|nlmFDump, v4().Act(0).Pref(5).Body())),
		onSock("strict", dumpReq("strict: 1-byte body", nlmFRequest|nlmFDump, []byte{afInet})),
		onSock("strict", dumpReq("strict: 4-byte body", nlmFRequest|nlmFDump, []byte{afInet, 0, 0, 0})),
		onSock("strict", dumpReq("strict: unknown family 7 with bad header", nlmFRequest|nlmFDump, hdr(RuleHdr{Family: 7, Table: 1}))),
		onSock("strict", dumpReq("strict: unknown family 7", nlmFRequest|nlmFDump, hdr(RuleHdr{Family: 7}))),
		onSock("strict", dumpReq("strict: clean AF_UNSPEC dump", nlmFRequest|nlmFDump, hdr(RuleHdr{}))),
		onSock("strict", dumpReq("strict: non-dump GET with junk", fAck, hdr(RuleHdr{Family: afInet, Table: 9}))),
		onSock("cap", dumpReq("cap: strict-free dump error family 7", nlmFRequest|nlmFDump, hdr(RuleHdr{Family: 7}))),
		{Name: "toggle: strict on, bad header", Sock: "toggle", Setup: sockopt(netlinkGetStrictCk, 1),
			Build: func(seq uint32) []byte {
				return Msg(rtmGetRule, nlmFRequest|nlmFDump, seq, 0, hdr(RuleHdr{Family: afInet, Table: 5}))
			}},
		{Name: "toggle: ext-ack on, bad header", Sock: "toggle", Setup: sockopt(netlinkExtAck, 1),
			Build: func(seq uint32) []byte {
				return Msg(rtmGetRule, nlmFRequest|nlmFDump, seq, 0, hdr(RuleHdr{Family: afInet, Table: 5}))
			}},
		ruleAdd("add a rule so dumps change", v4().Iif("lo").Table(100).Pref(10)),
		dumpFam("dump AF_INET after add", afInet),
	}
}

func framingScenario() []Step {
	return []Step{
		rawStep("three messages: add, dup add, del missing", func(seq uint32) []byte {
			return catMsgs(
				v4().Table(100).Pref(10).Request(rtmNewRule, fAckExcl, seq),
				v4().Table(100).Pref(10).Request(rtmNewRule, fAckExcl, seq+1),
				d4().Pref(11).Request(rtmDelRule, fAck, seq+2))
		}),
		rawStep("no-ACK add, failing no-ACK add, ACK add", func(seq uint32) []byte {
			return catMsgs(
				v4().Table(100).Pref(20).Request(rtmNewRule, nlmFRequest|nlmFCreate, seq),
				v4().Table(100).Pref(20).TOS(0x20).Request(rtmNewRule, nlmFRequest|nlmFCreate, seq+1),
				v4().Table(100).Pref(21).Request(rtmNewRule, fAckExcl, seq+2))
		}),
		rawStep("add without NLM_F_REQUEST, with ACK", func(seq uint32) []byte {
			return v4().Table(100).Pref(30).Request(rtmNewRule, nlmFAck|nlmFCreate, seq)
		}),
		rawStep("add without NLM_F_REQUEST, no ACK", func(seq uint32) []byte {
			return v4().Table(100).Pref(31).Request(rtmNewRule, nlmFCreate, seq)
		}),
		rawStep("del without NLM_F_REQUEST", func(seq uint32) []byte {
			return d4().Pref(10).Request(rtmDelRule, nlmFAck, seq)
		}),
		rawStep("datagram of 10 bytes", func(seq uint32) []byte {
			return v4().Table(100).Pref(40).Request(rtmNewRule, fAckExcl, seq)[:10]
		}),
		rawStep("nlmsg_len beyond datagram", func(seq uint32) []byte {
			return v4().Table(100).Pref(41).Request(rtmNewRule, fAckExcl, seq)[:30]
		}),
		rawStep("nlmsg_len 8", func(seq uint32) []byte {
			return setLen(v4().Table(100).Pref(42).Request(rtmNewRule, fAckExcl, seq), 8)
		}),
		rawStep("valid add then truncated message", func(seq uint32) []byte {
			second := v4().Table(100).Pref(44).Request(rtmNewRule, fAckExcl, seq+1)
			return catMsgs(v4().Table(100).Pref(43).Request(rtmNewRule, fAckExcl, seq), second[:len(second)-4])
		}),
		rawStep("nlmsg_len shorter than payload (attr cut)", func(seq uint32) []byte {
			m := v4().Table(100).Pref(45).Request(rtmNewRule, fAckExcl, seq)
			return setLen(m, uint32(len(m)-4))
		}),
		rawStep("unaligned nlmsg_len then second message", func(seq uint32) []byte {
			first := Msg(rtmNewRule, fAckExcl, seq, 0, append(v4().Table(100).Pref(46).Body(), 0xAA))
			return catMsgs(first, v4().Table(100).Pref(47).Request(rtmNewRule, fAckExcl, seq+1))
		}),
		rawStep("attribute with nla_len past the end", func(seq uint32) []byte {
			return Msg(rtmNewRule, fAckExcl, seq, 0, v4().Table(100).Pref(48).Raw([]byte{40, 0, fraFwmark, 0, 1, 0, 0, 0}).Body())
		}),
		rawStep("attribute with nla_len 2", func(seq uint32) []byte {
			return Msg(rtmNewRule, fAckExcl, seq, 0, v4().Table(100).Pref(49).Raw([]byte{2, 0, fraFwmark, 0}).Body())
		}),
		rawStep("trailing 2 bytes after attributes", func(seq uint32) []byte {
			return Msg(rtmNewRule, fAckExcl, seq, 0, v4().Table(100).Pref(50).Raw([]byte{1, 2}).Body())
		}),
		rawStep("NEWRULE with empty body and ACK", func(seq uint32) []byte { return Msg(rtmNewRule, fAckExcl, seq, 0, nil) }),
		rawStep("DELRULE with empty body, no ACK", func(seq uint32) []byte { return Msg(rtmDelRule, nlmFRequest, seq, 0, nil) }),
		rawStep("NEWRULE with 1-byte body", func(seq uint32) []byte { return Msg(rtmNewRule, fAckExcl, seq, 0, []byte{afInet}) }),
		rawStep("NLMSG_NOOP with ACK", func(seq uint32) []byte { return Msg(nlmsgNoop, fAck, seq, 0, nil) }),
		rawStep("NLMSG_DONE as request with ACK", func(seq uint32) []byte { return Msg(nlmsgDone, fAck, seq, 0, []byte{0, 0, 0, 0}) }),
		rawStep("NLMSG_ERROR as request, no ACK", func(seq uint32) []byte { return Msg(nlmsgError, nlmFRequest, seq, 0, make([]byte, 20)) }),
		rawStep("type 15 (< RTM_BASE) with ACK", func(seq uint32) []byte { return Msg(15, fAck, seq, 0, nil) }),
		rawStep("type 1000 (> RTM_MAX)", func(seq uint32) []byte { return Msg(1000, nlmFRequest, seq, 0, []byte{afInet, 0, 0, 0}) }),
		rawStep("request with nlmsg_pid 12345", func(seq uint32) []byte {
			return Msg(rtmNewRule, fAckExcl, seq, 12345, v4().Table(100).Pref(10).Body())
		}),
		rawStep("seq 0xffffffff", func(uint32) []byte { return v4().Table(100).Pref(60).Request(rtmNewRule, fAckExcl, 0xffffffff) }),
		rawStep("dump then add in one datagram", func(seq uint32) []byte {
			return catMsgs(
				Msg(rtmGetRule, nlmFRequest|nlmFDump, seq, 0, RuleHdr{Family: afInet6}.Bytes()),
				v4().Table(100).Pref(61).Request(rtmNewRule, fAckExcl, seq+1))
		}),
		rawStep("two small dumps in one datagram: no EBUSY", func(seq uint32) []byte {
			return catMsgs(
				Msg(rtmGetRule, nlmFRequest|nlmFDump, seq, 0, RuleHdr{Family: afIPMR}.Bytes()),
				Msg(rtmGetRule, nlmFRequest|nlmFDump, seq+1, 0, RuleHdr{Family: afIP6MR}.Bytes()))
		}),
		rawStep("GETRULE do + NOOP + del in one datagram", func(seq uint32) []byte {
			return catMsgs(
				Msg(rtmGetRule, fAck, seq, 0, RuleHdr{Family: afInet}.Bytes()),
				Msg(nlmsgNoop, fAck, seq+1, 0, nil),
				d4().Pref(61).Request(rtmDelRule, fAck, seq+2))
		}),
		ruleAdd("leftover bytes: success ACK carries a warning", v4().Table(100).Pref(70).Raw([]byte{1, 2})),
		onSock("plain", ruleAdd("plain: leftover bytes, no TLVs", v4().Table(100).Pref(71).Raw([]byte{1, 2}))),
		onSock("cap", ruleAdd("cap: leftover bytes warning on capped ACK", v4().Table(100).Pref(72).Raw([]byte{1, 2}))),
		ruleAdd("leftover bytes + EEXIST keeps the warning text", v4().Table(100).Pref(70).Raw([]byte{1, 2})),
		onSock("cap", ruleAdd("cap: leftover bytes + EEXIST", v4().Table(100).Pref(70).Raw([]byte{1, 2}))),
		ruleAdd("leftover bytes + Invalid tos replaces it", v4().Table(100).TOS(0x20).Pref(73).Raw([]byte{1, 2})),
		ruleAdd("leftover bytes + policy error", v4().Bytes(fraTable, []byte{1}).Pref(73).Raw([]byte{1, 2})),
		ruleAdd("leftover bytes + missing flow label mask (miss-type)", v6().BE32(fraFlowlabel, 1).Table(100).Pref(73).Raw([]byte{1, 2})),
		ruleDel("leftover bytes + ENOENT", d4().Pref(12345).Raw([]byte{1, 2})),
		ruleDel("leftover bytes + delete success", d4().Pref(72).Raw([]byte{1, 2, 3})),
		ruleAddF("leftover bytes + ECHO", fAckExcl|nlmFEcho, v4().Table(100).Pref(74).Raw([]byte{9})),
		onSock("strict", ruleAdd("strict socket: NEWRULE with unknown attr 31", v4().Table(100).Pref(75).U32(31, 1))),
		onSock("strict", ruleAdd("strict socket: NEWRULE with leftover bytes", v4().Table(100).Pref(76).Raw([]byte{1}))),
		dumpReq("non-strict dump with leftover bytes", nlmFRequest|nlmFDump, append(RuleHdr{Family: afIPMR}.Bytes(), 1, 2)),
		onSock("strict", dumpReq("strict dump with leftover bytes", nlmFRequest|nlmFDump, append(RuleHdr{Family: afIPMR}.Bytes(), 1, 2))),
		ruleAddF("request flags 0x8000|0x1000 are echoed, ignored", fAckExcl|0x9000, v4().Table(100).Pref(77)),
		rawStep("ECHO on second message of a datagram", func(seq uint32) []byte {
			return catMsgs(
				v4().Table(100).Pref(62).Request(rtmNewRule, fAckExcl, seq),
				v4().Table(100).Pref(63).Request(rtmNewRule, fAckExcl|nlmFEcho, seq+1))
		}),
	}
}

func notifyScenario() []Step {
	return []Step{
		ruleAdd("v4 add pref 100 goto 200 (notify unresolved)", v4().Act(frActGoto).Goto(200).Pref(100)),
		ruleAdd("v4 add pref 200 (goto resolution: no extra notify)", v4().Table(100).Pref(200)),
		ruleAdd("v4 dup: EEXIST, no notification", v4().Table(100).Pref(200)),
		ruleDel("v4 del pref 200", d4().Pref(200)),
		ruleDel("v4 del pref 100 (DELRULE shows unresolved)", d4().Pref(100)),
		ruleDel("v4 del missing: no notification", d4().Pref(12345)),
		ruleAdd("v6 add pref 100", v6().Table(100).Pref(100)),
		ruleAdd("ipmr add pref 100 (group 8)", ipmr().Table(253).Pref(100)),
		ruleAdd("ip6mr add pref 100 (group 19)", Rule(afIP6MR).Table(254).Pref(100)),
		ruleAddF("v4 add with ECHO", fAckExcl|nlmFEcho, v4().Table(100).Pref(300)),
		ruleAddF("v6 add with ECHO, no ACK", nlmFRequest|nlmFCreate|nlmFEcho, v6().Table(100).Pref(300)),
		ruleAddF("failing add with ECHO: no echo", fAckExcl|nlmFEcho, v4().Table(100).Pref(300)),
		ruleDelF("del with ECHO", fAck|nlmFEcho, d4().Pref(300)),
		onSock("mon", ruleAddF("ECHO from a subscribed socket: one copy", fAckExcl|nlmFEcho, v4().Table(100).Pref(301))),
		onSock("mon", ruleAdd("change from a subscribed socket without ECHO", v4().Table(100).Pref(302))),
		onSock("mon6", ruleAddF("v6 ECHO from mon6 (subscribed to 19)", fAckExcl|nlmFEcho, v6().Table(100).Pref(303))),
		onSock("plain", ruleAdd("change from another socket", v4().Table(100).Pref(304))),
		{Name: "mon4 drops group 8", Sock: "mon4", Setup: sockopt(netlinkDropMember, rtnlgrpIPv4Rule)},
		ruleAdd("v4 add after mon4 dropped", v4().Table(100).Pref(305)),
		{Name: "mon4 joins group 19", Sock: "mon4", Setup: sockopt(netlinkAddMember, rtnlgrpIPv6Rule)},
		ruleAdd("v6 add after mon4 joined 19", v6().Table(100).Pref(305)),
		{Name: "mon6 rebinds to group mask 0", Sock: "mon6", Setup: func(s Socket) error { return s.Bind(0) }},
		ruleAdd("v6 add after mon6 unbound", v6().Table(100).Pref(306)),
		{Name: "mon: bind mask 0 keeps membership 19", Sock: "mon", Setup: func(s Socket) error { return s.Bind(0) }},
		ruleAdd("v4 add after mon dropped 8 by bind", v4().Table(100).Pref(307)),
		ruleAdd("v6 add still seen by mon", v6().Table(100).Pref(307)),
		rawStep("several changes in one datagram: notifications in order", func(seq uint32) []byte {
			return catMsgs(
				v4().Table(100).Pref(400).Request(rtmNewRule, fAckExcl, seq),
				v6().Table(100).Pref(400).Request(rtmNewRule, fAckExcl, seq+1),
				d4().Pref(400).Request(rtmDelRule, fAck, seq+2))
		}),
		ruleDel("del default rules notify too", d4().Table(253)),
		ruleAdd("every-selector rule notification", v4().Src(ipb("10.1.2.3"), 8).Dst(ipb("10.0.0.0"), 8).Iif("lo").Oif("x").
			Mark(1).BE64(fraTunID, 5).UIDRange(1, 2).U8(fraIPProto, 6).PortRange(fraSportRange, 1, 2).
			PortRange(fraDportRange, 3, 3).U32(fraSuppressIfgroup, 1).U8(fraDSCP, 1).U32(fraFlow, 3).Table(5000).Pref(500)),
	}
}

func bulkScenario() []Step {
	many := func(n int, base uint32, fam uint8) func(seq uint32) []byte {
		return func(seq uint32) []byte {
			var b []byte
			for i := 0; i < n; i++ {
				r := Rule(fam).Table(100 + uint32(i)).Pref(base + uint32(i)).Iif("if" + string(rune('a'+i%26)))
				b = append(b, r.Request(rtmNewRule, fAckExcl, seq+uint32(i))...)
			}
			return b
		}
	}
	return []Step{
		rawStep("150 IPv4 adds in one datagram", many(150, 1000, afInet)),
		rawStep("150 IPv6 adds in one datagram", many(150, 1000, afInet6)),
		dumpFam("multi-part AF_UNSPEC dump", afUnspec),
		dumpFam("multi-part AF_INET dump", afInet),
		rawStep("100 IPv4 dup adds (EEXIST each)", many(100, 1000, afInet)),
		rawStep("150 more IPv4 adds", many(150, 2000, afInet)),
		rawStep("150 more IPv6 adds (dump now > 32 KiB)", many(150, 2000, afInet6)),
		rawStep("big dump then a second dump in one datagram (EBUSY after the first batch)", func(seq uint32) []byte {
			return catMsgs(
				Msg(rtmGetRule, nlmFRequest|nlmFDump, seq, 0, RuleHdr{}.Bytes()),
				Msg(rtmGetRule, nlmFRequest|nlmFDump, seq+1, 0, RuleHdr{Family: afIPMR}.Bytes()))
		}),
		rawStep("big dump then an IPv4 add in one datagram (family already dumped)", func(seq uint32) []byte {
			return catMsgs(
				Msg(rtmGetRule, nlmFRequest|nlmFDump, seq, 0, RuleHdr{}.Bytes()),
				v4().Table(7).Pref(7).Request(rtmNewRule, fAckExcl, seq+1))
		}),
		// The add lands between dump batches in the family being dumped:
		// the index cursor (fib_nl_dumprule's cb->args) re-emits the last
		// rule of the first batch.
		rawStep("big dump then an IPv6 add in one datagram (cursor shift duplicates a rule)", func(seq uint32) []byte {
			return catMsgs(
				Msg(rtmGetRule, nlmFRequest|nlmFDump, seq, 0, RuleHdr{}.Bytes()),
				v6().Table(7).Pref(7).Request(rtmNewRule, fAckExcl, seq+1))
		}),
		rawStep("big dump then an IPv6 delete in one datagram (cursor shift skips a rule)", func(seq uint32) []byte {
			return catMsgs(
				Msg(rtmGetRule, nlmFRequest|nlmFDump, seq, 0, RuleHdr{}.Bytes()),
				d6().Pref(7).Request(rtmDelRule, fAck, seq+1))
		}),
	}
}
