package rtnltest

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"strings"

	"github.com/nlemu/nlemu/rtnl"
)

// RenderSpec renders a rule message exactly as the probe nl.py prints it in
// RULES-SPEC.md's transcripts, e.g.
//
//	NEWRULE {'family': 2, 'dst_len': 0, ...} [('TABLE', 255), ('SUPPRESS_PREFIXLEN', -1)]
//
// so that kernel transcripts can be used as golden output verbatim.
func RenderSpec(m rtnl.Message) string {
	d := m.Data
	kind := map[uint16]string{rtnl.RTM_NEWRULE: "NEWRULE", rtnl.RTM_DELRULE: "DELRULE"}[uint16(m.Header.Type)]
	hdr := fmt.Sprintf("{'family': %d, 'dst_len': %d, 'src_len': %d, 'tos': %d, 'table': %d, 'res1': %d, 'res2': %d, 'action': %d, 'flags': '%#x'}",
		d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7], ne.Uint32(d[8:]))
	if ne.Uint32(d[8:]) == 0 {
		hdr = strings.Replace(hdr, "'flags': '0'", "'flags': '0x0'", 1)
	}
	var parts []string
	forAttrs(d[12:], func(t uint16, v []byte) {
		t &= 0x3fff
		name := fmt.Sprint(t)
		if int(t) < len(fraNames) {
			name = "'" + fraNames[t] + "'"
		}
		parts = append(parts, fmt.Sprintf("(%s, %s)", name, pyAttr(t, v)))
	})
	return kind + " " + hdr + " [" + strings.Join(parts, ", ") + "]"
}

// pyAttr is nl.py's fmt_attr().
func pyAttr(t uint16, v []byte) string {
	switch {
	case t == rtnl.FRA_IIFNAME || t == rtnl.FRA_OIFNAME:
		return "'" + strings.TrimRight(string(v), "\x00") + "'"
	case t == rtnl.FRA_DST || t == rtnl.FRA_SRC:
		a, _ := netip.AddrFromSlice(v)
		return "'" + a.String() + "'"
	case len(v) == 4 && (t == rtnl.FRA_FLOWLABEL || t == rtnl.FRA_FLOWLABEL_MASK):
		return fmt.Sprintf("'%#x'", binary.BigEndian.Uint32(v))
	case len(v) == 4 && t != rtnl.FRA_SPORT_RANGE && t != rtnl.FRA_DPORT_RANGE:
		x := ne.Uint32(v)
		if x == 0xffffffff {
			return "-1"
		}
		return fmt.Sprint(x)
	case len(v) == 1:
		return fmt.Sprint(v[0])
	case len(v) == 2:
		return fmt.Sprint(ne.Uint16(v))
	case t == rtnl.FRA_SPORT_RANGE || t == rtnl.FRA_DPORT_RANGE:
		return fmt.Sprintf("'%d-%d'", ne.Uint16(v), ne.Uint16(v[2:]))
	case t == rtnl.FRA_UID_RANGE:
		return fmt.Sprintf("'%d-%d'", ne.Uint32(v), ne.Uint32(v[4:]))
	case t == rtnl.FRA_TUN_ID:
		return fmt.Sprint(binary.BigEndian.Uint64(v))
	}
	return fmt.Sprintf("'%x'", v)
}
