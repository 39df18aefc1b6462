/*
 * rt.c - round trips through the shim, for hack/spin-ab.sh: N NLMSG_NOOP
 * requests with NLM_F_ACK, each sent and its ACK received (a blocking
 * recv, as iproute2's), on one NETLINK_ROUTE socket of the program's
 * namespace. Prints one line: the wall time per round trip, the process's
 * CPU per round trip (getrusage), its voluntary and involuntary context
 * switches per round trip, and the shim's spin statistics for the socket
 * (getsockopt SOL_NETLINK NLEMU_SPINSTATS: waits that found the reply in
 * the spin, waits that blocked after it, waits that did not spin).
 *
 *   nlemu exec -n NS -- rt [N]
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <linux/netlink.h>

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 10000;
	int fd = socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE);
	if (fd < 0) {
		perror("socket");
		return 1;
	}
	char buf[8192];
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int i = 0; i < n; i++) {
		struct nlmsghdr h = {.nlmsg_len = 16, .nlmsg_type = NLMSG_NOOP,
				     .nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK, .nlmsg_seq = i + 1};
		if (send(fd, &h, sizeof(h), 0) < 0) {
			perror("send");
			return 1;
		}
		ssize_t r = recv(fd, buf, sizeof(buf), 0);
		if (r < (ssize_t)sizeof(h)) {
			perror("recv");
			return 1;
		}
		if (((struct nlmsghdr *)buf)->nlmsg_seq != (uint32_t)(i + 1)) {
			fprintf(stderr, "reply %u to request %d\n", ((struct nlmsghdr *)buf)->nlmsg_seq, i + 1);
			return 1;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	uint32_t st[3] = {0};
	socklen_t l = sizeof(st);
	getsockopt(fd, SOL_NETLINK, 0xFE02, st, &l);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	double wall = ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / 1e3 / n;
	double cpu = (ru.ru_utime.tv_sec * 1e6 + ru.ru_utime.tv_usec + ru.ru_stime.tv_sec * 1e6 +
		      ru.ru_stime.tv_usec) / n;
	printf("wall %.2f us cpu %.2f us vcsw %.3f ivcsw %.3f per round trip; spin hits %u misses %u skips %u\n",
	       wall, cpu, (double)ru.ru_nvcsw / n, (double)ru.ru_nivcsw / n, st[0], st[1], st[2]);
	return 0;
}
