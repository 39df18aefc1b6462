// The build constraint below is for the Go tool only: this file is embedded
// by peek_test.go and compiled with gcc at test time, never by cgo.
//
//go:build ignore

/*
 * peek_prog.c - the receive flag matrix of a NETLINK_ROUTE socket, printed
 * so that the kernel's answers and the shim's can be compared line by line
 * (integration/peek_test.go runs it on a fresh kernel namespace and under
 * the shim).
 *
 * Every step queues known replies (NLMSG_ERROR answers to RTM_GETLINK for a
 * missing ifindex: 52 bytes each, or an IPv4 rule dump), receives them with
 * one combination of flags and calls, and prints, per call: the return
 * value or errno, MSG_TRUNC/MSG_CTRUNC in msg_flags, the sender address,
 * the first message's type, length and sequence number, and whether the
 * socket is readable (poll with a zero timeout) afterwards. Nothing printed
 * depends on port ids or timing.
 *
 *   peek_prog [STEP]    (all steps when none is named)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/fib_rules.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

static int fd;
static unsigned char big[65536];

#define DIE(...)                                      \
	do {                                          \
		fprintf(stderr, "peek_prog: " __VA_ARGS__); \
		fprintf(stderr, "\n");                \
		exit(1);                              \
	} while (0)

static const char *ename(int e)
{
	switch (e) {
	case EAGAIN: return "EAGAIN";
	case EINTR: return "EINTR";
	case ENOBUFS: return "ENOBUFS";
	case EINVAL: return "EINVAL";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	}
	static char b[32];
	snprintf(b, sizeof(b), "errno%d", e);
	return b;
}

/* bad_getlink queues one NLMSG_ERROR (ENODEV) with sequence seq. */
static void bad_getlink(uint32_t seq)
{
	struct {
		struct nlmsghdr h;
		struct ifinfomsg i;
	} req = {
		.h = {.nlmsg_len = sizeof(req), .nlmsg_type = RTM_GETLINK,
		      .nlmsg_flags = NLM_F_REQUEST, .nlmsg_seq = seq},
		.i = {.ifi_family = AF_UNSPEC, .ifi_index = 999999},
	};
	if (send(fd, &req, sizeof(req), 0) != sizeof(req))
		DIE("send: %s", strerror(errno));
}

/* rule_dump queues an IPv4 rule dump (the default rules, then NLMSG_DONE). */
static void rule_dump(uint32_t seq)
{
	struct {
		struct nlmsghdr h;
		struct fib_rule_hdr r;
	} req = {
		.h = {.nlmsg_len = sizeof(req), .nlmsg_type = RTM_GETRULE,
		      .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP, .nlmsg_seq = seq},
		.r = {.family = AF_INET},
	};
	if (send(fd, &req, sizeof(req), 0) != sizeof(req))
		DIE("send: %s", strerror(errno));
}

/* settle waits until the replies to what was sent are queued (the kernel
 * answers in sendmsg; the server a moment later), without reading them. */
static void settle(void)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	if (poll(&p, 1, 5000) != 1)
		DIE("no reply within 5 s");
	usleep(20000); /* a second reply of the step, if any */
}

static int readable(void)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

/* show prints one call's outcome. */
static void show(const char *what, ssize_t n, int err, const struct msghdr *m,
		 const unsigned char *buf, size_t avail)
{
	printf("  %s: ", what);
	if (n < 0) {
		printf("-1 %s\n", ename(err));
		return;
	}
	printf("%zd", n);
	if (m) {
		printf(" trunc=%d ctrunc=%d", !!(m->msg_flags & MSG_TRUNC), !!(m->msg_flags & MSG_CTRUNC));
		if (m->msg_name) {
			const struct sockaddr_nl *a = m->msg_name;
			printf(" namelen=%u family=%u pid=%u groups=%u", m->msg_namelen, a->nl_family,
			       a->nl_pid, a->nl_groups);
		}
	}
	if (buf && avail >= sizeof(struct nlmsghdr) && (size_t)n >= sizeof(struct nlmsghdr)) {
		const struct nlmsghdr *h = (const struct nlmsghdr *)buf;
		printf(" type=%u len=%u seq=%u", h->nlmsg_type, h->nlmsg_len, h->nlmsg_seq);
		if (h->nlmsg_type == NLMSG_ERROR && avail >= NLMSG_HDRLEN + 4 && (size_t)n >= NLMSG_HDRLEN + 4) {
			int e;
			memcpy(&e, buf + NLMSG_HDRLEN, 4);
			printf(" error=%d", e);
		}
	}
	printf("\n");
}

/* rmsg is one recvmsg into a single buffer of len bytes (buf NULL: none). */
static ssize_t rmsg(const char *what, void *buf, size_t len, int flags)
{
	struct sockaddr_nl a;
	memset(&a, 0xab, sizeof(a));
	struct iovec iov = {.iov_base = buf, .iov_len = len};
	struct msghdr m = {.msg_name = &a, .msg_namelen = sizeof(a), .msg_iov = &iov, .msg_iovlen = 1};
	memset(buf ? buf : big, 0, buf ? len : 0);
	ssize_t n = recvmsg(fd, &m, flags);
	int e = errno;
	show(what, n, e, &m, buf, len);
	errno = e;
	return n;
}

static void end(void)
{
	printf("  readable=%d\n", readable());
	/* anything left is printed, so that a difference shows where it is */
	for (;;) {
		ssize_t n = recv(fd, big, sizeof(big), MSG_DONTWAIT);
		if (n < 0)
			break;
		show("left", n, 0, NULL, big, sizeof(big));
	}
}

/* iproute2's rtnl_recvmsg(): size with MSG_PEEK|MSG_TRUNC and no buffer,
 * then read into a buffer of at least 32 KiB. */
static void step_sizing(void)
{
	bad_getlink(1);
	settle();
	rmsg("peek_trunc_nobuf", NULL, 0, MSG_PEEK | MSG_TRUNC);
	printf("  readable=%d\n", readable());
	rmsg("recvmsg", big, 32768, 0);
	end();
}

static void step_peek_notrunc(void)
{
	bad_getlink(2);
	settle();
	rmsg("peek_nobuf", NULL, 0, MSG_PEEK);
	rmsg("peek_8", big, 8, MSG_PEEK);
	rmsg("peek_full", big, sizeof(big), MSG_PEEK);
	rmsg("recvmsg", big, sizeof(big), 0);
	end();
}

static void step_peek_twice(void)
{
	bad_getlink(3);
	settle();
	rmsg("peek1", NULL, 0, MSG_PEEK | MSG_TRUNC);
	rmsg("peek2", big, 4, MSG_PEEK | MSG_TRUNC);
	rmsg("recvmsg", big, sizeof(big), 0);
	end();
}

static void step_short_read(void)
{
	bad_getlink(4);
	settle();
	rmsg("peek", NULL, 0, MSG_PEEK | MSG_TRUNC);
	rmsg("recv_8", big, 8, 0);
	rmsg("after", big, sizeof(big), MSG_DONTWAIT);
	end();
}

static void step_short_read_trunc(void)
{
	bad_getlink(5);
	settle();
	rmsg("peek", NULL, 0, MSG_PEEK | MSG_TRUNC);
	rmsg("recv_8_trunc", big, 8, MSG_TRUNC);
	rmsg("after", big, sizeof(big), MSG_DONTWAIT);
	end();
}

static void step_short_read_nopeek(void)
{
	bad_getlink(6);
	settle();
	rmsg("recv_8", big, 8, 0);
	rmsg("after", big, sizeof(big), MSG_DONTWAIT);
	end();
}

static void step_read_calls(void)
{
	bad_getlink(7);
	bad_getlink(8);
	bad_getlink(9);
	bad_getlink(10);
	settle();
	ssize_t n;
	rmsg("peek", NULL, 0, MSG_PEEK | MSG_TRUNC);
	n = read(fd, big, sizeof(big));
	show("read", n, errno, NULL, big, sizeof(big));
	rmsg("peek", NULL, 0, MSG_PEEK | MSG_TRUNC);
	unsigned char a[10];
	struct iovec iov[2] = {{a, sizeof(a)}, {big + 10, sizeof(big) - 10}};
	n = readv(fd, iov, 2);
	memcpy(big, a, sizeof(a));
	show("readv", n, errno, NULL, big, sizeof(big));
	rmsg("peek", NULL, 0, MSG_PEEK | MSG_TRUNC);
	struct sockaddr_nl sa;
	socklen_t alen = sizeof(sa);
	memset(&sa, 0xab, sizeof(sa));
	n = recvfrom(fd, big, sizeof(big), 0, (struct sockaddr *)&sa, &alen);
	show("recvfrom", n, errno, NULL, big, sizeof(big));
	printf("  recvfrom_addr: alen=%u family=%u pid=%u groups=%u\n", alen, sa.nl_family, sa.nl_pid,
	       sa.nl_groups);
	rmsg("peek", NULL, 0, MSG_PEEK | MSG_TRUNC);
	n = recv(fd, big, sizeof(big), 0);
	show("recv", n, errno, NULL, big, sizeof(big));
	end();
}

static void step_flags(void)
{
	bad_getlink(11);
	bad_getlink(12);
	bad_getlink(13);
	settle();
	rmsg("peek", NULL, 0, MSG_PEEK | MSG_TRUNC);
	rmsg("cmsg_cloexec", big, sizeof(big), MSG_CMSG_CLOEXEC);
	rmsg("peek_dontwait", NULL, 0, MSG_PEEK | MSG_TRUNC | MSG_DONTWAIT);
	rmsg("dontwait", big, sizeof(big), MSG_DONTWAIT);
	/* MSG_WAITALL on a datagram socket returns one datagram */
	rmsg("peek", NULL, 0, MSG_PEEK | MSG_TRUNC);
	rmsg("waitall", big, sizeof(big), MSG_WAITALL);
	rmsg("empty_peek_dontwait", NULL, 0, MSG_PEEK | MSG_TRUNC | MSG_DONTWAIT);
	rmsg("empty_dontwait", big, sizeof(big), MSG_DONTWAIT);
	end();
}

static void step_nonblock(void)
{
	int fl = fcntl(fd, F_GETFL);
	fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	rmsg("empty_peek", NULL, 0, MSG_PEEK | MSG_TRUNC);
	bad_getlink(14);
	settle();
	rmsg("peek", NULL, 0, MSG_PEEK | MSG_TRUNC);
	rmsg("recvmsg", big, sizeof(big), 0);
	rmsg("empty", big, sizeof(big), 0);
	fcntl(fd, F_SETFL, fl);
	end();
}

/* After a peek the datagram is still queued: every wait call says so, even
 * with a zero timeout. */
static void step_wait_calls(void)
{
	for (int i = 0; i < 6; i++)
		bad_getlink(20 + i);
	settle();
	struct pollfd p = {.fd = fd, .events = POLLIN};
	struct timespec ts0 = {0, 0};
	struct timeval tv0 = {0, 0};
	fd_set r;
	int n;

	rmsg("peek", NULL, 0, MSG_PEEK | MSG_TRUNC);
	n = poll(&p, 1, 0);
	printf("  poll: %d revents_in=%d\n", n, !!(p.revents & POLLIN));
	rmsg("recvmsg", big, sizeof(big), 0);

	rmsg("peek", NULL, 0, MSG_PEEK | MSG_TRUNC);
	p.revents = 0;
	n = ppoll(&p, 1, &ts0, NULL);
	printf("  ppoll: %d revents_in=%d\n", n, !!(p.revents & POLLIN));
	rmsg("recvmsg", big, sizeof(big), 0);

	rmsg("peek", NULL, 0, MSG_PEEK | MSG_TRUNC);
	FD_ZERO(&r);
	FD_SET(fd, &r);
	n = select(fd + 1, &r, NULL, NULL, &tv0);
	printf("  select: %d isset=%d\n", n, FD_ISSET(fd, &r));
	rmsg("recvmsg", big, sizeof(big), 0);

	rmsg("peek", NULL, 0, MSG_PEEK | MSG_TRUNC);
	FD_ZERO(&r);
	FD_SET(fd, &r);
	n = pselect(fd + 1, &r, NULL, NULL, &ts0, NULL);
	printf("  pselect: %d isset=%d\n", n, FD_ISSET(fd, &r));
	rmsg("recvmsg", big, sizeof(big), 0);

	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = {.events = EPOLLIN, .data.u32 = 77}, out[2];
	epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
	rmsg("peek", NULL, 0, MSG_PEEK | MSG_TRUNC);
	n = epoll_wait(ep, out, 2, 0);
	printf("  epoll_wait: %d data=%u in=%d\n", n, n > 0 ? out[0].data.u32 : 0,
	       n > 0 && (out[0].events & EPOLLIN));
	rmsg("recvmsg", big, sizeof(big), 0);

	rmsg("peek", NULL, 0, MSG_PEEK | MSG_TRUNC);
	n = epoll_pwait(ep, out, 2, 0, NULL);
	printf("  epoll_pwait: %d data=%u in=%d\n", n, n > 0 ? out[0].data.u32 : 0,
	       n > 0 && (out[0].events & EPOLLIN));
	rmsg("recvmsg", big, sizeof(big), 0);
	n = epoll_wait(ep, out, 2, 0);
	printf("  epoll_wait_empty: %d\n", n);
	close(ep);
	end();
}

/* Two queued: each peek sees the oldest; recvmmsg after a peek gets both. */
static void step_two_queued(void)
{
	bad_getlink(30);
	bad_getlink(31);
	settle();
	rmsg("peek", NULL, 0, MSG_PEEK | MSG_TRUNC);
	rmsg("recv1", big, sizeof(big), 0);
	rmsg("peek", NULL, 0, MSG_PEEK | MSG_TRUNC);
	rmsg("recv2", big, sizeof(big), 0);
	bad_getlink(32);
	bad_getlink(33);
	settle();
	rmsg("peek", NULL, 0, MSG_PEEK | MSG_TRUNC);
	static unsigned char b1[4096], b2[4096], b3[4096];
	struct iovec iov[3] = {{b1, sizeof(b1)}, {b2, sizeof(b2)}, {b3, sizeof(b3)}};
	struct mmsghdr mm[3];
	memset(mm, 0, sizeof(mm));
	for (int i = 0; i < 3; i++) {
		mm[i].msg_hdr.msg_iov = &iov[i];
		mm[i].msg_hdr.msg_iovlen = 1;
	}
	int n = recvmmsg(fd, mm, 3, MSG_DONTWAIT, NULL);
	printf("  recvmmsg: %d", n);
	for (int i = 0; i < n; i++)
		printf(" len%d=%u seq%d=%u", i, mm[i].msg_len, i,
		       ((struct nlmsghdr *)iov[i].iov_base)->nlmsg_seq);
	printf("\n");
	end();
}

/* A dump read as iproute2 reads it, datagram by datagram. */
static void step_dump(void)
{
	rule_dump(40);
	settle();
	for (int i = 0; i < 4; i++) {
		ssize_t n = rmsg("peek", NULL, 0, MSG_PEEK | MSG_TRUNC);
		if (n <= 0)
			break;
		n = rmsg("recvmsg", big, 32768, 0);
		int msgs = 0, done = 0;
		for (struct nlmsghdr *h = (struct nlmsghdr *)big; NLMSG_OK(h, n); h = NLMSG_NEXT(h, n)) {
			msgs++;
			done |= h->nlmsg_type == NLMSG_DONE;
		}
		printf("  messages=%d done=%d\n", msgs, done);
		if (done)
			break;
	}
	end();
}

/* A peek, then fork: the datagram is read once, here by the parent (the
 * child only looks whether one is there). */
static void step_fork(void)
{
	bad_getlink(50);
	settle();
	rmsg("peek", NULL, 0, MSG_PEEK | MSG_TRUNC);
	pid_t pid = fork();
	if (pid == 0)
		_exit(0);
	waitpid(pid, NULL, 0);
	rmsg("parent_recv", big, sizeof(big), MSG_DONTWAIT);
	end();
}

/* One datagram and nothing behind it: a wait after the peek still sees it,
 * and once it is read nothing is readable. */
static void step_wait_alone(void)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	struct timeval tv0 = {0, 0};
	fd_set r;
	int n;
	bad_getlink(60);
	settle();
	rmsg("peek", NULL, 0, MSG_PEEK | MSG_TRUNC);
	n = poll(&p, 1, 0);
	printf("  poll: %d revents_in=%d\n", n, !!(p.revents & POLLIN));
	rmsg("recvmsg", big, sizeof(big), 0);
	p.revents = 0;
	n = poll(&p, 1, 0);
	printf("  poll_after: %d\n", n);
	bad_getlink(61);
	settle();
	rmsg("peek", NULL, 0, MSG_PEEK | MSG_TRUNC);
	FD_ZERO(&r);
	FD_SET(fd, &r);
	n = select(fd + 1, &r, NULL, NULL, &tv0);
	printf("  select: %d isset=%d\n", n, FD_ISSET(fd, &r));
	rmsg("peek_again", NULL, 0, MSG_PEEK | MSG_TRUNC);
	rmsg("recvmsg", big, sizeof(big), 0);
	FD_ZERO(&r);
	FD_SET(fd, &r);
	tv0.tv_sec = tv0.tv_usec = 0;
	n = select(fd + 1, &r, NULL, NULL, &tv0);
	printf("  select_after: %d\n", n);
	end();
}

static void *nothing(void *arg) { return arg; }

/* The same after the process has had a second thread (the shim then peeks
 * at its socket, as the kernel's socket is peeked). Last: irreversible. */
static void step_threaded(void)
{
	pthread_t t;
	pthread_create(&t, NULL, nothing, NULL);
	pthread_join(t, NULL);
	step_sizing();
	step_wait_alone();
	step_two_queued();
}

struct step {
	const char *name;
	void (*fn)(void);
};

static const struct step steps[] = {
	{"sizing", step_sizing},
	{"peek_notrunc", step_peek_notrunc},
	{"peek_twice", step_peek_twice},
	{"short_read", step_short_read},
	{"short_read_trunc", step_short_read_trunc},
	{"short_read_nopeek", step_short_read_nopeek},
	{"read_calls", step_read_calls},
	{"flags", step_flags},
	{"nonblock", step_nonblock},
	{"wait_calls", step_wait_calls},
	{"two_queued", step_two_queued},
	{"dump", step_dump},
	{"fork", step_fork},
	{"wait_alone", step_wait_alone},
	{"threaded", step_threaded},
};

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		DIE("socket: %s", strerror(errno));
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		DIE("bind: %s", strerror(errno));
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		if (argc > 1 && strcmp(argv[1], steps[i].name))
			continue;
		printf("%s:\n", steps[i].name);
		steps[i].fn();
	}
	return 0;
}
