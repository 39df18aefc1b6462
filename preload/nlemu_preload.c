// The build constraint below is for the Go tool only: this file is embedded by
// preload.go and compiled at run time, never by cgo.
//
//go:build ignore

/*
 * nlemu_preload.c - LD_PRELOAD shim that attaches a program's NETLINK_ROUTE
 * sockets to an nlemu server instead of the kernel.
 *
 * `nlemu exec -n NAME -- CMD` runs CMD with this library preloaded and with
 *   NLEMU_SOCKET=/abs/path/of/the/server/socket
 *   NLEMU_NETNS=NAME            (namespace; "default" when unset)
 * When NLEMU_SOCKET is unset or empty the library passes everything through.
 *
 * How it works (the wire protocol is docs/PROTOCOL.md):
 *  - socket(AF_NETLINK, SOCK_RAW|SOCK_DGRAM [|SOCK_CLOEXEC|SOCK_NONBLOCK],
 *    NETLINK_ROUTE) creates an AF_UNIX SOCK_SEQPACKET socket instead,
 *    connects it to $NLEMU_SOCKET and sends HELLO for $NLEMU_NETNS. The
 *    server answers with the port id. The caller gets that fd: it is a real
 *    socket, so poll/select/epoll, O_NONBLOCK, fork and SOCK_CLOEXEC work on it
 *    unchanged, and one SEQPACKET datagram is one netlink datagram.
 *  - A small table, indexed by fd, remembers what the kernel would know about
 *    the netlink socket (port id, groups, socket options, buffer sizes). Dups
 *    share one entry (reference counted); close() of the last fd frees it.
 *  - bind/getsockname/getpeername/connect/setsockopt/getsockopt are answered
 *    from that table; options the server needs are forwarded as SETSOCKOPT and
 *    BIND control datagrams. bind() with groups, NETLINK_ADD/DROP_MEMBERSHIP
 *    and NETLINK_LISTEN_ALL_NSID wait for the server's ack (the membership is
 *    in effect when they return, and they fail with the kernel's errno);
 *    what arrives before the ack is kept for the next receive calls.
 *  - send paths drop msg_name (the socket is connected) and control data and
 *    add MSG_NOSIGNAL; receive paths present {AF_NETLINK, nl_pid 0, nl_groups
 *    = the notification's group bit} as the sender (and NETLINK_PKTINFO),
 *    strip the NLEMU_GROUP frame the server puts before each notification,
 *    tell the server the receive buffer size (NLEMU_RECVLEN), and turn
 *    a SOCKERR datagram into -1/errno (e.g. ENOBUFS) exactly once. A SOCKERR
 *    stays queued in the socket until a receive call consumes it, so the socket
 *    stays readable for poll() while an error is pending (the kernel reports
 *    POLLERR there; POLLIN is what we can offer).
 *  - a MSG_PEEK in a single-threaded process reads the datagram out of the
 *    socket into the shim, and the next receive call is answered from it
 *    (iproute2's sizing peek and read: one recvmsg); poll/select/epoll give
 *    it back first, so readiness is the kernel's ("peeking at the floor").
 *  - a blocking receive for the reply of a request just sent polls the socket
 *    for up to NLEMU_SPIN_US microseconds (default 50) before it blocks,
 *    adaptively, and only with a CPU to spare ("spin then block").
 *  - if_nametoindex/if_indextoname/if_nameindex resolve through the emulated
 *    namespace with RTM_GETLINK on a private connection.
 *  - ioctl() with a network-configuration request (0x89xx: SIOCGIF*,
 *    SIOCSIF*, routes, ARP, bridge, VLAN, ethtool, ...) on any socket is
 *    answered from the emulated namespace, or failed as the kernel fails it
 *    there; it never reaches the kernel (see "interface ioctls" below).
 * Everything else (other families, other netlink protocols, unknown fds,
 * other ioctls) goes straight to libc.
 *
 * Known limits: only calls that go through libc's dynamic symbols are seen
 * (not Go programs, static binaries, raw syscalls, or glibc's own internal
 * netlink and ioctl use such as getifaddrs()); /proc/net and /sys/class/net
 * still show the kernel namespace the program runs in; fds closed behind libc's back (raw
 * syscalls, fclose of an fdopen'ed socket) leave a stale entry until socket()
 * hands out that number again; a netlink fd inherited across execve without
 * SOCK_CLOEXEC is a plain AF_UNIX socket in the new image; received
 * datagrams carry no SCM_CREDENTIALS; a socket is bound (has its port id)
 * from socket() on, so bind()'s nl_pid is not checked; unicast to other netlink
 * ports is not supported (destination addresses are ignored); the
 * recvmmsg() timeout is not emulated; a datagram peeked before fork() goes
 * to the parent only, and one peeked before an execve() that keeps the
 * socket is lost; a signal handler that uses an
 * emulated fd can deadlock if it interrupts this library holding its lock
 * (calls on ordinary fds never take it).
 *
 * Build: cc -shared -fPIC -O2 -o libnlemu_preload.so nlemu_preload.c -ldl -lpthread
 */
#define _GNU_SOURCE
#ifdef _FORTIFY_SOURCE
#undef _FORTIFY_SOURCE /* we define the __*_chk entry points ourselves */
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <sys/un.h>
#include <unistd.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if_arp.h>
#include <net/route.h>
#include <netinet/in.h>

#define EXPORT __attribute__((visibility("default")))

/* glibc declares the address arguments of the socket calls as transparent
 * unions in GNU mode; our definitions must use the same types. */
#if defined(__GLIBC__) && defined(__USE_GNU) && !defined(__cplusplus)
#define SA_ARG __SOCKADDR_ARG
#define CSA_ARG __CONST_SOCKADDR_ARG
#define SA_PTR(a) ((a).__sockaddr__)
#else
#define SA_ARG struct sockaddr *
#define CSA_ARG const struct sockaddr *
#define SA_PTR(a) (a)
#endif

/* ---- protocol constants (docs/PROTOCOL.md) ---------------------------- */

#define NLEMU_HELLO 0xFE00
#define NLEMU_SETSOCKOPT 0xFE01
#define NLEMU_BIND 0xFE02
#define NLEMU_SOCKERR 0xFE03
#define NLEMU_GROUP 0xFE04 /* frames a notification: its multicast group */
#define NLEMU_ACK 0xFE05   /* answers a SETSOCKOPT/BIND sent with NLM_F_ACK */
#define NLEMU_RECVLEN 0xFE00 /* SOL_NETLINK option name */
#define NLEMU_GROUPFRAMES 0xFE01 /* SOL_NETLINK option: frame notifications */
#define NLEMU_SPINSTATS 0xFE02 /* SOL_NETLINK getsockopt, the shim's own: u32 hits, misses, skips */
/* SOL_NETLINK getsockopt, the shim's own: u32 ring (1 while in ring mode),
 * datagrams sent and received through the rings, doorbells sent, receives
 * that blocked on the socket (see "shared-memory rings") */
#define NLEMU_RINGSTATS 0xFE03
#define NLEMU_VERSION 1

#define HELLO_OPT_EXT_ACK (1u << 0)
#define HELLO_OPT_CAP_ACK (1u << 1)
#define HELLO_OPT_STRICT (1u << 2)
#define HELLO_OPT_NO_ENOBUFS (1u << 3)

#ifndef SOL_NETLINK
#define SOL_NETLINK 270
#endif
#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

/* How long the handshake may take before socket() gives up (ms). */
#define HANDSHAKE_TIMEOUT_MS 10000

/* Size of the SOCKERR datagram: nlmsghdr + i32 errno. */
#define SOCKERR_LEN (NLMSG_HDRLEN + 4)
/* Every control message the server sends is 16 bytes of header and a u32. */
#define CTL_LEN (NLMSG_HDRLEN + 4)

/* Groups we track: as many as rtnetlink has (the kernel's nlk->ngroups). */
/* nlk->ngroups of NETLINK_ROUTE: RTNLGRP_MAX of Linux 6.18, measured (the
 * server checks groups; this only sizes the membership bitmap) */
#define NL_MAXGROUPS 39
#define NL_GROUP_WORDS ((NL_MAXGROUPS + 31) / 32)

/* Linux's SOCK_MIN_RCVBUF / SOCK_MIN_SNDBUF (x86-64, 6.x). */
#define MIN_RCVBUF 2304
#define MIN_SNDBUF 4608

/* ---- real libc entry points -------------------------------------------- */

static int (*real_socket)(int, int, int);
static int (*real_bind)(int, CSA_ARG, socklen_t);
static int (*real_connect)(int, CSA_ARG, socklen_t);
static int (*real_getsockname)(int, SA_ARG, socklen_t *);
static int (*real_getpeername)(int, SA_ARG, socklen_t *);
static int (*real_setsockopt)(int, int, int, const void *, socklen_t);
static int (*real_getsockopt)(int, int, int, void *, socklen_t *);
static ssize_t (*real_send)(int, const void *, size_t, int);
static ssize_t (*real_sendto)(int, const void *, size_t, int, CSA_ARG, socklen_t);
static ssize_t (*real_sendmsg)(int, const struct msghdr *, int);
static ssize_t (*real_recv)(int, void *, size_t, int);
static ssize_t (*real_recvfrom)(int, void *, size_t, int, SA_ARG, socklen_t *);
static ssize_t (*real_recvmsg)(int, struct msghdr *, int);
static int (*real_sendmmsg)(int, struct mmsghdr *, unsigned int, int);
static int (*real_recvmmsg)(int, struct mmsghdr *, unsigned int, int, struct timespec *);
static ssize_t (*real_read)(int, void *, size_t);
static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_readv)(int, const struct iovec *, int);
static ssize_t (*real_writev)(int, const struct iovec *, int);
static ssize_t (*real_read_chk)(int, void *, size_t, size_t);
static ssize_t (*real_recv_chk)(int, void *, size_t, size_t, int);
static ssize_t (*real_recvfrom_chk)(int, void *, size_t, size_t, int, SA_ARG, socklen_t *);
static int (*real_close)(int);
static int (*real_close_range)(unsigned int, unsigned int, int);
static void (*real_closefrom)(int);
static int (*real_dup)(int);
static int (*real_dup2)(int, int);
static int (*real_dup3)(int, int, int);
static int (*real_fcntl)(int, int, ...);
static int (*real_fcntl64)(int, int, ...);
static unsigned int (*real_if_nametoindex)(const char *);
static char *(*real_if_indextoname)(unsigned int, char *);
static struct if_nameindex *(*real_if_nameindex)(void);
static int (*real_ioctl)(int, unsigned long, ...);
static int (*real_poll)(struct pollfd *, nfds_t, int);
static int (*real_poll_chk)(struct pollfd *, nfds_t, int, size_t);
static int (*real_ppoll)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *);
static int (*real_select)(int, fd_set *, fd_set *, fd_set *, struct timeval *);
static int (*real_pselect)(int, fd_set *, fd_set *, fd_set *, const struct timespec *,
			   const sigset_t *);
static int (*real_epoll_wait)(int, struct epoll_event *, int, int);
static int (*real_epoll_ctl)(int, int, int, struct epoll_event *);
static int (*real_pthread_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
static int (*real_epoll_pwait)(int, struct epoll_event *, int, int, const sigset_t *);
static int (*real_epoll_pwait2)(int, struct epoll_event *, int, const struct timespec *,
				const sigset_t *);

extern void __chk_fail(void) __attribute__((noreturn));

static pthread_once_t resolve_once = PTHREAD_ONCE_INIT;

#define RESOLVE(name) (*(void **)&real_##name = dlsym(RTLD_NEXT, #name))

static void resolve(void)
{
	RESOLVE(socket);
	RESOLVE(bind);
	RESOLVE(connect);
	RESOLVE(getsockname);
	RESOLVE(getpeername);
	RESOLVE(setsockopt);
	RESOLVE(getsockopt);
	RESOLVE(send);
	RESOLVE(sendto);
	RESOLVE(sendmsg);
	RESOLVE(recv);
	RESOLVE(recvfrom);
	RESOLVE(recvmsg);
	RESOLVE(sendmmsg);
	RESOLVE(recvmmsg);
	RESOLVE(read);
	RESOLVE(write);
	RESOLVE(readv);
	RESOLVE(writev);
	*(void **)&real_read_chk = dlsym(RTLD_NEXT, "__read_chk");
	*(void **)&real_recv_chk = dlsym(RTLD_NEXT, "__recv_chk");
	*(void **)&real_recvfrom_chk = dlsym(RTLD_NEXT, "__recvfrom_chk");
	RESOLVE(close);
	RESOLVE(close_range);
	RESOLVE(closefrom);
	RESOLVE(dup);
	RESOLVE(dup2);
	RESOLVE(dup3);
	RESOLVE(fcntl);
	RESOLVE(fcntl64);
	if (!real_fcntl64)
		real_fcntl64 = real_fcntl;
	RESOLVE(if_nametoindex);
	RESOLVE(if_indextoname);
	RESOLVE(if_nameindex);
	RESOLVE(ioctl);
	RESOLVE(poll);
	*(void **)&real_poll_chk = dlsym(RTLD_NEXT, "__poll_chk");
	RESOLVE(ppoll);
	RESOLVE(select);
	RESOLVE(pselect);
	RESOLVE(epoll_wait);
	RESOLVE(epoll_ctl);
	RESOLVE(pthread_create);
	RESOLVE(epoll_pwait);
	RESOLVE(epoll_pwait2);
}

/* resolved is set once resolve() has run (the library's constructor runs it
 * first of all): INIT is then one load and a branch, not a call into
 * pthread_once per interposed call. */
static int resolved;

static void resolve_all(void)
{
	resolve();
	__atomic_store_n(&resolved, 1, __ATOMIC_RELEASE);
}

#define INIT()                                                         \
	do {                                                           \
		if (__builtin_expect(!__atomic_load_n(&resolved, __ATOMIC_ACQUIRE), 0)) \
			pthread_once(&resolve_once, resolve_all);     \
	} while (0)

/* ---- spin then block -------------------------------------------------
 *
 * Through the shim every request is a round trip to another process: the
 * client's receive blocks, the server's send wakes it, and each side pays
 * a wake-up and a context switch per request (the kernel answers inside the
 * sender's sendmsg: no switch). On a machine with a CPU to spare the wait
 * for the reply of a request just sent first polls the socket without
 * blocking (recvmsg MSG_DONTWAIT, a pause and the vDSO clock in between)
 * for up to NLEMU_SPIN_US microseconds, and blocks only after that, as the
 * kernel's busy polling (SO_BUSY_POLL, sk_busy_loop()) and glibc's adaptive
 * mutexes do; with the server spinning too (server/fdconn.go) a round trip
 * is then four system calls and no wake-up.
 *
 * Adaptive, per socket: a wait that ends within the window (a hit) lowers
 * the back-off level by one; one that does not (a miss: the reply came
 * later, or never, as for a listener after its last reply) raises it and
 * the next 2^level - 1 waits block at once (level at most SPIN_MAX_LEVEL).
 * So a client queued behind a busy server, whose replies take milliseconds,
 * spins for about one wait in a thousand, and one whose replies come in
 * time spins for each. Only a blocking receive (no MSG_DONTWAIT, the socket
 * not O_NONBLOCK as far as socket(), fcntl() and ioctl(FIONBIO) told us)
 * after a send on the socket spins; poll() and friends never do. Never
 * with one CPU to run on (sched_getaffinity), nor while the machine has no
 * CPU to spare: more tasks runnable than the CPUs this process may use
 * (/proc/loadavg's running count, nr_running(), looked at every
 * SPARE_EVERY waits). A spinner then holds a CPU that the server, or the
 * task the scheduler would have woken there, needs: measured with a third
 * busy process on 2 CPUs, round trips of 26-34 us spinning against 11-12
 * us blocking. NLEMU_SPIN_US sets the window (SPIN_US_DEFAULT, 0: off);
 * NLEMU_SPIN_ALWAYS=1 spins
 * without looking for a CPU to spare (tests, and measuring on a shared
 * machine). */

/* SPIN_US_DEFAULT: 50 us. On the quiet 2-CPU machine one `ip -batch` of
 * 40,000 routes took 0.47-0.59 s with both sides spinning against
 * 1.60-1.62 s with neither (kernel 0.42-0.60 s in the same runs); under
 * load the running-count check keeps it off. docs/SHIM.md, "Spin then
 * block". NLEMU_SPIN_US=0 turns it off. */
#define SPIN_US_DEFAULT 50
#define SPIN_US_MAX 10000
#define SPIN_MAX_LEVEL 10
/* SPIN_PROBE_NS: the time between two probes of the socket. */
#define SPIN_PROBE_NS 300

/* spin_ns is the spin window in nanoseconds, 0 for none (set once, by the
 * constructor: until it runs nothing spins). */
static long spin_ns;
/* spin_cpus: the CPUs this process may use (sched_getaffinity). */
static int spin_cpus;

/* SPARE_EVERY: waits between two looks at /proc/loadavg. */
#define SPARE_EVERY 64
/* spare_tick counts waits, spare is what the last look found; both
 * relaxed atomics: in a multi-threaded process two threads may look at
 * once, and either answer will do. */
static unsigned spare_tick;
static int spare;
static int spin_always;     /* NLEMU_SPIN_ALWAYS=1 */

/* running_tasks is the number of runnable tasks on the machine, the caller
 * included (the fourth field of /proc/loadavg, "R/T"), -1 when unknown. */
static int running_tasks(void)
{
	int fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	char buf[128];
	ssize_t n = real_read(fd, buf, sizeof(buf) - 1);
	real_close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	char *p = buf;
	for (int f = 0; f < 3; f++) {
		p = strchr(p, ' ');
		if (!p)
			return -1;
		p++;
	}
	char *end;
	long v = strtol(p, &end, 10);
	return end != p && *end == '/' ? (int)v : -1;
}

/* spare_cpu reports whether spinning may take a CPU: no more runnable tasks
 * than this process's CPUs (the spinner and its server among them). */
static int spare_cpu(void)
{
	if (spin_always)
		return 1;
	if (__atomic_fetch_add(&spare_tick, 1, __ATOMIC_RELAXED) % SPARE_EVERY == 0) {
		int r = running_tasks();
		__atomic_store_n(&spare, r >= 0 && r <= spin_cpus, __ATOMIC_RELAXED);
	}
	return __atomic_load_n(&spare, __ATOMIC_RELAXED);
}

/* poll_cpu is the CPU the server's polling loop owns, from the HELLO
 * answer's third word (HELLO_POLLS | cpu), -1 when the server does not poll
 * (see "polled server CPU" below). */
#define HELLO_POLLS (1u << 31)
static int poll_cpu = -1;
/* poll_avoid: a process told that the server polls leaves the poller's CPU
 * (sched_setaffinity of the calling thread to the others; NLEMU_POLL_AVOID=0
 * keeps its affinity). Measured with 256 parallel `ip -batch`: without it
 * the clients the scheduler placed on the poller's CPU ran only in the
 * time real-time throttling leaves there (5 %), and their namespaces
 * finished last: 31.2 s against 11.8 s with it (docs/PROTOCOL.md, "Polled
 * server CPU"). */
static int poll_avoid = 1;

/* may_spin reports whether this wait may spin. For a polling server: when
 * this thread runs on another CPU than the poller (on the poller's own the
 * spinner would hold the CPU the poller needs; sched_getcpu is a vDSO
 * call), with no running-count check: a polling server answers within a
 * few microseconds whatever else runs, so a spin on another CPU is short
 * and saves the sleep and the wake-up. Otherwise: with a CPU to spare. */
static int may_spin(void)
{
	int p = __atomic_load_n(&poll_cpu, __ATOMIC_RELAXED);
	if (p >= 0)
		return sched_getcpu() != p;
	return spare_cpu();
}

static void spin_init(void)
{
	long us = SPIN_US_DEFAULT;
	const char *e = getenv("NLEMU_SPIN_US");
	if (e && *e) {
		char *end;
		long v = strtol(e, &end, 10);
		if (*end == 0 && v >= 0)
			us = v > SPIN_US_MAX ? SPIN_US_MAX : v;
	}
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof(set), &set) != 0 || CPU_COUNT(&set) < 2)
		us = 0;
	else
		spin_cpus = CPU_COUNT(&set);
	e = getenv("NLEMU_SPIN_ALWAYS");
	spin_always = e && strcmp(e, "1") == 0;
	e = getenv("NLEMU_POLL_AVOID");
	poll_avoid = !(e && strcmp(e, "0") == 0);
	spin_ns = us * 1000;
}

static inline uint64_t mono_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/* ---- per-socket state and the fd table --------------------------------- */

#define OPT_EXT_ACK (1u << 0)
#define OPT_CAP_ACK (1u << 1)
#define OPT_STRICT (1u << 2)
#define OPT_NO_ENOBUFS (1u << 3)
#define OPT_PKTINFO (1u << 4)
#define OPT_BROADCAST_ERROR (1u << 5)
#define OPT_LISTEN_ALL_NSID (1u << 6)

/* A datagram a control call read while waiting for its ack, as the server
 * sent it (a notification still framed with its NLEMU_GROUP). */
struct stashed {
	struct stashed *next;
	size_t len;
	unsigned char data[];
};

#define ACK_RING 8

/* One emulated netlink socket. Shared by every fd that dup()s it. All fields
 * are guarded by tab_mu. */
struct nlsock {
	int refs;                         /* fds in the table + calls in flight */
	int type;                         /* SOCK_RAW or SOCK_DGRAM (SO_TYPE) */
	uint32_t portid;                  /* from the server's HELLO reply */
	uint32_t groups[NL_GROUP_WORDS];  /* bit g-1 set = member of group g */
	unsigned opts;                    /* OPT_* */
	int rcvbuf, sndbuf;               /* what getsockopt(SO_*BUF) reports */
	size_t recvlen;                   /* largest receive size told to the server */
	int pending_err;                  /* an error recvmmsg() read but could not report yet */
	uint32_t ctl_seq;                 /* last sequence number of a control call */
	/* datagrams read by a control call before its ack, oldest first:
	 * receive calls return them before reading the socket */
	struct stashed *stash, *stash_tail;
	/* acks a receive call read for a control call of another thread */
	struct { uint32_t seq; int err; } acks[ACK_RING];
	unsigned nacks;
	/* The read-ahead (see "peeking at the floor"): a datagram a MSG_PEEK
	 * took out of the socket, as the server sent it, which the next
	 * receive call returns. ra_buf is RA_CAP bytes, mapped on first use
	 * and kept for the socket's life. ra_len > 0 while one is held; the
	 * stash is then empty (the read-ahead is older than anything a
	 * control call reads, so it moves to the stash's head first). */
	unsigned char *ra_buf;
	size_t ra_len;  /* bytes of it held (0: none) */
	size_t ra_real; /* the datagram's length (more than ra_len only past RA_CAP) */
	/* Spinning for the reply (see "spin then block"). */
	int nonblock;        /* O_NONBLOCK as set through socket(), fcntl(), ioctl(FIONBIO) */
	int expect;          /* a request was sent: its reply may be spun for */
	unsigned spin_level; /* back-off: after a miss, 2^level - 1 waits do not spin */
	unsigned spin_skip;  /* waits left that do not spin */
	uint32_t spin_hits, spin_misses, spin_skips; /* getsockopt NLEMU_SPINSTATS */
	/* Shared-memory rings (see "shared-memory rings"): the region the
	 * server handed over at HELLO while the socket is in ring mode, else
	 * NULL; ring mode ends for good (ring_leave) and never comes back. */
	unsigned char *shm;
	size_t shm_len;
	uint32_t req_size, rep_size; /* ring sizes, checked powers of two */
	uint64_t req_head, rep_tail; /* our copies of the counters we write */
	int ring_left;               /* the server left on its own (an unasked LEFT) */
	int fork_left;               /* left for a fork: the child drops the stash */
	/* a datagram a blocking ring_sock read from the socket in ring mode
	 * (the server left on its own): it goes to the stash after what the
	 * ring still holds, when ring mode ends (ring_drop) */
	unsigned char *held;
	size_t held_len;
	uint32_t ring_sent, ring_recvd, ring_bells, ring_blocks; /* getsockopt NLEMU_RINGSTATS */
};

static pthread_mutex_t tab_mu = PTHREAD_MUTEX_INITIALIZER;

extern char __libc_single_threaded __attribute__((weak));

/* single_threaded: no other thread can touch the socket (false where the
 * C library does not say). */
static inline int single_threaded(void)
{
	return &__libc_single_threaded != NULL && __libc_single_threaded;
}

/* tab_unlocked is set by tab_lock when it skipped tab_mu, for the matching
 * tab_unlock. Lock sections never nest (tab_mu is not recursive), so one
 * flag per thread is enough. */
static __thread int tab_unlocked __attribute__((tls_model("initial-exec")));

/* tab_lock guards the table and the sockets: tab_mu, except in a
 * single-threaded process (glibc's __libc_single_threaded), where no other
 * thread exists to race with and, inside the shim, none can be created, so
 * iproute2's hot path pays no locked instruction. The flag, not a second
 * look at __libc_single_threaded, decides the unlock: the C library may
 * turn it back to true once other threads have exited, while the mutex is
 * held. (A signal handler that uses an emulated fd inside a section is the
 * documented limit either way.) */
static inline void tab_lock(void)
{
	if (single_threaded()) {
		tab_unlocked = 1;
		return;
	}
	pthread_mutex_lock(&tab_mu);
}

static inline void tab_unlock(void)
{
	if (tab_unlocked) {
		tab_unlocked = 0;
		return;
	}
	pthread_mutex_unlock(&tab_mu);
}
/* tab[fd] is the socket behind fd. Written under tab_mu; read without it by
 * maybe_tracked(), so entries, tab and tabcap are accessed atomically and an
 * outgrown array is never freed (a reader may still hold it; growth doubles,
 * so the leak is bounded by the final size). */
static struct nlsock **tab;
static int tabcap;
static int ntracked; /* fds in tab */

/* maybe_tracked is the lock-free fast path of every interposed call: false
 * means fd is certainly not an emulated socket, so calls on ordinary fds
 * (including write() from a signal handler) never take tab_mu. */
static int maybe_tracked(int fd)
{
	if (fd < 0 || __atomic_load_n(&ntracked, __ATOMIC_ACQUIRE) == 0)
		return 0;
	int cap = __atomic_load_n(&tabcap, __ATOMIC_ACQUIRE); /* before tab: see track_locked */
	struct nlsock **t = __atomic_load_n(&tab, __ATOMIC_ACQUIRE);
	return fd < cap && __atomic_load_n(&t[fd], __ATOMIC_RELAXED) != NULL;
}

/* entry_locked returns tab[fd] or NULL. Called with tab_mu held. */
static struct nlsock *entry_locked(int fd)
{
	return (fd >= 0 && fd < tabcap) ? tab[fd] : NULL;
}

/* nl_get returns the socket behind fd with a reference held, or NULL. */
static struct nlsock *nl_get(int fd)
{
	if (!maybe_tracked(fd))
		return NULL;
	tab_lock();
	struct nlsock *s = entry_locked(fd);
	if (s)
		s->refs++;
	tab_unlock();
	return s;
}

/* Size of a socket's read-ahead buffer: more than any datagram the server
 * sends (at most its SO_SNDBUF, 128 KiB: server/unix.go). Mapped
 * MAP_NORESERVE, so only the pages a datagram touches cost memory. */
#define RA_CAP ((size_t)1 << 20)

/* nreadahead counts sockets holding a read-ahead: the wait calls (poll,
 * select, epoll) look at the table only when it is not zero. */
static int nreadahead;

static void ra_drop_locked(struct nlsock *s)
{
	if (s->ra_len) {
		s->ra_len = 0;
		__atomic_sub_fetch(&nreadahead, 1, __ATOMIC_RELEASE);
	}
}

/* ra_to_stash_locked moves a read-ahead to the head of the stash (it is
 * older than anything still in the socket), for a control call about to
 * stash more or a wait call about to make the socket readable again.
 * Returns 1 if it moved one. */
static int ra_to_stash_locked(struct nlsock *s)
{
	if (!s->ra_len)
		return 0;
	struct stashed *st = malloc(sizeof(*st) + s->ra_len);
	if (!st)
		return 0; /* kept as a read-ahead: still delivered, only not woken */
	memcpy(st->data, s->ra_buf, s->ra_len);
	st->len = s->ra_len;
	st->next = s->stash;
	s->stash = st;
	if (!s->stash_tail)
		s->stash_tail = st;
	ra_drop_locked(s);
	return 1;
}

/* nring counts sockets in ring mode: the wait calls, pthread_create and
 * fork look for them only when it is not zero. */
static int nring;

static void unref_locked(struct nlsock *s)
{
	if (--s->refs == 0) {
		if (s->shm) {
			munmap(s->shm, s->shm_len);
			__atomic_sub_fetch(&nring, 1, __ATOMIC_RELEASE);
		}
		free(s->held);
		while (s->stash) {
			struct stashed *n = s->stash->next;
			free(s->stash);
			s->stash = n;
		}
		ra_drop_locked(s);
		if (s->ra_buf)
			munmap(s->ra_buf, RA_CAP);
		free(s);
	}
}

static void nl_put(struct nlsock *s)
{
	tab_lock();
	unref_locked(s);
	tab_unlock();
}

/* untrack_locked forgets fd (it was closed or is about to be reused). */
static void untrack_locked(int fd)
{
	struct nlsock *s = entry_locked(fd);
	if (s) {
		__atomic_store_n(&tab[fd], NULL, __ATOMIC_RELAXED);
		unref_locked(s);
		__atomic_sub_fetch(&ntracked, 1, __ATOMIC_RELEASE);
	}
}

/* track_locked makes fd refer to s (replacing whatever stale entry fd had). */
static int track_locked(int fd, struct nlsock *s)
{
	if (fd >= tabcap) {
		int ncap = tabcap ? tabcap : 64;
		while (ncap <= fd)
			ncap *= 2;
		struct nlsock **nt = calloc((size_t)ncap, sizeof(*nt));
		if (!nt)
			return -1;
		if (tabcap)
			memcpy(nt, tab, (size_t)tabcap * sizeof(*nt));
		/* publish the array before the capacity that covers it */
		__atomic_store_n(&tab, nt, __ATOMIC_RELEASE);
		__atomic_store_n(&tabcap, ncap, __ATOMIC_RELEASE);
	}
	untrack_locked(fd);
	s->refs++;
	__atomic_store_n(&tab[fd], s, __ATOMIC_RELAXED);
	__atomic_add_fetch(&ntracked, 1, __ATOMIC_RELEASE);
	return 0;
}

/* dup_track: after newfd became a duplicate of oldfd, share oldfd's state. */
static void dup_track(int oldfd, int newfd)
{
	if (newfd < 0)
		return;
	tab_lock();
	struct nlsock *s = entry_locked(oldfd);
	if (s)
		track_locked(newfd, s);
	else
		untrack_locked(newfd);
	tab_unlock();
}

/* A forked child inherits the table (per-process memory) and shares the
 * sockets; make sure it does not inherit a locked mutex.
 *
 * A vfork child (vfork(), posix_spawn(), Python's subprocess) shares the
 * parent's memory and runs no atfork handler: closing or duplicating
 * descriptors there before execve (close_fds, file actions) must not edit
 * the table, which is the parent's — it would forget the parent's netlink
 * sockets. table_pid is the process the table belongs to. */
static pid_t table_pid;
static void ring_leave_all(int forking);
/* Parent and child would share a ring: a fork leaves ring mode first
 * (see "shared-memory rings"; fork runs this in the parent, vfork and
 * clone do not, and their children exec or exit without the socket). */
static void atfork_prepare(void)
{
	ring_leave_all(1);
	pthread_mutex_lock(&tab_mu);
}
static void atfork_release(void)
{
	if (__atomic_load_n(&ntracked, __ATOMIC_ACQUIRE))
		for (int fd = 0; fd < tabcap; fd++)
			if (tab[fd])
				tab[fd]->fork_left = 0;
	pthread_mutex_unlock(&tab_mu);
}
static void atfork_child(void)
{
	table_pid = getpid();
	/* What the replies ring held when fork left ring mode went to the
	 * stash: like a read-ahead (below), to the parent only. */
	if (__atomic_load_n(&ntracked, __ATOMIC_ACQUIRE))
		for (int fd = 0; fd < tabcap; fd++) {
			struct nlsock *s = tab[fd];
			if (!s || !s->fork_left)
				continue;
			s->fork_left = 0;
			while (s->stash) {
				struct stashed *n = s->stash->next;
				free(s->stash);
				s->stash = n;
			}
			s->stash_tail = NULL;
		}
	/* A read-ahead is one datagram the kernel would give to whichever
	 * process reads first; the shim gives it to the parent (the
	 * child's copy of the memory forgets it). */
	if (__atomic_load_n(&nreadahead, __ATOMIC_ACQUIRE))
		for (int fd = 0; fd < tabcap; fd++)
			if (tab[fd])
				ra_drop_locked(tab[fd]);
	pthread_mutex_unlock(&tab_mu);
}

/* in_vm_child reports whether this is a child sharing its parent's memory
 * (vfork or clone(CLONE_VM)), whose descriptor changes leave the table be. */
static int in_vm_child(void) { return getpid() != table_pid; }

__attribute__((constructor)) static void nlemu_init(void)
{
	INIT();
	spin_init();
	table_pid = getpid();
	pthread_atfork(atfork_prepare, atfork_release, atfork_child);
}

/* ---- small helpers ------------------------------------------------------ */

static const char *server_path(void)
{
	const char *p = getenv("NLEMU_SOCKET");
	return (p && *p) ? p : NULL;
}

static const char *netns_name(void)
{
	const char *n = getenv("NLEMU_NETNS");
	return (n && *n) ? n : "default";
}

/* say writes one diagnostic line to stderr without touching stdio state. */
static void say(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(buf))
		n = sizeof(buf) - 1;
	int saved = errno;
	ssize_t w = real_write(2, buf, (size_t)n);
	(void)w;
	errno = saved;
}

static int read_sysctl(const char *path, int def)
{
	char buf[32];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return def;
	ssize_t n = real_read(fd, buf, sizeof(buf) - 1);
	real_close(fd);
	if (n <= 0)
		return def;
	buf[n] = 0;
	long v = strtol(buf, NULL, 10);
	return v > 0 && v <= INT32_MAX ? (int)v : def;
}

/* wait_fd polls fd for events, returning 0 when ready, -1/errno otherwise. */
static int wait_fd(int fd, short events, int timeout_ms)
{
	struct pollfd p = {.fd = fd, .events = events};
	for (;;) {
		int r = real_poll(&p, 1, timeout_ms);
		if (r > 0)
			return 0;
		if (r == 0) {
			errno = ETIMEDOUT;
			return -1;
		}
		if (errno != EINTR)
			return -1;
	}
}

/* ---- shared-memory rings: the region -----------------------------------
 *
 * Offered by a polling server (--loop-sched poll) to a shim client that
 * set HELLO_OPT_SHM: a memfd passed with SCM_RIGHTS on the HELLO answer,
 * whose fourth word is then 1. Layout (native endian, each field on its
 * own 64-byte line; the counters are byte positions that only grow):
 * magic, version, req_size, rep_size at 0; req_head 64 (ours), req_tail
 * 128, rep_head 192, rep_tail 256 (ours), server_polling 320,
 * client_spinning 384 (ours), server_stalled 448, client_stalled 512
 * (ours); the request ring at 4096, the reply ring after it. */
#define SHM_MAGIC 0x4E4C5348u /* "NLSH" */
#define SHM_VERSION 1
#define SHM_REQ_HEAD 64
#define SHM_REQ_TAIL 128
#define SHM_REP_HEAD 192
#define SHM_REP_TAIL 256
#define SHM_SERVER_POLLING 320
#define SHM_CLIENT_SPINNING 384
#define SHM_SERVER_STALLED 448
#define SHM_CLIENT_STALLED 512
#define SHM_DATA 4096
/* ---- shared-memory rings ------------------------------------------------
 *
 * A connection to a polling server (--loop-sched poll) may carry its
 * datagrams through two single-producer single-consumer rings in a shared
 * region instead of the socket (the region: "shared-memory rings: the
 * region" above; the protocol: docs/SHIM.md, "Shared-memory rings"): the
 * request ring (we produce) and the reply ring (the server produces), so
 * that a request and its reply cost no system call while the server polls
 * and the client spins. Every datagram of either direction, the shim's
 * control datagrams included, is one DATA record, byte for byte what would
 * have crossed the socket; the socket carries only 1-byte doorbells and
 * the hang-up.
 *
 * Ring mode is entered only for a socket made with SOCK_CLOEXEC in a
 * single-threaded process (the rings have one producer and one consumer
 * each, and an execve must not carry the socket into a program that does
 * not know the ring), with NLEMU_SHM not "0". It is left for good
 * (ring_leave: a LEAVE record, then every reply up to the server's LEFT
 * into the stash) before anything the rings cannot serve: a wait call on
 * the socket, epoll_ctl ADD/MOD of it, pthread_create, fork, dup of it,
 * F_SETFD clearing FD_CLOEXEC, a control call that waits for its ack,
 * FIONREAD, SO_ERROR, a datagram larger than half the request ring.
 *
 * Records: u32 len, u32 kind, len bytes, padded to 8; one that does not
 * fit before the ring's end is preceded by a WRAP there. The other side
 * may scribble on the region: every record is validated and copied out
 * before it is looked at. Memory order: the counters are published with
 * release stores and read with acquire loads; the flag checks (a
 * Dekker-style "store mine, load theirs") are sequentially consistent. */
#define REC_HDR 8
#define REC_DATA 1
#define REC_WRAP 2
#define REC_LEAVE 3 /* LEAVE from us, LEFT from the server */

static inline uint64_t *shm64(const struct nlsock *s, size_t off)
{
	return (uint64_t *)(void *)(s->shm + off);
}

static inline uint32_t *shm32(const struct nlsock *s, size_t off)
{
	return (uint32_t *)(void *)(s->shm + off);
}

static inline size_t rec_space(size_t len) { return REC_HDR + ((len + 7) & ~(size_t)7); }

/* shm_wanted: NLEMU_SHM is not "0". */
static int shm_wanted(void)
{
	const char *e = getenv("NLEMU_SHM");
	return !(e && strcmp(e, "0") == 0);
}

/* ring_bell sends a doorbell: one byte, never waiting (EAGAIN means the
 * server has doorbells queued already). */
static void ring_bell(struct nlsock *s, int fd)
{
	ssize_t n = real_send(fd, "D", 1, MSG_DONTWAIT | MSG_NOSIGNAL);
	(void)n;
	s->ring_bells++;
}

/* What ring_sock found on the socket of a ring-mode connection. */
#define SOCK_HUP 0  /* the server hung up */
#define SOCK_BELL 1 /* a doorbell, consumed */
#define SOCK_DATA 2 /* a real datagram: the server left (its LEFT is in the ring) */

/* How ring_sock waits. */
#define LOOK_NOW 0   /* not at all (MSG_DONTWAIT) */
#define LOOK_RECV 1  /* a blocking receive: SO_RCVTIMEO and signals as the kernel's */
#define LOOK_POLL 2  /* poll() until something comes (the socket may be O_NONBLOCK) */

/* ring_sock looks at the socket, which in ring mode carries only
 * doorbells and the hang-up: SOCK_* or -1/errno (EAGAIN: nothing).
 * LOOK_RECV is one system call: a receive into the read-ahead buffer
 * (free while ring_recv looks: it holds no read-ahead then), a doorbell
 * dropped, a real datagram held for after the ring's records (s->held);
 * the others peek, leaving a datagram in the socket. */
static int ring_sock(struct nlsock *s, int fd, int how)
{
	unsigned char b[CTL_LEN];
	if (how != LOOK_NOW)
		s->ring_blocks++;
	if (how == LOOK_RECV && !s->held && s->ra_buf && !s->ra_len) {
		ssize_t n = real_recv(fd, s->ra_buf, RA_CAP, 0);
		if (n < 0)
			return -1;
		if (n == 0)
			return SOCK_HUP;
		if (n == 1)
			return SOCK_BELL;
		unsigned char *h = malloc((size_t)n);
		if (h) {
			memcpy(h, s->ra_buf, (size_t)n);
			s->held = h;
			s->held_len = (size_t)n;
		} /* else lost, as a datagram the kernel drops for want of memory */
		return SOCK_DATA;
	}
	if (how == LOOK_POLL && wait_fd(fd, POLLIN, -1) < 0)
		return -1;
	ssize_t n = real_recv(fd, b, sizeof(b), MSG_PEEK | MSG_TRUNC | (how == LOOK_RECV ? 0 : MSG_DONTWAIT));
	if (n < 0)
		return -1;
	if (n == 0)
		return SOCK_HUP;
	if (n == 1) {
		n = real_recv(fd, b, 1, MSG_DONTWAIT);
		return SOCK_BELL;
	}
	return SOCK_DATA;
}

/* ring_put writes one record of kind (len bytes from iov) into the request
 * ring and rings the doorbell unless the server polls. Without room it
 * fails with EAGAIN when nowait, else sets client_stalled and waits (spin,
 * then the socket: the server rings when it consumed). 0, or -1/errno:
 * EAGAIN, EPIPE (the server hung up), EPROTO (a broken ring). */
static int ring_put(struct nlsock *s, int fd, uint32_t kind, const struct iovec *iov, size_t niov,
		    size_t len, int nowait)
{
	const uint64_t size = s->req_size;
	unsigned char *ring = s->shm + SHM_DATA;
	uint64_t head = s->req_head;
	size_t need = rec_space(len);
	uint64_t t0 = 0;
	int stalled = 0;
	size_t off, gap;
	for (;;) {
		uint64_t tail = __atomic_load_n(shm64(s, SHM_REQ_TAIL), __ATOMIC_ACQUIRE);
		if (head - tail > size) {
			errno = EPROTO;
			return -1;
		}
		off = head & (size - 1);
		gap = off + need > size ? size - off : 0;
		if (size - (head - tail) >= gap + need)
			break;
		if (nowait) {
			errno = EAGAIN;
			return -1;
		}
		/* stalled: flag, then look once more (the server looks at the
		 * flag after it stored a tail: one of us sees the other) */
		__atomic_store_n(shm32(s, SHM_CLIENT_STALLED), 1, __ATOMIC_SEQ_CST);
		stalled = 1;
		if (__atomic_load_n(shm64(s, SHM_REQ_TAIL), __ATOMIC_SEQ_CST) != tail)
			continue;
		if (!t0)
			t0 = mono_ns();
		int r = -1;
		if (spin_ns > 0 && mono_ns() - t0 < (uint64_t)spin_ns) {
			cpu_relax();
			continue;
		}
		if (s->ring_left) {
			/* the socket holds the server's datagrams now: it cannot
			 * tell us when room comes; look every 50 us */
			struct timespec ts = {0, 50000};
			nanosleep(&ts, NULL);
			if (mono_ns() - t0 > (uint64_t)HANDSHAKE_TIMEOUT_MS * 1000000) {
				errno = EPIPE;
				break;
			}
			continue;
		}
		r = ring_sock(s, fd, LOOK_POLL);
		if (r == SOCK_HUP) {
			errno = EPIPE;
			break;
		}
		if (r == SOCK_DATA)
			s->ring_left = 1; /* its LEFT is in the reply ring; the receive path reads it */
		else if (r < 0 && errno != EINTR && errno != EAGAIN)
			break;
	}
	if (stalled)
		__atomic_store_n(shm32(s, SHM_CLIENT_STALLED), 0, __ATOMIC_SEQ_CST);
	if (size - (head - __atomic_load_n(shm64(s, SHM_REQ_TAIL), __ATOMIC_ACQUIRE)) < gap + need)
		return -1; /* the wait above failed (errno set) */
	if (gap) {
		uint32_t w[2] = {(uint32_t)(gap - REC_HDR), REC_WRAP};
		memcpy(ring + off, w, sizeof(w));
		head += gap;
		off = 0;
	}
	uint32_t w[2] = {(uint32_t)len, kind};
	memcpy(ring + off, w, sizeof(w));
	unsigned char *p = ring + off + REC_HDR;
	for (size_t i = 0, left = len; i < niov && left > 0; i++) {
		size_t k = iov[i].iov_len < left ? iov[i].iov_len : left;
		memcpy(p, iov[i].iov_base, k);
		p += k;
		left -= k;
	}
	head += need;
	s->req_head = head;
	__atomic_store_n(shm64(s, SHM_REQ_HEAD), head, __ATOMIC_SEQ_CST);
	if (!__atomic_load_n(shm32(s, SHM_SERVER_POLLING), __ATOMIC_SEQ_CST))
		ring_bell(s, fd);
	return 0;
}

/* ring_take takes the next record out of the reply ring, copying a DATA
 * record's bytes to dst (rep_size bytes) and its length to *len. It
 * returns REC_DATA, REC_LEAVE (the server's LEFT), 0 when the ring is
 * empty, or -1/EPROTO for a broken ring. After storing the tail it rings
 * the server if it waits for room (server_stalled). */
static int ring_take(struct nlsock *s, int fd, unsigned char *dst, size_t *len)
{
	const uint64_t size = s->rep_size;
	const unsigned char *ring = s->shm + SHM_DATA + s->req_size;
	uint64_t tail = s->rep_tail;
	for (;;) {
		uint64_t head = __atomic_load_n(shm64(s, SHM_REP_HEAD), __ATOMIC_ACQUIRE);
		if (head == tail)
			return 0;
		uint64_t avail = head - tail;
		if (avail > size || avail < REC_HDR)
			break;
		size_t off = tail & (size - 1);
		uint32_t w[2];
		memcpy(w, ring + off, sizeof(w));
		uint32_t kind = w[1];
		size_t n = w[0];
		if (kind == REC_WRAP) {
			if (size - off > avail)
				break;
			tail += size - off;
		} else {
			if (n > size - REC_HDR || off + REC_HDR + n > size || rec_space(n) > avail ||
			    (kind != REC_DATA && kind != REC_LEAVE))
				break;
			if (kind == REC_DATA)
				memcpy(dst, ring + off + REC_HDR, n);
			tail += rec_space(n);
		}
		s->rep_tail = tail;
		__atomic_store_n(shm64(s, SHM_REP_TAIL), tail, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(shm32(s, SHM_SERVER_STALLED), __ATOMIC_SEQ_CST))
			ring_bell(s, fd);
		if (kind == REC_WRAP)
			continue;
		*len = n;
		return (int)kind;
	}
	errno = EPROTO;
	return -1;
}

static void stash_dgram(struct nlsock *s, const unsigned char *d, size_t n);

/* ring_drop ends ring mode without a word to the server (it hung up, left,
 * or broke the ring; ring_leave ends with it too). A datagram held from
 * the socket goes to the stash now, after everything the ring gave. */
static void ring_drop(struct nlsock *s)
{
	if (!s->shm)
		return;
	munmap(s->shm, s->shm_len);
	s->shm = NULL;
	__atomic_sub_fetch(&nring, 1, __ATOMIC_RELEASE);
	if (s->held) {
		stash_dgram(s, s->held, s->held_len);
		free(s->held);
		s->held = NULL;
	}
}

static unsigned ctl_type(const unsigned char *head, size_t n);
static void record_ack_locked(struct nlsock *s, uint32_t seq, int err);
static int ctl_send_ex(struct nlsock *s, int fd, uint16_t type, uint16_t flags, uint32_t seq,
		       const void *payload, size_t plen);

/* stash_dgram appends a datagram taken out of the reply ring while leaving
 * to the stash, as ctl_call stashes what it reads before its ack: an ack
 * is recorded instead, a doorbell-sized datagram dropped. */
static void stash_dgram(struct nlsock *s, const unsigned char *d, size_t n)
{
	if (n <= 1)
		return;
	if (ctl_type(d, n) == NLEMU_ACK && n == CTL_LEN) {
		const struct nlmsghdr *h = (const struct nlmsghdr *)d;
		uint32_t v;
		memcpy(&v, d + NLMSG_HDRLEN, 4);
		tab_lock();
		record_ack_locked(s, h->nlmsg_seq, -(int32_t)v);
		tab_unlock();
		return;
	}
	struct stashed *st = malloc(sizeof(*st) + n);
	if (!st)
		return; /* as a datagram the kernel drops for want of memory */
	memcpy(st->data, d, n);
	st->len = n;
	st->next = NULL;
	tab_lock();
	if (s->stash_tail)
		s->stash_tail->next = st;
	else
		s->stash = st;
	s->stash_tail = st;
	tab_unlock();
}

/* ring_wake makes the socket readable while the stash holds datagrams (a
 * wait call after leaving looks at the kernel socket): the wake-up ack of
 * ctl_call and ra_flush, waited for. Stale doorbells are drained first. */
static void ring_wake(struct nlsock *s, int fd)
{
	unsigned char b[CTL_LEN];
	while (real_recv(fd, b, sizeof(b), MSG_PEEK | MSG_TRUNC | MSG_DONTWAIT) == 1)
		real_recv(fd, b, 1, MSG_DONTWAIT);
	tab_lock();
	int stashed = s->stash != NULL;
	tab_unlock();
	if (!stashed || wait_fd(fd, POLLIN, 0) == 0)
		return;
	uint32_t p[3] = {SOL_NETLINK, 0xFE00 /* NLEMU_RECVLEN */, 0};
	if (ctl_send_ex(NULL, fd, NLEMU_SETSOCKOPT, NLM_F_ACK, 0, p, sizeof(p)) == 0)
		wait_fd(fd, POLLIN, HANDSHAKE_TIMEOUT_MS);
}

/* ring_leave ends ring mode for good: a read-ahead goes to the stash's
 * head (it is older than anything in the ring), a LEAVE record goes into
 * the request ring, and every datagram in the reply ring up to the
 * server's LEFT goes to the stash; then the region is unmapped and, if
 * the stash holds datagrams, the socket is made readable. From then on
 * the socket carries everything, as for a plain connection.
 *
 * While it waits for the LEFT, client_spinning stays set and it never
 * blocks on the socket (it naps, 1 us doubling up to 1 ms, looking at the
 * socket between naps for the hang-up): so the server rings no doorbell
 * for the LEFT, and every doorbell it rang before (its writer rings for a
 * record before it writes the next one) is in the socket when the LEFT is
 * seen, and drained then (ring_wake). A doorbell arriving after that
 * would make the plain socket look readable to poll() with nothing to
 * read. */
static void ring_leave(struct nlsock *s, int fd)
{
	if (!s->shm)
		return;
	tab_lock();
	ra_to_stash_locked(s);
	tab_unlock();
	__atomic_store_n(shm32(s, SHM_CLIENT_SPINNING), 1, __ATOMIC_SEQ_CST);
	unsigned char *buf = malloc(s->rep_size);
	if (!buf || ring_put(s, fd, REC_LEAVE, NULL, 0, 0, 0) < 0) {
		free(buf);
		ring_drop(s);
		ring_wake(s, fd);
		return;
	}
	uint64_t t0 = mono_ns();
	long nap = 0;
	for (;;) {
		size_t n;
		int k = ring_take(s, fd, buf, &n);
		if (k == REC_DATA) {
			stash_dgram(s, buf, n);
			continue;
		}
		if (k != 0)
			break; /* LEFT, or a broken ring */
		if (mono_ns() - t0 < 50000) {
			cpu_relax(); /* the poller answers within microseconds */
			continue;
		}
		int r = ring_sock(s, fd, LOOK_NOW);
		if (r == SOCK_HUP || (r < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK))
			break;
		if (r == SOCK_DATA) {
			/* the server sends on the socket: its LEFT is in the ring,
			 * behind what is left there (else it broke the protocol) */
			k = ring_take(s, fd, buf, &n);
			if (k != REC_DATA)
				break;
			stash_dgram(s, buf, n);
			continue;
		}
		if (r == SOCK_BELL)
			continue;
		nap = nap ? (nap < 1000000 ? nap * 2 : nap) : 1000;
		struct timespec ts = {0, nap};
		nanosleep(&ts, NULL);
	}
	free(buf);
	ring_drop(s);
	ring_wake(s, fd);
}

/* ring_left_unasked handles a LEFT we did not ask for (the server left on
 * its own, for a datagram too large for the reply ring): the request ring
 * is closed with a LEAVE record (the server reads up to it) and the
 * socket goes plain. */
static void ring_left_unasked(struct nlsock *s, int fd)
{
	s->ring_left = 1;
	ring_put(s, fd, REC_LEAVE, NULL, 0, 0, 0);
	ring_drop(s);
	ring_wake(s, fd);
}

/* ring_leave_fd leaves ring mode for the socket behind fd, if any. */
static void ring_leave_fd(int fd)
{
	if (!__atomic_load_n(&nring, __ATOMIC_ACQUIRE) || !maybe_tracked(fd))
		return;
	struct nlsock *s = nl_get(fd);
	if (!s)
		return;
	if (s->shm)
		ring_leave(s, fd);
	nl_put(s);
}

/* ring_leave_all leaves ring mode for every socket (pthread_create, and
 * fork: forking marks the sockets, whose stash the child then drops). */
static void ring_leave_all(int forking)
{
	for (int fd = 0; __atomic_load_n(&nring, __ATOMIC_ACQUIRE) && fd < tabcap; fd++) {
		if (!maybe_tracked(fd))
			continue;
		struct nlsock *s = nl_get(fd);
		if (!s)
			continue;
		if (s->shm) {
			ring_leave(s, fd);
			s->fork_left = forking;
		}
		nl_put(s);
	}
}

/* ctl_send_ex sends one control datagram with nlmsg_flags and nlmsg_seq,
 * waiting if the socket is nonblocking and momentarily full; for a socket
 * s in ring mode into the request ring (waiting for room). */
static int ctl_send_ex(struct nlsock *s, int fd, uint16_t type, uint16_t flags, uint32_t seq,
		       const void *payload, size_t plen)
{
	unsigned char buf[NLMSG_HDRLEN + 16];
	struct nlmsghdr *h = (struct nlmsghdr *)buf;
	if (plen > sizeof(buf) - NLMSG_HDRLEN) {
		errno = EINVAL;
		return -1;
	}
	memset(buf, 0, sizeof(buf));
	h->nlmsg_len = (uint32_t)(NLMSG_HDRLEN + plen);
	h->nlmsg_type = type;
	h->nlmsg_flags = flags;
	h->nlmsg_seq = seq;
	memcpy(buf + NLMSG_HDRLEN, payload, plen);
	if (s && s->shm) {
		struct iovec iov = {.iov_base = buf, .iov_len = h->nlmsg_len};
		if (ring_put(s, fd, REC_DATA, &iov, 1, h->nlmsg_len, 0) < 0)
			return -1;
		s->ring_sent++;
		return 0;
	}
	for (;;) {
		ssize_t n = real_send(fd, buf, h->nlmsg_len, MSG_NOSIGNAL);
		if (n >= 0)
			return 0;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return -1;
		if (wait_fd(fd, POLLOUT, -1) < 0)
			return -1;
	}
}

/* send_setsockopt sends a SETSOCKOPT control datagram that is not waited
 * for: through the rings for a socket s in ring mode, else on fd. */
static int send_setsockopt(struct nlsock *s, int fd, uint32_t level, uint32_t name, uint32_t value)
{
	uint32_t p[3] = {level, name, value};
	return ctl_send_ex(s, fd, NLEMU_SETSOCKOPT, 0, 0, p, sizeof(p));
}

/* ---- control calls: options the caller must see in effect -------------- */


/* ctl_type returns NLEMU_SOCKERR, NLEMU_GROUP or NLEMU_ACK for such a
 * message at the head of a datagram (n bytes of it seen), else 0. */
static unsigned ctl_type(const unsigned char *head, size_t n)
{
	const struct nlmsghdr *h = (const struct nlmsghdr *)head;
	if (n < CTL_LEN || h->nlmsg_len != CTL_LEN)
		return 0;
	switch (h->nlmsg_type) {
	case NLEMU_SOCKERR:
	case NLEMU_GROUP:
	case NLEMU_ACK:
		return h->nlmsg_type;
	}
	return 0;
}

static uint32_t ctl_u32(const unsigned char *head)
{
	uint32_t v;
	memcpy(&v, head + NLMSG_HDRLEN, sizeof(v));
	return v;
}

/* ack_errno is the positive errno of an NLEMU_ACK (its payload is -errno). */
static int ack_errno(const unsigned char *head) { return -(int32_t)ctl_u32(head); }

static uint32_t ack_seq(const unsigned char *head)
{
	return ((const struct nlmsghdr *)head)->nlmsg_seq;
}

/* record_ack_locked keeps an ack a receive call read for a control call
 * (sequence 0 is the wake-up, which nobody waits for). */
static void record_ack_locked(struct nlsock *s, uint32_t seq, int err)
{
	if (seq == 0)
		return;
	unsigned i = s->nacks++ % ACK_RING;
	s->acks[i].seq = seq;
	s->acks[i].err = err;
}

static int take_ack_locked(struct nlsock *s, uint32_t seq, int *err)
{
	for (unsigned i = 0; i < ACK_RING && i < s->nacks; i++) {
		if (s->acks[i].seq == seq) {
			*err = s->acks[i].err;
			s->acks[i].seq = 0;
			return 1;
		}
	}
	return 0;
}

static long elapsed_ms(const struct timespec *t0)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

/* ctl_call sends a control message with NLM_F_ACK and returns once the
 * server has applied it: 0, or -1 with the errno the kernel's setsockopt()
 * or bind() would give (docs/PROTOCOL.md). Datagrams that arrive before the
 * ack (replies, notifications, a SOCKERR) are kept in order in s->stash, and
 * receive calls return them first. A receive call of another thread may
 * read the ack instead: it records it, and this call finds it there. */
static int ctl_call(struct nlsock *s, int fd, uint16_t type, const void *payload, size_t plen)
{
	ring_leave(s, fd); /* it waits on the socket for its ack */
	tab_lock();
	ra_to_stash_locked(s); /* what this call stashes comes after it */
	uint32_t seq = ++s->ctl_seq;
	if (seq == 0)
		seq = ++s->ctl_seq;
	tab_unlock();
	if (ctl_send_ex(s, fd, type, NLM_F_ACK, seq, payload, plen) < 0)
		return -1;
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int err = 0, stashed = 0;
	for (;;) {
		tab_lock();
		int found = take_ack_locked(s, seq, &err);
		tab_unlock();
		if (found)
			break;
		if (wait_fd(fd, POLLIN, 50) < 0) {
			if (errno != ETIMEDOUT)
				return -1;
			if (elapsed_ms(&t0) > HANDSHAKE_TIMEOUT_MS) {
				say("no answer from the server for a socket option");
				errno = ETIMEDOUT;
				return -1;
			}
			continue;
		}
		unsigned char head[CTL_LEN];
		ssize_t n = real_recv(fd, head, sizeof(head), MSG_PEEK | MSG_TRUNC | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
				continue;
			return -1;
		}
		if (n == 0) {
			errno = ECONNRESET; /* the server hung up */
			return -1;
		}
		struct stashed *st = malloc(sizeof(*st) + (size_t)n);
		if (!st) {
			errno = ENOBUFS;
			return -1;
		}
		ssize_t m = real_recv(fd, st->data, (size_t)n, MSG_DONTWAIT);
		if (m < 0) {
			free(st);
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
				continue; /* another thread took it */
			return -1;
		}
		st->len = (size_t)m;
		st->next = NULL;
		if (m == 1) {
			free(st); /* a stale doorbell (see "shared-memory rings") */
			continue;
		}
		if (ctl_type(st->data, st->len) == NLEMU_ACK && st->len == CTL_LEN) {
			uint32_t aseq = ack_seq(st->data);
			int e = ack_errno(st->data);
			free(st);
			if (aseq == seq) {
				err = e;
				break;
			}
			tab_lock();
			record_ack_locked(s, aseq, e);
			tab_unlock();
			continue;
		}
		tab_lock();
		if (s->stash_tail)
			s->stash_tail->next = st;
		else
			s->stash = st;
		s->stash_tail = st;
		tab_unlock();
		stashed = 1;
	}
	tab_lock();
	stashed = s->stash != NULL; /* by this call or an earlier one */
	tab_unlock();
	if (stashed) {
		/* The socket may now look empty to poll() while the library holds
		 * datagrams: a no-op option with NLM_F_ACK and sequence 0 makes
		 * the server send an ack that receive calls drop, so the socket
		 * is readable again (and a reader blocked in another thread
		 * wakes up and finds the stash). */
		uint32_t p[3] = {SOL_NETLINK, NLEMU_RECVLEN, 0};
		ctl_send_ex(s, fd, NLEMU_SETSOCKOPT, NLM_F_ACK, 0, p, sizeof(p));
	}
	if (err) {
		errno = err;
		return -1;
	}
	return 0;
}

/* extack_msg finds NLMSGERR_ATTR_MSG in an NLMSG_ERROR message, or NULL. */
static const char *extack_msg(const unsigned char *msg, size_t len)
{
	const struct nlmsghdr *h = (const struct nlmsghdr *)msg;
	if (len < NLMSG_HDRLEN + sizeof(struct nlmsgerr) || !(h->nlmsg_flags & NLM_F_ACK_TLVS))
		return NULL;
	const struct nlmsgerr *e = (const struct nlmsgerr *)(msg + NLMSG_HDRLEN);
	size_t off = NLMSG_HDRLEN + sizeof(int);
	off += (h->nlmsg_flags & NLM_F_CAPPED) ? NLMSG_HDRLEN : NLMSG_ALIGN(e->msg.nlmsg_len);
	size_t end = h->nlmsg_len < len ? h->nlmsg_len : len;
	while (off + NLA_HDRLEN <= end) {
		const struct nlattr *a = (const struct nlattr *)(msg + off);
		if (a->nla_len < NLA_HDRLEN || off + a->nla_len > end)
			break;
		if ((a->nla_type & NLA_TYPE_MASK) == NLMSGERR_ATTR_MSG && a->nla_len > NLA_HDRLEN &&
		    msg[off + a->nla_len - 1] == 0)
			return (const char *)(msg + off + NLA_HDRLEN);
		off += NLA_ALIGN(a->nla_len);
	}
	return NULL;
}

/* say_unreachable reports, once per process, that socket() could not reach
 * the server. The failing socket() itself (-1/ECONNREFUSED, never a kernel
 * socket: the host's rtnetlink must not answer in the server's place) is
 * the per-call signal; a program retrying in a loop gets one line, not one
 * per attempt. */
static void say_unreachable(const char *path, const char *why)
{
	static int said;
	if (__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
		return;
	say("nlemu: cannot reach the nlemu server at %s: %s\n", path, why);
}

/* ---- which nlemu namespace a thread's kernel namespace maps to --------- */

/* Issue 11 item 2 (owned by the Go API part, h-go): every kernel network
 * namespace a thread is in maps to its own nlemu namespace, decided at
 * socket() time from the calling thread's /proc/thread-self/ns/net:
 *  - the namespace the program under `nlemu exec` started in maps to
 *    $NLEMU_NETNS. It is recorded once, by the first process that loads the
 *    shim, in $NLEMU_NETNS_START ("dev:ino" of its nsfs file), which children
 *    inherit: `ip netns exec X CMD` enters X before it execs CMD, and CMD's
 *    shim must still know where the program began;
 *  - a namespace with a /run/netns entry (same device and inode: `ip netns
 *    add X`) maps to the nlemu namespace X, created if missing
 *    (HELLO_OPT_CREATE);
 *  - any other (unshare(CLONE_NEWNET), netns.New()) maps to "netns-INODE",
 *    created as an ephemeral namespace that the server deletes when its last
 *    socket closes (HELLO_OPT_CREATE | HELLO_OPT_EPHEMERAL).
 * The real kernel namespace stays empty: nothing reaches it. */
#include <dirent.h>
#include <sys/stat.h>
#define HELLO_OPT_CREATE (1u << 4)
#define HELLO_OPT_EPHEMERAL (1u << 5)
/* HELLO_OPT_SPIN: this client spins for its replies (see "spin then
 * block"), so the server may spin for its requests. */
#define HELLO_OPT_SPIN (1u << 6)
/* HELLO_OPT_SHM: this client can use shared-memory rings (see
 * "shared-memory rings"). */
#define HELLO_OPT_SHM (1u << 7)

/* Largest region and ring accepted (the server's are 80 KiB, 16 and 64 KiB). */
#define SHM_MAX_LEN ((size_t)64 << 20)

/* A region handed over at HELLO, mapped and checked. */
struct ringmap {
	unsigned char *base; /* NULL: none */
	size_t len;
	uint32_t req_size, rep_size;
};

static int pow2_in(uint32_t v, uint32_t lo, uint32_t hi)
{
	return v >= lo && v <= hi && (v & (v - 1)) == 0;
}

/* ring_map maps the memfd of a HELLO answer and checks it: magic, version,
 * ring sizes (powers of two; the reply ring no larger than the read-ahead
 * buffer its records are copied into), the region large enough for both,
 * and the counters we own still zero. 0, or -1 (unmapped again). */
static int ring_map(int mfd, struct ringmap *rm)
{
	struct stat st;
	if (fstat(mfd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < SHM_DATA ||
	    (size_t)st.st_size > SHM_MAX_LEN)
		return -1;
	size_t len = (size_t)st.st_size;
	unsigned char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	if (p == MAP_FAILED)
		return -1;
	uint32_t w[4];
	uint64_t rq_head, rp_tail;
	memcpy(w, p, sizeof(w));
	memcpy(&rq_head, p + SHM_REQ_HEAD, 8);
	memcpy(&rp_tail, p + SHM_REP_TAIL, 8);
	if (w[0] != SHM_MAGIC || w[1] != SHM_VERSION || !pow2_in(w[2], 4096, 1u << 24) ||
	    !pow2_in(w[3], 4096, RA_CAP) || SHM_DATA + (size_t)w[2] + w[3] > len || rq_head || rp_tail) {
		munmap(p, len);
		return -1;
	}
	rm->base = p;
	rm->len = len;
	rm->req_size = w[2];
	rm->rep_size = w[3];
	return 0;
}

__attribute__((constructor)) static void netns_start_record(void)
{
	struct stat st;
	const char *s = getenv("NLEMU_NETNS_START");
	const char *sock = getenv("NLEMU_SOCKET");
	if (!sock || !*sock || (s && *s) || stat("/proc/self/ns/net", &st) != 0)
		return;
	char buf[64];
	snprintf(buf, sizeof(buf), "%llu:%llu", (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino);
	setenv("NLEMU_NETNS_START", buf, 0);
}

/* thread_netns writes the nlemu namespace for the calling thread into buf
 * and returns the HELLO option bits that go with it. */
static uint32_t thread_netns(char *buf, size_t len)
{
	const char *def = netns_name();
	struct stat st;
	const char *start = getenv("NLEMU_NETNS_START");
	unsigned long long sdev, sino;
	if (stat("/proc/thread-self/ns/net", &st) != 0 || !start ||
	    sscanf(start, "%llu:%llu", &sdev, &sino) != 2 ||
	    ((unsigned long long)st.st_dev == sdev && (unsigned long long)st.st_ino == sino)) {
		snprintf(buf, len, "%s", def);
		return 0;
	}
	DIR *d = opendir("/run/netns");
	if (d) {
		struct dirent *e;
		while ((e = readdir(d)) != NULL) {
			if (e->d_name[0] == '.')
				continue;
			char path[512];
			struct stat es;
			snprintf(path, sizeof(path), "/run/netns/%s", e->d_name);
			if (stat(path, &es) == 0 && es.st_dev == st.st_dev && es.st_ino == st.st_ino) {
				snprintf(buf, len, "%s", e->d_name);
				closedir(d);
				return HELLO_OPT_CREATE;
			}
		}
		closedir(d);
	}
	snprintf(buf, len, "netns-%llu", (unsigned long long)st.st_ino);
	return HELLO_OPT_CREATE | HELLO_OPT_EPHEMERAL;
}

/* server_open1 is server_open's one attempt; with rm it asks for rings
 * (HELLO_OPT_SHM) and sets *retry when they were offered but unusable. */
static int server_open1(int cloexec, uint32_t *portid, struct ringmap *rm, int *retry)
{
	const char *path = server_path();
	char nsbuf[256];
	uint32_t nsopts = thread_netns(nsbuf, sizeof(nsbuf)); /* issue 11 item 2 */
	const char *ns = nsbuf;
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	size_t plen = strlen(path);
	if (plen >= sizeof(sun.sun_path)) {
		say_unreachable(path, "socket path too long");
		errno = ECONNREFUSED;
		return -1;
	}
	memcpy(sun.sun_path, path, plen + 1);

	int fd = real_socket(AF_UNIX, SOCK_SEQPACKET | cloexec, 0);
	if (fd < 0)
		return -1;
	int r;
	do
		r = real_connect(fd, (struct sockaddr *)&sun, sizeof(sun));
	while (r < 0 && errno == EINTR);
	if (r < 0) {
		say_unreachable(path, strerror(errno));
		real_close(fd);
		errno = ECONNREFUSED;
		return -1;
	}

	/* HELLO: u32 version, u32 pid, u32 options, u32 groups, name\0 */
	size_t nlen = strlen(ns) + 1;
	size_t hlen = NLMSG_HDRLEN + 16 + nlen;
	unsigned char *hello = calloc(1, hlen);
	if (!hello) {
		real_close(fd);
		errno = ENOMEM;
		return -1;
	}
	struct nlmsghdr *h = (struct nlmsghdr *)hello;
	h->nlmsg_len = (uint32_t)hlen;
	h->nlmsg_type = NLEMU_HELLO;
	if (spin_ns > 0)
		nsopts |= HELLO_OPT_SPIN;
	if (rm)
		nsopts |= HELLO_OPT_SHM;
	uint32_t fields[4] = {NLEMU_VERSION, (uint32_t)getpid(), nsopts, 0};
	memcpy(hello + NLMSG_HDRLEN, fields, sizeof(fields));
	memcpy(hello + NLMSG_HDRLEN + 16, ns, nlen);
	ssize_t n = real_send(fd, hello, hlen, MSG_NOSIGNAL);
	free(hello);
	if (n != (ssize_t)hlen) {
		say_unreachable(path, n < 0 ? strerror(errno) : "short write");
		real_close(fd);
		errno = ECONNREFUSED;
		return -1;
	}

	/* The answer may carry the ring's memfd (SCM_RIGHTS); every
	 * descriptor that comes is closed below, used or not. */
	unsigned char rep[4096];
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int) * 8)];
	} cbuf;
	int rfds[8], nrfds = 0;
	do {
		if (wait_fd(fd, POLLIN, HANDSHAKE_TIMEOUT_MS) < 0) {
			n = -1;
			break;
		}
		struct iovec riov = {.iov_base = rep, .iov_len = sizeof(rep)};
		struct msghdr rmsg = {.msg_iov = &riov, .msg_iovlen = 1, .msg_control = cbuf.b,
				      .msg_controllen = sizeof(cbuf.b)};
		n = real_recvmsg(fd, &rmsg, MSG_CMSG_CLOEXEC);
		if (n >= 0)
			for (struct cmsghdr *c = CMSG_FIRSTHDR(&rmsg); c; c = CMSG_NXTHDR(&rmsg, c)) {
				if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
					continue;
				size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
				for (size_t i = 0; i < k && nrfds < 8; i++)
					memcpy(&rfds[nrfds++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			}
	} while (n < 0 && errno == EINTR);
	uint32_t shm_word = 0;
	if (n >= (ssize_t)(NLMSG_HDRLEN + 16) && ((const struct nlmsghdr *)rep)->nlmsg_type == NLEMU_HELLO)
		memcpy(&shm_word, rep + NLMSG_HDRLEN + 12, 4);
	if (rm && shm_word == 1) {
		/* offered: usable, or the socket is not used at all */
		if (nrfds != 1 || ring_map(rfds[0], rm) < 0) {
			for (int i = 0; i < nrfds; i++)
				real_close(rfds[i]);
			real_close(fd);
			*retry = 1;
			errno = EPROTO;
			return -1;
		}
	}
	for (int i = 0; i < nrfds; i++)
		real_close(rfds[i]);
	if (n < 0 || (size_t)n < NLMSG_HDRLEN + 4) {
		say("nlemu: no HELLO from the nlemu server at %s: %s\n", path,
		    n < 0 ? strerror(errno) : "connection closed");
		real_close(fd);
		errno = ECONNREFUSED;
		return -1;
	}
	const struct nlmsghdr *rh = (const struct nlmsghdr *)rep;
	if (rh->nlmsg_type == NLEMU_HELLO && n >= (ssize_t)(NLMSG_HDRLEN + 8)) {
		memcpy(portid, rep + NLMSG_HDRLEN + 4, 4);
		if (n >= (ssize_t)(NLMSG_HDRLEN + 12)) {
			uint32_t w;
			memcpy(&w, rep + NLMSG_HDRLEN + 8, 4);
			__atomic_store_n(&poll_cpu, (w & HELLO_POLLS) ? (int)(w & 0xffff) : -1,
					 __ATOMIC_RELAXED);
			if ((w & HELLO_POLLS) && poll_avoid) {
				cpu_set_t set;
				if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 1 &&
				    CPU_ISSET((int)(w & 0xffff), &set)) {
					CPU_CLR((int)(w & 0xffff), &set);
					sched_setaffinity(0, sizeof(set), &set);
				}
			}
		}
		return fd;
	}
	int err = EPROTO;
	if (rh->nlmsg_type == NLMSG_ERROR) {
		int e;
		memcpy(&e, rep + NLMSG_HDRLEN, sizeof(e));
		/* nlmsgerr.error is a negative errno (-1..-MAX_ERRNO, 4095, as
		 * the kernel's IS_ERR_VALUE range). Negating INT_MIN is undefined
		 * behaviour, and anything else outside that range (0, positive,
		 * below -4095) is no errno: all of those stay EPROTO. */
		if (e < 0 && e >= -4095)
			err = -e;
		const char *m = extack_msg(rep, (size_t)n);
		if (err == ENOENT)
			say("nlemu: namespace \"%s\" does not exist on the nlemu server at %s\n", ns, path);
		else
			say("nlemu: the nlemu server at %s refused namespace \"%s\": %s\n", path, ns,
			    m ? m : strerror(err));
	} else {
		say("nlemu: bad HELLO reply from the nlemu server at %s\n", path);
	}
	real_close(fd);
	errno = err;
	return -1;
}

/* server_open connects to the server and completes HELLO for the namespace
 * in $NLEMU_NETNS. On success it returns the fd and stores the port id. On
 * failure it prints one line on stderr and returns -1 with errno set:
 * ECONNREFUSED when the server cannot be reached, ENOENT for an unknown
 * namespace, EPROTO for a broken handshake. cloexec is SOCK_CLOEXEC or 0.
 * With rm it asks for rings and stores the mapped region there (rm->base
 * NULL: a plain connection); rings offered but unusable (a bad region, no
 * descriptor) are refused by making a plain connection instead. */
static int server_open(int cloexec, uint32_t *portid, struct ringmap *rm)
{
	if (rm)
		memset(rm, 0, sizeof(*rm));
	int retry = 0;
	int fd = server_open1(cloexec, portid, rm, &retry);
	if (fd < 0 && retry) {
		say("nlemu: unusable shared-memory ring from the nlemu server; using the socket\n");
		memset(rm, 0, sizeof(*rm));
		fd = server_open1(cloexec, portid, NULL, &retry);
	}
	return fd;
}

/* ---- socket() ---------------------------------------------------------- */

EXPORT int socket(int domain, int type, int protocol)
{
	INIT();
	int base = type & ~(SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (domain != AF_NETLINK || protocol != NETLINK_ROUTE ||
	    (base != SOCK_RAW && base != SOCK_DGRAM) || !server_path()) {
		int fd = real_socket(domain, type, protocol);
		if (maybe_tracked(fd)) {
			/* fd was closed behind our back: forget the stale entry */
			tab_lock();
			untrack_locked(fd);
			tab_unlock();
		}
		return fd;
	}

	struct nlsock *s = calloc(1, sizeof(*s));
	if (!s) {
		errno = ENOBUFS;
		return -1;
	}
	uint32_t portid = 0;
	/* Rings (see "shared-memory rings"): only for a socket no execve
	 * keeps, in a process with one thread, and with the read-ahead
	 * buffer the reply records are taken into. */
	struct ringmap rm = {0};
	int ask = (type & SOCK_CLOEXEC) && single_threaded() && shm_wanted();
	if (ask) {
		void *b = mmap(NULL, RA_CAP, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (b == MAP_FAILED)
			ask = 0;
		else
			s->ra_buf = b;
	}
	int fd = server_open(type & SOCK_CLOEXEC, &portid, ask ? &rm : NULL);
	if (fd < 0) {
		int e = errno;
		if (s->ra_buf)
			munmap(s->ra_buf, RA_CAP);
		free(s);
		errno = e;
		return -1;
	}
	if (rm.base) {
		s->shm = rm.base;
		s->shm_len = rm.len;
		s->req_size = rm.req_size;
		s->rep_size = rm.rep_size;
		__atomic_add_fetch(&nring, 1, __ATOMIC_RELEASE);
	}
	/* Notifications come framed with their group (nl_groups, PKTINFO);
	 * no groups are bound yet, so every one of them is framed. */
	if (send_setsockopt(s, fd, SOL_NETLINK, NLEMU_GROUPFRAMES, 1) < 0) {
		int e = errno;
		real_close(fd);
		s->refs = 1;
		nl_put(s); /* unmaps */
		errno = e;
		return -1;
	}
	if (type & SOCK_NONBLOCK) {
		int fl = real_fcntl(fd, F_GETFL);
		real_fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	}
	s->type = base;
	s->portid = portid;
	s->nonblock = (type & SOCK_NONBLOCK) != 0;
	s->rcvbuf = read_sysctl("/proc/sys/net/core/rmem_default", 212992);
	s->sndbuf = read_sysctl("/proc/sys/net/core/wmem_default", 212992);
	tab_lock();
	int r = track_locked(fd, s);
	tab_unlock();
	if (r < 0) {
		real_close(fd);
		s->refs = 1;
		nl_put(s);
		errno = ENOBUFS;
		return -1;
	}
	return fd;
}

/* ---- addresses -------------------------------------------------------- */

static void put_nladdr(SA_ARG addr, socklen_t *len, uint32_t pid, uint32_t groups)
{
	struct sockaddr *sa = SA_PTR(addr);
	if (!sa || !len)
		return;
	struct sockaddr_nl nl = {.nl_family = AF_NETLINK, .nl_pid = pid, .nl_groups = groups};
	size_t n = *len < sizeof(nl) ? *len : sizeof(nl);
	memcpy(sa, &nl, n);
	*len = sizeof(nl);
}

EXPORT int bind(int fd, CSA_ARG addr, socklen_t len)
{
	INIT();
	struct nlsock *s = nl_get(fd);
	if (!s)
		return real_bind(fd, addr, len);
	/* as netlink_bind: a full sockaddr_nl of family AF_NETLINK. nl_pid is
	 * ignored: the server assigned the port id at HELLO. */
	const struct sockaddr_nl *nl = (const struct sockaddr_nl *)SA_PTR(addr);
	int ret = -1;
	tab_lock();
	int nochange = s->shm && nl && len >= sizeof(struct sockaddr_nl) && nl->nl_family == AF_NETLINK &&
		       nl->nl_groups == 0 && s->groups[0] == 0;
	tab_unlock();
	if (nochange) {
		/* netlink_bind(): no groups asked, none held: nothing to do;
		 * in ring mode that saves leaving it (iproute2's rtnl_open
		 * binds so) */
		ret = 0;
	} else if (!nl || len < sizeof(struct sockaddr_nl) || nl->nl_family != AF_NETLINK) {
		errno = EINVAL;
	} else if (ctl_call(s, fd, NLEMU_BIND, &nl->nl_groups, sizeof(nl->nl_groups)) == 0) {
		/* in effect now: the server answered after joining (and refused
		 * privileged groups with EPERM, as rtnetlink_bind() does) */
		tab_lock();
		s->groups[0] = nl->nl_groups;
		tab_unlock();
		ret = 0;
	}
	nl_put(s);
	return ret;
}

EXPORT int connect(int fd, CSA_ARG addr, socklen_t len)
{
	INIT();
	struct nlsock *s = nl_get(fd);
	if (!s)
		return real_connect(fd, addr, len);
	/* as netlink_connect: AF_UNSPEC disconnects, AF_NETLINK sets the default
	 * destination. Only the kernel (nl_pid 0) is reachable here, so both are
	 * accepted and change nothing. */
	const struct sockaddr *sa = SA_PTR(addr);
	int ret = 0;
	if (!sa || len < sizeof(sa->sa_family) ||
	    (sa->sa_family != AF_UNSPEC &&
	     (sa->sa_family != AF_NETLINK || len < sizeof(struct sockaddr_nl)))) {
		errno = EINVAL;
		ret = -1;
	}
	nl_put(s);
	return ret;
}

EXPORT int getsockname(int fd, SA_ARG addr, socklen_t *len)
{
	INIT();
	struct nlsock *s = nl_get(fd);
	if (!s)
		return real_getsockname(fd, addr, len);
	tab_lock();
	uint32_t pid = s->portid, groups = s->groups[0];
	unref_locked(s);
	tab_unlock();
	put_nladdr(addr, len, pid, groups);
	return 0;
}

EXPORT int getpeername(int fd, SA_ARG addr, socklen_t *len)
{
	INIT();
	struct nlsock *s = nl_get(fd);
	if (!s)
		return real_getpeername(fd, addr, len);
	nl_put(s);
	put_nladdr(addr, len, 0, 0);
	return 0;
}

/* ---- socket options ---------------------------------------------------- */

static unsigned flag_opt(int name)
{
	switch (name) {
	case NETLINK_PKTINFO: return OPT_PKTINFO;
	case NETLINK_BROADCAST_ERROR: return OPT_BROADCAST_ERROR;
	case NETLINK_NO_ENOBUFS: return OPT_NO_ENOBUFS;
	case NETLINK_LISTEN_ALL_NSID: return OPT_LISTEN_ALL_NSID;
	case NETLINK_CAP_ACK: return OPT_CAP_ACK;
	case NETLINK_EXT_ACK: return OPT_EXT_ACK;
	case NETLINK_GET_STRICT_CHK: return OPT_STRICT;
	}
	return 0;
}

/* buf_size mirrors sock_setsockopt(SO_RCVBUF/SO_SNDBUF): capped by the
 * sysctl maximum unless forced, doubled, and at least the minimum. */
static int buf_size(int val, int force, const char *maxpath, int min)
{
	if (!force) {
		int max = read_sysctl(maxpath, 212992);
		if ((unsigned)val > (unsigned)max)
			val = max;
	}
	if (val < 0)
		val = 0;
	if (val > INT32_MAX / 2)
		val = INT32_MAX / 2;
	val *= 2;
	return val < min ? min : val;
}

static int nl_setsockopt(struct nlsock *s, int fd, int level, int name, const void *optval,
			 socklen_t optlen)
{
	int val = 0;
	if (level == SOL_SOCKET) {
		switch (name) {
		case SO_RCVBUF:
		case SO_RCVBUFFORCE:
			if (optlen < sizeof(int) || !optval) {
				errno = EINVAL;
				return -1;
			}
			memcpy(&val, optval, sizeof(val));
			/* The server queues our datagrams; the size of the real
			 * AF_UNIX receive queue is not the netlink one, so this
			 * goes to the server only. */
			if (send_setsockopt(s, fd, SOL_SOCKET, SO_RCVBUF, (uint32_t)val) < 0)
				return -1;
			tab_lock();
			s->rcvbuf = buf_size(val, name == SO_RCVBUFFORCE,
					     "/proc/sys/net/core/rmem_max", MIN_RCVBUF);
			tab_unlock();
			return 0;
		case SO_SNDBUF:
		case SO_SNDBUFFORCE:
			if (optlen < sizeof(int) || !optval) {
				errno = EINVAL;
				return -1;
			}
			memcpy(&val, optval, sizeof(val));
			/* Our datagrams travel through the real socket: its send
			 * buffer bounds them as netlink's does. */
			real_setsockopt(fd, SOL_SOCKET, SO_SNDBUF, optval, optlen);
			tab_lock();
			s->sndbuf = buf_size(val, name == SO_SNDBUFFORCE,
					     "/proc/sys/net/core/wmem_max", MIN_SNDBUF);
			tab_unlock();
			return 0;
		}
		return real_setsockopt(fd, level, name, optval, optlen);
	}
	if (level != SOL_NETLINK) {
		errno = ENOPROTOOPT;
		return -1;
	}
	/* as netlink_setsockopt: a short optlen reads as 0; a full one is
	 * copied first (EFAULT, whatever the option) */
	if (optlen >= sizeof(int)) {
		if (!optval) {
			errno = EFAULT;
			return -1;
		}
		memcpy(&val, optval, sizeof(val));
	}
	unsigned bit = flag_opt(name);
	if (bit) {
		/* NETLINK_LISTEN_ALL_NSID needs CAP_NET_BROADCAST: the server
		 * decides (EPERM); the other flags cannot fail. */
		uint32_t p[3] = {SOL_NETLINK, (uint32_t)name, val ? 1 : 0};
		int r = name == NETLINK_LISTEN_ALL_NSID
				? ctl_call(s, fd, NLEMU_SETSOCKOPT, p, sizeof(p))
				: send_setsockopt(s, fd, SOL_NETLINK, (uint32_t)name, val ? 1 : 0);
		if (r < 0)
			return -1;
		tab_lock();
		if (val)
			s->opts |= bit;
		else
			s->opts &= ~bit;
		tab_unlock();
		return 0;
	}
	if (name == NETLINK_ADD_MEMBERSHIP || name == NETLINK_DROP_MEMBERSHIP) {
		unsigned g = (unsigned)val;
		/* The server checks the group as netlink_setsockopt() does
		 * (EINVAL for 0 and beyond ngroups, EPERM for privileged groups)
		 * and answers once the membership is in effect. */
		uint32_t p[3] = {SOL_NETLINK, (uint32_t)name, g};
		if (ctl_call(s, fd, NLEMU_SETSOCKOPT, p, sizeof(p)) < 0)
			return -1;
		if (g == 0 || g - 1 >= NL_MAXGROUPS)
			return 0;
		tab_lock();
		if (name == NETLINK_ADD_MEMBERSHIP)
			s->groups[(g - 1) / 32] |= 1u << ((g - 1) % 32);
		else
			s->groups[(g - 1) / 32] &= ~(1u << ((g - 1) % 32));
		tab_unlock();
		return 0;
	}
	errno = ENOPROTOOPT;
	return -1;
}

EXPORT int setsockopt(int fd, int level, int name, const void *optval, socklen_t optlen)
{
	INIT();
	struct nlsock *s = nl_get(fd);
	if (!s)
		return real_setsockopt(fd, level, name, optval, optlen);
	int ret = nl_setsockopt(s, fd, level, name, optval, optlen);
	nl_put(s);
	return ret;
}

static int put_int(void *optval, socklen_t *optlen, int v)
{
	if (!optval || !optlen || *optlen < sizeof(int)) {
		errno = EINVAL;
		return -1;
	}
	memcpy(optval, &v, sizeof(v));
	*optlen = sizeof(int);
	return 0;
}

/* take_sockerr consumes a SOCKERR datagram at the head of the queue without
 * blocking; it returns its errno, or 0 when none is queued. */
static int take_sockerr(int fd)
{
	unsigned char hdr[SOCKERR_LEN];
	ssize_t n = real_recv(fd, hdr, sizeof(hdr), MSG_PEEK | MSG_TRUNC | MSG_DONTWAIT);
	const struct nlmsghdr *h = (const struct nlmsghdr *)hdr;
	if (n != SOCKERR_LEN || h->nlmsg_type != NLEMU_SOCKERR)
		return 0;
	int e;
	memcpy(&e, hdr + NLMSG_HDRLEN, sizeof(e));
	real_recv(fd, hdr, sizeof(hdr), MSG_DONTWAIT);
	return e > 0 ? e : ENOBUFS;
}

static int nl_getsockopt(struct nlsock *s, int fd, int level, int name, void *optval,
			 socklen_t *optlen)
{
	tab_lock();
	struct nlsock c = *s; /* a consistent copy */
	tab_unlock();
	if (level == SOL_SOCKET) {
		switch (name) {
		case SO_RCVBUF: return put_int(optval, optlen, c.rcvbuf);
		case SO_SNDBUF: return put_int(optval, optlen, c.sndbuf);
		case SO_TYPE: return put_int(optval, optlen, c.type);
		case SO_DOMAIN: return put_int(optval, optlen, AF_NETLINK);
		case SO_PROTOCOL: return put_int(optval, optlen, NETLINK_ROUTE);
		case SO_ERROR: {
			int e = 0;
			ring_leave(s, fd); /* a SOCKERR would be in the reply ring */
			tab_lock();
			struct stashed *st = s->stash;
			if (st && ctl_type(st->data, st->len) == NLEMU_SOCKERR && st->len == CTL_LEN) {
				int v = (int)ctl_u32(st->data);
				e = v > 0 ? v : ENOBUFS;
				s->stash = st->next;
				if (!s->stash)
					s->stash_tail = NULL;
				free(st);
			}
			tab_unlock();
			if (!e)
				e = take_sockerr(fd);
			if (e)
				return put_int(optval, optlen, e);
			break;
		}
		}
		return real_getsockopt(fd, level, name, optval, optlen);
	}
	if (level != SOL_NETLINK) {
		errno = ENOPROTOOPT;
		return -1;
	}
	unsigned bit = flag_opt(name);
	if (bit)
		return put_int(optval, optlen, (c.opts & bit) ? 1 : 0);
	if (name == NLEMU_SPINSTATS) {
		/* the shim's own: how its waits for replies went */
		uint32_t v[3] = {c.spin_hits, c.spin_misses, c.spin_skips};
		if (!optlen || *optlen < sizeof(v)) {
			errno = EINVAL;
			return -1;
		}
		memcpy(optval, v, sizeof(v));
		*optlen = sizeof(v);
		return 0;
	}
	if (name == NLEMU_RINGSTATS) {
		uint32_t v[5] = {c.shm != NULL, c.ring_sent, c.ring_recvd, c.ring_bells, c.ring_blocks};
		if (!optlen || *optlen < sizeof(v)) {
			errno = EINVAL;
			return -1;
		}
		memcpy(optval, v, sizeof(v));
		*optlen = sizeof(v);
		return 0;
	}
	if (name == NETLINK_LIST_MEMBERSHIPS) {
		/* as netlink_getsockopt: as many u32 words as fit, and the
		 * length the whole bitmap needs */
		if (!optlen) {
			errno = EFAULT;
			return -1;
		}
		socklen_t need = (NL_MAXGROUPS + 31) / 32 * 4;
		for (socklen_t pos = 0; pos < need && pos + 4 <= *optlen; pos += 4)
			memcpy((char *)optval + pos, &c.groups[pos / 4], 4);
		*optlen = need;
		return 0;
	}
	errno = ENOPROTOOPT;
	return -1;
}

EXPORT int getsockopt(int fd, int level, int name, void *optval, socklen_t *optlen)
{
	INIT();
	struct nlsock *s = nl_get(fd);
	if (!s)
		return real_getsockopt(fd, level, name, optval, optlen);
	int ret = nl_getsockopt(s, fd, level, name, optval, optlen);
	nl_put(s);
	return ret;
}

/* ---- sending ---------------------------------------------------------- */

static ssize_t nl_sendmsg(struct nlsock *s, int fd, const struct msghdr *msg, int flags)
{
	if (flags & MSG_OOB) {
		errno = EOPNOTSUPP;
		return -1;
	}
	if (msg->msg_name && msg->msg_namelen) {
		/* as netlink_sendmsg: the destination must be a sockaddr_nl.
		 * Only the kernel (the server) is reachable; other ports and
		 * groups are not emulated, so the address is otherwise ignored. */
		const struct sockaddr_nl *nl = msg->msg_name;
		if (msg->msg_namelen < sizeof(*nl) || nl->nl_family != AF_NETLINK) {
			errno = EINVAL;
			return -1;
		}
	}
	/* An empty netlink datagram is a no-op for the kernel, but an empty
	 * SEQPACKET datagram reads as end of stream: do not send it. */
	size_t total = 0;
	for (size_t i = 0; i < msg->msg_iovlen; i++)
		total += msg->msg_iov[i].iov_len;
	if (total == 0)
		return 0;
	ssize_t n;
	if (s->shm && (!single_threaded() || rec_space(total) > s->req_size / 2))
		ring_leave(s, fd); /* a thread we did not see start, or too large for the ring */
	if (s->shm) {
		n = ring_put(s, fd, REC_DATA, msg->msg_iov, msg->msg_iovlen, total,
			     (flags & MSG_DONTWAIT) || s->nonblock) < 0 ? -1 : (ssize_t)total;
		if (n > 0)
			s->ring_sent++;
	} else {
		struct msghdr m = {.msg_iov = msg->msg_iov, .msg_iovlen = msg->msg_iovlen};
		n = real_sendmsg(fd, &m, (flags & MSG_DONTWAIT) | MSG_NOSIGNAL);
	}
	if (n > 0 && spin_ns > 0) {
		tab_lock();
		s->expect = 1;
		tab_unlock();
	}
	return n;
}

EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	INIT();
	struct nlsock *s = nl_get(fd);
	if (!s)
		return real_sendmsg(fd, msg, flags);
	ssize_t n = nl_sendmsg(s, fd, msg, flags);
	nl_put(s);
	return n;
}

EXPORT ssize_t sendto(int fd, const void *buf, size_t len, int flags, CSA_ARG addr,
		      socklen_t alen)
{
	INIT();
	struct nlsock *s = nl_get(fd);
	if (!s)
		return real_sendto(fd, buf, len, flags, addr, alen);
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
	struct msghdr m = {.msg_name = (void *)SA_PTR(addr), .msg_namelen = alen,
			   .msg_iov = &iov, .msg_iovlen = 1};
	ssize_t n = nl_sendmsg(s, fd, &m, flags);
	nl_put(s);
	return n;
}

EXPORT ssize_t send(int fd, const void *buf, size_t len, int flags)
{
	INIT();
	struct nlsock *s = nl_get(fd);
	if (!s)
		return real_send(fd, buf, len, flags);
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
	ssize_t n = nl_sendmsg(s, fd, &m, flags);
	nl_put(s);
	return n;
}

EXPORT ssize_t write(int fd, const void *buf, size_t len)
{
	INIT();
	struct nlsock *s = nl_get(fd);
	if (!s)
		return real_write(fd, buf, len);
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
	ssize_t n = nl_sendmsg(s, fd, &m, 0);
	nl_put(s);
	return n;
}

EXPORT ssize_t writev(int fd, const struct iovec *iov, int iovcnt)
{
	INIT();
	struct nlsock *s = nl_get(fd);
	if (!s)
		return real_writev(fd, iov, iovcnt);
	struct msghdr m = {.msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)iovcnt};
	ssize_t n = nl_sendmsg(s, fd, &m, 0);
	nl_put(s);
	return n;
}

/* ---- receiving -------------------------------------------------------- */

/* tell_recvlen lets the server size dump datagrams for a receive buffer of
 * cap bytes, the first time and whenever a larger buffer shows up (the
 * kernel tracks the same thing as nlk->max_recvmsg_len). */
static void tell_recvlen(struct nlsock *s, int fd, size_t cap)
{
	tab_lock();
	int larger = cap > s->recvlen;
	tab_unlock();
	if (!larger)
		return;
	if (send_setsockopt(s, fd, SOL_NETLINK, NLEMU_RECVLEN,
			    cap > UINT32_MAX ? UINT32_MAX : (uint32_t)cap) < 0)
		return;
	tab_lock();
	if (cap > s->recvlen)
		s->recvlen = cap;
	tab_unlock();
}

/* group_mask is netlink_group_mask(): the sender's nl_groups for a datagram
 * of group g (the group's bit for 1..32, else 0). */
static uint32_t group_mask(uint32_t g)
{
	return (g == 0 || g > 32) ? 0 : 1u << (g - 1);
}

/* put_recv_meta fills in what netlink_recvmsg() reports besides the data:
 * the sender {AF_NETLINK, nl_pid 0, nl_groups = the group's bit}, with
 * NETLINK_PKTINFO the group as a SOL_NETLINK cmsg (netlink_cmsg_recv_pktinfo(),
 * present for replies too, with group 0), and MSG_TRUNC. */
static void put_recv_meta(struct msghdr *msg, unsigned opts, uint32_t group, int trunc)
{
	if (msg->msg_name) {
		socklen_t len = msg->msg_namelen;
		put_nladdr((struct sockaddr *)msg->msg_name, &len, 0, group_mask(group));
		msg->msg_namelen = len;
	} else {
		msg->msg_namelen = 0;
	}
	int flags = trunc ? MSG_TRUNC : 0;
	size_t used = 0;
	if (opts & OPT_PKTINFO) {
		struct nl_pktinfo info = {.group = group};
		if (msg->msg_control && msg->msg_controllen >= CMSG_LEN(sizeof(info))) {
			struct cmsghdr *c = (struct cmsghdr *)msg->msg_control;
			c->cmsg_level = SOL_NETLINK;
			c->cmsg_type = NETLINK_PKTINFO;
			c->cmsg_len = CMSG_LEN(sizeof(info));
			memcpy(CMSG_DATA(c), &info, sizeof(info));
			used = CMSG_SPACE(sizeof(info));
			if (used > msg->msg_controllen)
				used = msg->msg_controllen;
		} else {
			flags |= MSG_CTRUNC;
		}
	}
	msg->msg_controllen = used;
	msg->msg_flags = flags;
}

/* scatter copies n bytes of src into the iovecs. */
static void scatter(const struct iovec *iov, size_t niov, const unsigned char *src, size_t n)
{
	for (size_t i = 0; i < niov && n > 0; i++) {
		size_t k = iov[i].iov_len < n ? iov[i].iov_len : n;
		memcpy(iov[i].iov_base, src, k);
		src += k;
		n -= k;
	}
}

/* unshift: a datagram that is not a framed notification was received as
 * [head: its first h bytes][the caller's iovecs: the next u bytes]; move it
 * into the caller's iovecs alone (cap bytes), as the kernel would have put
 * it. A memmove of what was received, no extra system call. */
static void unshift(const struct iovec *iov, size_t niov, const unsigned char *head, size_t h,
		    size_t u, size_t cap)
{
	size_t total = h + u < cap ? h + u : cap;
	if (total == 0)
		return;
	if (niov == 1) {
		unsigned char *b = iov[0].iov_base;
		if (total > h)
			memmove(b + h, b, total - h);
		memcpy(b, head, h < total ? h : total);
		return;
	}
	/* several iovecs (rare: iproute2 uses one): through a bounce buffer,
	 * on the stack for what a reply usually is */
	unsigned char small[4096];
	unsigned char *tmp = total <= sizeof(small) ? small : malloc(total);
	if (!tmp)
		return;
	size_t k = h < total ? h : total;
	memcpy(tmp, head, k);
	for (size_t i = 0, off = k; i < niov && off < total; i++) {
		size_t c = iov[i].iov_len < total - off ? iov[i].iov_len : total - off;
		memcpy(tmp + off, iov[i].iov_base, c);
		off += c;
	}
	scatter(iov, niov, tmp, total);
	if (tmp != small)
		free(tmp);
}

/* RECV_AGAIN: recv_one consumed an nlemu ack; receive again. */
#define RECV_AGAIN (-2)

/* recv_one receives one datagram from the server into msg. The iovecs are
 * preceded by a CTL_LEN-byte head so that an NLEMU_GROUP frame lands there
 * and the notification lands in the caller's buffer as it is; anything else
 * is moved into place (unshift). SOCKERR becomes -1/errno and an ack
 * RECV_AGAIN, both consumed even by MSG_PEEK. */
static ssize_t recv_one(struct nlsock *s, int fd, struct msghdr *msg, int flags, size_t cap,
			unsigned opts)
{
	unsigned char head[CTL_LEN];
	struct iovec small[8], *iov = small;
	size_t niov = msg->msg_iovlen + 1;
	if (niov > sizeof(small) / sizeof(small[0])) {
		iov = malloc(niov * sizeof(*iov));
		if (!iov) {
			errno = ENOBUFS;
			return -1;
		}
	}
	iov[0].iov_base = head;
	iov[0].iov_len = sizeof(head);
	if (msg->msg_iovlen)
		memcpy(iov + 1, msg->msg_iov, msg->msg_iovlen * sizeof(*iov));
	struct msghdr m = {.msg_iov = iov, .msg_iovlen = niov};
	ssize_t real = real_recvmsg(fd, &m, (flags & (MSG_PEEK | MSG_DONTWAIT)) | MSG_TRUNC);
	if (iov != small)
		free(iov);
	if (real < 0)
		return -1;
	if (real == 0) {
		put_recv_meta(msg, opts, 0, 0);
		return 0; /* the server hung up */
	}
	if (real == 1) {
		/* a stale doorbell (see "shared-memory rings"): shorter than a
		 * netlink header, ignored as netlink_rcv_skb() ignores those */
		if (flags & MSG_PEEK)
			real_recv(fd, head, sizeof(head), MSG_DONTWAIT);
		return RECV_AGAIN;
	}
	size_t got = (size_t)real < sizeof(head) + cap ? (size_t)real : sizeof(head) + cap;
	unsigned t = ctl_type(head, got);
	if ((t == NLEMU_SOCKERR || t == NLEMU_ACK) && real == CTL_LEN) {
		if (flags & MSG_PEEK)
			real_recv(fd, head, sizeof(head), MSG_DONTWAIT);
		if (t == NLEMU_SOCKERR) {
			int e = (int)ctl_u32(head);
			errno = e > 0 ? e : ENOBUFS;
			return -1;
		}
		tab_lock();
		record_ack_locked(s, ack_seq(head), ack_errno(head));
		tab_unlock();
		return RECV_AGAIN;
	}
	uint32_t group = 0;
	size_t dlen;
	if (t == NLEMU_GROUP && (size_t)real > CTL_LEN) {
		group = ctl_u32(head);
		dlen = (size_t)real - CTL_LEN;
	} else {
		dlen = (size_t)real;
		unshift(msg->msg_iov, msg->msg_iovlen, head, got < sizeof(head) ? got : sizeof(head),
			got > sizeof(head) ? got - sizeof(head) : 0, cap);
	}
	put_recv_meta(msg, opts, group, dlen > cap);
	return (flags & MSG_TRUNC) ? (ssize_t)dlen : (ssize_t)(dlen < cap ? dlen : cap);
}

/* from_stash_locked returns the oldest stashed datagram as recv_one would
 * (removing it unless MSG_PEEK). */
static ssize_t from_stash_locked(struct nlsock *s, int fd, struct msghdr *msg, int flags,
				 size_t cap, unsigned opts)
{
	struct stashed *st = s->stash;
	unsigned t = ctl_type(st->data, st->len);
	int sockerr = t == NLEMU_SOCKERR && st->len == CTL_LEN;
	ssize_t ret;
	if (sockerr) {
		int e = (int)ctl_u32(st->data);
		errno = e > 0 ? e : ENOBUFS;
		ret = -1;
	} else {
		const unsigned char *d = st->data;
		size_t dlen = st->len;
		uint32_t group = 0;
		if (t == NLEMU_GROUP && st->len > CTL_LEN) {
			group = ctl_u32(st->data);
			d += CTL_LEN;
			dlen -= CTL_LEN;
		}
		scatter(msg->msg_iov, msg->msg_iovlen, d, dlen < cap ? dlen : cap);
		put_recv_meta(msg, opts, group, dlen > cap);
		ret = (flags & MSG_TRUNC) ? (ssize_t)dlen : (ssize_t)(dlen < cap ? dlen : cap);
	}
	if (sockerr || !(flags & MSG_PEEK)) {
		s->stash = st->next;
		if (!s->stash) {
			s->stash_tail = NULL;
			/* drop the wake-up ack if it is already here, so that the
			 * socket is readable exactly when there is more */
			unsigned char head[CTL_LEN];
			if (real_recv(fd, head, sizeof(head), MSG_PEEK | MSG_TRUNC | MSG_DONTWAIT) == CTL_LEN &&
			    ctl_type(head, CTL_LEN) == NLEMU_ACK && ack_seq(head) == 0)
				real_recv(fd, head, sizeof(head), MSG_DONTWAIT);
		}
		free(st);
	}
	return ret;
}

/* ---- peeking at the floor ----------------------------------------------
 *
 * iproute2 sizes every reply with recvmsg(MSG_PEEK|MSG_TRUNC) and then
 * reads it with a second recvmsg (rtnl_recvmsg()); libmnl and libnl
 * programs peek the same way. Forwarded as they are, that is two system
 * calls on the server's socket per reply. Instead, a peek in a
 * single-threaded process reads the datagram out of the socket into the
 * socket's read-ahead buffer and answers from it; the next receive call of
 * any kind (recvmsg, recv, recvfrom, read, readv, recvmmsg, the _chk
 * variants) is then answered from the buffer with no system call, with what
 * netlink_recvmsg() would have reported for the datagram still queued:
 * MSG_PEEK leaves it held, MSG_TRUNC returns the datagram's length, a
 * short buffer gets what fits and MSG_TRUNC in msg_flags (and the rest is
 * gone, unless the call peeked), MSG_DONTWAIT and O_NONBLOCK never wait for
 * it, MSG_WAITALL and MSG_CMSG_CLOEXEC change nothing (as on a netlink
 * socket). One reply is then one sendmsg and one recvmsg.
 *
 * The datagram is no longer in the socket, so the kernel would not report
 * the socket readable; the rule that keeps readiness right:
 *  - only a single-threaded process reads ahead (glibc's
 *    __libc_single_threaded; no other thread can be blocked in poll() on
 *    the socket or read it meanwhile); a multi-threaded one peeks at the
 *    socket itself, as before;
 *  - every wait call (poll, ppoll, select, pselect, epoll_wait, epoll_pwait,
 *    epoll_pwait2) first gives each read-ahead back to its socket's stash
 *    and makes the socket readable again with the server's wake-up ack
 *    (the mechanism ctl_call uses), waiting until that ack is there, so the
 *    wait sees POLLIN even with a zero timeout, as the kernel's would;
 *  - a control call (bind with groups, memberships) first moves the
 *    read-ahead to the stash's head, so order is kept;
 *  - a forked child forgets the read-ahead: the parent gets that datagram.
 * The read-ahead buffer holds RA_CAP bytes, more than the server ever sends
 * in one datagram. */

/* from_ra_locked answers a receive call from the read-ahead, as recv_one
 * would have from the socket, and drops it unless MSG_PEEK. */
static ssize_t from_ra_locked(struct nlsock *s, struct msghdr *msg, int flags, size_t cap,
			      unsigned opts)
{
	const unsigned char *d = s->ra_buf;
	size_t dlen = s->ra_len, real = s->ra_real;
	uint32_t group = 0;
	if (ctl_type(d, dlen) == NLEMU_GROUP && dlen > CTL_LEN) {
		group = ctl_u32(d);
		d += CTL_LEN;
		dlen -= CTL_LEN;
		real -= CTL_LEN;
	}
	scatter(msg->msg_iov, msg->msg_iovlen, d, dlen < cap ? dlen : cap);
	put_recv_meta(msg, opts, group, real > cap);
	ssize_t ret = (flags & MSG_TRUNC) ? (ssize_t)real : (ssize_t)(real < cap ? real : cap);
	if (!(flags & MSG_PEEK))
		ra_drop_locked(s);
	return ret;
}

static ssize_t ra_accept(struct nlsock *s, struct msghdr *msg, int flags, size_t cap, unsigned opts,
			 size_t real);

/* read_ahead serves a MSG_PEEK by receiving the next datagram into the
 * read-ahead buffer (one recvmsg, consuming it) and answering from there.
 * Control datagrams are handled as recv_one handles them. */
static ssize_t read_ahead(struct nlsock *s, int fd, struct msghdr *msg, int flags, size_t cap,
			  unsigned opts)
{
	if (!s->ra_buf) {
		void *b = mmap(NULL, RA_CAP, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (b == MAP_FAILED)
			return recv_one(s, fd, msg, flags, cap, opts);
		tab_lock();
		s->ra_buf = b;
		tab_unlock();
	}
	struct iovec iov = {.iov_base = s->ra_buf, .iov_len = RA_CAP};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
	ssize_t real = real_recvmsg(fd, &m, (flags & MSG_DONTWAIT) | MSG_TRUNC);
	if (real < 0)
		return -1;
	if (real == 0) {
		put_recv_meta(msg, opts, 0, 0);
		return 0; /* the server hung up */
	}
	return ra_accept(s, msg, flags, cap, opts, (size_t)real);
}

/* ra_accept answers a receive call from a datagram of real bytes just put
 * into the read-ahead buffer (by read_ahead from the socket, or by
 * ring_recv from the reply ring): SOCKERR becomes -1/errno and an ack is
 * recorded (RECV_AGAIN), both consumed even by MSG_PEEK, as recv_one does;
 * a 1-byte datagram (a stale doorbell) is dropped; anything else is held
 * as the read-ahead and answered by from_ra_locked. */
static ssize_t ra_accept(struct nlsock *s, struct msghdr *msg, int flags, size_t cap, unsigned opts,
			 size_t real)
{
	if (real == 1)
		return RECV_AGAIN;
	size_t got = real < RA_CAP ? real : RA_CAP;
	unsigned t = ctl_type(s->ra_buf, got);
	if ((t == NLEMU_SOCKERR || t == NLEMU_ACK) && real == CTL_LEN) {
		if (t == NLEMU_SOCKERR) {
			int e = (int)ctl_u32(s->ra_buf);
			errno = e > 0 ? e : ENOBUFS;
			return -1;
		}
		tab_lock();
		record_ack_locked(s, ack_seq(s->ra_buf), ack_errno(s->ra_buf));
		tab_unlock();
		return RECV_AGAIN;
	}
	tab_lock();
	s->ra_len = got;
	s->ra_real = real;
	__atomic_add_fetch(&nreadahead, 1, __ATOMIC_RELEASE);
	ssize_t r = from_ra_locked(s, msg, flags, cap, opts);
	tab_unlock();
	return r;
}

/* ring_spin_end ends a spin on the reply ring (see "spin then block"):
 * hit, the reply came within the window, or miss. */
static void ring_spin_end(struct nlsock *s, int hit)
{
	__atomic_store_n(shm32(s, SHM_CLIENT_SPINNING), 0, __ATOMIC_SEQ_CST);
	tab_lock();
	if (hit) {
		s->spin_hits++;
		if (s->spin_level)
			s->spin_level--;
	} else {
		s->spin_misses++;
		if (s->spin_level < SPIN_MAX_LEVEL)
			s->spin_level++;
		s->spin_skip = (1u << s->spin_level) - 1;
		s->expect = 0;
	}
	tab_unlock();
}

/* ring_recv is recv_any for a socket in ring mode: the next DATA record of
 * the reply ring goes into the read-ahead buffer and is answered from
 * there (ra_accept), so every flag behaves as for a datagram read ahead
 * from the socket. An empty ring: a nonblocking call looks at the socket
 * once without waiting (a doorbell drained, the hang-up seen) and fails
 * with EAGAIN; a blocking one spins on the ring with client_spinning set
 * (when spin: the spin window and its back-off as recv_spin's), then
 * clears it, looks at the ring once more, and blocks in a receive on the
 * socket for a doorbell (the server rings when it published a reply and
 * saw client_spinning clear: one of the two sees the other). The server's
 * LEFT ends ring mode (RECV_AGAIN: the caller reads the socket next). */
static ssize_t ring_recv(struct nlsock *s, int fd, struct msghdr *msg, int flags, size_t cap,
			 unsigned opts, int spin)
{
	int nowait = (flags & MSG_DONTWAIT) || s->nonblock;
	int looked = 0, sockdata = s->held != NULL, spinning = 0;
	uint64_t start = 0;
	for (;;) {
		size_t n;
		int k = ring_take(s, fd, s->ra_buf, &n);
		if (k == REC_DATA) {
			if (spinning)
				ring_spin_end(s, 1);
			s->ring_recvd++;
			return ra_accept(s, msg, flags, cap, opts, n);
		}
		if (spinning && k != 0)
			ring_spin_end(s, 1);
		if (k == REC_LEAVE) {
			ring_left_unasked(s, fd);
			return RECV_AGAIN;
		}
		if (k < 0) {
			ring_drop(s); /* broken: reported once, then the socket */
			return -1;
		}
		if (sockdata) {
			/* a datagram on the socket and no LEFT: the server broke
			 * the protocol; what it sends is on the socket now */
			ring_drop(s);
			return RECV_AGAIN;
		}
		if (nowait) {
			if (looked) {
				errno = EAGAIN;
				return -1;
			}
			looked = 1;
		} else if (spin) {
			if (!spinning) {
				spinning = 1;
				start = mono_ns();
				__atomic_store_n(shm32(s, SHM_CLIENT_SPINNING), 1, __ATOMIC_SEQ_CST);
			}
			if (mono_ns() - start < (uint64_t)spin_ns) {
				cpu_relax();
				continue;
			}
			ring_spin_end(s, 0); /* client_spinning clear: look once more */
			spinning = spin = 0;
			continue;
		}
		int r = ring_sock(s, fd, nowait ? LOOK_NOW : LOOK_RECV);
		if (r == SOCK_HUP) {
			put_recv_meta(msg, opts, 0, 0);
			return 0; /* the server hung up */
		}
		if (r == SOCK_DATA)
			sockdata = 1;
		else if (r < 0 && !(nowait && (errno == EAGAIN || errno == EWOULDBLOCK)))
			return -1; /* EINTR, or EAGAIN for SO_RCVTIMEO, as the kernel's */
	}
}

/* ra_flush gives every read-ahead back to its socket (see "peeking at the
 * floor"): into the stash, with a wake-up ack the socket is readable for,
 * before a wait call looks at the sockets. */
static void ra_flush(void)
{
	while (__atomic_load_n(&nreadahead, __ATOMIC_ACQUIRE)) {
		int fds[16], n = 0, more = 0;
		tab_lock();
		for (int fd = 0; fd < tabcap; fd++) {
			struct nlsock *s = tab[fd];
			/* a socket in ring mode is left, read-ahead and all,
			 * when a wait call is about it (ring_leave_wait) */
			if (!s || !s->ra_len || s->shm)
				continue;
			if (n == (int)(sizeof(fds) / sizeof(fds[0]))) {
				more = 1;
				break;
			}
			if (ra_to_stash_locked(s))
				fds[n++] = fd;
		}
		tab_unlock();
		for (int i = 0; i < n; i++) {
			/* A socket with more queued stays readable until the stash
			 * is served (receive calls serve it first): a wake-up then
			 * would only leave a spurious readiness behind. */
			if (wait_fd(fds[i], POLLIN, 0) == 0)
				continue;
			uint32_t p[3] = {SOL_NETLINK, NLEMU_RECVLEN, 0};
			if (ctl_send_ex(NULL, fds[i], NLEMU_SETSOCKOPT, NLM_F_ACK, 0, p, sizeof(p)) == 0)
				wait_fd(fds[i], POLLIN, HANDSHAKE_TIMEOUT_MS);
		}
		if (!more && n == 0)
			return; /* what is left could not be moved (no memory) */
	}
}

static inline void ra_flush_maybe(void)
{
	if (__atomic_load_n(&nreadahead, __ATOMIC_ACQUIRE))
		ra_flush();
}

/* ring_leave_poll leaves ring mode for the sockets a poll() waits on: their
 * readiness comes from the kernel socket (see "shared-memory rings"). */
static void ring_leave_poll(const struct pollfd *fds, nfds_t nfds)
{
	if (!__atomic_load_n(&nring, __ATOMIC_ACQUIRE) || !fds)
		return;
	for (nfds_t i = 0; i < nfds; i++)
		ring_leave_fd(fds[i].fd);
}

/* ring_leave_select is ring_leave_poll for the fd sets of select(). */
static void ring_leave_select(int n, const fd_set *r, const fd_set *w, const fd_set *e)
{
	if (!__atomic_load_n(&nring, __ATOMIC_ACQUIRE))
		return;
	for (int fd = 0; fd < n && fd < FD_SETSIZE; fd++)
		if ((r && FD_ISSET(fd, r)) || (w && FD_ISSET(fd, w)) || (e && FD_ISSET(fd, e)))
			ring_leave_fd(fd);
}

EXPORT int poll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	INIT();
	ring_leave_poll(fds, nfds);
	ra_flush_maybe();
	return real_poll(fds, nfds, timeout);
}

EXPORT int __poll_chk(struct pollfd *fds, nfds_t nfds, int timeout, size_t fdslen)
{
	INIT();
	if (fdslen / sizeof(*fds) >= nfds)
		ring_leave_poll(fds, nfds);
	ra_flush_maybe();
	if (real_poll_chk)
		return real_poll_chk(fds, nfds, timeout, fdslen);
	if (fdslen / sizeof(*fds) < nfds)
		__chk_fail();
	return real_poll(fds, nfds, timeout);
}

EXPORT int ppoll(struct pollfd *fds, nfds_t nfds, const struct timespec *tmo, const sigset_t *mask)
{
	INIT();
	ring_leave_poll(fds, nfds);
	ra_flush_maybe();
	return real_ppoll(fds, nfds, tmo, mask);
}

EXPORT int select(int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *tmo)
{
	INIT();
	ring_leave_select(n, r, w, e);
	ra_flush_maybe();
	return real_select(n, r, w, e, tmo);
}

EXPORT int pselect(int n, fd_set *r, fd_set *w, fd_set *e, const struct timespec *tmo,
		   const sigset_t *mask)
{
	INIT();
	ring_leave_select(n, r, w, e);
	ra_flush_maybe();
	return real_pselect(n, r, w, e, tmo, mask);
}

/* epoll_ctl: a socket added to (or changed in) an epoll set leaves ring
 * mode first; epoll_wait then needs no look at the rings. */
EXPORT int epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	INIT();
	if (op == EPOLL_CTL_ADD || op == EPOLL_CTL_MOD)
		ring_leave_fd(fd);
	return real_epoll_ctl(epfd, op, fd, ev);
}

/* pthread_create: the rings have one producer and one consumer; a second
 * thread could use the socket, so every socket leaves ring mode first. */
EXPORT int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	INIT();
	ring_leave_all(0);
	return real_pthread_create(t, attr, fn, arg);
}

EXPORT int epoll_wait(int epfd, struct epoll_event *ev, int maxevents, int timeout)
{
	INIT();
	ra_flush_maybe();
	return real_epoll_wait(epfd, ev, maxevents, timeout);
}

EXPORT int epoll_pwait(int epfd, struct epoll_event *ev, int maxevents, int timeout,
		       const sigset_t *mask)
{
	INIT();
	ra_flush_maybe();
	return real_epoll_pwait(epfd, ev, maxevents, timeout, mask);
}

EXPORT int epoll_pwait2(int epfd, struct epoll_event *ev, int maxevents,
			const struct timespec *tmo, const sigset_t *mask)
{
	INIT();
	ra_flush_maybe();
	if (!real_epoll_pwait2) {
		errno = ENOSYS;
		return -1;
	}
	return real_epoll_pwait2(epfd, ev, maxevents, tmo, mask);
}

/* recv_any receives the next datagram from the socket: into the
 * read-ahead for a peek in a single-threaded process, else into msg. */
static ssize_t recv_any(struct nlsock *s, int fd, struct msghdr *msg, int flags, size_t cap,
			unsigned opts)
{
	return (flags & MSG_PEEK) && single_threaded() ? read_ahead(s, fd, msg, flags, cap, opts)
						       : recv_one(s, fd, msg, flags, cap, opts);
}

/* recv_spin is recv_any for the reply of a request just sent: probes
 * without blocking for up to spin_ns, then blocks (see "spin then block").
 * A probe's EAGAIN leaves nothing behind (recv_one and read_ahead return
 * before touching msg), so the blocking receive after a miss is exactly
 * the one recv_any would have made. */
static ssize_t recv_spin(struct nlsock *s, int fd, struct msghdr *msg, int flags, size_t cap,
			 unsigned opts)
{
	uint64_t start = mono_ns(), now = start;
	int saved = errno;
	for (;;) {
		ssize_t r = recv_any(s, fd, msg, flags | MSG_DONTWAIT, cap, opts);
		if (r != -1 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
			if (r != RECV_AGAIN) {
				tab_lock();
				s->spin_hits++;
				if (s->spin_level)
					s->spin_level--;
				tab_unlock();
			}
			return r;
		}
		uint64_t probe = now;
		do {
			cpu_relax();
			now = mono_ns();
		} while (now - probe < SPIN_PROBE_NS);
		if (now - start >= (uint64_t)spin_ns)
			break;
	}
	tab_lock();
	s->spin_misses++;
	if (s->spin_level < SPIN_MAX_LEVEL)
		s->spin_level++;
	s->spin_skip = (1u << s->spin_level) - 1;
	s->expect = 0;
	tab_unlock();
	errno = saved;
	return recv_any(s, fd, msg, flags, cap, opts);
}

static ssize_t nl_recvmsg(struct nlsock *s, int fd, struct msghdr *msg, int flags)
{
	if (flags & MSG_OOB) {
		errno = EOPNOTSUPP;
		return -1;
	}
	size_t cap = 0;
	for (size_t i = 0; i < msg->msg_iovlen; i++)
		cap += msg->msg_iov[i].iov_len;
	/* one lock section for what every call checks first */
	tab_lock();
	int pending = s->pending_err;
	s->pending_err = 0;
	int larger = cap > s->recvlen;
	tab_unlock();
	if (pending) {
		errno = pending;
		return -1;
	}
	if (larger)
		tell_recvlen(s, fd, cap);
	for (;;) {
		tab_lock();
		unsigned opts = s->opts;
		if (s->stash) {
			ssize_t r = from_stash_locked(s, fd, msg, flags, cap, opts);
			tab_unlock();
			return r;
		}
		if (s->ra_len) {
			ssize_t r = from_ra_locked(s, msg, flags, cap, opts);
			tab_unlock();
			return r;
		}
		if (s->shm && !single_threaded()) {
			/* a thread we did not see start: the rings have one
			 * consumer */
			tab_unlock();
			ring_leave(s, fd);
			continue;
		}
		int spin = 0;
		if (s->expect && !(flags & MSG_DONTWAIT) && !s->nonblock) {
			if (s->spin_skip || !may_spin()) {
				if (s->spin_skip)
					s->spin_skip--;
				s->spin_skips++;
				s->expect = 0;
			} else {
				spin = 1;
			}
		}
		tab_unlock();
		ssize_t r = s->shm ? ring_recv(s, fd, msg, flags, cap, opts, spin)
			    : spin ? recv_spin(s, fd, msg, flags, cap, opts)
				   : recv_any(s, fd, msg, flags, cap, opts);
		if (r != RECV_AGAIN)
			return r;
	}
}

EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	INIT();
	struct nlsock *s = nl_get(fd);
	if (!s)
		return real_recvmsg(fd, msg, flags);
	ssize_t n = nl_recvmsg(s, fd, msg, flags);
	nl_put(s);
	return n;
}

static ssize_t nl_recvfrom(struct nlsock *s, int fd, void *buf, size_t len, int flags,
			   struct sockaddr *addr, socklen_t *alen)
{
	struct iovec iov = {.iov_base = buf, .iov_len = len};
	struct sockaddr_nl nl;
	struct msghdr m = {.msg_name = &nl, .msg_namelen = sizeof(nl), .msg_iov = &iov,
			   .msg_iovlen = 1};
	ssize_t n = nl_recvmsg(s, fd, &m, flags);
	if (n >= 0 && addr && alen)
		put_nladdr(addr, alen, nl.nl_pid, nl.nl_groups);
	return n;
}

EXPORT ssize_t recvfrom(int fd, void *buf, size_t len, int flags, SA_ARG addr, socklen_t *alen)
{
	INIT();
	struct nlsock *s = nl_get(fd);
	if (!s)
		return real_recvfrom(fd, buf, len, flags, addr, alen);
	ssize_t n = nl_recvfrom(s, fd, buf, len, flags, SA_PTR(addr), alen);
	nl_put(s);
	return n;
}

EXPORT ssize_t recv(int fd, void *buf, size_t len, int flags)
{
	INIT();
	struct nlsock *s = nl_get(fd);
	if (!s)
		return real_recv(fd, buf, len, flags);
	ssize_t n = nl_recvfrom(s, fd, buf, len, flags, NULL, NULL);
	nl_put(s);
	return n;
}

EXPORT ssize_t read(int fd, void *buf, size_t len)
{
	INIT();
	struct nlsock *s = nl_get(fd);
	if (!s)
		return real_read(fd, buf, len);
	ssize_t n = nl_recvfrom(s, fd, buf, len, 0, NULL, NULL);
	nl_put(s);
	return n;
}

EXPORT ssize_t readv(int fd, const struct iovec *iov, int iovcnt)
{
	INIT();
	struct nlsock *s = nl_get(fd);
	if (!s)
		return real_readv(fd, iov, iovcnt);
	struct msghdr m = {.msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)iovcnt};
	ssize_t n = nl_recvmsg(s, fd, &m, 0);
	nl_put(s);
	return n;
}

/* recvmmsg: one nl_recvmsg per entry; after the first, only what is already
 * queued (MSG_WAITFORONE) or everything asked for. As in the kernel, an error
 * after at least one datagram is kept for the next receive call. The timeout
 * is not emulated. */
EXPORT int recvmmsg(int fd, struct mmsghdr *vec, unsigned int vlen, int flags, struct timespec *tmo)
{
	INIT();
	struct nlsock *s = nl_get(fd);
	if (!s)
		return real_recvmmsg(fd, vec, vlen, flags, tmo);
	unsigned int i;
	for (i = 0; i < vlen; i++) {
		int f = flags & ~MSG_WAITFORONE;
		if (i > 0 && (flags & MSG_WAITFORONE))
			f |= MSG_DONTWAIT;
		ssize_t n = nl_recvmsg(s, fd, &vec[i].msg_hdr, f);
		if (n < 0) {
			if (i > 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
				tab_lock();
				s->pending_err = errno;
				tab_unlock();
			}
			break;
		}
		vec[i].msg_len = (unsigned int)n;
	}
	nl_put(s);
	return i > 0 ? (int)i : -1;
}

EXPORT int sendmmsg(int fd, struct mmsghdr *vec, unsigned int vlen, int flags)
{
	INIT();
	struct nlsock *s = nl_get(fd);
	if (!s)
		return real_sendmmsg(fd, vec, vlen, flags);
	unsigned int i;
	for (i = 0; i < vlen; i++) {
		ssize_t n = nl_sendmsg(s, fd, &vec[i].msg_hdr, flags);
		if (n < 0)
			break;
		vec[i].msg_len = (unsigned int)n;
	}
	nl_put(s);
	return (i > 0 || vlen == 0) ? (int)i : -1;
}

/* _FORTIFY_SOURCE builds call these instead of read/recv/recvfrom. */
EXPORT ssize_t __read_chk(int fd, void *buf, size_t len, size_t buflen)
{
	INIT();
	if (len > buflen)
		__chk_fail();
	struct nlsock *s = nl_get(fd);
	if (!s)
		return real_read_chk ? real_read_chk(fd, buf, len, buflen) : real_read(fd, buf, len);
	ssize_t n = nl_recvfrom(s, fd, buf, len, 0, NULL, NULL);
	nl_put(s);
	return n;
}

EXPORT ssize_t __recv_chk(int fd, void *buf, size_t len, size_t buflen, int flags)
{
	INIT();
	if (len > buflen)
		__chk_fail();
	struct nlsock *s = nl_get(fd);
	if (!s)
		return real_recv(fd, buf, len, flags);
	ssize_t n = nl_recvfrom(s, fd, buf, len, flags, NULL, NULL);
	nl_put(s);
	return n;
}

EXPORT ssize_t __recvfrom_chk(int fd, void *buf, size_t len, size_t buflen, int flags,
			      SA_ARG addr, socklen_t *alen)
{
	INIT();
	if (len > buflen)
		__chk_fail();
	struct nlsock *s = nl_get(fd);
	if (!s)
		return real_recvfrom(fd, buf, len, flags, addr, alen);
	ssize_t n = nl_recvfrom(s, fd, buf, len, flags, SA_PTR(addr), alen);
	nl_put(s);
	return n;
}

/* ---- descriptors: close, dup, fcntl ----------------------------------- */

EXPORT int close(int fd)
{
	INIT();
	if (maybe_tracked(fd) && !in_vm_child()) {
		tab_lock();
		untrack_locked(fd);
		tab_unlock();
	}
	return real_close(fd);
}

EXPORT int close_range(unsigned int first, unsigned int last, int flags)
{
	INIT();
	if (!real_close_range) {
		errno = ENOSYS;
		return -1;
	}
	int r = real_close_range(first, last, flags);
	if (r == 0 && !(flags & CLOSE_RANGE_CLOEXEC) && __atomic_load_n(&ntracked, __ATOMIC_ACQUIRE) &&
	    !in_vm_child()) {
		tab_lock();
		for (unsigned fd = first; fd <= last && fd < (unsigned)tabcap; fd++)
			untrack_locked((int)fd);
		tab_unlock();
	}
	return r;
}

EXPORT void closefrom(int lowfd)
{
	INIT();
	if (__atomic_load_n(&ntracked, __ATOMIC_ACQUIRE) && !in_vm_child()) {
		tab_lock();
		for (int fd = lowfd < 0 ? 0 : lowfd; fd < tabcap; fd++)
			untrack_locked(fd);
		tab_unlock();
	}
	if (real_closefrom)
		real_closefrom(lowfd);
}

EXPORT int dup(int oldfd)
{
	INIT();
	if (!in_vm_child())
		ring_leave_fd(oldfd); /* two fds, maybe two users: see "shared-memory rings" */
	int fd = real_dup(oldfd);
	if (fd >= 0 && (maybe_tracked(oldfd) || maybe_tracked(fd)) && !in_vm_child())
		dup_track(oldfd, fd);
	return fd;
}

/* dup2 and dup3 run under the table lock so that the implicit close of
 * newfd and the new sharing are one step for other threads. */
EXPORT int dup2(int oldfd, int newfd)
{
	INIT();
	if ((!maybe_tracked(oldfd) && !maybe_tracked(newfd)) || in_vm_child())
		return real_dup2(oldfd, newfd);
	if (oldfd != newfd)
		ring_leave_fd(oldfd);
	tab_lock();
	int fd = real_dup2(oldfd, newfd);
	if (fd >= 0 && oldfd != newfd) {
		struct nlsock *s = entry_locked(oldfd);
		if (s)
			track_locked(fd, s);
		else
			untrack_locked(fd);
	}
	tab_unlock();
	return fd;
}

EXPORT int dup3(int oldfd, int newfd, int flags)
{
	INIT();
	if ((!maybe_tracked(oldfd) && !maybe_tracked(newfd)) || in_vm_child())
		return real_dup3(oldfd, newfd, flags);
	ring_leave_fd(oldfd);
	tab_lock();
	int fd = real_dup3(oldfd, newfd, flags);
	if (fd >= 0) {
		struct nlsock *s = entry_locked(oldfd);
		if (s)
			track_locked(fd, s);
		else
			untrack_locked(fd);
	}
	tab_unlock();
	return fd;
}

/* note_nonblock records O_NONBLOCK of a tracked socket: a receive on a
 * non-blocking socket never spins (see "spin then block"). */
static void note_nonblock(int fd, int on)
{
	struct nlsock *s = nl_get(fd);
	if (!s)
		return;
	tab_lock();
	s->nonblock = on;
	tab_unlock();
	nl_put(s);
}

static int do_fcntl(int (*real)(int, int, ...), int fd, int cmd, void *arg)
{
	/* a duplicate, or an fd an execve keeps: out of ring mode first */
	if (((cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) ||
	     (cmd == F_SETFD && !((long)arg & FD_CLOEXEC))) && !in_vm_child())
		ring_leave_fd(fd);
	int r = real(fd, cmd, arg);
	if (cmd == F_SETFL && r >= 0 && maybe_tracked(fd))
		note_nonblock(fd, ((long)arg & O_NONBLOCK) != 0);
	if ((cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) && r >= 0 &&
	    (maybe_tracked(fd) || maybe_tracked(r)) && !in_vm_child())
		dup_track(fd, r);
	return r;
}

/* fcntl is variadic; its third argument is an int, a long or a pointer, all
 * passed in one register on the ABIs glibc supports, so it is forwarded as a
 * pointer-sized value. */
EXPORT int fcntl(int fd, int cmd, ...)
{
	INIT();
	va_list ap;
	va_start(ap, cmd);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	return do_fcntl(real_fcntl, fd, cmd, arg);
}

EXPORT int fcntl64(int fd, int cmd, ...)
{
	INIT();
	va_list ap;
	va_start(ap, cmd);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	return do_fcntl(real_fcntl64, fd, cmd, arg);
}

/* ---- interface names through the emulated namespace --------------------- */

/* link_query_msg sends one RTM_GETLINK (by name, by index, or a dump when
 * both are empty) on a private connection and calls fn for every
 * RTM_NEWLINK in the answer (its ifinfomsg and attributes). It returns 0, or
 * an errno (the NLMSG_ERROR's, e.g. ENODEV). */
static int link_query_msg(const char *name, unsigned index,
			  void (*fn)(void *ctx, const struct ifinfomsg *ifi, int alen), void *ctx)
{
	uint32_t portid;
	int fd = server_open(SOCK_CLOEXEC, &portid, NULL);
	if (fd < 0)
		return errno;
	struct {
		struct nlmsghdr h;
		struct ifinfomsg ifi;
		char attrs[NLA_HDRLEN + NLA_ALIGN(IFNAMSIZ)];
	} req;
	memset(&req, 0, sizeof(req));
	int dump = !name && !index;
	req.h.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifinfomsg));
	req.h.nlmsg_type = RTM_GETLINK;
	req.h.nlmsg_flags = NLM_F_REQUEST | (dump ? NLM_F_DUMP : 0);
	req.h.nlmsg_seq = 1;
	req.ifi.ifi_family = AF_UNSPEC;
	req.ifi.ifi_index = (int)index;
	if (name) {
		struct nlattr *a = (struct nlattr *)((char *)&req + NLMSG_ALIGN(req.h.nlmsg_len));
		size_t l = strlen(name) + 1;
		a->nla_type = IFLA_IFNAME;
		a->nla_len = (uint16_t)(NLA_HDRLEN + l);
		memcpy((char *)a + NLA_HDRLEN, name, l);
		req.h.nlmsg_len = NLMSG_ALIGN(req.h.nlmsg_len) + NLA_ALIGN(a->nla_len);
	}
	int err = 0;
	size_t bufsz = 32768;
	unsigned char *buf = malloc(bufsz);
	if (!buf) {
		err = ENOMEM;
		goto out;
	}
	if (send_setsockopt(NULL, fd, SOL_NETLINK, NLEMU_RECVLEN, (uint32_t)bufsz) < 0 ||
	    real_send(fd, &req, req.h.nlmsg_len, MSG_NOSIGNAL) < 0) {
		err = errno;
		free(buf);
		goto out;
	}
	for (int done = 0; !done;) {
		if (wait_fd(fd, POLLIN, HANDSHAKE_TIMEOUT_MS) < 0) {
			err = errno;
			break;
		}
		ssize_t n = real_recv(fd, buf, bufsz, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			err = n < 0 ? errno : ECONNRESET;
			break;
		}
		size_t left = (size_t)n;
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, left);
		     h = NLMSG_NEXT(h, left)) {
			if (h->nlmsg_type == NLMSG_DONE) {
				done = 1;
				break;
			}
			if (h->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = NLMSG_DATA(h);
				err = (h->nlmsg_len >= NLMSG_LENGTH(sizeof(int)) && e->error < 0) ? -e->error : 0;
				done = 1;
				break;
			}
			if (h->nlmsg_type != RTM_NEWLINK || h->nlmsg_len < NLMSG_LENGTH(sizeof(struct ifinfomsg)))
				continue;
			const struct ifinfomsg *ifi = NLMSG_DATA(h);
			fn(ctx, ifi, (int)h->nlmsg_len - (int)NLMSG_LENGTH(sizeof(*ifi)));
			if (!(h->nlmsg_flags & NLM_F_MULTI))
				done = 1;
		}
	}
	free(buf);
out:
	real_close(fd);
	return err;
}

/* link_query is link_query_msg for callers that want the index and name. */
struct by_name_cb {
	void (*fn)(void *ctx, unsigned index, const char *name);
	void *ctx;
};

static void call_by_name(void *ctx, const struct ifinfomsg *ifi, int alen)
{
	struct by_name_cb *c = ctx;
	const char *ifname = NULL;
	for (const struct rtattr *a = IFLA_RTA(ifi); RTA_OK(a, alen); a = RTA_NEXT(a, alen)) {
		if (a->rta_type == IFLA_IFNAME && RTA_PAYLOAD(a) > 0 &&
		    ((const char *)RTA_DATA(a))[RTA_PAYLOAD(a) - 1] == 0)
			ifname = RTA_DATA(a);
	}
	c->fn(c->ctx, (unsigned)ifi->ifi_index, ifname);
}

static int link_query(const char *name, unsigned index,
		      void (*fn)(void *ctx, unsigned index, const char *name), void *ctx)
{
	struct by_name_cb c = {fn, ctx};
	return link_query_msg(name, index, call_by_name, &c);
}

struct one_link {
	unsigned index;
	char name[IFNAMSIZ];
	int found;
};

static void keep_one(void *ctx, unsigned index, const char *name)
{
	struct one_link *l = ctx;
	if (l->found)
		return;
	l->found = 1;
	l->index = index;
	if (name) {
		strncpy(l->name, name, IFNAMSIZ - 1);
		l->name[IFNAMSIZ - 1] = 0;
	}
}

EXPORT unsigned int if_nametoindex(const char *ifname)
{
	INIT();
	if (!server_path())
		return real_if_nametoindex(ifname);
	if (!ifname || strlen(ifname) >= IFNAMSIZ) {
		errno = ENODEV;
		return 0;
	}
	struct one_link l = {0};
	int err = link_query(ifname, 0, keep_one, &l);
	if (err || !l.found) {
		errno = err ? err : ENODEV;
		return 0;
	}
	return l.index;
}

EXPORT char *if_indextoname(unsigned int ifindex, char ifname[IF_NAMESIZE])
{
	INIT();
	if (!server_path())
		return real_if_indextoname(ifindex, ifname);
	struct one_link l = {0};
	int err = ifindex ? link_query(NULL, ifindex, keep_one, &l) : ENODEV;
	if (err || !l.found || !l.name[0]) {
		/* glibc reports an unknown index as ENXIO */
		errno = (!err || err == ENODEV) ? ENXIO : err;
		return NULL;
	}
	memcpy(ifname, l.name, IFNAMSIZ);
	return ifname;
}

struct name_list {
	struct if_nameindex *v;
	size_t n, cap;
	int oom;
};

static void add_name(void *ctx, unsigned index, const char *name)
{
	struct name_list *l = ctx;
	if (l->oom || !name)
		return;
	if (l->n + 1 >= l->cap) {
		size_t ncap = l->cap ? l->cap * 2 : 8;
		struct if_nameindex *nv = realloc(l->v, ncap * sizeof(*nv));
		if (!nv) {
			l->oom = 1;
			return;
		}
		l->v = nv;
		l->cap = ncap;
	}
	char *dup = strdup(name);
	if (!dup) {
		l->oom = 1;
		return;
	}
	l->v[l->n].if_index = index;
	l->v[l->n].if_name = dup;
	l->n++;
}

/* The result is freed by glibc's if_freenameindex: one malloc'ed array of
 * entries whose names are malloc'ed, ended by {0, NULL}. */
EXPORT struct if_nameindex *if_nameindex(void)
{
	INIT();
	if (!server_path())
		return real_if_nameindex();
	struct name_list l = {0};
	int err = link_query(NULL, 0, add_name, &l);
	if (!err && !l.oom && !l.v) { /* no links at all: just the terminator */
		l.v = calloc(1, sizeof(*l.v));
		l.oom = !l.v;
	}
	if (err || l.oom) {
		for (size_t i = 0; i < l.n; i++)
			free(l.v[i].if_name);
		free(l.v);
		errno = err ? err : ENOBUFS;
		return NULL;
	}
	l.v[l.n].if_index = 0;
	l.v[l.n].if_name = NULL;
	return l.v;
}

/* ---- interface ioctls through the emulated namespace -------------------- */

/*
 * ioctl() on a socket with a request in the 0x89xx range (linux/sockios.h)
 * reads or changes the network configuration of the namespace the socket
 * lives in: interfaces (SIOCGIF* / SIOCSIF*, ethtool, MII, bridge, VLAN,
 * bonding), IPv4 addresses, routes (SIOCADDRT / SIOCDELRT) and the ARP
 * table. Under nlemu none of them may reach the kernel: a program whose
 * RTM_NEWLINK was answered by nlemu would otherwise fall back to an ioctl
 * that changes the host (iproute2 does exactly that when its
 * iplink_have_newlink() probe fails). The shim answers them from the
 * emulated namespace, the way the kernel's sock_ioctl() → family ioctl
 * (inet_ioctl(), inet6_ioctl(), ...) → sock_do_ioctl() → dev_ioctl() chain
 * answers them in a fresh namespace: reads from an RTM_GETLINK on a private
 * connection, link changes as an RTM_SETLINK (the server's errno is the
 * answer), and what nlemu has no feature for yet (IPv4/IPv6 addresses,
 * routes, ARP entries, bridges, VLANs) with the errno the kernel gives for a
 * missing device or entry, or EOPNOTSUPP where the kernel would create one.
 * The order of the checks is the kernel's: the family's handler first (its
 * ENOTTY for requests of another family), then privilege (EPERM) for a
 * request that changes something, then the device (ENODEV).
 *
 * The tun/tap requests of linux/if_tun.h (TUNSETIFF, ... : type 'T', numbers
 * 200-227, on a /dev/net/tun fd) fail with EOPNOTSUPP: they would create a
 * device in the kernel namespace, and nlemu has no tun/tap devices yet.
 *
 * Passed through untouched: every other request outside 0x89xx (terminals,
 * FIONREAD / SIOCINQ / SIOCOUTQ, also on nlemu's own netlink fds, which are
 * real AF_UNIX sockets), the socket-level 0x8901-0x8907 (FIOSETOWN,
 * SIOCSPGRP, FIOGETOWN, SIOCGPGRP, SIOCATMARK, SIOCGSTAMP[NS]) and
 * SIOCOUTQNSD, and any request on an fd that is not a socket. Arguments are
 * read and written in the caller's memory directly: a bad pointer faults
 * here instead of failing with EFAULT.
 */


/* What one RTM_NEWLINK says about a device. */
struct linfo {
	int found;
	int index;
	unsigned flags;      /* ifi_flags: dev_get_flags(), as SIOCGIFFLAGS */
	unsigned short type; /* ifi_type: ARPHRD_* */
	char name[IFNAMSIZ];
	uint32_t mtu, txqlen;
	int carrier;
	unsigned char addr[32];
	int addrlen;
	struct rtnl_link_ifmap map;
};

static void keep_info(void *ctx, const struct ifinfomsg *ifi, int alen)
{
	struct linfo *l = ctx;
	if (l->found)
		return;
	l->found = 1;
	l->index = ifi->ifi_index;
	l->flags = ifi->ifi_flags;
	l->type = ifi->ifi_type;
	for (const struct rtattr *a = IFLA_RTA(ifi); RTA_OK(a, alen); a = RTA_NEXT(a, alen)) {
		size_t n = RTA_PAYLOAD(a);
		const void *p = RTA_DATA(a);
		switch (a->rta_type) {
		case IFLA_IFNAME:
			if (n > 0 && n <= IFNAMSIZ && ((const char *)p)[n - 1] == 0)
				memcpy(l->name, p, n);
			break;
		case IFLA_MTU:
			if (n >= 4)
				memcpy(&l->mtu, p, 4);
			break;
		case IFLA_TXQLEN:
			if (n >= 4)
				memcpy(&l->txqlen, p, 4);
			break;
		case IFLA_CARRIER:
			if (n >= 1)
				l->carrier = *(const unsigned char *)p;
			break;
		case IFLA_ADDRESS:
			if (n <= sizeof(l->addr)) {
				memcpy(l->addr, p, n);
				l->addrlen = (int)n;
			}
			break;
		case IFLA_MAP:
			if (n >= sizeof(l->map))
				memcpy(&l->map, p, sizeof(l->map));
			break;
		}
	}
}

/* dev_by_name looks a device up as dev_ioctl() does: the name is cut at
 * IFNAMSIZ-1 and at a ':' (an IPv4 alias label names its device). It
 * returns 0, ENODEV, or the errno of reaching the server. */
static int dev_by_name(const char *want, struct linfo *l)
{
	char name[IFNAMSIZ];
	memcpy(name, want, IFNAMSIZ);
	name[IFNAMSIZ - 1] = 0;
	char *colon = strchr(name, ':');
	if (colon)
		*colon = 0;
	memset(l, 0, sizeof(*l));
	if (!name[0])
		return ENODEV;
	int err = link_query_msg(name, 0, keep_info, l);
	if (err)
		return err;
	return l->found ? 0 : ENODEV;
}

static int dev_by_index(int index, struct linfo *l)
{
	memset(l, 0, sizeof(*l));
	if (index <= 0)
		return ENODEV;
	int err = link_query_msg(NULL, (unsigned)index, keep_info, l);
	if (err)
		return err;
	return l->found ? 0 : ENODEV;
}

/* setlink sends RTM_SETLINK {index, flags, change} with at most one
 * attribute and returns the server's errno (0 for the ack). index 0 with a
 * name sends IFLA_IFNAME to select the device. */
static int setlink(int index, const char *name, unsigned flags, unsigned change, uint16_t atype,
		   const void *adata, size_t alen)
{
	struct {
		struct nlmsghdr h;
		struct ifinfomsg ifi;
		char attrs[2 * (NLA_HDRLEN + 32)];
	} req;
	memset(&req, 0, sizeof(req));
	req.h.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifinfomsg));
	req.h.nlmsg_type = RTM_SETLINK;
	req.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	req.h.nlmsg_seq = 1;
	req.ifi.ifi_family = AF_UNSPEC;
	req.ifi.ifi_index = index;
	req.ifi.ifi_flags = flags;
	req.ifi.ifi_change = change;
	const void *data[2] = {NULL, adata};
	uint16_t types[2] = {IFLA_IFNAME, atype};
	size_t lens[2] = {0, alen};
	if (name) {
		data[0] = name;
		lens[0] = strlen(name) + 1;
	}
	for (int i = 0; i < 2; i++) {
		if (!data[i] || lens[i] > 32)
			continue;
		struct nlattr *a = (struct nlattr *)((char *)&req + NLMSG_ALIGN(req.h.nlmsg_len));
		a->nla_type = types[i];
		a->nla_len = (uint16_t)(NLA_HDRLEN + lens[i]);
		memcpy((char *)a + NLA_HDRLEN, data[i], lens[i]);
		req.h.nlmsg_len = NLMSG_ALIGN(req.h.nlmsg_len) + NLA_ALIGN(a->nla_len);
	}
	uint32_t portid;
	int fd = server_open(SOCK_CLOEXEC, &portid, NULL);
	if (fd < 0)
		return errno;
	int err = 0;
	if (real_send(fd, &req, req.h.nlmsg_len, MSG_NOSIGNAL) < 0) {
		err = errno;
		goto out;
	}
	unsigned char buf[4096];
	for (;;) {
		if (wait_fd(fd, POLLIN, HANDSHAKE_TIMEOUT_MS) < 0) {
			err = errno;
			break;
		}
		ssize_t n = real_recv(fd, buf, sizeof(buf), 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			err = n < 0 ? errno : ECONNRESET;
			break;
		}
		const struct nlmsghdr *h = (const struct nlmsghdr *)buf;
		if ((size_t)n >= NLMSG_LENGTH(sizeof(int)) && h->nlmsg_type == NLMSG_ERROR) {
			const struct nlmsgerr *e = NLMSG_DATA(h);
			err = e->error < 0 ? -e->error : 0;
			break;
		}
		/* anything else (a notification) is not for us */
	}
out:
	real_close(fd);
	return err;
}

/* has_net_admin: the kernel checks ns_capable(net->user_ns, CAP_NET_ADMIN)
 * before any change (EPERM). Under nlemu the server decides who may change
 * its namespaces (README, "Trust and safety"), and it answers EPERM to an
 * unprivileged peer's change before looking at it: an RTM_SETLINK naming
 * no device is EPERM for such a peer and EINVAL for a privileged one. */
static int has_net_admin(void)
{
	return setlink(0, NULL, 0, 0, 0, NULL, 0) != EPERM;
}

/* set_prologue: CAP_NET_ADMIN, then the device (dev_ioctl() order). */
static int set_prologue(const struct ifreq *ifr, struct linfo *l)
{
	if (!has_net_admin())
		return EPERM;
	return dev_by_name(ifr->ifr_name, l);
}

/* devinet: the IPv4 address requests of devinet_ioctl(). nlemu has no
 * addresses yet: a device has none (EADDRNOTAVAIL), and adding one is not
 * supported. */
static int devinet(unsigned r, struct ifreq *ifr)
{
	struct linfo l;
	int set = r == SIOCSIFADDR || r == SIOCSIFBRDADDR || r == SIOCSIFNETMASK || r == SIOCSIFDSTADDR;
	if (set) {
		if (!has_net_admin())
			return EPERM;
		if (ifr->ifr_addr.sa_family != AF_INET)
			return EINVAL;
	}
	int err = dev_by_name(ifr->ifr_name, &l);
	if (err)
		return err;
	return r == SIOCSIFADDR ? EOPNOTSUPP : EADDRNOTAVAIL;
}

/* rt_ioctl: ip_rt_ioctl() / rtentry_to_fib_config(). nlemu has no routes
 * yet: adding one is not supported, and none can be deleted (ESRCH). */
static int rt_ioctl(unsigned r, const struct rtentry *rt)
{
	if (!has_net_admin())
		return EPERM;
	if (!rt)
		return EFAULT;
	if (rt->rt_dst.sa_family != AF_INET)
		return EAFNOSUPPORT;
	if (rt->rt_dev) {
		char name[IFNAMSIZ + 1];
		strncpy(name, rt->rt_dev, IFNAMSIZ);
		name[IFNAMSIZ] = 0;
		struct ifreq q;
		memset(&q, 0, sizeof(q));
		memcpy(q.ifr_name, name, IFNAMSIZ - 1);
		struct linfo l;
		int err = dev_by_name(q.ifr_name, &l);
		if (err)
			return err;
	}
	return r == SIOCADDRT ? EOPNOTSUPP : ESRCH;
}

/* struct in6_rtmsg and struct in6_ifreq (linux/ipv6_route.h, linux/ipv6.h:
 * not includable beside glibc's headers). */
struct nlemu_in6_rtmsg {
	struct in6_addr dst, src, gateway;
	uint32_t type;
	uint16_t dst_len, src_len;
	uint32_t metric;
	unsigned long info;
	uint32_t flags;
	int ifindex;
};

struct nlemu_in6_ifreq {
	struct in6_addr addr;
	uint32_t prefixlen;
	int ifindex;
};

/* inet6: the requests inet6_ioctl() handles (ipv6_route_ioctl(),
 * addrconf_add_ifaddr(), addrconf_del_ifaddr(), addrconf_set_dstaddr()). */
static int inet6(unsigned r, void *arg)
{
	struct linfo l;
	/* addrconf_set_dstaddr() looks the device up before any check, and
	 * only a sit tunnel (nlemu has none) has a destination to set */
	if (r == SIOCSIFDSTADDR)
		return ENODEV;
	if (!has_net_admin())
		return EPERM;
	if (!arg)
		return EFAULT;
	switch (r) {
	case SIOCADDRT: {
		/* ip6_route_info_create(): a route needs its device (ENODEV
		 * for index 0, measured for a route without gateway) */
		const struct nlemu_in6_rtmsg *m = arg;
		int err = dev_by_index(m->ifindex, &l);
		if (err)
			return err;
		return EOPNOTSUPP;
	}
	case SIOCDELRT:
		return ESRCH;
	case SIOCSIFADDR:
	case SIOCDIFADDR: {
		const struct nlemu_in6_ifreq *q = arg;
		int err = dev_by_index(q->ifindex, &l);
		if (err)
			return err;
		return r == SIOCSIFADDR ? EOPNOTSUPP : EADDRNOTAVAIL;
	}
	default:
		return ENOTTY;
	}
}

/* arp: arp_ioctl(). nlemu has no neighbour entries yet. */
static int arp(unsigned r, const struct arpreq *ar)
{
	if (r != SIOCGARP && !has_net_admin())
		return EPERM;
	if (!ar)
		return EFAULT;
	if (ar->arp_pa.sa_family != AF_INET)
		return EPFNOSUPPORT;
	if (!(ar->arp_flags & ATF_PUBL) && (ar->arp_flags & (ATF_NETMASK | ATF_DONTPUB)))
		return EINVAL;
	if (ar->arp_dev[0]) {
		struct ifreq q;
		memset(&q, 0, sizeof(q));
		memcpy(q.ifr_name, ar->arp_dev, IFNAMSIZ - 1);
		struct linfo l;
		int err = dev_by_name(q.ifr_name, &l);
		if (err)
			return err;
		/* a complete entry's hardware address must be of the device's
		 * type (an unset family means the device's) */
		unsigned short hf = ar->arp_ha.sa_family ? ar->arp_ha.sa_family : l.type;
		if ((ar->arp_flags & ATF_COM) && hf != l.type)
			return EINVAL;
	}
	return r == SIOCSARP ? EOPNOTSUPP : ENXIO;
}

#define IOCTL_PASS (-1)

/* if_ioctl answers request r (0x89xx) on a socket of family fam: 0, a
 * positive errno, or IOCTL_PASS to hand the call to libc. */
static int if_ioctl(int fam, unsigned r, void *arg)
{
	int inet = fam == AF_INET || fam == AF_PACKET; /* packet_ioctl() forwards to inet */
	struct ifreq *ifr = arg;
	struct linfo l;
	int err;

	if ((r >= 0x8901 && r <= 0x8907) || r == SIOCOUTQNSD)
		return IOCTL_PASS; /* socket-level, no network configuration */

	/* The family's handler first. */
	switch (r) {
	case SIOCADDRT:
	case SIOCDELRT:
		if (inet)
			return rt_ioctl(r, arg);
		if (fam == AF_INET6)
			return inet6(r, arg);
		return ENOTTY;
	case SIOCDARP:
	case SIOCGARP:
	case SIOCSARP:
		return inet ? arp(r, arg) : ENOTTY;
	case SIOCGIFADDR:
	case SIOCGIFBRDADDR:
	case SIOCGIFNETMASK:
	case SIOCGIFDSTADDR:
	case SIOCSIFBRDADDR:
	case SIOCSIFNETMASK:
		if (!arg)
			return EFAULT;
		return inet ? devinet(r, ifr) : ENOTTY;
	case SIOCSIFADDR:
	case SIOCSIFDSTADDR:
		if (!arg)
			return EFAULT;
		if (inet)
			return devinet(r, ifr);
		return fam == AF_INET6 ? inet6(r, arg) : ENOTTY;
	case SIOCDIFADDR:
		return fam == AF_INET6 ? inet6(r, arg) : ENOTTY;
	case SIOCSIFPFLAGS:
	case SIOCGIFPFLAGS:
		return fam == AF_INET ? EINVAL : ENOTTY; /* measured on 6.18 */
	case SIOCGSKNS:
		/* the socket's namespace as an nsfs fd: nlemu's have none */
		return has_net_admin() ? EOPNOTSUPP : EPERM;
	case SIOCGIFVLAN:
	case SIOCSIFVLAN:
		return ENOPKG; /* vlan_ioctl_hook unset: no 8021q, as the kernel here */
	case SIOCBRADDBR:
	case SIOCBRDELBR: {
		/* br_ioctl_stub(): arg is the bridge's name */
		if (!has_net_admin())
			return EPERM;
		if (!arg)
			return EFAULT;
		struct ifreq q;
		memset(&q, 0, sizeof(q));
		memcpy(q.ifr_name, arg, IFNAMSIZ - 1);
		err = dev_by_name(q.ifr_name, &l);
		if (r == SIOCBRADDBR)
			return err == 0 ? EEXIST : err == ENODEV ? EOPNOTSUPP : err;
		/* br_del_bridge(): ENXIO when missing, EPERM when not a bridge */
		return err == 0 ? EPERM : err == ENODEV ? ENXIO : err;
	}
	case SIOCGIFBR:
	case SIOCSIFBR:
		return EOPNOTSUPP;
	}

	if (!arg)
		return EFAULT;
	/* dev_ioctl() */
	switch (r) {
	case SIOCGIFNAME:
		if ((err = dev_by_index(ifr->ifr_ifindex, &l)))
			return err;
		memcpy(ifr->ifr_name, l.name, IFNAMSIZ);
		return 0;
	case SIOCGIFCONF: {
		/* dev_ifconf() lists IPv4 addresses: nlemu has none yet */
		struct ifconf *ic = arg;
		ic->ifc_len = 0;
		return 0;
	}
	case SIOCGIFFLAGS:
	case SIOCGIFMETRIC:
	case SIOCGIFMTU:
	case SIOCGIFSLAVE:
	case SIOCGIFMAP:
	case SIOCGIFINDEX:
	case SIOCGIFTXQLEN:
	case SIOCGIFHWADDR:
	case SIOCETHTOOL:
	case SIOCGMIIPHY:
	case SIOCGMIIREG:
	case SIOCGHWTSTAMP:
		if ((err = dev_by_name(ifr->ifr_name, &l)))
			return err;
		switch (r) {
		case SIOCGIFFLAGS:
			ifr->ifr_flags = (short)l.flags;
			return 0;
		case SIOCGIFMETRIC:
			ifr->ifr_metric = 0;
			return 0;
		case SIOCGIFMTU:
			ifr->ifr_mtu = (int)l.mtu;
			return 0;
		case SIOCGIFSLAVE:
			return EINVAL;
		case SIOCGIFMAP:
			memset(&ifr->ifr_map, 0, sizeof(ifr->ifr_map));
			ifr->ifr_map.mem_start = (unsigned long)l.map.mem_start;
			ifr->ifr_map.mem_end = (unsigned long)l.map.mem_end;
			ifr->ifr_map.base_addr = (unsigned short)l.map.base_addr;
			ifr->ifr_map.irq = (unsigned char)l.map.irq;
			ifr->ifr_map.dma = l.map.dma;
			ifr->ifr_map.port = l.map.port;
			return 0;
		case SIOCGIFINDEX:
			ifr->ifr_ifindex = l.index;
			return 0;
		case SIOCGIFTXQLEN:
			ifr->ifr_qlen = (int)l.txqlen;
			return 0;
		case SIOCGIFHWADDR:
			/* dev_get_mac_address() */
			memset(ifr->ifr_hwaddr.sa_data, 0, sizeof(ifr->ifr_hwaddr.sa_data));
			memcpy(ifr->ifr_hwaddr.sa_data, l.addr,
			       (size_t)l.addrlen < sizeof(ifr->ifr_hwaddr.sa_data) ? (size_t)l.addrlen
										: sizeof(ifr->ifr_hwaddr.sa_data));
			ifr->ifr_hwaddr.sa_family = l.type;
			return 0;
		case SIOCETHTOOL: {
			/* dev_ethtool(): of the commands only ETHTOOL_GLINK is
			 * answered (netif_running() && carrier) */
			uint32_t *cmd = (uint32_t *)ifr->ifr_data;
			if (!cmd)
				return EFAULT;
			if (*cmd == ETHTOOL_GLINK) {
				struct ethtool_value *ev = (struct ethtool_value *)cmd;
				ev->data = (l.flags & IFF_UP) && l.carrier;
				return 0;
			}
			return EOPNOTSUPP;
		}
		default: /* no driver to ask */
			return EOPNOTSUPP;
		}
	case SIOCSIFFLAGS: {
		/* the server's RTM_SETLINK answers EPERM first */
		char name[IFNAMSIZ];
		memcpy(name, ifr->ifr_name, IFNAMSIZ);
		name[IFNAMSIZ - 1] = 0;
		char *colon = strchr(name, ':');
		if (colon || !name[0]) {
			if (!has_net_admin())
				return EPERM;
			/* dev_ioctl() looks the device up without the alias;
			 * devinet_ioctl() then wants an address with that label
			 * (nlemu has none) */
			if ((err = dev_by_name(name, &l)))
				return err;
			if (colon && inet)
				return EADDRNOTAVAIL;
			memcpy(name, l.name, IFNAMSIZ);
		}
		/* dev_change_flags(dev, ifr_flags): the low 16 bits, as
		 * RTM_SETLINK's ifi_flags under an ifi_change of 0xffff */
		return setlink(0, name, (unsigned short)ifr->ifr_flags, 0xffff, 0, NULL, 0);
	}
	case SIOCSIFMTU:
	case SIOCSIFTXQLEN:
	case SIOCSIFNAME:
	case SIOCSIFHWADDR:
	case SIOCSIFHWBROADCAST:
		if ((err = set_prologue(ifr, &l)))
			return err;
		switch (r) {
		case SIOCSIFMTU: {
			if (ifr->ifr_mtu < 0)
				return EINVAL;
			uint32_t v = (uint32_t)ifr->ifr_mtu;
			return setlink(l.index, NULL, 0, 0, IFLA_MTU, &v, 4);
		}
		case SIOCSIFTXQLEN: {
			if (ifr->ifr_qlen < 0)
				return EINVAL;
			uint32_t v = (uint32_t)ifr->ifr_qlen;
			return setlink(l.index, NULL, 0, 0, IFLA_TXQLEN, &v, 4);
		}
		case SIOCSIFNAME: {
			char nn[IFNAMSIZ];
			memcpy(nn, ifr->ifr_newname, IFNAMSIZ);
			nn[IFNAMSIZ - 1] = 0;
			return setlink(l.index, NULL, 0, 0, IFLA_IFNAME, nn, strlen(nn) + 1);
		}
		default: /* SIOCSIFHWADDR, SIOCSIFHWBROADCAST */
			if (ifr->ifr_hwaddr.sa_family != l.type)
				return EINVAL;
			return setlink(l.index, NULL, 0, 0, r == SIOCSIFHWADDR ? IFLA_ADDRESS : IFLA_BROADCAST,
				       ifr->ifr_hwaddr.sa_data,
				       (size_t)l.addrlen < sizeof(ifr->ifr_hwaddr.sa_data)
					       ? (size_t)l.addrlen
					       : sizeof(ifr->ifr_hwaddr.sa_data));
		}
	case SIOCADDMULTI:
	case SIOCDELMULTI:
		if ((err = set_prologue(ifr, &l)))
			return err;
		return EINVAL; /* no ndo_set_rx_mode on nlemu's devices */
	case SIOCSHWTSTAMP:
		if ((err = set_prologue(ifr, &l)))
			return err;
		/* dev_set_hwtstamp() copies the config before asking the driver */
		return ifr->ifr_data ? EOPNOTSUPP : EFAULT;
	case SIOCSIFMETRIC:
	case SIOCSIFMAP:
	case SIOCSIFSLAVE:
	case SIOCSMIIREG:
	case SIOCBONDENSLAVE:
	case SIOCBONDRELEASE:
	case SIOCBONDSETHWADDR:
	case SIOCBONDSLAVEINFOQUERY:
	case SIOCBONDINFOQUERY:
	case SIOCBONDCHANGEACTIVE:
	case SIOCBRADDIF:
	case SIOCBRDELIF:
	case SIOCWANDEV:
		if ((err = set_prologue(ifr, &l)))
			return err;
		return EOPNOTSUPP;
	}
	if (r >= SIOCDEVPRIVATE && r <= SIOCDEVPRIVATE + 15) {
		if ((err = dev_by_name(ifr->ifr_name, &l)))
			return err;
		return EOPNOTSUPP; /* dev_siocdevprivate(): no driver */
	}
	/* SIOCGIFENCAP, SIOCSIFLINK, SIOCGIFCOUNT, SIOCGIFMEM, SIOCADDDLCI,
	 * RARP, SIOCPROTOPRIVATE, ...: nothing in the kernel answers them */
	return ENOTTY;
}

/* ioctl's third argument is a pointer or an integer, passed in one
 * register on the ABIs glibc supports: it is forwarded as a pointer. */
EXPORT int ioctl(int fd, unsigned long request, ...)
{
	INIT();
	va_list ap;
	va_start(ap, request);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	unsigned r = (unsigned)request; /* the kernel's cmd is an unsigned int */
	/* TUNSETIFF and the rest of linux/if_tun.h ('T' 200-227, on a
	 * /dev/net/tun or tap fd) create and configure devices of the kernel
	 * namespace; everything else outside 0x89xx (terminal ioctls from a
	 * SIGWINCH handler among them) goes straight to libc. */
	int tun = ((r >> 8) & 0xff) == 'T' && (r & 0xff) >= 200 && (r & 0xff) <= 227;
	if (r == FIONREAD && maybe_tracked(fd))
		ring_leave_fd(fd); /* the size of the next datagram in the socket */
	if (r == FIONBIO && arg && maybe_tracked(fd)) {
		int on = *(const int *)arg != 0;
		int ret = real_ioctl(fd, request, arg);
		if (ret == 0)
			note_nonblock(fd, on);
		return ret;
	}
	if ((!tun && (r & 0xffffff00u) != 0x8900u) || !server_path())
		return real_ioctl(fd, request, arg);
	if (tun) {
		errno = EOPNOTSUPP; /* nlemu has no tun/tap devices yet */
		return -1;
	}
	int fam;
	struct nlsock *s = nl_get(fd);
	if (s) {
		nl_put(s);
		fam = AF_NETLINK;
	} else {
		socklen_t len = sizeof(fam);
		if (real_getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &fam, &len) < 0)
			return real_ioctl(fd, request, arg); /* not a socket (ENOTSOCK, EBADF) */
	}
	int saved = errno;
	int err = if_ioctl(fam, r, arg);
	if (err == IOCTL_PASS)
		return real_ioctl(fd, request, arg);
	if (err) {
		errno = err;
		return -1;
	}
	errno = saved;
	return 0;
}
