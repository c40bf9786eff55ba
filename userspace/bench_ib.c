// SPDX-License-Identifier: GPL-2.0
/*
 * krdmactl bench: perftest's -d, -i, -x and -m, and its address lines.
 *
 * A run's connections are rdma_cm's, and KRDMA_CM_CONNECT takes no device,
 * port, GID index or path MTU: rdma_cm takes the device and port of the
 * source address (the one routing chooses, or the one given), the GID of
 * that address (for RoCE, of the type of its default_roce_mode, RoCE v2
 * unless configfs says otherwise) and the path's MTU.  So -d, -i and -x
 * choose the source address: an address of -d's device's port's netdev,
 * or the address of -x's GID; and every connection is then checked
 * against what was asked (its device from CM_CONNECT, its port from
 * KRDMA_QUERY_SESSIONS, its path MTU from KRDMA_CONN_QUERY), refused if it
 * differs rather than run elsewhere.  A server with -d listens on an
 * address of that device; without, on every address, each request's
 * event naming its device (KRDMA_QUERY_SESSIONS on an older module).
 *
 * krdma reports each connection's QP numbers and PSNs (the local ones as
 * `rdma resource show qp` lists them, the peer's) and its port, whose LID
 * and GIDs KRDMA_QUERY_DEVICES gives.
 */
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/socket.h>

#include "bench_ib.h"
#include "krdmactl.h"
#include "print.h"

static const uint8_t v4_mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
				       0xff, 0xff };

/* The GID a RoCE v2 port gives address @sa (an IPv4 one, v4-mapped). */
static void addr_gid(const struct krdma_sockaddr *sa, uint8_t gid[16])
{
	if (sa->family == AF_INET) {
		memcpy(gid, v4_mapped, 12);
		memcpy(gid + 12, sa->addr, 4);
	} else {
		memcpy(gid, sa->addr, 16);
	}
}

/* The address of a RoCE GID, port 0. */
static void gid_addr(const uint8_t gid[16], struct krdma_sockaddr *sa,
		     const char *netdev)
{
	memset(sa, 0, sizeof(*sa));
	if (!memcmp(gid, v4_mapped, 12)) {
		sa->family = AF_INET;
		memcpy(sa->addr, gid + 12, 4);
		return;
	}
	sa->family = AF_INET6;
	memcpy(sa->addr, gid, 16);
	if (gid[0] == 0xfe && (gid[1] & 0xc0) == 0x80)
		sa->scope_id = if_nametoindex(netdev);
}

static bool is_link_local6(const uint8_t *a)
{
	return a[0] == 0xfe && (a[1] & 0xc0) == 0x80;
}

static const struct krdma_device_info *find_dev(const struct dev_snapshot *s,
						const char *name)
{
	uint32_t i;

	for (i = 0; i < s->num_devs; i++)
		if (!strcmp(s->devs[i].name, name))
			return &s->devs[i];
	return NULL;
}

static const struct krdma_device_info *
dev_by_index(const struct dev_snapshot *s, uint32_t dev_index)
{
	uint32_t i;

	for (i = 0; i < s->num_devs; i++)
		if (s->devs[i].dev_index == dev_index)
			return &s->devs[i];
	return NULL;
}

static const struct krdma_port_info *find_port(const struct dev_snapshot *s,
					       uint32_t dev_index,
					       uint32_t port)
{
	uint32_t i;

	for (i = 0; i < s->num_ports; i++)
		if (s->ports[i].dev_index == dev_index &&
		    s->ports[i].port_num == port)
			return &s->ports[i];
	return NULL;
}

static const struct krdma_gid_info *find_gid(const struct dev_snapshot *s,
					     uint32_t dev_index, uint32_t port,
					     uint32_t index)
{
	uint32_t i;

	for (i = 0; i < s->num_gids; i++)
		if (s->gids[i].dev_index == dev_index &&
		    s->gids[i].port_num == port &&
		    s->gids[i].gid_index == index)
			return &s->gids[i];
	return NULL;
}

/* "rxe0, mlx5_0": the devices there are, for a message. */
static void dev_names(const struct dev_snapshot *s, char *buf, size_t len)
{
	size_t used = 0;
	uint32_t i;

	buf[0] = '\0';
	for (i = 0; i < s->num_devs && used < len; i++)
		used += snprintf(buf + used, len - used, "%s%s", i ? ", " : "",
				 s->devs[i].name);
	if (!s->num_devs)
		snprintf(buf, len, "none");
}

/* -d's device, said if there is none of that name (NULL). */
static const struct krdma_device_info *want_dev(const struct dev_snapshot *s,
						const char *name)
{
	const struct krdma_device_info *d = find_dev(s, name);
	char names[256];

	if (!d) {
		dev_names(s, names, sizeof(names));
		err_msg("bench: -d %s: no such RDMA device (there are: %s)",
			name, names);
	}
	return d;
}

/*
 * An address of @netdev of @family (for AF_INET6, link-local as @dst is
 * or not): 0, or -ENOENT.
 */
static int netdev_addr(const char *netdev, const struct krdma_sockaddr *dst,
		       struct krdma_sockaddr *src)
{
	struct ifaddrs *ifa, *i;
	int ret = -ENOENT;

	if (!netdev[0] || getifaddrs(&ifa))
		return -ENOENT;
	for (i = ifa; i && ret; i = i->ifa_next) {
		if (!i->ifa_addr || strcmp(i->ifa_name, netdev) ||
		    i->ifa_addr->sa_family != dst->family)
			continue;
		memset(src, 0, sizeof(*src));
		src->family = dst->family;
		if (dst->family == AF_INET) {
			memcpy(src->addr,
			       &((struct sockaddr_in *)i->ifa_addr)->sin_addr,
			       4);
		} else {
			const struct sockaddr_in6 *s6 = (const void *)i->ifa_addr;

			if (is_link_local6(s6->sin6_addr.s6_addr) !=
			    is_link_local6(dst->addr))
				continue;
			memcpy(src->addr, &s6->sin6_addr, 16);
			src->scope_id = s6->sin6_scope_id;
		}
		ret = 0;
	}
	freeifaddrs(ifa);
	return ret;
}

static const char *family_name(uint16_t family)
{
	return family == AF_INET ? "IPv4" : "IPv6";
}

int bench_ib_source(int fd, const struct bench_ib_want *w,
		    const struct krdma_sockaddr *dst,
		    struct krdma_sockaddr *src)
{
	const struct krdma_device_info *d = NULL;
	const struct krdma_port_info *p = NULL;
	const struct krdma_gid_info *g = NULL;
	struct dev_snapshot s;
	uint32_t i, port;
	int ret = 1;

	memset(src, 0, sizeof(*src));
	if (!w->dev && w->gid_index < 0)
		return 0;	/* -i, -m alone: checked once connected */
	if (query_devices(fd, false, 0, &s))
		return 1;
	if (w->dev) {
		d = want_dev(&s, w->dev);
		if (!d)
			goto out;
	}
	if (w->gid_index >= 0) {
		/* -x N: the GID N of -d's device (and -i's port) */
		for (i = 0; i < s.num_gids; i++) {
			const struct krdma_gid_info *e = &s.gids[i];

			if (e->gid_index != (uint32_t)w->gid_index ||
			    (d && e->dev_index != d->dev_index) ||
			    (w->port && e->port_num != w->port))
				continue;
			if (g && (g->dev_index != e->dev_index ||
				  g->port_num != e->port_num)) {
				err_msg("bench: -x %d: more than one device "
					"or port has GID index %d: say which "
					"with -d (and -i)", w->gid_index,
					w->gid_index);
				goto out;
			}
			g = e;
		}
		if (!g) {
			char where[96] = "";

			if (d && w->port)
				snprintf(where, sizeof(where), " on %s port %u",
					 d->name, w->port);
			else if (d || w->port)
				snprintf(where, sizeof(where), " on %s%s%.0u",
					 d ? d->name : "", d ? "" : "port ",
					 d ? 0 : w->port);
			err_msg("bench: -x %d: no such GID index%s (%s "
				"devices lists them)", w->gid_index, where,
				PROG_NAME);
			goto out;
		}
		for (i = 0; i < s.num_devs; i++)
			if (s.devs[i].dev_index == g->dev_index)
				d = &s.devs[i];
		if (d && d->node_type == KRDMA_NODE_RNIC) {
			err_msg("bench: -x %d: an iWARP device's GID, which is "
				"no address (it holds the MAC): rdma_cm "
				"connects from the device's IP address, and "
				"krdma's connect takes no GID index (use -d and "
				"-i)", w->gid_index);
			goto out;
		}
		if (g->gid_type == KRDMA_GID_TYPE_ROCE) {
			err_msg("bench: -x %d: a RoCE v1 GID; rdma_cm connects "
				"from its address's RoCE v2 GID (its "
				"default_roce_mode), and krdma's connect takes "
				"no GID index: give the RoCE v2 entry's index",
				w->gid_index);
			goto out;
		}
		if (g->gid_type == KRDMA_GID_TYPE_IB) {
			err_msg("bench: -x %d: an InfiniBand GID: rdma_cm "
				"connects from an IPoIB address, and krdma's "
				"connect takes no GID index (use -d and -i)",
				w->gid_index);
			goto out;
		}
		gid_addr(g->gid, src, g->netdev);
		if (src->family != dst->family) {
			err_msg("bench: -x %d: its GID is an %s address, HOST "
				"an %s one", w->gid_index,
				family_name(src->family),
				family_name(dst->family));
			goto out;
		}
		ret = 0;
		goto out;
	}
	/* -d DEV [-i N]: an address of the port's netdev */
	port = w->port ? w->port : 1;
	if (w->port) {
		p = find_port(&s, d->dev_index, w->port);
		if (!p) {
			err_msg("bench: -i %u: %s has ports 1 ... %u", w->port,
				d->name, d->phys_port_cnt);
			goto out;
		}
	} else {
		/* the first port with an address for HOST */
		for (port = 1; port <= d->phys_port_cnt; port++) {
			p = find_port(&s, d->dev_index, port);
			if (p && !netdev_addr(p->netdev, dst, src))
				break;
		}
		if (port > d->phys_port_cnt)
			p = find_port(&s, d->dev_index, 1);
	}
	if (!p || netdev_addr(p->netdev, dst, src)) {
		err_msg("bench: -d %s: port %u's netdev (%s) has no %s address "
			"to connect to HOST from", d->name, p ? p->port_num :
			port, p && p->netdev[0] ? p->netdev : "none",
			family_name(dst->family));
		goto out;
	}
	ret = 0;
out:
	free_snapshot(&s);
	return ret;
}

int bench_ib_listen(int fd, const struct bench_ib_want *w, uint16_t port,
		    struct krdma_sockaddr *addr, uint32_t *dev_index)
{
	const struct krdma_device_info *d;
	struct krdma_sockaddr any4 = { .family = AF_INET };
	struct dev_snapshot s;
	uint32_t i;
	int ret = 1;

	memset(addr, 0, sizeof(*addr));
	addr->family = AF_INET;
	addr->port = port;
	if (query_devices(fd, false, 0, &s))
		return 1;
	if (!s.num_devs) {
		err_msg("bench: no RDMA device");
		goto out;
	}
	d = w->dev ? want_dev(&s, w->dev) : &s.devs[0];
	if (!d)
		goto out;
	*dev_index = d->dev_index;
	if (!w->dev) {
		ret = 0;
		goto out;
	}
	/* IPv4 first, as the any-address listener is */
	for (i = 0; i < s.num_ports; i++) {
		const struct krdma_port_info *p = &s.ports[i];
		struct krdma_sockaddr any6 = { .family = AF_INET6 };

		if (p->dev_index != d->dev_index ||
		    (w->port && p->port_num != w->port))
			continue;
		if (!netdev_addr(p->netdev, &any4, addr) ||
		    !netdev_addr(p->netdev, &any6, addr)) {
			addr->port = port;
			ret = 0;
			goto out;
		}
	}
	err_msg("bench: -d %s: no port%s of it has a netdev with an IP "
		"address to listen on", d->name, w->port ? " -i" : "");
out:
	free_snapshot(&s);
	return ret;
}

/*
 * The connections KRDMA_QUERY_SESSIONS lists, and their sessions (the
 * caller frees both), or -errno.
 */
static int query_conns(int fd, struct krdma_session_info **sip,
		       struct krdma_conn_info **cip, uint32_t *ns_out,
		       uint32_t *nc_out)
{
	struct krdma_query_sessions q;
	struct krdma_session_info *si = NULL;
	struct krdma_conn_info *ci = NULL;
	uint32_t ns = 0, nc = 0;
	int try, ret = -EMSGSIZE;

	for (try = 0; try < 5 && ret == -EMSGSIZE; try++) {
		q = (struct krdma_query_sessions){
			.size = sizeof(q),
			.num_sessions = ns,
			.session_entry_size = sizeof(*si),
			.num_conns = nc,
			.conn_entry_size = sizeof(*ci),
			.sessions_uptr = (uintptr_t)si,
			.conns_uptr = (uintptr_t)ci,
		};
		ret = krdma_ioctl_quiet(fd, KRDMA_QUERY_SESSIONS, &q);
		if (ret != -EMSGSIZE)
			break;
		ns = q.num_sessions + 4;
		nc = q.num_conns + 16;
		free(si);
		free(ci);
		si = calloc(ns, sizeof(*si));
		ci = calloc(nc, sizeof(*ci));
		if (!si || !ci) {
			ret = -ENOMEM;
			break;
		}
	}
	if (ret) {
		free(si);
		free(ci);
		return ret;
	}
	*sip = si;
	*cip = ci;
	*ns_out = q.num_sessions;
	*nc_out = q.num_conns;
	return 0;
}

/*
 * The connection's port: KRDMA_QUERY_SESSIONS lists it (by its QP number,
 * unique on its device).  0 if not found.
 */
static uint32_t conn_port(int fd, uint32_t dev_index, uint32_t qp_num)
{
	struct krdma_session_info *si;
	struct krdma_conn_info *ci;
	uint32_t ns, nc, i, port = 0;

	if (query_conns(fd, &si, &ci, &ns, &nc))
		return 0;
	for (i = 0; i < nc; i++)
		if (ci[i].dev_index == dev_index && ci[i].qp_num == qp_num)
			port = ci[i].port_num;
	free(si);
	free(ci);
	return port;
}

/*
 * The device of this process's connection @handle (a request rdma_cm
 * offered has one before it has a QP): its session is the one this
 * process opened, the only one of its PID a bench server has.
 */
int bench_ib_conn_dev(int fd, uint32_t handle, uint32_t *dev_index)
{
	struct krdma_session_info *si;
	struct krdma_conn_info *ci;
	uint32_t ns, nc, i, j;
	int ret;

	ret = query_conns(fd, &si, &ci, &ns, &nc);
	if (ret)
		return ret;
	ret = -ENOENT;
	for (i = 0; i < ns && ret; i++) {
		if (si[i].pid != (uint32_t)getpid())
			continue;
		for (j = 0; j < nc && ret; j++) {
			if (ci[j].session_id != si[i].session_id ||
			    ci[j].handle != handle)
				continue;
			/* one going away is described with nothing but that */
			ret = ci[j].flags & KRDMA_CONN_INFO_GONE ? -ENODEV : 0;
			if (!ret)
				*dev_index = ci[j].dev_index;
			break;
		}
	}
	free(si);
	free(ci);
	return ret;
}

/* The local address routing takes to @dst (as rdma_cm's resolution does). */
static int route_source(const struct krdma_sockaddr *dst,
			struct krdma_sockaddr *src)
{
	struct sockaddr_storage ss = {};
	socklen_t len = sizeof(ss);
	int s, ret = -1;

	s = socket(dst->family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -1;
	if (dst->family == AF_INET) {
		struct sockaddr_in *a = (void *)&ss;

		a->sin_family = AF_INET;
		a->sin_port = htons(dst->port ? dst->port : 9);
		memcpy(&a->sin_addr, dst->addr, 4);
		len = sizeof(*a);
	} else {
		struct sockaddr_in6 *a = (void *)&ss;

		a->sin6_family = AF_INET6;
		a->sin6_port = htons(dst->port ? dst->port : 9);
		memcpy(&a->sin6_addr, dst->addr, 16);
		a->sin6_scope_id = dst->scope_id;
		len = sizeof(*a);
	}
	if (!connect(s, (struct sockaddr *)&ss, len)) {
		len = sizeof(ss);
		if (!getsockname(s, (struct sockaddr *)&ss, &len)) {
			memset(src, 0, sizeof(*src));
			src->family = dst->family;
			if (dst->family == AF_INET)
				memcpy(src->addr,
				       &((struct sockaddr_in *)&ss)->sin_addr,
				       4);
			else
				memcpy(src->addr,
				       &((struct sockaddr_in6 *)&ss)->sin6_addr,
				       16);
			ret = 0;
		}
	}
	close(s);
	return ret;
}

int bench_ib_check(int fd, const struct bench_ib_want *w, uint32_t handle,
		   uint32_t dev_index, uint32_t qp_num,
		   const struct krdma_sockaddr *src,
		   const struct krdma_sockaddr *dst, struct bench_ib_ends *e)
{
	struct krdma_conn_query cq = { .size = sizeof(cq), .handle = handle };
	const struct krdma_device_info *d;
	const struct krdma_port_info *p;
	const struct krdma_gid_info *g;
	struct krdma_sockaddr from;
	struct dev_snapshot s;
	uint8_t gid[16];
	uint32_t i;
	int ret = 1;

	memset(e, 0, sizeof(*e));
	e->dev_index = dev_index;
	e->qpn = qp_num;
	if (krdma_ioctl_quiet(fd, KRDMA_CONN_QUERY, &cq) == 0) {
		e->rqpn = cq.dest_qp_num;
		e->psn = cq.sq_psn;
		e->rpsn = cq.rq_psn;
		/* (a QP with PSNs has both 0 once in 2^48) */
		e->have_psn = cq.sq_psn || cq.rq_psn;
		e->path_mtu = cq.path_mtu;
	}
	e->port = conn_port(fd, dev_index, qp_num);
	if (query_devices(fd, false, 0, &s))
		return 1;
	d = dev_by_index(&s, dev_index);
	e->iwarp = d && d->node_type == KRDMA_NODE_RNIC;
	if (w->dev && (!d || strcmp(d->name, w->dev))) {
		err_msg("bench: -d %s: the connection to HOST is on %s, not "
			"on %s", w->dev, d ? d->name : "another device",
			w->dev);
		goto out;
	}
	if (w->port && e->port != w->port) {
		err_msg("bench: -i %u: the connection to HOST is on port %u "
			"of %s (rdma_cm takes the port of the source address; "
			"krdma's connect takes no port)", w->port, e->port,
			d ? d->name : "?");
		goto out;
	}
	if (w->mtu && e->path_mtu != w->mtu) {
		err_msg("bench: -m %u: the connection's path MTU is %u "
			"(rdma_cm sets it from the path; krdma's connect takes "
			"no MTU)", w->mtu, e->path_mtu);
		goto out;
	}
	p = find_port(&s, dev_index, e->port);
	if (p) {
		e->link_layer = p->link_layer;
		e->lid = p->lid;
	}
	/* the local GID: that of the source address, of its RoCE v2 type */
	if (src->family)
		from = *src;
	else if (route_source(dst, &from))
		from.family = 0;
	if (from.family && p && p->link_layer == KRDMA_LINK_LAYER_ETHERNET) {
		addr_gid(&from, gid);
		for (i = 0; i < s.num_gids; i++) {
			g = &s.gids[i];
			if (g->dev_index != dev_index ||
			    g->port_num != e->port ||
			    g->gid_type != KRDMA_GID_TYPE_ROCE_UDP_ENCAP ||
			    memcmp(g->gid, gid, 16))
				continue;
			if (w->gid_index >= 0 &&
			    g->gid_index != (uint32_t)w->gid_index) {
				err_msg("bench: -x %d: the connection is from "
					"GID index %u", w->gid_index,
					g->gid_index);
				goto out;
			}
			memcpy(e->gid, gid, 16);
			e->have_gid = true;
			break;
		}
		/* RoCE v2: the peer's GID is its address */
		addr_gid(dst, e->rgid);
		e->have_rgid = true;
	} else if (p && p->link_layer == KRDMA_LINK_LAYER_INFINIBAND) {
		g = find_gid(&s, dev_index, e->port, 0);
		if (g) {
			memcpy(e->gid, g->gid, 16);
			e->have_gid = true;
		}
	}
	if (w->gid_index >= 0 && !e->have_gid) {
		err_msg("bench: -x %d: cannot tell the connection's GID",
			w->gid_index);
		goto out;
	}
	ret = 0;
out:
	free_snapshot(&s);
	return ret;
}

/* perftest's GID: 16 bytes in decimal, two digits at least */
static void fmt_gid(const uint8_t gid[16], char *buf, size_t len)
{
	size_t used = 0;
	int i;

	for (i = 0; i < 16 && used < len; i++)
		used += snprintf(buf + used, len - used, "%s%02u",
				 i ? ":" : "", gid[i]);
}

void bench_ib_print(const struct bench_ib_ends *e, uint32_t n)
{
	char gid[64], rgid[64], psn[16], rpsn[16];
	uint32_t i;

	if (pr_is_json())
		pr_arr_begin("addresses");
	for (i = 0; i < n; i++) {
		const struct bench_ib_ends *c = &e[i];

		fmt_gid(c->gid, gid, sizeof(gid));
		fmt_gid(c->rgid, rgid, sizeof(rgid));
		if (c->have_psn) {
			snprintf(psn, sizeof(psn), " PSN 0x%06x", c->psn);
			snprintf(rpsn, sizeof(rpsn), " PSN 0x%06x", c->rpsn);
		} else {
			psn[0] = rpsn[0] = 0;
		}
		if (pr_is_json()) {
			pr_obj_begin(NULL);
			pr_u64("local_lid", c->lid);
			pr_u64("local_qpn", c->qpn);
			if (c->have_psn)
				pr_u64("local_psn", c->psn);
			if (c->have_gid)
				pr_str("local_gid", gid);
			if (c->link_layer == KRDMA_LINK_LAYER_ETHERNET)
				pr_u64("remote_lid", 0);
			pr_u64("remote_qpn", c->rqpn);
			if (c->have_psn)
				pr_u64("remote_psn", c->rpsn);
			if (c->have_rgid)
				pr_str("remote_gid", rgid);
			pr_u64("port", c->port);
			pr_u64("path_mtu", c->path_mtu);
			pr_obj_end();
			continue;
		}
		printf(" local address: LID 0x%04x QPN 0x%04x%s%s%s\n", c->lid,
		       c->qpn, psn, c->have_gid ? " GID " : "",
		       c->have_gid ? gid : "");
		/* a RoCE peer's LID is 0; an InfiniBand one's krdma does not know */
		if (c->link_layer == KRDMA_LINK_LAYER_ETHERNET)
			printf(" remote address: LID 0x%04x QPN 0x%04x%s%s%s\n",
			       0U, c->rqpn, rpsn, c->have_rgid ? " GID " : "",
			       c->have_rgid ? rgid : "");
		else
			printf(" remote address: QPN 0x%04x%s\n", c->rqpn, rpsn);
	}
	if (pr_is_json())
		pr_arr_end();
}
