package loadgen

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/nlemu/nlemu/rtnl"
	"github.com/nlemu/nlemu/server"
)

var rtnlNE = binary.NativeEndian

// expected returns the kernel's list after loading `rule add from all
// table i`, i = 1..n, with automatic priorities into a fresh namespace:
// each rule gets (second rule's priority - 1), so table i has priority
// 32766-i and the newest rule comes right after local.
func expected(fam, n int) (prefs, tables []uint32) {
	prefs = append(prefs, 0)
	tables = append(tables, rtnl.RT_TABLE_LOCAL)
	for i := n; i >= 1; i-- {
		prefs = append(prefs, uint32(32766-i))
		tables = append(tables, uint32(i))
	}
	prefs = append(prefs, 32766)
	tables = append(tables, rtnl.RT_TABLE_MAIN)
	if fam == 4 {
		prefs = append(prefs, 32767)
		tables = append(tables, rtnl.RT_TABLE_DEFAULT)
	}
	return prefs, tables
}

// verify dumps every namespace's rules of family fam and compares each
// rule's priority and table with the kernel's automatic-priority result;
// progress is told how many namespaces are done.
func verify(t *target, names []string, fam, n int, progress func(done int)) (bool, error) {
	wantP, wantT := expected(fam, n)
	af := byte(rtnl.AF_INET)
	if fam == 6 {
		af = rtnl.AF_INET6
	}
	req := rtnl.AppendMessage(nil, rtnl.RTM_GETRULE, rtnl.NLM_F_REQUEST|rtnl.NLM_F_DUMP, 1, 0, []byte{af, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	for k, name := range names {
		progress(k)
		c, err := t.dial(name)
		if err != nil {
			return false, err
		}
		prefs, tables, err := dumpPrefs(c, req)
		c.Close()
		if err != nil {
			return false, fmt.Errorf("%s: %w", name, err)
		}
		if len(prefs) != len(wantP) {
			return false, fmt.Errorf("%s: %d IPv%d rules, want %d", name, len(prefs), fam, len(wantP))
		}
		for i := range prefs {
			if prefs[i] != wantP[i] || tables[i] != wantT[i] {
				return false, fmt.Errorf("%s: rule %d is pref %d table %d, want pref %d table %d", name, i, prefs[i], tables[i], wantP[i], wantT[i])
			}
		}
	}
	progress(len(names))
	return true, nil
}

func dumpPrefs(c *server.Client, req []byte) (prefs, tables []uint32, err error) {
	c.SetRecvTimeout(30 * time.Second)
	if err := c.Send(req); err != nil {
		return nil, nil, err
	}
	for {
		b, err := c.Recv()
		if err != nil {
			return nil, nil, err
		}
		for _, m := range rtnl.SplitDatagram(b) {
			switch m.Header.Type {
			case rtnl.NLMSG_DONE:
				return prefs, tables, nil
			case rtnl.NLMSG_ERROR:
				return nil, nil, fmt.Errorf("dump failed")
			}
			rm, rerr := rtnl.DecodeRuleHeader(&m)
			if rerr != nil {
				return nil, nil, rerr
			}
			if perr := rm.ParseAttrs(); perr != nil {
				return nil, nil, perr
			}
			prefs = append(prefs, rm.Priority)
			tables = append(tables, rm.Table32)
		}
	}
}
