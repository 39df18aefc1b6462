package supervise

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The seccomp user-notification ABI (include/uapi/linux/seccomp.h).
// x/sys/unix has the ioctl numbers but not the structures.

// seccompData is struct seccomp_data.
type seccompData struct {
	Nr   int32
	Arch uint32
	IP   uint64
	Args [6]uint64
}

// notif is struct seccomp_notif.
type notif struct {
	ID    uint64
	Pid   uint32 // the calling thread's id (task_pid_vnr())
	Flags uint32
	Data  seccompData
}

// notifResp is struct seccomp_notif_resp.
type notifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

// notifAddfd is struct seccomp_notif_addfd.
type notifAddfd struct {
	ID         uint64
	Flags      uint32
	Srcfd      uint32
	Newfd      uint32
	NewfdFlags uint32
}

func ioctlPtr(fd int, req uint, p unsafe.Pointer) (uintptr, syscall.Errno) {
	r, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(p))
	return r, e
}

// recvNotif blocks until the next notification (SECCOMP_IOCTL_NOTIF_RECV;
// the structure must be zeroed). EINTR is retried.
func recvNotif(lfd int, n *notif) error {
	for {
		*n = notif{}
		_, e := ioctlPtr(lfd, unix.SECCOMP_IOCTL_NOTIF_RECV, unsafe.Pointer(n))
		if e == 0 {
			return nil
		}
		if e != unix.EINTR {
			return e
		}
	}
}

// idValid reports whether notification id still waits for its answer
// (SECCOMP_IOCTL_NOTIF_ID_VALID): the thread has not been killed or
// interrupted, so its pid still names it and its memory is the caller's.
func idValid(lfd int, id uint64) bool {
	_, e := ioctlPtr(lfd, unix.SECCOMP_IOCTL_NOTIF_ID_VALID, unsafe.Pointer(&id))
	return e == 0
}

// respond answers a notification: val as the call's return value, or errno.
// ENOENT (the thread was interrupted or died meanwhile) is not an error
// the supervisor can do anything about.
func respond(lfd int, id uint64, val int64, errno syscall.Errno) {
	r := notifResp{ID: id, Val: val, Error: -int32(errno)}
	ioctlPtr(lfd, unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(&r))
}

// continueCall lets the kernel run the call as if no filter had trapped it
// (SECCOMP_USER_NOTIF_FLAG_CONTINUE).
func continueCall(lfd int, id uint64) {
	r := notifResp{ID: id, Flags: unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE}
	ioctlPtr(lfd, unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(&r))
}

// addFD installs srcfd in the calling process at number newfd
// (SECCOMP_ADDFD_FLAG_SETFD) and answers the call with that number
// (SECCOMP_ADDFD_FLAG_SEND), atomically: the descriptor exists exactly
// when the call returns. cloexec sets O_CLOEXEC on the new descriptor.
func addFD(lfd int, id uint64, srcfd, newfd int, cloexec bool) (int, error) {
	a := notifAddfd{ID: id, Flags: unix.SECCOMP_ADDFD_FLAG_SETFD | unix.SECCOMP_ADDFD_FLAG_SEND,
		Srcfd: uint32(srcfd), Newfd: uint32(newfd)}
	if cloexec {
		a.NewfdFlags = unix.O_CLOEXEC
	}
	r, e := ioctlPtr(lfd, unix.SECCOMP_IOCTL_NOTIF_ADDFD, unsafe.Pointer(&a))
	if e != 0 {
		return -1, e
	}
	return int(r), nil
}

// setSyncWakeup asks the listener for synchronous wake-ups
// (SECCOMP_IOCTL_NOTIF_SET_FLAGS, SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP;
// seccomp_notify_set_flags(), Linux 6.6): a notifying thread wakes the
// supervisor on its own CPU (wake_up_poll_on_current_cpu()), as it blocks
// until the answer anyway. Older kernels refuse the ioctl (EINVAL): the
// wake-ups stay ordinary, nothing else changes.
func setSyncWakeup(lfd int) bool {
	// the flags are the ioctl's argument itself, not a pointer to them
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(lfd), unix.SECCOMP_IOCTL_NOTIF_SET_FLAGS, unix.SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP)
	return e == 0
}
