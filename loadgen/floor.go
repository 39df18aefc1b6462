package loadgen

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The AF_UNIX SOCK_SEQPACKET round-trip floor, the Go twin of
// hack/floor/floor.c: pairs of processes, a client that sends a 40-byte
// request (an `ip rule add`) and blocks for a 36-byte answer (an ack), and
// a server that blocks in recv and answers with one send. Two system calls
// and one wake-up on each side per round trip: what no emulator over this
// transport can beat. `nlemu load --driver ip` measures it first and gives
// its figures as a ratio to it.

// FloorChildArg is the argument after `load` that makes the nlemu binary a
// floor process (FloorChild) instead of a load.
const FloorChildArg = "--floor-child"

// MeasureFloor runs pairs client/server process pairs (the nlemu binary bin
// as `bin load --floor-child ...`) of rounds round trips each, all at
// once, and returns the wall time per round trip over all of them (µs),
// start-up excluded.
func MeasureFloor(bin string, pairs, rounds int) (float64, error) {
	goR, goW, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	defer goR.Close()
	var cmds []*exec.Cmd
	kill := func() {
		for _, c := range cmds {
			c.Process.Kill()
			c.Wait()
		}
	}
	for range pairs {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			goW.Close()
			kill()
			return 0, err
		}
		sf, cf := os.NewFile(uintptr(fds[0]), "floor-server"), os.NewFile(uintptr(fds[1]), "floor-client")
		srv := exec.Command(bin, "load", FloorChildArg, "serve")
		srv.ExtraFiles = []*os.File{sf}
		cli := exec.Command(bin, "load", FloorChildArg, "client", strconv.Itoa(rounds))
		cli.ExtraFiles = []*os.File{cf, goR}
		cli.Stderr = os.Stderr
		for _, c := range []*exec.Cmd{srv, cli} {
			if err := c.Start(); err != nil {
				sf.Close()
				cf.Close()
				goW.Close()
				kill()
				return 0, err
			}
			cmds = append(cmds, c)
		}
		sf.Close()
		cf.Close()
	}
	start := time.Now()
	goW.Close() // every client starts at once: end of file on its pipe
	var ferr error
	for _, c := range cmds {
		if err := c.Wait(); err != nil && ferr == nil {
			ferr = fmt.Errorf("floor process: %w", err)
		}
	}
	el := time.Since(start)
	if ferr != nil {
		return 0, ferr
	}
	return float64(el.Microseconds()) / float64(pairs*rounds), nil
}

// FloorChild is one floor process: args are "serve" (answer every request
// on descriptor 3 until the peer closes) or "client ROUNDS" (wait for end
// of file on descriptor 4, then make ROUNDS round trips on descriptor 3).
// Blocking system calls from one locked thread, raw (no entersyscall: in
// a process of its own nothing else needs the P; measured, the
// runtime's syscall path made the 16-pair floor 1.5-2x the C one's), no
// netpoller, as in the C version.
func FloorChild(args []string) error {
	runtime.LockOSThread()
	const sock, gate = 3, 4
	buf := make([]byte, 4096)
	recv := func() (int, error) {
		for {
			n, _, e := syscall.RawSyscall6(unix.SYS_RECVFROM, sock, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), 0, 0, 0)
			if e == unix.EINTR {
				continue
			}
			if e != 0 {
				return 0, e
			}
			return int(n), nil
		}
	}
	send := func(n int) error {
		for {
			_, _, e := syscall.RawSyscall6(unix.SYS_SENDTO, sock, uintptr(unsafe.Pointer(&buf[0])), uintptr(n), unix.MSG_NOSIGNAL, 0, 0)
			if e == unix.EINTR {
				continue
			}
			if e != 0 {
				return e
			}
			return nil
		}
	}
	switch {
	case len(args) == 1 && args[0] == "serve":
		for {
			n, err := recv()
			if err != nil || n == 0 {
				return nil
			}
			if err := send(36); err != nil {
				return err
			}
		}
	case len(args) == 2 && args[0] == "client":
		rounds, err := strconv.Atoi(args[1])
		if err != nil {
			return err
		}
		var b [1]byte
		for {
			_, err := unix.Read(gate, b[:])
			if err != unix.EINTR {
				break
			}
		}
		for range rounds {
			if err := send(40); err != nil {
				return err
			}
			if n, err := recv(); err != nil || n == 0 {
				return errors.New("floor: the server went away")
			}
		}
		return nil
	}
	return errors.New("floor: usage: --floor-child serve | client ROUNDS")
}
