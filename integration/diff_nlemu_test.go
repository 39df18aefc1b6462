package integration

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nlemu/nlemu/server"
)

// nlemuSocket adapts *server.Client to Socket: its SetRecvTimeout has no
// error result and treats 0 as "forever", and its timeout error is
// server.ErrTimeout.
type nlemuSocket struct{ *server.Client }

func (s nlemuSocket) SetRecvTimeout(d time.Duration) error {
	if d <= 0 {
		d = time.Microsecond // 0 would block forever
	}
	s.Client.SetRecvTimeout(d)
	return nil
}

func (s nlemuSocket) Recv() ([]byte, error) {
	b, err := s.Client.Recv()
	if errors.Is(err, server.ErrTimeout) {
		return nil, errRecvTimeout
	}
	return b, err
}

// nlemuSide starts an nlemu server with one fresh namespace for a scenario.
// Sockets are in-process clients, or, with NLEMU_DIFF_TRANSPORT=unix,
// clients of the SOCK_SEQPACKET listener (docs/PROTOCOL.md), which also
// exercises the transport.
func nlemuSide(t *testing.T, name string) *Side {
	t.Helper()
	srv := server.New(server.Config{})
	t.Cleanup(func() { srv.Close() })
	const nsName = "diff"
	if err := srv.Namespaces().Add(nsName); err != nil {
		t.Fatalf("nlemu: add namespace: %v", err)
	}
	// In-process requests are handled inside Send, so the quiet period
	// only guards against asynchronous delivery; over the Unix socket the
	// server answers from its own goroutine.
	settle := 10 * time.Millisecond
	dial := func(o server.Options) (*server.Client, error) { return srv.Dial(o) }
	if os.Getenv("NLEMU_DIFF_TRANSPORT") == "unix" {
		l, err := srv.ListenUnix(filepath.Join(t.TempDir(), "nlemu.sock"))
		if err != nil {
			t.Fatalf("nlemu: listen: %v", err)
		}
		t.Cleanup(func() { l.Close() })
		settle = 50 * time.Millisecond
		dial = func(o server.Options) (*server.Client, error) { return server.DialUnix(l.Path(), o) }
	}
	return &Side{
		Name:   name,
		Timing: Timing{Wait: 5 * time.Second, Settle: settleFromEnv(settle)},
		Dial: func(spec SockSpec) (Socket, error) {
			c, err := dial(server.Options{
				Namespace: nsName, ExtAck: spec.ExtAck, CapAck: spec.CapAck,
				StrictCheck: spec.StrictCheck, Groups: spec.Groups,
			})
			if err != nil {
				return nil, fmt.Errorf("nlemu dial: %w", err)
			}
			return nlemuSocket{c}, nil
		},
	}
}
