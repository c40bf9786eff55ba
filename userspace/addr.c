// SPDX-License-Identifier: GPL-2.0
/*
 * krdmactl: HOST[:PORT] to a struct krdma_sockaddr, and back for output;
 * the device an address is on.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
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

/* 0.0.0.0 or :: */
static bool addr_is_any(const struct krdma_sockaddr *sa)
{
	static const uint8_t zero[16];

	return !memcmp(sa->addr, zero, sa->family == AF_INET ? 4 : 16);
}

/* The GID an address has on RoCE: itself, or IPv4-mapped. */
static void addr_gid(const struct krdma_sockaddr *sa, uint8_t *gid)
{
	memset(gid, 0, 16);
	if (sa->family == AF_INET) {
		gid[10] = 0xff;
		gid[11] = 0xff;
		memcpy(gid + 12, sa->addr, 4);
	} else {
		memcpy(gid, sa->addr, 16);
	}
}

/*
 * The netdev holding @sa, as getifaddrs(3) names it, into @name; an iWARP
 * port has no GID of its address, only the netdev.
 */
static bool addr_netdev(const struct krdma_sockaddr *sa, char *name,
			size_t len)
{
	struct ifaddrs *ifa, *i;
	bool found = false;

	if (getifaddrs(&ifa))
		return false;
	for (i = ifa; i && !found; i = i->ifa_next) {
		const void *a;

		if (!i->ifa_addr || i->ifa_addr->sa_family != sa->family)
			continue;
		if (sa->family == AF_INET)
			a = &((struct sockaddr_in *)i->ifa_addr)->sin_addr;
		else
			a = &((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr;
		if (!memcmp(a, sa->addr, sa->family == AF_INET ? 4 : 16)) {
			snprintf(name, len, "%s", i->ifa_name);
			found = true;
		}
	}
	freeifaddrs(ifa);
	return found;
}

/*
 * The device that serves @sa on this host, from @s: the one with @sa as a
 * GID (RoCE), else the one with a port on the netdev holding @sa (iWARP,
 * whose GID is not its address).  False for a wildcard or if none does.
 */
bool addr_device(const struct dev_snapshot *s, const struct krdma_sockaddr *sa,
		 uint32_t *dev_index)
{
	char ifname[KRDMA_IFNAME_MAX];
	uint8_t gid[16];
	uint32_t i;

	if (addr_is_any(sa))
		return false;
	addr_gid(sa, gid);
	for (i = 0; i < s->num_gids; i++) {
		if (!memcmp(s->gids[i].gid, gid, 16)) {
			*dev_index = s->gids[i].dev_index;
			return true;
		}
	}
	if (!addr_netdev(sa, ifname, sizeof(ifname)))
		return false;
	for (i = 0; i < s->num_ports; i++) {
		if (!strcmp(s->ports[i].netdev, ifname)) {
			*dev_index = s->ports[i].dev_index;
			return true;
		}
	}
	return false;
}
