// The build constraint below is for the Go tool only: this file is embedded
// by shim_alloc_test.go and compiled with gcc at test time, never by cgo.
//
//go:build ignore

/*
 * shim_alloc_prog.c - counts the allocations the LD_PRELOAD shim makes on
 * its hot path (integration/shim_alloc_test.go runs it under the shim).
 *
 * The program defines malloc, calloc, realloc, free, mmap and munmap
 * itself: an executable's symbols come first in the dynamic linker's
 * search order, so the shim's calls land here too. They count while armed
 * and pass on to glibc (__libc_malloc & co., the mmap system call).
 *
 * After a warm-up request (the socket's read-ahead buffer is mapped on the
 * first peek), it makes ROUNDS requests of each receive pattern and prints
 * one line per pattern: "PATTERN ok=N mallocs=N frees=N mmaps=N munmaps=N".
 *  - peek:  iproute2's rtnl_recvmsg(): recvmsg(MSG_PEEK|MSG_TRUNC) with an
 *           empty iovec, then recvmsg into a buffer of the peeked size
 *  - iov2:  one recvmsg into two iovecs, no peek (the unframed reply is
 *           moved into place across both)
 *  - small: peek, then recv into a buffer shorter than the reply
 *           (MSG_TRUNC in msg_flags, the rest dropped)
 * A reply counts as ok when it is the NLMSG_ERROR (ENODEV) answer to that
 * round's request, with its sequence number, and its bytes land where the
 * kernel puts them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

static int armed;
static unsigned long n_malloc, n_free, n_mmap, n_munmap;

void *malloc(size_t n)
{
	if (armed)
		n_malloc++;
	return __libc_malloc(n);
}

void *calloc(size_t a, size_t b)
{
	if (armed)
		n_malloc++;
	return __libc_calloc(a, b);
}

void *realloc(void *p, size_t n)
{
	if (armed)
		n_malloc++;
	return __libc_realloc(p, n);
}

void free(void *p)
{
	if (armed && p)
		n_free++;
	__libc_free(p);
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	if (armed)
		n_mmap++;
	long r = syscall(SYS_mmap, addr, len, prot, flags, fd, off);
	return (void *)r;
}

int munmap(void *addr, size_t len)
{
	if (armed)
		n_munmap++;
	return (int)syscall(SYS_munmap, addr, len);
}

#define ROUNDS 200

static int fd;
static uint32_t seq;

static void die(const char *what)
{
	fprintf(stderr, "shim_alloc_prog: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* request sends an RTM_GETLINK for a missing ifindex: the answer is one
 * 52-byte NLMSG_ERROR (ENODEV) carrying the request. */
static void request(void)
{
	struct {
		struct nlmsghdr h;
		struct ifinfomsg i;
	} req = {
		.h = {.nlmsg_len = sizeof(req), .nlmsg_type = RTM_GETLINK,
		      .nlmsg_flags = NLM_F_REQUEST, .nlmsg_seq = ++seq},
		.i = {.ifi_family = AF_UNSPEC, .ifi_index = 999999},
	};
	if (send(fd, &req, sizeof(req), 0) != sizeof(req))
		die("send");
}

/* good: buf holds n bytes of this round's answer as the kernel puts them. */
static int good(const unsigned char *buf, ssize_t n, ssize_t want)
{
	if (n != want || n < (ssize_t)(sizeof(struct nlmsghdr) + sizeof(int)))
		return 0;
	struct nlmsghdr h;
	int err;
	memcpy(&h, buf, sizeof(h));
	memcpy(&err, buf + sizeof(h), sizeof(err));
	return h.nlmsg_type == NLMSG_ERROR && h.nlmsg_len == 52 && h.nlmsg_seq == seq &&
	       err == -ENODEV;
}

/* peek_round is iproute2's rtnl_recvmsg(). */
static int peek_round(size_t keep)
{
	request();
	struct sockaddr_nl nl;
	struct iovec iov = {NULL, 0};
	struct msghdr m = {.msg_name = &nl, .msg_namelen = sizeof(nl), .msg_iov = &iov, .msg_iovlen = 1};
	ssize_t len = recvmsg(fd, &m, MSG_PEEK | MSG_TRUNC);
	if (len != 52)
		return 0;
	static unsigned char buf[32768];
	iov.iov_base = buf;
	iov.iov_len = keep ? keep : (size_t)len;
	m.msg_namelen = sizeof(nl);
	ssize_t n = recvmsg(fd, &m, 0);
	if (keep)
		return n == (ssize_t)keep && (m.msg_flags & MSG_TRUNC) && nl.nl_pid == 0;
	return good(buf, n, 52) && !(m.msg_flags & MSG_TRUNC) && nl.nl_pid == 0 &&
	       m.msg_namelen == sizeof(nl);
}

/* iov2_round receives into two iovecs of 20 and 100 bytes. */
static int iov2_round(void)
{
	request();
	unsigned char a[20], b[100], all[120];
	memset(a, 0xee, sizeof(a));
	memset(b, 0xee, sizeof(b));
	struct iovec iov[2] = {{a, sizeof(a)}, {b, sizeof(b)}};
	struct msghdr m = {.msg_iov = iov, .msg_iovlen = 2};
	ssize_t n = recvmsg(fd, &m, 0);
	memcpy(all, a, sizeof(a));
	memcpy(all + sizeof(a), b, sizeof(b));
	/* nothing past the datagram is written */
	return good(all, n, 52) && all[52] == 0xee && all[119] == 0xee;
}

static void report(const char *name, int ok)
{
	printf("%s ok=%d mallocs=%lu frees=%lu mmaps=%lu munmaps=%lu\n", name, ok, n_malloc, n_free,
	       n_mmap, n_munmap);
	n_malloc = n_free = n_mmap = n_munmap = 0;
}

int main(void)
{
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		die("socket");
	/* warm-up: the first peek maps the read-ahead buffer, the first
	 * receive tells the server the buffer size */
	if (!peek_round(0) || !iov2_round())
		die("warm-up");
	int ok = 0;
	armed = 1;
	for (int i = 0; i < ROUNDS; i++)
		ok += peek_round(0);
	armed = 0;
	report("peek", ok);
	ok = 0;
	armed = 1;
	for (int i = 0; i < ROUNDS; i++)
		ok += iov2_round();
	armed = 0;
	report("iov2", ok);
	ok = 0;
	armed = 1;
	for (int i = 0; i < ROUNDS; i++)
		ok += peek_round(16);
	armed = 0;
	report("small", ok);
	return 0;
}
