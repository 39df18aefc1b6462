package server_test

import (
	"errors"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/nlemu/nlemu/rtnl"
	T "github.com/nlemu/nlemu/rtnl/rtnltest"
	"github.com/nlemu/nlemu/server"
)

// BenchmarkUnixRuleAddWithListeners is a rule add round trip over the Unix
// socket while 4 Unix listeners of the rule group drain their
// notifications: the cost of GROUP frames (and of the group bookkeeping)
// on the notification path.
func BenchmarkUnixRuleAddWithListeners(b *testing.B) {
	srv := server.New(server.Config{})
	defer srv.Close()
	path := filepath.Join(b.TempDir(), "s.sock")
	if _, err := srv.ListenUnix(path); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		l, err := server.DialUnix(path, server.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		if err := l.Bind(1 << (rtnl.RTNLGRP_IPV4_RULE - 1)); err != nil {
			b.Fatal(err)
		}
		go func() {
			for {
				if _, err := l.Recv(); err != nil && !errors.Is(err, syscall.ENOBUFS) {
					return
				}
			}
		}()
	}
	c, err := server.DialUnix(path, server.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		prio := uint32(i%30000 + 1)
		typ := uint16(rtnl.RTM_NEWRULE)
		if (i/30000)%2 == 1 {
			typ = rtnl.RTM_DELRULE
		}
		if err := c.Send(T.Msg(typ, rtnl.NLM_F_REQUEST|rtnl.NLM_F_ACK|rtnl.NLM_F_CREATE, uint32(i), v4(100, T.Pref(prio)))); err != nil {
			b.Fatal(err)
		}
		if _, err := c.Recv(); err != nil {
			b.Fatal(err)
		}
	}
}
