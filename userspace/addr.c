// SPDX-License-Identifier: GPL-2.0
/*
 * krdmactl: HOST[:PORT] to a struct krdma_sockaddr, and back for output.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "addr.h"
#include "krdmactl.h"

int addr_parse(const char *cmd, const char *what, const char *arg,
	       uint32_t default_port, struct krdma_sockaddr *sa)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM };
	struct addrinfo *res, *ai;
	char host[256], *colon, *end;
	unsigned long port = default_port;
	int ret;

	const char *portstr = NULL, *close;

	if (!*arg)
		goto bad;
	if (arg[0] == '[') {
		close = strchr(arg, ']');
		if (!close || (close[1] && close[1] != ':'))
			goto bad;
		if ((size_t)(close - arg - 1) >= sizeof(host))
			goto bad;
		memcpy(host, arg + 1, close - arg - 1);
		host[close - arg - 1] = 0;
		if (close[1] == ':')
			portstr = close + 2;
	} else {
		if (strlen(arg) >= sizeof(host))
			goto bad;
		strcpy(host, arg);
		colon = strchr(host, ':');
		if (colon && colon == strrchr(host, ':')) {
			*colon = 0;	/* else a bare IPv6 address */
			portstr = arg + (colon - host) + 1;
		}
	}
	if (portstr) {
		errno = 0;
		port = strtoul(portstr, &end, 10);
		if (errno || end == portstr || *end || port < 1 ||
		    port > 65535) {
			err_msg("%s: %s: bad port in \"%s\"", cmd, what, arg);
			return EXIT_USAGE;
		}
	}
	if (!*host)
		goto bad;
	ret = getaddrinfo(host, NULL, &hints, &res);
	if (ret) {
		err_msg("%s: %s: %s: %s", cmd, what, host, gai_strerror(ret));
		return EXIT_USAGE;
	}
	memset(sa, 0, sizeof(*sa));
	for (ai = res; ai; ai = ai->ai_next) {
		if (ai->ai_family == AF_INET) {
			struct sockaddr_in *sin = (void *)ai->ai_addr;

			sa->family = AF_INET;
			memcpy(sa->addr, &sin->sin_addr, 4);
			break;
		}
		if (ai->ai_family == AF_INET6) {
			struct sockaddr_in6 *sin6 = (void *)ai->ai_addr;

			sa->family = AF_INET6;
			sa->scope_id = sin6->sin6_scope_id;
			memcpy(sa->addr, &sin6->sin6_addr, 16);
			break;
		}
	}
	freeaddrinfo(res);
	if (!sa->family)
		goto bad;
	sa->port = port;
	return 0;
bad:
	err_msg("%s: %s: \"%s\" is not HOST[:PORT]", cmd, what, arg);
	return EXIT_USAGE;
}

void addr_format(const struct krdma_sockaddr *sa, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN] = "?";

	if (sa->family == AF_INET) {
		inet_ntop(AF_INET, sa->addr, a, sizeof(a));
		snprintf(buf, len, "%s:%u", a, sa->port);
	} else if (sa->family == AF_INET6) {
		inet_ntop(AF_INET6, sa->addr, a, sizeof(a));
		snprintf(buf, len, "[%s]:%u", a, sa->port);
	} else {
		snprintf(buf, len, "?");
	}
}
