package server

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// queue is a socket's receive queue: datagrams waiting for the reader,
// bounded by the socket's receive buffer like sk_rcvbuf. Multicast and
// unicast replies that find it over its limit are dropped and the reader
// gets ENOBUFS once (netlink_overrun()); dumps only produce their next
// datagram once the reader has drained it below half (netlink_recvmsg()).
type queue struct {
	mu    sync.Mutex
	cond  sync.Cond
	items [][]byte // guarded by mu
	head  int
	bytes int           // guarded by mu: bytes queued
	limit int           // guarded by mu: receive buffer
	err   syscall.Errno // guarded by mu: pending socket error
	noErr bool          // guarded by mu: NETLINK_NO_ENOBUFS
	// congested is NETLINK_S_CONGESTED: set by an overrun, it drops every
	// further multicast until the reader has emptied the queue.
	congested bool // guarded by mu
	closed    bool // guarded by mu
}

// defaultRcvbuf is net.core.rmem_default and rmemMax net.core.rmem_max,
// read from this machine when available.
var (
	defaultRcvbuf = sysctlInt("/proc/sys/net/core/rmem_default", 212992)
	rmemMax       = sysctlInt("/proc/sys/net/core/rmem_max", 212992)
)

func sysctlInt(path string, def int) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return def
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n <= 0 {
		return def
	}
	return n
}

func newQueue() *queue {
	q := &queue{limit: defaultRcvbuf}
	q.cond.L = &q.mu
	return q
}

// push queues b unless the queue is over its limit and force is false.
// It never blocks.
func (q *queue) push(b []byte, force bool) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false
	}
	if !force && (q.bytes > q.limit || q.congested) {
		// netlink_overrun(): ENOBUFS once per congestion episode.
		if !q.noErr && !q.congested {
			q.congested = true
			q.err = syscall.ENOBUFS
		}
		q.cond.Signal()
		return false
	}
	q.items = append(q.items, b)
	q.bytes += len(b)
	q.cond.Signal()
	return true
}

// pop returns a pending socket error first (skb_recv_datagram() checks
// sk_err before the queue), else the next datagram, blocking while there is
// neither. It returns (nil, 0, false) once closed.
func (q *queue) pop(block bool) ([]byte, syscall.Errno, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for {
		if !block || q.err != 0 || q.head < len(q.items) || q.closed {
			return q.popLocked()
		}
		q.cond.Wait()
	}
}

// popLocked is one non-blocking pop with q.mu held.
func (q *queue) popLocked() ([]byte, syscall.Errno, bool) {
	for {
		if q.err != 0 {
			e := q.err
			q.err = 0
			return nil, e, true
		}
		if q.head < len(q.items) {
			b := q.items[q.head]
			q.items[q.head] = nil
			q.head++
			if q.head == len(q.items) {
				// netlink_rcv_wake(): an empty queue ends congestion.
				q.items, q.head = q.items[:0], 0
				q.congested = false
			}
			q.bytes -= len(b)
			return b, 0, true
		}
		return nil, 0, !q.closed
	}
}

// roomForDump reports whether a dump may add its next datagram.
func (q *queue) roomForDump() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.bytes <= q.limit/2
}

func (q *queue) setLimit(n int) {
	q.mu.Lock()
	q.limit = n
	q.mu.Unlock()
}

func (q *queue) setNoENOBUFS(v bool) {
	q.mu.Lock()
	q.noErr = v
	q.mu.Unlock()
}

func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	q.cond.Broadcast()
	q.mu.Unlock()
}

// wait blocks until the queue has a datagram or an error to deliver, and
// reports false once it is closed.
func (q *queue) wait() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.head >= len(q.items) && q.err == 0 && !q.closed {
		q.cond.Wait()
	}
	return !q.closed
}
