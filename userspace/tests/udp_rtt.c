// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * udp_rtt: the round trip of the link itself, without RDMA, measured the
 * way ib_write_lat waits (both sides spin on a non-blocking socket, so no
 * wakeup is in the path): the floor under any transport's latency on that
 * link (userspace/tests/pair-bench).
 *
 *   udp_rtt server PORT           echo 8-byte datagrams until one says 'q'
 *   udp_rtt client HOST PORT N    N round trips; prints
 *                                 "udp_rtt N MIN MEDIAN AVG P99" (µs)
 *
 * The client first waits up to 10 s for the server's first answer; a round
 * trip whose answer does not come within 2 s is lost, and the client fails
 * when more than 1 % are.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

/* one datagram into @buf, spinning; -1 after @limit_us without one */
static ssize_t spin_recv(int s, char *buf, size_t len,
			 struct sockaddr_storage *from, socklen_t *fromlen,
			 double limit_us)
{
	double end = now_us() + limit_us;
	ssize_t n;

	for (;;) {
		n = recvfrom(s, buf, len, MSG_DONTWAIT, (struct sockaddr *)from,
			     fromlen);
		if (n >= 0)
			return n;
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return -1;
		if (now_us() > end)
			return -1;
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* bound to @port (@passive), or connected to @host's @port */
static int udp_socket(const char *host, const char *port, bool passive)
{
	struct addrinfo hints = {
		.ai_family = AF_UNSPEC,
		.ai_socktype = SOCK_DGRAM,
		.ai_flags = passive ? AI_PASSIVE : 0,
	}, *ai;
	int s, err;

	err = getaddrinfo(host, port, &hints, &ai);
	if (err) {
		fprintf(stderr, "udp_rtt: %s: %s\n", host ? host : port,
			gai_strerror(err));
		return -1;
	}
	s = socket(ai->ai_family, SOCK_DGRAM, 0);
	if (s < 0 || (passive ? bind(s, ai->ai_addr, ai->ai_addrlen) :
			       connect(s, ai->ai_addr, ai->ai_addrlen))) {
		perror("udp_rtt: socket");
		if (s >= 0)
			close(s);
		s = -1;
	}
	freeaddrinfo(ai);
	return s;
}

static int server(const char *port)
{
	struct sockaddr_storage from;
	socklen_t fromlen;
	char buf[64];
	ssize_t n;
	int s;

	s = udp_socket(NULL, port, true);
	if (s < 0)
		return 1;
	for (;;) {
		fromlen = sizeof(from);
		n = spin_recv(s, buf, sizeof(buf), &from, &fromlen, 60e6);
		if (n < 0) {
			fprintf(stderr, "udp_rtt: no client for 60 s\n");
			return 1;
		}
		if (sendto(s, buf, n, 0, (struct sockaddr *)&from, fromlen) != n)
			perror("udp_rtt: sendto");
		if (n > 0 && buf[0] == 'q')
			return 0;
	}
}

static int client(const char *host, const char *port, int iters)
{
	char buf[64] = "rtt", quit[8] = "q";
	double *rtt, sum = 0, t0;
	int s, i, got = 0;

	if (iters < 1 || iters > 1000000) {
		fprintf(stderr, "udp_rtt: N out of 1..1000000\n");
		return 2;
	}
	rtt = calloc(iters, sizeof(*rtt));
	s = udp_socket(host, port, false);
	if (!rtt || s < 0)
		return 1;
	/* the server may not listen yet: up to 10 s for its first answer */
	for (i = 0; i < 100; i++) {
		if (send(s, buf, 8, 0) == 8 &&
		    spin_recv(s, buf, sizeof(buf), NULL, NULL, 1e5) == 8)
			break;
		usleep(100000);	/* refused (no port yet) returns at once */
	}
	for (i = 0; i < iters; i++) {
		t0 = now_us();
		if (send(s, buf, 8, 0) != 8 ||
		    spin_recv(s, buf, sizeof(buf), NULL, NULL, 2e6) != 8)
			continue;
		rtt[got] = now_us() - t0;
		sum += rtt[got++];
	}
	for (i = 0; i < 3; i++)	/* one may be lost */
		send(s, quit, sizeof(quit), 0);
	if (!got || (iters - got) * 100 > iters) {
		fprintf(stderr, "udp_rtt: %d of %d round trips lost\n",
			iters - got, iters);
		return 1;
	}
	qsort(rtt, got, sizeof(*rtt), cmp_double);
	printf("udp_rtt %d %.2f %.2f %.2f %.2f\n", got, rtt[0], rtt[got / 2],
	       sum / got, rtt[(size_t)got * 99 / 100]);
	free(rtt);
	close(s);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "server"))
		return server(argv[2]);
	if (argc == 5 && !strcmp(argv[1], "client"))
		return client(argv[2], argv[3], atoi(argv[4]));
	fprintf(stderr, "usage: udp_rtt server PORT | client HOST PORT N\n");
	return 2;
}
