package rtnl

import (
	"testing"
	"time"
)

// TestRTNLUncontendedCountsNoWait: an acquisition that finds RTNL free
// counts as one and adds no wait; one that queues behind a holder adds
// the time it queued.
func TestRTNLUncontendedCountsNoWait(t *testing.T) {
	var l RTNL
	for i := 0; i < 3; i++ {
		l.Lock()
		l.Unlock()
	}
	if s := l.Stats(); s.Acquisitions != 3 || s.Wait != 0 || s.Hold < 0 {
		t.Fatalf("uncontended: %+v, want 3 acquisitions and no wait", s)
	}

	l.Lock()
	done := make(chan struct{})
	go func() {
		l.Lock()
		l.Unlock()
		close(done)
	}()
	// The waiter either queues (its wait is counted) or, scheduled only
	// after the Unlock below, takes the lock free; retry until it queued.
	for i := 0; ; i++ {
		time.Sleep(20 * time.Millisecond)
		l.Unlock()
		<-done
		if l.Stats().Wait > 0 {
			break
		}
		if i == 50 {
			t.Fatal("a waiter behind a holder never counted a wait")
		}
		l.Lock()
		done = make(chan struct{})
		go func() {
			l.Lock()
			l.Unlock()
			close(done)
		}()
	}
	if s := l.Stats(); s.Acquisitions < 5 || s.Hold < 20*time.Millisecond {
		t.Fatalf("contended: %+v, want at least 5 acquisitions and the holder's 20 ms", s)
	}
}
