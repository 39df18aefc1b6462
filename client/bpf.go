package client

import (
	"os"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// bpfFilter is a classic BPF socket filter run on each received datagram,
// as sk_filter() runs one on each skb queued to a netlink socket: the
// program's result is how many bytes to keep (0 drops the datagram).
type bpfFilter struct{ vm *bpf.VM }

// run returns what the filter keeps of d, nil when it drops it.
func (f *bpfFilter) run(d []byte) []byte {
	n, err := f.vm.Run(d)
	if err != nil || n == 0 {
		return nil
	}
	return d[:min(n, len(d))]
}

// SetBPF attaches a classic BPF program (SO_ATTACH_FILTER). It runs on the
// receiving side, on the datagram as a kernel socket filter sees the skb.
// Programs using the kernel's ancillary loads (SKF_AD_*, negative
// offsets) are refused with EINVAL: x/net/bpf's VM has none of them.
// A datagram the filter drops is not charged to the receive buffer on a
// kernel socket; here it was, until read.
func (s *Socket) SetBPF(filter []bpf.RawInstruction) error {
	if s.closed.Load() {
		return os.NewSyscallError("setsockopt", unix.EBADF)
	}
	ins, ok := bpf.Disassemble(filter)
	if !ok {
		for _, in := range ins {
			if _, raw := in.(bpf.RawInstruction); raw {
				return os.NewSyscallError("setsockopt", unix.EINVAL)
			}
		}
	}
	vm, err := bpf.NewVM(ins)
	if err != nil {
		// sk_chk_filter(): an invalid program is EINVAL.
		return os.NewSyscallError("setsockopt", unix.EINVAL)
	}
	s.mu.Lock()
	s.filter = &bpfFilter{vm: vm}
	s.mu.Unlock()
	return nil
}

// RemoveBPF detaches the filter (SO_DETACH_FILTER): ENOENT when none is
// attached, as sk_detach_filter() answers.
func (s *Socket) RemoveBPF() error {
	if s.closed.Load() {
		return os.NewSyscallError("setsockopt", unix.EBADF)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.filter == nil {
		return os.NewSyscallError("setsockopt", unix.ENOENT)
	}
	s.filter = nil
	return nil
}
