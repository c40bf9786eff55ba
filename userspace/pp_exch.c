// SPDX-License-Identifier: GPL-2.0
/*
 * krdmactl pingpong: the TCP exchange of QP addresses, byte for byte that
 * of rdma-core's ibv_{rc,uc,ud}_pingpong (libibverbs/examples): the client
 * sends its 52-byte address message, the server answers with its own, the
 * client sends "done".  Unlike the originals every wait is bounded.
 */
#define _GNU_SOURCE	/* accept4() */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "krdmactl.h"
#include "pingpong.h"

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait until @events on @fd, at most until @deadline (now_ms() time). */
static int wait_fd(int fd, short events, int64_t deadline)
{
	struct pollfd pfd = { .fd = fd, .events = events };
	int64_t left;
	int n;

	for (;;) {
		left = deadline - now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		n = poll(&pfd, 1, left > 1000000 ? 1000000 : (int)left);
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -errno;
	}
}

static int set_nonblock(int fd)
{
	int flags = fcntl(fd, F_GETFL);

	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

static int resolve(const char *host, uint32_t port, bool passive,
		   struct addrinfo **res)
{
	struct addrinfo hints = {
		.ai_flags = passive ? AI_PASSIVE : 0,
		.ai_family = AF_UNSPEC,
		.ai_socktype = SOCK_STREAM,
	};
	char service[12];
	int ret;

	snprintf(service, sizeof(service), "%u", port);
	ret = getaddrinfo(host, service, &hints, res);
	if (ret) {
		err_msg("pingpong: %s port %u: %s", host ? host : "any", port,
			ret == EAI_SYSTEM ? strerror(errno) : gai_strerror(ret));
		return -EHOSTUNREACH;
	}
	return 0;
}

/* One address: a non-blocking connect, bounded by @deadline. */
static int connect_one(const struct addrinfo *ai, int64_t deadline)
{
	socklen_t len = sizeof(int);
	int sock, ret, soerr = 0;

	sock = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
		      ai->ai_protocol);
	if (sock < 0)
		return -errno;
	ret = set_nonblock(sock);
	if (!ret && connect(sock, ai->ai_addr, ai->ai_addrlen) &&
	    errno != EINPROGRESS)
		ret = -errno;
	else if (!ret)
		ret = wait_fd(sock, POLLOUT, deadline);
	if (!ret && getsockopt(sock, SOL_SOCKET, SO_ERROR, &soerr, &len))
		ret = -errno;
	if (!ret && soerr)
		ret = -soerr;
	if (ret) {
		close(sock);
		return ret;
	}
	return sock;
}

int pp_tcp_connect(const char *host, uint32_t port, int timeout_ms)
{
	int64_t deadline = now_ms() + timeout_ms;
	struct addrinfo *res, *ai;
	int sock = -ENOENT, ret;

	ret = resolve(host, port, false, &res);
	if (ret)
		return ret;
	for (ai = res; ai; ai = ai->ai_next) {
		sock = connect_one(ai, deadline);
		if (sock >= 0 || sock == -ETIMEDOUT)
			break;
	}
	freeaddrinfo(res);
	if (sock == -ETIMEDOUT)
		err_msg("pingpong: cannot connect to %s port %u: no answer in %d s",
			host, port, timeout_ms / 1000);
	else if (sock < 0)
		err_msg("pingpong: cannot connect to %s port %u: %s", host, port,
			strerror(-sock));
	return sock;
}

/* Like the originals: the first passive address that binds, SO_REUSEADDR. */
static int listen_any(uint32_t port)
{
	struct addrinfo *res, *ai;
	int sock = -1, one = 1, err = EADDRNOTAVAIL, ret;

	ret = resolve(NULL, port, true, &res);
	if (ret)
		return ret;
	for (ai = res; ai; ai = ai->ai_next) {
		sock = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
			      ai->ai_protocol);
		if (sock < 0) {
			err = errno;
			continue;
		}
		setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (!bind(sock, ai->ai_addr, ai->ai_addrlen) &&
		    !listen(sock, 1))
			break;
		err = errno;
		close(sock);
		sock = -1;
	}
	freeaddrinfo(res);
	if (sock < 0) {
		err_msg("pingpong: cannot listen on TCP port %u: %s", port,
			strerror(err));
		return -err;
	}
	return sock;
}

int pp_tcp_accept(uint32_t port, int timeout_ms)
{
	int lsock, sock, ret;

	lsock = listen_any(port);
	if (lsock < 0)
		return lsock;
	ret = set_nonblock(lsock);
	if (!ret)
		ret = wait_fd(lsock, POLLIN, now_ms() + timeout_ms);
	if (!ret) {
		sock = accept4(lsock, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (sock < 0)
			ret = -errno;
	}
	close(lsock);
	if (ret == -ETIMEDOUT) {
		err_msg("pingpong: no client connected to TCP port %u in %d s",
			port, timeout_ms / 1000);
		return ret;
	}
	if (ret) {
		err_msg("pingpong: accept on TCP port %u: %s", port,
			strerror(-ret));
		return ret;
	}
	return sock;
}

static int write_all(int sock, const void *data, size_t len, const char *what)
{
	int64_t deadline = now_ms() + 10000;
	const char *p = data;
	ssize_t n;
	int ret;

	while (len) {
		n = send(sock, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EAGAIN) {
			ret = wait_fd(sock, POLLOUT, deadline);
			if (ret)
				goto fail;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = -errno;
			goto fail;
		}
		p += n;
		len -= n;
	}
	return 0;
fail:
	err_msg("pingpong: cannot send the %s to the peer: %s", what,
		strerror(-ret));
	return ret;
}

/*
 * Read up to @len bytes until @len arrived or the peer closed; returns the
 * count, or -errno (-ETIMEDOUT past @deadline).
 */
static ssize_t read_upto(int sock, void *buf, size_t len, int64_t deadline)
{
	size_t got = 0;
	ssize_t n;
	int ret;

	while (got < len) {
		n = read(sock, (char *)buf + got, len - got);
		if (n == 0)
			break;
		if (n > 0) {
			got += n;
			continue;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return -errno;
		ret = wait_fd(sock, POLLIN, deadline);
		if (ret)
			return ret;
	}
	return got;
}

int pp_send_dest(int sock, const struct pp_dest *dest)
{
	char msg[PP_MSG_SIZE];
	int i, n;

	n = snprintf(msg, sizeof(msg), "%04x:%06x:%06x:", dest->lid & 0xffff,
		     dest->qpn & 0xffffff, dest->psn & 0xffffff);
	for (i = 0; i < 16; i++)
		n += snprintf(msg + n, sizeof(msg) - n, "%02x", dest->gid[i]);
	return write_all(sock, msg, sizeof(msg), "local address");
}

static int hex_nibble(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* The GID as gid_to_wire_gid() writes it: the 16 bytes in order, in hex. */
static int parse_wire_gid(const char *s, uint8_t gid[16])
{
	int i, hi, lo;

	for (i = 0; i < 16; i++) {
		hi = hex_nibble(s[2 * i]);
		lo = hex_nibble(s[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -EPROTO;
		gid[i] = hi << 4 | lo;
	}
	return s[32] ? -EPROTO : 0;
}

static int parse_dest(const char *msg, struct pp_dest *dest)
{
	unsigned int lid, qpn, psn;
	int end = 0;

	if (sscanf(msg, "%4x:%6x:%6x:%n", &lid, &qpn, &psn, &end) != 3 ||
	    end != sizeof("0000:000000:000000:") - 1)
		return -EPROTO;
	dest->lid = lid;
	dest->qpn = qpn;
	dest->psn = psn;
	return parse_wire_gid(msg + end, dest->gid);
}

int pp_recv_dest(int sock, int timeout_ms, struct pp_dest *dest)
{
	char msg[PP_MSG_SIZE];
	ssize_t n;

	n = read_upto(sock, msg, sizeof(msg), now_ms() + timeout_ms);
	if (n == -ETIMEDOUT) {
		err_msg("pingpong: the peer sent no address in %d s",
			timeout_ms / 1000);
		return n;
	}
	if (n < 0) {
		err_msg("pingpong: cannot read the peer's address: %s",
			strerror(-n));
		return n;
	}
	if ((size_t)n != sizeof(msg) || msg[sizeof(msg) - 1] ||
	    parse_dest(msg, dest)) {
		err_msg("pingpong: the peer's address message is not what "
			"ibv_*_pingpong sends (%zd of %zu bytes)", n,
			sizeof(msg));
		return -EPROTO;
	}
	return 0;
}

int pp_send_done(int sock)
{
	return write_all(sock, PP_DONE, sizeof(PP_DONE), "\"done\" message");
}

int pp_recv_done(int sock, int timeout_ms)
{
	char msg[PP_MSG_SIZE] = "";
	ssize_t n;

	n = read_upto(sock, msg, sizeof(PP_DONE), now_ms() + timeout_ms);
	if (n < 0) {
		err_msg("pingpong: no \"done\" from the peer: %s",
			n == -ETIMEDOUT ? "timed out" : strerror(-n));
		return n;
	}
	if ((size_t)n != sizeof(PP_DONE) || memcmp(msg, PP_DONE, n)) {
		err_msg("pingpong: the peer closed the exchange without "
			"\"done\"");
		return -EPROTO;
	}
	return 0;
}
