package rtnl

import (
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPolicyModes checks the policy engine's validate_nla() rules per mode
// on one synthetic policy: fixed sizes (short is ERANGE everywhere, long
// only fails strictly), NLA_F_NESTED both ways, attributes without a
// policy entry, types out of range, and strict_start_type turning the
// strict rules on for the types above it.
func TestPolicyModes(t *testing.T) {
	ps := policySet{strictStart: 4, pol: []policy{
		1: {kind: polU32}, 2: {kind: polNested}, 3: {kind: polNone},
		4: {kind: polU16}, 5: {kind: polNested}, 6: {kind: polNone}, 7: {kind: polMinLen, minLen: 3},
		8: {}, 9: {}, 10: {kind: polMinLen, minLen: 3},
	}}
	low := policySet{pol: ps.pol} // no strict_start_type: 7 is checked by the mode alone
	at := func(typ uint16, nested bool, n int) rawAttr {
		return rawAttr{typ: typ, nested: nested, data: make([]byte, n), off: 40}
	}
	u32pol := policyNest(policy{kind: polU32})
	u16pol := policyNest(policy{kind: polU16})
	nestPol := policyNest(policy{kind: polNested})
	cases := []struct {
		name string
		a    rawAttr
		mode validateMode
		use  bool
		err  *Error
	}{
		{"u32 exact", at(1, false, 4), validateLiberal, true, nil},
		{"u32 long liberal", at(1, false, 8), validateLiberal, true, nil},
		{"u32 long strict", at(1, false, 8), validateStrict, false, &Error{Errno: syscall.EINVAL, Msg: "invalid attribute length", Offset: 40, Policy: u32pol}},
		{"u32 short", at(1, false, 2), validateLiberal, false, &Error{Errno: syscall.ERANGE, Msg: policyFailed, Offset: 40, Policy: u32pol}},
		{"u32 nested liberal", at(1, true, 4), validateLiberal, true, nil},
		{"u32 nested strict", at(1, true, 4), validateStrict, false, &Error{Errno: syscall.EINVAL, Msg: "NLA_F_NESTED not expected", Offset: 40, Policy: u32pol}},
		{"nest without flag liberal", at(2, false, 8), validateLiberal, true, nil},
		{"nest without flag strict", at(2, false, 8), validateStrict, false, &Error{Errno: syscall.EINVAL, Msg: "NLA_F_NESTED is missing", Offset: 40, Policy: nestPol}},
		{"empty nest", at(2, true, 0), validateStrict, true, nil},
		{"nest of 3 bytes", at(2, false, 3), validateLiberal, false, &Error{Errno: syscall.ERANGE, Msg: policyFailed, Offset: 40, Policy: nestPol}},
		{"no policy liberal", at(3, true, 1), validateLiberal, true, nil},
		{"no policy strict", at(3, false, 1), validateStrict, false, AttrError(syscall.EINVAL, "Unsupported attribute", 40)},
		{"type 0 liberal", at(0, false, 4), validateLiberal, false, nil},
		{"type 0 maxtype", at(0, false, 4), validateDeprecatedStrict, false, AttrError(syscall.EINVAL, "Unknown attribute type", 40)},
		{"above max maxtype", at(11, false, 4), validateDeprecatedStrict, false, AttrError(syscall.EINVAL, "Unknown attribute type", 40)},
		{"above max liberal", at(11, false, 4), validateLiberal, false, nil},
		{"strict start: long u16", at(4, false, 4), validateLiberal, false, &Error{Errno: syscall.EINVAL, Msg: "invalid attribute length", Offset: 40, Policy: u16pol}},
		{"strict start: nest flag missing", at(5, false, 0), validateLiberal, false, &Error{Errno: syscall.EINVAL, Msg: "NLA_F_NESTED is missing", Offset: 40, Policy: nestPol}},
		{"strict start: no policy", at(6, false, 0), validateLiberal, false, AttrError(syscall.EINVAL, "Unsupported attribute", 40)},
		{"low: min len nested", at(7, true, 3), validateNested, true, nil},
		{"low: min len short", at(7, false, 2), validateNested, false, &Error{Errno: syscall.ERANGE, Msg: policyFailed, Offset: 40}},
		{"strict start: min len is NLA_UNSPEC", at(7, false, 3), validateLiberal, false, AttrError(syscall.EINVAL, "Unsupported attribute", 40)},
	}
	for _, c := range cases {
		set := &ps
		if strings.HasPrefix(c.name, "low: ") {
			set = &low
		}
		use, err := set.check(c.a, c.mode)
		if use != c.use {
			t.Errorf("%s: use %v", c.name, use)
		}
		if d := cmp.Diff(c.err, err); d != "" {
			t.Errorf("%s: %s", c.name, d)
		}
	}
}
