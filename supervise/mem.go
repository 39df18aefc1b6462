package supervise

import (
	"encoding/binary"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The calling thread's memory, through process_vm_readv/writev (the same
// ptrace access check as /proc/PID/mem, one system call per transfer).
// A short transfer (an unmapped address) is EFAULT, as the kernel's
// copy_from_user/copy_to_user would report it.

func readMem(pid int, addr uint64, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if addr == 0 {
		return syscall.EFAULT
	}
	local := []unix.Iovec{{Base: &b[0]}}
	local[0].SetLen(len(b))
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(b)}}
	n, err := unix.ProcessVMReadv(pid, local, remote, 0)
	if err != nil {
		return err
	}
	if n != len(b) {
		return syscall.EFAULT
	}
	return nil
}

func writeMem(pid int, addr uint64, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if addr == 0 {
		return syscall.EFAULT
	}
	local := []unix.Iovec{{Base: &b[0]}}
	local[0].SetLen(len(b))
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(b)}}
	n, err := unix.ProcessVMWritev(pid, local, remote, 0)
	if err != nil {
		return err
	}
	if n != len(b) {
		return syscall.EFAULT
	}
	return nil
}

func readU32(pid int, addr uint64) (uint32, error) {
	var b [4]byte
	if err := readMem(pid, addr, b[:]); err != nil {
		return 0, err
	}
	return binary.NativeEndian.Uint32(b[:]), nil
}

func writeU32(pid int, addr uint64, v uint32) error {
	var b [4]byte
	binary.NativeEndian.PutUint32(b[:], v)
	return writeMem(pid, addr, b[:])
}

// remoteIov is a struct iovec in the target.
type remoteIov struct{ base, len uint64 }

// msghdr is struct msghdr (x86_64/arm64 layout, 56 bytes).
type msghdr struct {
	Name       uint64
	Namelen    uint32
	_          uint32
	Iov        uint64
	Iovlen     uint64
	Control    uint64
	Controllen uint64
	Flags      int32
	_          uint32
}

const sizeofMsghdr = int(unsafe.Sizeof(msghdr{}))

func readMsghdr(pid int, addr uint64) (msghdr, error) {
	var m msghdr
	b := unsafe.Slice((*byte)(unsafe.Pointer(&m)), sizeofMsghdr)
	err := readMem(pid, addr, b)
	return m, err
}

// readIovs reads n struct iovec at addr (UIO_MAXIOV 1024, else EMSGSIZE as
// import_iovec()).
func readIovs(pid int, addr, n uint64) ([]remoteIov, error) {
	if n > 1024 {
		return nil, syscall.EMSGSIZE
	}
	if n == 0 {
		return nil, nil
	}
	b := make([]byte, 16*n)
	if err := readMem(pid, addr, b); err != nil {
		return nil, err
	}
	out := make([]remoteIov, n)
	for i := range out {
		out[i] = remoteIov{binary.NativeEndian.Uint64(b[16*i:]), binary.NativeEndian.Uint64(b[16*i+8:])}
	}
	return out, nil
}

// sockaddrNL is struct sockaddr_nl {family, pad, pid, groups}.
func sockaddrNL(pid, groups uint32) []byte {
	b := make([]byte, 12)
	binary.NativeEndian.PutUint16(b[0:], unix.AF_NETLINK)
	binary.NativeEndian.PutUint32(b[4:], pid)
	binary.NativeEndian.PutUint32(b[8:], groups)
	return b
}

// memWrites gathers writes into the caller's memory for one
// process_vm_writev (at most UIO_MAXIOV pieces; more take several calls).
type memWrites struct {
	local  []byte
	pieces []unix.RemoteIovec
}

func (w *memWrites) add(addr uint64, b []byte) {
	if len(b) == 0 {
		return
	}
	w.local = append(w.local, b...)
	w.pieces = append(w.pieces, unix.RemoteIovec{Base: uintptr(addr), Len: len(b)})
}

// scatter adds b spread over the iovecs, as the kernel's copy to a
// msghdr's iovecs.
func (w *memWrites) scatter(iov []remoteIov, b []byte) {
	for _, v := range iov {
		if len(b) == 0 {
			return
		}
		n := int(min(v.len, uint64(len(b))))
		w.add(v.base, b[:n])
		b = b[n:]
	}
}

func (w *memWrites) do(pid int) error {
	off := 0
	for len(w.pieces) > 0 {
		k := min(len(w.pieces), 1024)
		total := 0
		for _, p := range w.pieces[:k] {
			total += p.Len
		}
		local := []unix.Iovec{{Base: &w.local[off]}}
		local[0].SetLen(total)
		n, err := unix.ProcessVMWritev(pid, local, w.pieces[:k], 0)
		if err != nil {
			return err
		}
		if n != total {
			return syscall.EFAULT
		}
		off += total
		w.pieces = w.pieces[k:]
	}
	return nil
}

func u32bytes(v uint32) []byte {
	b := make([]byte, 4)
	binary.NativeEndian.PutUint32(b, v)
	return b
}
