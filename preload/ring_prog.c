// The build constraint below is for the Go tool only: this file is embedded
// by ring_test.go and compiled with the C compiler at test time, never by cgo.
//
//go:build ignore

/*
 * ring_prog.c - a NETLINK_ROUTE client for the shim's shared-memory rings
 * (ring_test.go): each mode prints what every receive returned (value or
 * errno, msg_flags, sender, the first message's type, length, sequence and
 * error), so that a run through the rings and one through the socket
 * (NLEMU_SHM=0) can be compared line by line. Lines starting with "ring "
 * give the shim's NLEMU_RINGSTATS (in ring mode, datagrams sent and
 * received through the rings, ...) and differ between the two on purpose.
 *
 *   ring_prog MODE    (matrix, poll, fork, thread, monitor, dup, nonblock, noclo,
 *                     flood [N])
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
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#define NLEMU_RINGSTATS 0xFE03

static unsigned char big[65536];

#define DIE(...)                                      \
	do {                                          \
		fprintf(stderr, "ring_prog: " __VA_ARGS__); \
		fprintf(stderr, " (errno %d)\n", errno); \
		exit(1);                              \
	} while (0)

static const char *ename(int e)
{
	switch (e) {
	case EAGAIN: return "EAGAIN";
	case EINTR: return "EINTR";
	case ENOBUFS: return "ENOBUFS";
	case EINVAL: return "EINVAL";
	case ENODEV: return "ENODEV";
	case EEXIST: return "EEXIST";
	}
	static char b[32];
	snprintf(b, sizeof(b), "errno%d", e);
	return b;
}

static int nlsock(int extra)
{
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | extra, NETLINK_ROUTE);
	if (fd < 0)
		DIE("socket");
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		DIE("bind");
	return fd;
}

static void ringstats(int fd, const char *when)
{
	uint32_t v[5] = {0};
	socklen_t l = sizeof(v);
	if (getsockopt(fd, SOL_NETLINK, NLEMU_RINGSTATS, v, &l) < 0)
		DIE("getsockopt NLEMU_RINGSTATS");
	printf("ring %s: mode %u sent %u received %u\n", when, v[0], v[1], v[2]);
}

/* getlink sends RTM_GETLINK for a missing ifindex: answered with an
 * NLMSG_ERROR of -ENODEV carrying seq. */
static void getlink(int fd, uint32_t seq)
{
	struct {
		struct nlmsghdr h;
		struct ifinfomsg i;
	} r = {.h = {.nlmsg_len = sizeof(r), .nlmsg_type = RTM_GETLINK,
		     .nlmsg_flags = NLM_F_REQUEST, .nlmsg_seq = seq},
	       .i = {.ifi_family = AF_UNSPEC, .ifi_index = 99999}};
	if (send(fd, &r, sizeof(r), 0) != sizeof(r))
		DIE("send");
}

/* dumprules sends an IPv4 rule dump request. */
static void dumprules(int fd, uint32_t seq)
{
	struct {
		struct nlmsghdr h;
		struct fib_rule_hdr f;
	} r = {.h = {.nlmsg_len = sizeof(r), .nlmsg_type = RTM_GETRULE,
		     .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP, .nlmsg_seq = seq},
	       .f = {.family = AF_INET}};
	if (sendto(fd, &r, sizeof(r), 0, NULL, 0) != sizeof(r))
		DIE("sendto");
}

/* addrule adds an IPv4 rule (priority prio, table) with NLM_F_ACK. */
static void addrule(int fd, uint32_t seq, uint32_t prio, uint32_t table)
{
	struct {
		struct nlmsghdr h;
		struct fib_rule_hdr f;
		struct nlattr a1;
		uint32_t prio;
		struct nlattr a2;
		uint32_t table;
	} r;
	memset(&r, 0, sizeof(r));
	r.h.nlmsg_len = sizeof(r);
	r.h.nlmsg_type = RTM_NEWRULE;
	r.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL;
	r.h.nlmsg_seq = seq;
	r.f.family = AF_INET;
	r.f.action = FR_ACT_TO_TBL;
	r.a1.nla_len = 8;
	r.a1.nla_type = FRA_PRIORITY;
	r.prio = prio;
	r.a2.nla_len = 8;
	r.a2.nla_type = FRA_TABLE;
	r.table = table;
	struct iovec iov[2] = {{&r, 20}, {(char *)&r + 20, sizeof(r) - 20}};
	struct msghdr m = {.msg_iov = iov, .msg_iovlen = 2};
	if (sendmsg(fd, &m, 0) != sizeof(r))
		DIE("sendmsg");
}

/* show prints one receive's outcome: n, errno, msg_flags, the sender's
 * groups, and the first message of buf. */
static void show(const char *what, ssize_t n, int err, int mflags, const struct sockaddr_nl *sa,
		 const unsigned char *buf, size_t cap)
{
	if (!what)
		return;
	printf("  %s: ", what);
	if (n < 0) {
		printf("-1 %s\n", ename(err));
		return;
	}
	printf("%zd", n);
	if (mflags >= 0)
		printf(" trunc=%d", !!(mflags & MSG_TRUNC));
	if (sa)
		printf(" from=%u/%u/%#x", sa->nl_family, sa->nl_pid, sa->nl_groups);
	size_t got = (size_t)n < cap ? (size_t)n : cap;
	if (got >= sizeof(struct nlmsghdr)) {
		const struct nlmsghdr *h = (const struct nlmsghdr *)buf;
		printf(" type=%u len=%u seq=%u", h->nlmsg_type, h->nlmsg_len, h->nlmsg_seq);
		if (h->nlmsg_type == NLMSG_ERROR && got >= sizeof(*h) + 4) {
			int e;
			memcpy(&e, buf + sizeof(*h), 4);
			printf(" error=%d", e);
		}
	}
	printf("\n");
}

static ssize_t rmsg(int fd, const char *what, size_t cap, int flags)
{
	struct sockaddr_nl sa;
	memset(&sa, 0xff, sizeof(sa));
	struct iovec iov = {big, cap};
	struct msghdr m = {.msg_name = &sa, .msg_namelen = sizeof(sa), .msg_iov = &iov, .msg_iovlen = 1};
	memset(big, 0, cap < sizeof(big) ? cap : sizeof(big));
	ssize_t n = recvmsg(fd, &m, flags);
	show(what, n, errno, m.msg_flags, n >= 0 ? &sa : NULL, big, cap);
	return n;
}

/* drain receives until NLMSG_DONE, counting messages and datagrams. */
static void drain(int fd, const char *what)
{
	int msgs = 0, dgrams = 0, done = 0;
	while (!done) {
		ssize_t n = recv(fd, big, sizeof(big), 0);
		if (n <= 0)
			DIE("recv dump");
		dgrams++;
		size_t left = (size_t)n;
		for (struct nlmsghdr *h = (struct nlmsghdr *)big; NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
			if (h->nlmsg_type == NLMSG_DONE || h->nlmsg_type == NLMSG_ERROR) {
				done = 1;
				break;
			}
			msgs++;
		}
	}
	printf("  %s: %d messages\n", what, msgs);
}

static void matrix(void)
{
	int fd = nlsock(0);
	int one = 1;
	setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	printf("iproute2 peek then read\n");
	getlink(fd, 1);
	rmsg(fd, "peek_trunc_0", 0, MSG_PEEK | MSG_TRUNC);
	rmsg(fd, "read", sizeof(big), 0);
	printf("peek short, trunc short, read short\n");
	getlink(fd, 2);
	rmsg(fd, "peek_10", 10, MSG_PEEK);
	rmsg(fd, "peek_trunc_10", 10, MSG_PEEK | MSG_TRUNC);
	rmsg(fd, "trunc_10", 10, MSG_TRUNC);
	rmsg(fd, "dontwait_empty", sizeof(big), MSG_DONTWAIT);
	getlink(fd, 3);
	rmsg(fd, "short_8", 8, 0);
	rmsg(fd, "dontwait_empty", sizeof(big), MSG_DONTWAIT);
	printf("read, readv, recvfrom, recv\n");
	getlink(fd, 4);
	getlink(fd, 5);
	getlink(fd, 6);
	getlink(fd, 7);
	ssize_t n = read(fd, big, sizeof(big));
	show("read", n, errno, -1, NULL, big, sizeof(big));
	unsigned char a[6], b[200];
	struct iovec iv[2] = {{a, sizeof(a)}, {b, sizeof(b)}};
	n = readv(fd, iv, 2);
	memcpy(big, a, sizeof(a));
	memcpy(big + sizeof(a), b, sizeof(b));
	show("readv", n, errno, -1, NULL, big, sizeof(big));
	struct sockaddr_nl sa;
	socklen_t sl = sizeof(sa);
	n = recvfrom(fd, big, sizeof(big), 0, (struct sockaddr *)&sa, &sl);
	show("recvfrom", n, errno, -1, &sa, big, sizeof(big));
	char small[40];
	n = recv(fd, small, sizeof(small), MSG_TRUNC); /* __recv_chk when fortified */
	show("recv_trunc_40", n, errno, -1, NULL, (unsigned char *)small, sizeof(small));
	printf("recvmmsg\n");
	getlink(fd, 8);
	getlink(fd, 9);
	getlink(fd, 10);
	usleep(20000); /* all three answered */
	struct mmsghdr mm[4];
	unsigned char bufs[4][256];
	struct iovec mi[4];
	memset(mm, 0, sizeof(mm));
	for (int i = 0; i < 4; i++) {
		mi[i].iov_base = bufs[i];
		mi[i].iov_len = sizeof(bufs[i]);
		mm[i].msg_hdr.msg_iov = &mi[i];
		mm[i].msg_hdr.msg_iovlen = 1;
	}
	int k = recvmmsg(fd, mm, 4, MSG_WAITFORONE, NULL);
	printf("  recvmmsg: %d\n", k);
	for (int i = 0; i < k; i++)
		show("  entry", mm[i].msg_len, 0, mm[i].msg_hdr.msg_flags, NULL, bufs[i], sizeof(bufs[i]));
	printf("dump\n");
	dumprules(fd, 11);
	drain(fd, "rules");
	printf("rule changes\n");
	for (uint32_t i = 0; i < 40; i++) {
		addrule(fd, 100 + i, 1000 + i, 100 + i);
		rmsg(fd, "ack", sizeof(big), 0);
	}
	addrule(fd, 200, 1000, 100);
	rmsg(fd, "ack_exists", sizeof(big), 0);
	dumprules(fd, 12);
	drain(fd, "rules");
	printf("nonblocking (fcntl)\n");
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	rmsg(fd, "empty", sizeof(big), 0);
	getlink(fd, 13);
	ssize_t r;
	while ((r = recv(fd, big, sizeof(big), 0)) < 0 && errno == EAGAIN)
		;
	show("reply", r, errno, -1, NULL, big, sizeof(big));
	ringstats(fd, "end");
	close(fd);
}

/* ringed opens a socket and makes one round trip, so that it is in ring
 * mode when the rings are offered. */
static int ringed(void)
{
	int fd = nlsock(0);
	getlink(fd, 1);
	rmsg(fd, "first", sizeof(big), 0);
	ringstats(fd, "before");
	return fd;
}

static void pollmode(void)
{
	int fd = ringed();
	getlink(fd, 2);
	struct pollfd p = {.fd = fd, .events = POLLIN};
	int n = poll(&p, 1, 5000);
	printf("  poll: %d in=%d\n", n, !!(p.revents & POLLIN));
	rmsg(fd, "read", sizeof(big), 0);
	n = poll(&p, 1, 0);
	printf("  poll_empty: %d\n", n);
	getlink(fd, 3);
	getlink(fd, 4);
	/* both answered before the peek: a poll() after a read-ahead sends
	 * the wake-up ack when the socket looks empty, and if reply 4 came
	 * after that look, the ack stays queued behind it (the socket path's
	 * own race, ra_flush: readable once with nothing to read) */
	usleep(20000);
	rmsg(fd, "peek", 16, MSG_PEEK);
	n = poll(&p, 1, 0);
	printf("  poll_peeked: %d in=%d\n", n, !!(p.revents & POLLIN));
	rmsg(fd, "read", sizeof(big), 0);
	rmsg(fd, "read", sizeof(big), 0);
	n = poll(&p, 1, 0);
	printf("  poll_drained: %d\n", n);
	if (n > 0) {
		/* what made it readable (for a failing test) */
		ssize_t r = recv(fd, big, sizeof(big), MSG_DONTWAIT | MSG_PEEK | MSG_TRUNC);
		show("readable_with", r, errno, -1, NULL, big, sizeof(big));
	}
	ringstats(fd, "after");
}

static void *thread_fn(void *arg)
{
	int fd = *(int *)arg;
	getlink(fd, 20);
	rmsg(fd, "thread", sizeof(big), 0);
	return NULL;
}

static void threadmode(void)
{
	int fd = ringed();
	getlink(fd, 2); /* its answer is in the ring when the thread starts */
	usleep(20000);
	pthread_t t;
	if (pthread_create(&t, NULL, thread_fn, &fd) != 0)
		DIE("pthread_create");
	pthread_join(t, NULL);
	rmsg(fd, "main", sizeof(big), 0);
	getlink(fd, 3);
	rmsg(fd, "main", sizeof(big), 0);
	ringstats(fd, "after");
}

/* fork: the reply pending at fork() goes to the parent (the kernel gives
 * it to whoever reads first: the parent reads first here); then the child
 * makes its own round trip on the shared socket, then the parent. */
static void forkmode(void)
{
	int fd = ringed();
	getlink(fd, 2);
	usleep(20000);
	int p[2];
	if (pipe(p) < 0)
		DIE("pipe");
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		DIE("fork");
	if (pid == 0) {
		char c;
		if (read(p[0], &c, 1) != 1)
			_exit(2);
		getlink(fd, 30);
		rmsg(fd, "child", sizeof(big), 0);
		fflush(stdout);
		_exit(0);
	}
	rmsg(fd, "parent", sizeof(big), 0);
	fflush(stdout);
	if (write(p[1], "x", 1) != 1)
		DIE("write");
	int st;
	waitpid(pid, &st, 0);
	printf("  child exit %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	getlink(fd, 3);
	rmsg(fd, "parent", sizeof(big), 0);
	ringstats(fd, "after");
}

static void dupmode(void)
{
	int fd = ringed();
	getlink(fd, 2);
	usleep(20000);
	int d = dup(fd);
	rmsg(d, "dup", sizeof(big), 0);
	getlink(fd, 3);
	rmsg(fd, "orig", sizeof(big), 0);
	ringstats(fd, "after dup");
	close(d);
	int fd2 = ringed();
	getlink(fd2, 4);
	int avail = -1;
	usleep(20000);
	ioctl(fd2, FIONREAD, &avail);
	printf("  fionread>0: %d\n", avail > 0);
	rmsg(fd2, "read", sizeof(big), 0);
	ringstats(fd2, "after FIONREAD");
	int fd3 = ringed();
	fcntl(fd3, F_SETFD, 0);
	getlink(fd3, 5);
	rmsg(fd3, "read", sizeof(big), 0);
	ringstats(fd3, "after F_SETFD 0");
}

/* monitor: one socket joins RTNLGRP_IPV4_RULE (a control call: it leaves
 * ring mode), another adds rules through the rings; every notification
 * arrives, in order, with its group. */
static void monitor(void)
{
	int mon = nlsock(0);
	getlink(mon, 1);
	rmsg(mon, "first", sizeof(big), 0);
	int g = RTNLGRP_IPV4_RULE;
	if (setsockopt(mon, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &g, sizeof(g)) < 0)
		DIE("NETLINK_ADD_MEMBERSHIP");
	ringstats(mon, "monitor");
	int fd = nlsock(0);
	for (uint32_t i = 0; i < 50; i++) {
		addrule(fd, 100 + i, 2000 + i, 200 + i);
		rmsg(fd, NULL, sizeof(big), 0);
	}
	ringstats(fd, "changer");
	for (int i = 0; i < 50; i++) {
		struct sockaddr_nl sa;
		struct iovec iov = {big, sizeof(big)};
		struct msghdr m = {.msg_name = &sa, .msg_namelen = sizeof(sa), .msg_iov = &iov, .msg_iovlen = 1};
		ssize_t n = recvmsg(mon, &m, 0);
		if (n < (ssize_t)sizeof(struct nlmsghdr))
			DIE("recvmsg monitor");
		const struct nlmsghdr *h = (const struct nlmsghdr *)big;
		uint32_t prio = 0;
		size_t off = NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(struct fib_rule_hdr));
		while (off + 4 <= h->nlmsg_len) {
			const struct nlattr *a = (const struct nlattr *)(big + off);
			if (a->nla_len < 4)
				break;
			if (a->nla_type == FRA_PRIORITY)
				memcpy(&prio, big + off + 4, 4);
			off += NLA_ALIGN(a->nla_len);
		}
		printf("  notification type=%u seq=%u groups=%#x prio=%u\n", h->nlmsg_type, h->nlmsg_seq,
		       sa.nl_groups, prio);
	}
	ssize_t n = recv(mon, big, sizeof(big), MSG_DONTWAIT);
	show("more", n, errno, -1, NULL, big, sizeof(big));
}

/* nonblock: a SOCK_NONBLOCK socket: EAGAIN while the reply is not there,
 * the reply once it is (polled by retrying, no wait call). */
static void nonblock(void)
{
	int fd = nlsock(SOCK_NONBLOCK);
	for (uint32_t seq = 1; seq <= 200; seq++) {
		getlink(fd, seq);
		int again = 0;
		ssize_t n;
		while ((n = recv(fd, big, sizeof(big), 0)) < 0 && errno == EAGAIN)
			again = 1;
		(void)again;
		if (seq == 1 || seq == 200)
			show("reply", n, errno, -1, NULL, big, sizeof(big));
		else if (n < 0 || ((struct nlmsghdr *)big)->nlmsg_seq != seq)
			DIE("reply %u", seq);
	}
	ssize_t n = recv(fd, big, sizeof(big), 0);
	show("empty", n, errno, -1, NULL, big, sizeof(big));
	ringstats(fd, "end");
}

/* flood: N requests sent before any reply is read (the request ring
 * fills and the shim waits for room; the reply ring fills and the server
 * holds the rest), then every reply, in order. */
static void flood(int nreq)
{
	int fd = nlsock(0);
	int sz = 4 << 20;
	setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz));
	for (int i = 1; i <= nreq; i++)
		getlink(fd, (uint32_t)i);
	int bad = 0, errs = 0;
	for (int i = 1; i <= nreq; i++) {
		ssize_t n = recv(fd, big, sizeof(big), 0);
		if (n < 0) {
			printf("  recv %d: -1 %s\n", i, ename(errno));
			errs++;
			if (errs > 3)
				break;
			continue;
		}
		if (((struct nlmsghdr *)big)->nlmsg_seq != (uint32_t)i && !bad++)
			printf("  reply %d: seq %u\n", i, ((struct nlmsghdr *)big)->nlmsg_seq);
	}
	printf("  %d requests: %d out of order\n", nreq, bad);
	ringstats(fd, "flood");
}

/* noclo: a socket without SOCK_CLOEXEC (an execve would keep it): never
 * in ring mode. */
static void noclo(void)
{
	int fd = socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE);
	if (fd < 0)
		DIE("socket");
	getlink(fd, 1);
	rmsg(fd, "reply", sizeof(big), 0);
	ringstats(fd, "noclo");
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	const char *m = argc > 1 ? argv[1] : "";
	if (!strcmp(m, "matrix"))
		matrix();
	else if (!strcmp(m, "poll"))
		pollmode();
	else if (!strcmp(m, "thread"))
		threadmode();
	else if (!strcmp(m, "fork"))
		forkmode();
	else if (!strcmp(m, "dup"))
		dupmode();
	else if (!strcmp(m, "monitor"))
		monitor();
	else if (!strcmp(m, "nonblock"))
		nonblock();
	else if (!strcmp(m, "noclo"))
		noclo();
	else if (!strcmp(m, "flood"))
		flood(argc > 2 ? atoi(argv[2]) : 2000);
	else
		DIE("unknown mode %s", m);
	return 0;
}
