package integration

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Endpoint is one netlink socket at the datagram level: nlemu's
// *server.Client and *kernelns.Socket both satisfy it. Send takes one
// datagram (one or more messages); Recv returns one datagram.
type Endpoint interface {
	PortID() uint32
	Send([]byte) error
	Recv() ([]byte, error)
}

// recvTimeouter is implemented by endpoints that can bound Recv themselves
// (kernelns.Socket). Recv then fails with an error wrapping
// os.ErrDeadlineExceeded.
type recvTimeouter interface {
	SetRecvTimeout(time.Duration) error
}

// errRecvTimeout is what a Receiver returns when nothing arrived in time.
var errRecvTimeout = fmt.Errorf("receive timed out: %w", os.ErrDeadlineExceeded)

// Receiver reads datagrams from an Endpoint with a timeout. Endpoints with
// SetRecvTimeout are read directly; others are read by a pump goroutine that
// feeds a channel (it ends when Recv fails, e.g. after Close).
type Receiver struct {
	ep Endpoint
	rt recvTimeouter

	once sync.Once
	ch   chan recvResult
}

type recvResult struct {
	b   []byte
	err error
}

// NewReceiver wraps ep.
func NewReceiver(ep Endpoint) *Receiver {
	r := &Receiver{ep: ep}
	if rt, ok := ep.(recvTimeouter); ok {
		r.rt = rt
	}
	return r
}

// Next returns the next datagram or errRecvTimeout after d.
func (r *Receiver) Next(d time.Duration) ([]byte, error) {
	if r.rt != nil {
		if err := r.rt.SetRecvTimeout(d); err != nil {
			return nil, err
		}
		b, err := r.ep.Recv()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, errRecvTimeout
		}
		return b, err
	}
	r.once.Do(func() {
		r.ch = make(chan recvResult, 1024)
		go func() {
			for {
				b, err := r.ep.Recv()
				r.ch <- recvResult{b, err}
				if err != nil {
					close(r.ch)
					return
				}
			}
		}()
	})
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case res, ok := <-r.ch:
		if !ok {
			return nil, errors.New("endpoint closed")
		}
		return res.b, res.err
	case <-t.C:
		return nil, errRecvTimeout
	}
}

// Timing bounds how long the collector waits. Wait is the longest wait for a
// reply that must come (an ACK, an NLMSG_DONE); Settle is how long the socket
// must stay quiet before the reply is considered complete (replies that may
// or may not come: errors of requests without NLM_F_ACK, notifications).
type Timing struct {
	Wait   time.Duration
	Settle time.Duration
}

// Datagram is one received datagram after port-id normalization.
type Datagram struct {
	B []byte
	// Ported[i] is true when the nlmsg_pid of message i was a port id that
	// normalization replaced by 0.
	Ported []bool
}

func newDatagram(d []byte, pids []uint32) Datagram {
	b, marks := normalizePids(d, pids...)
	return Datagram{B: b, Ported: marks}
}

// Reply is everything one socket received for one step, in order.
type Reply struct {
	Datagrams []Datagram
	// Problem notes a collection failure (timeout waiting for a required
	// reply, a receive error). It is part of the comparison.
	Problem string
}

// Bytes concatenates the datagrams.
func (r Reply) Bytes() []byte {
	var b bytes.Buffer
	for _, d := range r.Datagrams {
		b.Write(d.B)
	}
	return b.Bytes()
}

// countTerminators counts NLMSG_ERROR and NLMSG_DONE messages in d.
func countTerminators(d []byte) int {
	msgs, _ := splitMsgs(d)
	n := 0
	for _, m := range msgs {
		if m.Type == nlmsgError || m.Type == nlmsgDone {
			n++
		}
	}
	return n
}

// Exchange sends datagram req on ep and collects the replies: it waits (up to
// tm.Wait each) until as many NLMSG_ERROR/NLMSG_DONE messages arrived as the
// request demands (expectedTerminators), then keeps reading until the socket
// has been quiet for tm.Settle. pids are the port ids to normalize to 0 (the
// endpoint's own is always included).
func Exchange(ep Endpoint, rcv *Receiver, req []byte, tm Timing, pids ...uint32) Reply {
	pids = append([]uint32{ep.PortID()}, pids...)
	if err := ep.Send(req); err != nil {
		return Reply{Problem: "send: " + errText(err)}
	}
	return Collect(rcv, expectedTerminators(req), tm, pids...)
}

// Collect reads from rcv until want terminators (NLMSG_ERROR/NLMSG_DONE)
// arrived, then until quiet (see Exchange).
func Collect(rcv *Receiver, want int, tm Timing, pids ...uint32) Reply {
	var rep Reply
	got := 0
	for got < want {
		d, err := rcv.Next(tm.Wait)
		if err != nil {
			rep.Problem = fmt.Sprintf("after %d of %d required replies: %s", got, want, errText(err))
			return rep
		}
		rep.Datagrams = append(rep.Datagrams, newDatagram(d, pids))
		got += countTerminators(d)
	}
	for {
		d, err := rcv.Next(tm.Settle)
		if errors.Is(err, errRecvTimeout) {
			return rep
		}
		if err != nil {
			rep.Problem = "while settling: " + errText(err)
			return rep
		}
		rep.Datagrams = append(rep.Datagrams, newDatagram(d, pids))
	}
}

// DumpRules sends an RTM_GETRULE dump request for family (a fib_rule_hdr of
// zeros but the family) with sequence number seq and collects the reply up to
// NLMSG_DONE (or NLMSG_ERROR). Compare it with boundaries off: the kernel
// sizes dump datagrams from the reader's buffer (netlink_recvmsg's
// max_recvmsg_len, at most ~32 KiB), so how many rules share a datagram is not
// part of the contract — the order and bytes of the messages are.
func DumpRules(ep Endpoint, rcv *Receiver, family uint8, seq uint32, tm Timing) Reply {
	req := Msg(rtmGetRule, nlmFRequest|nlmFDump, seq, 0, RuleHdr{Family: family}.Bytes())
	if err := ep.Send(req); err != nil {
		return Reply{Problem: "send: " + errText(err)}
	}
	return Collect(rcv, 1, Timing{Wait: tm.Wait}, ep.PortID())
}

// errText describes err in implementation-neutral terms, so that the same
// failure on both sides compares equal: the errno name when err carries one
// (ENOBUFS from a receive, EINVAL from a setsockopt), "timeout", or the text.
func errText(err error) string {
	var errno syscall.Errno
	switch {
	case errors.Is(err, errRecvTimeout), errors.Is(err, os.ErrDeadlineExceeded):
		return "timeout"
	case errors.As(err, &errno):
		if n := unix.ErrnoName(errno); n != "" {
			return n
		}
		return fmt.Sprintf("errno %d", int(errno))
	}
	return err.Error()
}
