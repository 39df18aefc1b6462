// Command nsthreads is TestSeccompThreadsInManyNamespaces's program: one
// goroutine per argument, each locked to an OS thread of its own that
// enters a namespace (NAME: /run/netns/NAME with setns; "-": a new one of
// its own, unshare; ".": stay in the start one), adds the rule of priority 1000+i there, then ROUNDS
// times lists the rules, each call a package-level vishvananda/netlink
// call (a socket of its own, opened in the thread's namespace, as its
// tests do), all threads at once. It prints one line per thread: "i ok"
// when every list showed the rules of the threads that entered the same
// namespace (its own alone for "-") once all had added theirs, else what
// it saw.
//
//	nsthreads ROUNDS NAME|-|. ...
package main

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

func main() {
	rounds, err := strconv.Atoi(os.Args[1])
	if err != nil {
		os.Exit(2)
	}
	names := os.Args[2:]
	out := make([]string, len(names))
	var ready, added, wg sync.WaitGroup
	start := make(chan struct{})
	ready.Add(len(names))
	added.Add(len(names))
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			want := []int{1000 + i}
			if name != "-" {
				want = nil
				for j, n := range names {
					if n == name {
						want = append(want, 1000+j)
					}
				}
			}
			out[i] = thread(i, name, rounds, want, &ready, &added, start)
		}()
	}
	ready.Wait()
	close(start)
	wg.Wait()
	for i, o := range out {
		fmt.Println(i, o)
	}
}

func thread(i int, name string, rounds int, want []int, ready, added *sync.WaitGroup, start chan struct{}) string {
	runtime.LockOSThread() // never unlocked: the thread dies with its namespace
	var err error
	switch name {
	case ".":
	case "-":
		err = unix.Unshare(unix.CLONE_NEWNET)
	default:
		var fd int
		if fd, err = unix.Open("/run/netns/"+name, unix.O_RDONLY|unix.O_CLOEXEC, 0); err == nil {
			err = unix.Setns(fd, unix.CLONE_NEWNET)
			unix.Close(fd)
		}
	}
	ready.Done()
	<-start
	if err == nil {
		r := netlink.NewRule()
		r.Priority, r.Table = 1000+i, 1000+i
		if err = netlink.RuleAdd(r); err != nil {
			err = fmt.Errorf("rule add: %w", err)
		}
	} else {
		err = fmt.Errorf("enter: %w", err)
	}
	added.Done()
	added.Wait()
	if err != nil {
		return err.Error()
	}
	for range rounds {
		rules, err := netlink.RuleList(netlink.FAMILY_V4)
		if err != nil {
			return "rule list: " + err.Error()
		}
		var mine []int
		for _, r := range rules {
			if r.Priority >= 1000 && r.Priority < 2000 {
				mine = append(mine, r.Priority)
			}
		}
		slices.Sort(mine)
		if !slices.Equal(mine, want) {
			return fmt.Sprintf("saw rules %v", mine)
		}
	}
	return "ok"
}
