package journal

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net/netip"
	"sync"
	"testing"

	"github.com/nlemu/nlemu/rtnl"
	"github.com/nlemu/nlemu/server"
)

// The server's side of the journal, as `nlemu serve --state` wires it.
var _ server.Journal = (*Journal)(nil)

var nb = binary.NativeEndian

// env is a server with a journal on dir, driven by in-process clients (the
// same path as loadgen's and the Unix socket's).
type env struct {
	t   *testing.T
	srv *server.Server
	j   *Journal
	rs  *Restored
	mu  sync.Mutex
	log []string
}

func openEnv(t *testing.T, dir string, opt Options) *env {
	t.Helper()
	e, err := tryOpenEnv(t, dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func tryOpenEnv(t *testing.T, dir string, opt Options) (*env, error) {
	e := &env{t: t, srv: server.New(server.Config{})}
	if opt.allocChunk == 0 {
		opt.allocChunk = 4 << 10 // small files to copy and cut
	}
	opt.Logf = func(f string, args ...any) {
		e.mu.Lock()
		e.log = append(e.log, fmt.Sprintf(f, args...))
		e.mu.Unlock()
	}
	j, rs, err := Open(dir, e.srv.Namespaces(), opt)
	if err != nil {
		e.srv.Close()
		return nil, err
	}
	e.j, e.rs = j, rs
	e.srv.SetJournal(j)
	t.Cleanup(e.close)
	return e, nil
}

// close stops the server, then the journal (as nlemu serve does).
func (e *env) close() {
	e.srv.Close()
	e.j.Close()
}

func (e *env) logs() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return fmt.Sprint(e.log)
}

// do sends one request to namespace ns and returns the ACK's errno.
func (e *env) do(ns string, req []byte) int32 {
	e.t.Helper()
	c, err := e.srv.Dial(server.Options{Namespace: ns})
	if err != nil {
		e.t.Fatal(err)
	}
	defer c.Close()
	return sendAck(e.t, c, req)
}

func sendAck(t testing.TB, c *server.Client, req []byte) int32 {
	t.Helper()
	if err := c.Send(req); err != nil {
		t.Fatal(err)
	}
	for {
		b, err := c.Recv()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range rtnl.SplitDatagram(b) {
			if uint16(m.Header.Type) == rtnl.NLMSG_ERROR {
				return -int32(nb.Uint32(m.Data))
			}
		}
	}
}

// mustDo is do expecting success.
func (e *env) mustDo(ns string, req []byte) {
	e.t.Helper()
	if errno := e.do(ns, req); errno != 0 {
		e.t.Fatalf("request in %s: errno %d", ns, errno)
	}
}

// state is namespace ns as its dumps show it: rules, links, addresses and
// routes, every message's bytes, with the fields that hold the time of a
// change masked (cacheinfo stamps: the replay happens later).
func (e *env) state(ns string) string {
	e.t.Helper()
	c, err := e.srv.Dial(server.Options{Namespace: ns, PID: 4242})
	if err != nil {
		e.t.Fatal(err)
	}
	defer c.Close()
	var out bytes.Buffer
	for _, d := range []struct {
		typ uint16
		hdr []byte
	}{
		{rtnl.RTM_GETRULE, make([]byte, 12)},
		{rtnl.RTM_GETLINK, make([]byte, 16)},
		{rtnl.RTM_GETADDR, make([]byte, 8)},
		{rtnl.RTM_GETROUTE, make([]byte, 12)},
	} {
		if err := c.Send(rtnl.AppendMessage(nil, d.typ, rtnl.NLM_F_REQUEST|rtnl.NLM_F_DUMP, 1, 0, d.hdr)); err != nil {
			e.t.Fatal(err)
		}
	dump:
		for {
			b, err := c.Recv()
			if err != nil {
				e.t.Fatal(err)
			}
			for _, m := range rtnl.SplitDatagram(b) {
				if uint16(m.Header.Type) == rtnl.NLMSG_DONE {
					break dump
				}
				raw := append([]byte(nil), m.Raw...)
				maskTimes(raw)
				fmt.Fprintf(&out, "%x\n", raw)
			}
		}
	}
	return out.String()
}

// maskTimes zeroes the timestamps of a dumped message in place.
func maskTimes(raw []byte) {
	typ := nb.Uint16(raw[4:])
	body := raw[16:]
	zero := func(b []byte) { clear(b) }
	switch typ {
	case rtnl.RTM_NEWADDR:
		for a := range rtnl.Attrs(body[8:]) {
			if a.Type == rtnl.IFA_CACHEINFO {
				zero(a.Data)
			}
		}
	case rtnl.RTM_NEWLINK:
		for a := range rtnl.Attrs(body[16:]) {
			if a.Type != rtnl.IFLA_AF_SPEC {
				continue
			}
			for af := range rtnl.Attrs(a.Data) {
				if af.Type != rtnl.AF_INET6 {
					continue
				}
				for x := range rtnl.Attrs(af.Data) {
					if x.Type == rtnl.IFLA_INET6_CACHEINFO {
						zero(x.Data)
					}
				}
			}
		}
	case rtnl.RTM_NEWROUTE:
		for a := range rtnl.Attrs(body[12:]) {
			if a.Type == rtaCacheinfo {
				zero(a.Data)
			}
		}
	}
}

const rtaCacheinfo = 12 // RTA_CACHEINFO

// attr encodes one attribute.
func attr(typ uint16, data ...[]byte) []byte {
	var p []byte
	for _, d := range data {
		p = append(p, d...)
	}
	b := nb.AppendUint16(nil, uint16(4+len(p)))
	b = nb.AppendUint16(b, typ)
	b = append(b, p...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

func u32(v uint32) []byte { return nb.AppendUint32(nil, v) }

func cstr(s string) []byte { return append([]byte(s), 0) }

const reqFlags = rtnl.NLM_F_REQUEST | rtnl.NLM_F_ACK

// ruleAdd is `ip rule add [pref PRIO] from all table T` (prio 0: none,
// the kernel picks one).
func ruleAdd(fam uint8, prio, table uint32) []byte {
	hdr := []byte{fam, 0, 0, 0, 0, 0, 0, rtnl.FR_ACT_TO_TBL, 0, 0, 0, 0}
	attrs := attr(rtnl.FRA_TABLE, u32(table))
	if prio != 0 {
		attrs = append(attrs, attr(rtnl.FRA_PRIORITY, u32(prio))...)
	}
	return rtnl.AppendMessage(nil, rtnl.RTM_NEWRULE, reqFlags|rtnl.NLM_F_EXCL|rtnl.NLM_F_CREATE, 1, 0, hdr, attrs)
}

// ruleDel is `ip rule del pref PRIO`.
func ruleDel(fam uint8, prio uint32) []byte {
	hdr := []byte{fam, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	return rtnl.AppendMessage(nil, rtnl.RTM_DELRULE, reqFlags, 1, 0, hdr, attr(rtnl.FRA_PRIORITY, u32(prio)))
}

// vethAdd is `ip link add NAME type veth peer name PEER`.
func vethAdd(name, peer string) []byte {
	ifi := make([]byte, 16)
	peerInfo := append(append([]byte(nil), ifi...), attr(rtnl.IFLA_IFNAME, cstr(peer))...)
	info := attr(rtnl.IFLA_LINKINFO, attr(1, cstr("veth")), attr(2, attr(1, peerInfo)))
	return rtnl.AppendMessage(nil, rtnl.RTM_NEWLINK, reqFlags|rtnl.NLM_F_EXCL|rtnl.NLM_F_CREATE, 1, 0, ifi, attr(rtnl.IFLA_IFNAME, cstr(name)), info)
}

// linkUp is `ip link set dev INDEX up`.
func linkUp(index int32) []byte {
	ifi := make([]byte, 16)
	nb.PutUint32(ifi[4:], uint32(index))
	nb.PutUint32(ifi[8:], 1)  // IFF_UP
	nb.PutUint32(ifi[12:], 1) // change
	return rtnl.AppendMessage(nil, rtnl.RTM_NEWLINK, reqFlags, 1, 0, ifi)
}

// addrAdd is `ip addr add PREFIX dev INDEX`.
func addrAdd(index int32, prefix string) []byte {
	p := netip.MustParsePrefix(prefix)
	fam := uint8(rtnl.AF_INET)
	if p.Addr().Is6() {
		fam = rtnl.AF_INET6
	}
	ifa := []byte{fam, uint8(p.Bits()), 0, 0, 0, 0, 0, 0}
	nb.PutUint32(ifa[4:], uint32(index))
	a := p.Addr().AsSlice()
	return rtnl.AppendMessage(nil, rtnl.RTM_NEWADDR, reqFlags|rtnl.NLM_F_EXCL|rtnl.NLM_F_CREATE, 1, 0, ifa, attr(rtnl.IFA_LOCAL, a), attr(1, a))
}

// blackhole is `ip route add blackhole PREFIX`.
func blackhole(prefix string) []byte {
	p := netip.MustParsePrefix(prefix)
	fam := uint8(rtnl.AF_INET)
	if p.Addr().Is6() {
		fam = rtnl.AF_INET6
	}
	rtm := []byte{fam, uint8(p.Bits()), 0, 0, 254, 3, 0, 6, 0, 0, 0, 0}
	return rtnl.AppendMessage(nil, rtnl.RTM_NEWROUTE, reqFlags|rtnl.NLM_F_EXCL|rtnl.NLM_F_CREATE, 1, 0, rtm, attr(1, p.Addr().AsSlice()))
}
