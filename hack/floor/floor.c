/*
 * floor: the AF_UNIX SOCK_SEQPACKET request/response floor on this machine.
 *
 * A client sends a datagram the size of an `ip rule add` request (40 bytes)
 * and blocks in recv for a 36-byte answer (an NLMSG_ERROR ack with
 * NETLINK_CAP_ACK); the server blocks in recv, answers with one send.
 * Two system calls and one wake-up on each side per round trip: nothing a
 * netlink emulator over this transport can do with less.
 *
 *   floor [-n ROUNDS] [-p PAIRS...]
 *
 * "pairs 1 (one CPU)" pins both ends of one pair to CPU 0; "pairs P (all
 * CPUs)" runs P client/server pairs (processes, as the `ip` processes and
 * the server's threads are) on every CPU and reports the aggregate: wall
 * time divided by all round trips, the figure comparable with a parallel
 * load's wall time per rule.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void pin(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

/* serve answers every request until the peer closes. */
static void serve(int fd)
{
	char buf[4096], ack[36];
	memset(ack, 0, sizeof(ack));
	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		if (n <= 0)
			_exit(0);
		if (send(fd, ack, sizeof(ack), 0) != (ssize_t)sizeof(ack))
			_exit(1);
	}
}

/* client makes rounds round trips. */
static void client(int fd, long rounds)
{
	char req[40], buf[4096];
	memset(req, 0, sizeof(req));
	for (long i = 0; i < rounds; i++) {
		if (send(fd, req, sizeof(req), 0) != (ssize_t)sizeof(req))
			die("send");
		if (recv(fd, buf, sizeof(buf), 0) <= 0)
			die("recv");
	}
}

/* run runs pairs pairs of rounds round trips each, pinned to one CPU when
 * one is set, and returns microseconds per round trip (aggregate). */
static double run(int pairs, long rounds, int onecpu)
{
	int go[2];
	if (pipe(go) < 0)
		die("pipe");
	pid_t *kids = calloc(2 * pairs, sizeof(pid_t));
	for (int p = 0; p < pairs; p++) {
		int sv[2];
		if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) < 0)
			die("socketpair");
		pid_t s = fork();
		if (s == 0) {
			if (onecpu)
				pin(0);
			close(sv[1]);
			close(go[1]);
			serve(sv[0]);
		}
		pid_t c = fork();
		if (c == 0) {
			if (onecpu)
				pin(0);
			close(sv[0]);
			close(go[1]);
			char x;
			if (read(go[0], &x, 1) < 0)
				_exit(1);
			client(sv[1], rounds);
			_exit(0);
		}
		close(sv[0]);
		close(sv[1]);
		kids[2 * p] = s;
		kids[2 * p + 1] = c;
	}
	close(go[0]);
	double t0 = now();
	close(go[1]); /* every client starts at once (EOF on the pipe) */
	for (int i = 0; i < 2 * pairs; i++) {
		int st;
		if (waitpid(kids[i], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "floor: a child failed\n");
			exit(1);
		}
	}
	double t = now() - t0;
	free(kids);
	return t * 1e6 / ((double)pairs * rounds);
}

int main(int argc, char **argv)
{
	long rounds = 200000;
	int pairs[16] = {4, 16, 64}, np = 3, custom = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-n") && i + 1 < argc) {
			rounds = atol(argv[++i]);
		} else if (!strcmp(argv[i], "-p") && i + 1 < argc) {
			if (!custom)
				np = 0;
			custom = 1;
			if (np < 16)
				pairs[np++] = atoi(argv[++i]);
		} else {
			fprintf(stderr, "usage: floor [-n ROUNDS] [-p PAIRS]...\n");
			return 2;
		}
	}
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	printf("pairs 1 (one CPU): %.2f us per round trip\n", run(1, rounds, 1));
	for (int i = 0; i < np; i++) {
		long r = rounds / pairs[i] > 1000 ? rounds / pairs[i] * 2 : 2000;
		printf("pairs %d (%ld CPUs): %.2f us per round trip (aggregate)\n", pairs[i], ncpu, run(pairs[i], r, 0));
	}
	return 0;
}
