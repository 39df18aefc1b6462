package supervise

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// ChildArg is the hidden first argument with which nlemu re-executes itself
// as the supervised child: `nlemu ChildArg BIN ARGV0 ARGS...`. The child
// installs the filter on its thread, hands the listener to its parent on
// descriptor 3 and execve's BIN.
const ChildArg = "__nlemu-seccomp-child"

// childFD is the child's end of the socketpair (ExtraFiles[0]).
const childFD = 3

// ChildMain is the child mode; it does not return.
func ChildMain(args []string) {
	runtime.LockOSThread()
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "nlemu exec: bad child arguments")
		os.Exit(126)
	}
	bin, argv := args[0], args[1:]
	err := child(bin)
	if err == nil {
		err = unix.Exec(bin, argv, os.Environ())
		fmt.Fprintf(os.Stderr, "nlemu exec: %s: %v\n", argv[0], err)
		if errors.Is(err, os.ErrNotExist) {
			os.Exit(127)
		}
		os.Exit(126)
	}
	// tell the parent why (it prints it), then give up
	unix.Sendmsg(childFD, []byte("E"+err.Error()), nil, nil, 0)
	os.Exit(126)
}

// childRange is the range the child picks: below the smaller of 1024 and
// the hard RLIMIT_NOFILE. The soft limit CMD will run with cannot be read
// here: Go raised it to the hard one at start and restores it in execve;
// 1024 is the default soft limit (docs/EXEC.md).
func childRange() Range {
	var rl unix.Rlimit
	soft := uint64(1024)
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &rl) == nil && rl.Max < soft {
		soft = rl.Max
	}
	return RangeFor(soft)
}

func child(bin string) error {
	r := childRange()
	lfd, err := Install(r)
	if err != nil {
		return err
	}
	p := make([]byte, 9)
	p[0] = 'L'
	ne.PutUint32(p[1:], uint32(r.Base))
	ne.PutUint32(p[5:], uint32(r.Len))
	if err := unix.Sendmsg(childFD, p, unix.UnixRights(lfd), nil, 0); err != nil {
		return fmt.Errorf("handing over the listener: %w", err)
	}
	unix.Close(lfd)
	unix.Close(childFD)
	return nil
}

// RunConfig is what Run needs besides the command.
type RunConfig struct {
	Socket, Namespace string
	// Stats, if set, is a file Run writes the notification counts to
	// (JSON, Supervisor.Counts) when CMD has exited.
	Stats string
	// Stderr receives the supervisor's messages.
	Stderr io.Writer
}

// Run runs bin (argv) under the filter, supervising it until it exits, and
// returns its exit status as a shell reports it (128+n for signal n).
func Run(bin string, argv []string, cfg RunConfig) (int, error) {
	self, err := os.Executable()
	if err != nil {
		return 0, err
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	childEnd := os.NewFile(uintptr(pair[1]), "nlemu-seccomp-child")
	cmd := exec.Command(self, append([]string{ChildArg, bin}, argv...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{childEnd}
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGUSR2,
		syscall.SIGALRM, syscall.SIGWINCH, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTSTP, syscall.SIGCONT)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		childEnd.Close()
		unix.Close(pair[0])
		return 0, err
	}
	childEnd.Close()
	lfd, r, herr := receiveListener(pair[0])
	unix.Close(pair[0])
	var sup *Supervisor
	if herr == nil {
		sup, herr = New(lfd, Config{Socket: cfg.Socket, Namespace: cfg.Namespace, Range: r, Log: cfg.Stderr})
		if herr == nil {
			go sup.Serve()
		}
	}
	if herr != nil {
		// The child will not run CMD: it exits when it finds the listener
		// refused, or is killed here.
		cmd.Process.Kill()
	}
	done := make(chan struct{})
	go func() {
		for {
			select {
			case sg := <-sigs:
				// A terminal sends SIGINT, SIGQUIT and SIGTSTP to the whole
				// foreground group, CMD included: forwarding them would
				// deliver them twice.
				switch sg {
				case syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTSTP:
				default:
					cmd.Process.Signal(sg)
				}
			case <-done:
				return
			}
		}
	}()
	werr := cmd.Wait()
	close(done)
	if herr != nil {
		return 0, herr
	}
	if cfg.Stats != "" && sup != nil {
		if b, err := json.Marshal(sup.Counts()); err == nil {
			os.WriteFile(cfg.Stats, append(b, '\n'), 0o644)
		}
	}
	ps := cmd.ProcessState
	if ps == nil {
		return 0, werr
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), nil
	}
	return ps.ExitCode(), nil
}

// receiveListener reads the child's hand-over: the listener and the range,
// or the child's error.
func receiveListener(fd int) (int, Range, error) {
	p := make([]byte, 4096)
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := unix.Recvmsg(fd, p, oob, 0)
	if err != nil {
		return -1, Range{}, err
	}
	if n == 0 {
		return -1, Range{}, errors.New("the child exited before installing the filter")
	}
	if p[0] == 'E' {
		return -1, Range{}, errors.New(string(p[1:n]))
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 || n != 9 {
		return -1, Range{}, errors.New("bad hand-over from the child")
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return -1, Range{}, errors.New("bad hand-over from the child")
	}
	return fds[0], Range{Base: int(ne.Uint32(p[1:])), Len: int(ne.Uint32(p[5:]))}, nil
}
