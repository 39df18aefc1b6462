package server_test

import (
	"errors"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/nlemu/nlemu/server"
)

// TestEmptyDatagramIsENODATA: netlink_sendmsg() refuses a zero-length
// datagram with ENODATA ("Zero length message leads to an empty skb",
// measured: integration's malformed corpus, case "empty datagram"), and
// the socket stays usable. Over the Unix socket an empty datagram would
// read as the end of the stream, so the client must refuse it itself.
func TestEmptyDatagramIsENODATA(t *testing.T) {
	srv := server.New(server.Config{})
	defer srv.Close()
	l, err := srv.ListenUnix(filepath.Join(t.TempDir(), "s"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	inproc, err := srv.Dial(server.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer inproc.Close()
	unixc, err := server.DialUnix(l.Path(), server.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer unixc.Close()
	for name, c := range map[string]*server.Client{"in-process": inproc, "unix": unixc} {
		if err := c.Send(nil); !errors.Is(err, syscall.ENODATA) {
			t.Errorf("%s: Send(empty) = %v, want ENODATA", name, err)
		}
		c.SetRecvTimeout(5 * time.Second)
		if err := c.Send(probe); err != nil {
			t.Fatal(err)
		}
		d, err := c.Recv()
		if err != nil || len(d) < 20 || ne32(d[8:]) != probeSeq || ne32(d[16:]) != 0 {
			t.Errorf("%s: after the empty datagram the probe got %x, %v", name, d, err)
		}
	}
}
