// SPDX-License-Identifier: GPL-2.0
/*
 * krdmactl bench without OP HOST: the server.  Clients' connections join
 * groups (one client's -q QPs) by their hello; two-sided runs go in the
 * kernel here as well (KRDMA_BENCH_SERVER), one-sided ones need a buffer,
 * and with -b a run of their own toward the client (bench_bidir.c).
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "bench.h"
#include "names.h"
#include "print.h"

struct srv_group {
	bool used;
	uint32_t id;
	int op;
	uint32_t flags;
	uint32_t max_size;
	uint32_t tx_depth;
	uint32_t qps;
	uint32_t joined;
	uint32_t live;
	uint32_t timeout_s;
	uint32_t *handles;
	uint32_t *by_index;	/* the handles in the client's order */
	struct verbs_buf buf;
	struct verbs_buf ctlbuf;	/* -b, credits: the client writes here */
	uint32_t dev_index;	/* the buffer's */
	uint32_t ctl;		/* -b: the connection the answers go on */
	bool have_ctl;
	bool credits;		/* SEND over iWARP: KRDMA_BENCH_CREDITS */
	bool ran;
	int64_t last_join_ms;
};

#define SRV_MAX_GROUPS 16

struct srv {
	int fd;
	const struct bench_opts *o;
	uint32_t dev_index;
	uint32_t listener;
	uint32_t kproto;	/* KRDMA_BENCH_PROTOCOL of the loaded module */
	bool event_dev;		/* its requests name their device */
	struct srv_group groups[SRV_MAX_GROUPS];
	uint32_t *conn_group;	/* handle -> group index + 1 (small table) */
	uint32_t conn_group_len;
	bool finished;
	bool run_failed;	/* a run served failed: the exit status */
};

static void srv_reject(struct srv *s, uint32_t handle)
{
	struct krdma_cm_accept rj = { .size = sizeof(rj), .handle = handle };

	krdma_ioctl_quiet(s->fd, KRDMA_CM_REJECT, &rj);
}

static struct srv_group *srv_group(struct srv *s, uint32_t id,
				   const struct bench_hello *h)
{
	unsigned int i;

	for (i = 0; i < SRV_MAX_GROUPS; i++)
		if (s->groups[i].used && s->groups[i].id == id && id)
			return &s->groups[i];
	for (i = 0; i < SRV_MAX_GROUPS; i++) {
		struct srv_group *g = &s->groups[i];

		if (g->used)
			continue;
		memset(g, 0, sizeof(*g));
		g->used = true;
		g->id = id;
		g->op = be16toh(h->op);
		g->flags = be32toh(h->flags);
		g->max_size = be32toh(h->max_size);
		g->tx_depth = be32toh(h->tx_depth);
		g->qps = be16toh(h->qps);
		g->timeout_s = be32toh(h->timeout_s);
		g->last_join_ms = loop_now_ms();
		g->handles = calloc(g->qps, sizeof(*g->handles));
		g->by_index = calloc(g->qps, sizeof(*g->by_index));
		if (!g->handles || !g->by_index ||
		    g->op >= (int)ARRAY_SIZE(bench_ops) ||
		    !g->tx_depth || !g->max_size) {
			free(g->handles);
			free(g->by_index);
			g->used = false;
			return NULL;
		}
		return g;
	}
	return NULL;
}

static void srv_group_free(struct srv *s, struct srv_group *g)
{
	verbs_buf_free(s->fd, &g->buf);
	verbs_buf_free(s->fd, &g->ctlbuf);
	free(g->handles);
	free(g->by_index);
	g->used = false;
}

static void srv_map(struct srv *s, uint32_t handle, uint32_t gi)
{
	if (handle >= s->conn_group_len) {
		uint32_t n = handle * 2 + 16;
		uint32_t *t = realloc(s->conn_group, n * sizeof(*t));

		if (!t)
			return;
		memset(t + s->conn_group_len, 0,
		       (n - s->conn_group_len) * sizeof(*t));
		s->conn_group = t;
		s->conn_group_len = n;
	}
	s->conn_group[handle] = gi;
}

/*
 * UD: a message is one packet.  -a asks for up to UD_ALL_MAX: the run
 * takes up to the MTU.  A client that asked for more with -s has given up
 * (it checks too), without a word, as UD has no disconnect: not a run.
 */
static bool srv_ud_size(struct srv *s, struct srv_group *g, uint32_t *size)
{
	struct krdma_conn_query q = { .size = sizeof(q),
				      .handle = g->handles[0] };

	if (krdma_ioctl_quiet(s->fd, KRDMA_CONN_QUERY, &q) ||
	    q.path_mtu >= *size)
		return true;
	if (g->flags & BH_ALL) {
		*size = q.path_mtu;
		return true;
	}
	warn_msg("bench: a client asked for %u-byte messages, over UD at "
		 "most the MTU, %u: not served", *size, q.path_mtu);
	g->ran = true;
	return false;
}

/* A run's "served" line; with -b, of the run toward the client. */
static void srv_print_run(struct srv *s, struct srv_group *g,
			  const struct krdma_bench *b, int ret)
{
	bool bidir = g->flags & BH_BIDIR;
	double bw = b->elapsed_ns ? b->bytes_done * 1e9 / b->elapsed_ns : 0;

	g->ran = true;
	if (ret || b->validate_errors)
		s->run_failed = true;
	if (pr_is_json()) {
		pr_obj_begin(NULL);
		pr_str("event", "served");
		pr_str("op", bench_ops[g->op].name);
		pr_u64("qps", g->qps);
		pr_u64("messages", b->ops_done);
		pr_u64("bytes", b->bytes_done);
		pr_u64("validate_errors", b->validate_errors);
		if (bidir) {
			pr_str("direction", "to_client");
			pr_fmt_double("elapsed_s", "%f", b->elapsed_ns / 1e9);
			pr_fmt_double("bw_avg_mbps", "%f", bw / MIB);
		}
		if (ret)
			pr_str("error", bench_errno_hint(ret));
		if (b->wc_status)
			pr_str("wc_status", wc_status_name(b->wc_status));
		pr_obj_end();
	} else if (bidir) {
		printf("served %s -b, toward the client: %u QP(s), %" PRIu64
		       " messages, %" PRIu64 " bytes, %.2f MB/sec%s%s%s%s\n",
		       bench_ops[g->op].name, g->qps, (uint64_t)b->ops_done,
		       (uint64_t)b->bytes_done, bw / MIB, ret ? ": " : "",
		       ret ? bench_errno_hint(ret) : "",
		       b->wc_status ? ": " : "",
		       b->wc_status ? wc_status_name(b->wc_status) : "");
	} else {
		printf("served %s: %u QP(s), %" PRIu64 " messages, %" PRIu64
		       " bytes, %" PRIu64 " failed validation%s%s%s%s\n",
		       bench_ops[g->op].name, g->qps, (uint64_t)b->ops_done,
		       (uint64_t)b->bytes_done, (uint64_t)b->validate_errors,
		       ret ? ": " : "", ret ? bench_errno_hint(ret) : "",
		       b->wc_status ? ": " : "",
		       b->wc_status ? wc_status_name(b->wc_status) : "");
	}
	fflush(stdout);
}

/*
 * SEND over iWARP: the run speaks with credits, written to the client's
 * control areas, which its CREDITS message says where are; the
 * connections in the client's order, which picks each one's area.
 */
static int srv_credits(struct srv *s, struct srv_group *g,
		       struct krdma_bench *b)
{
	struct bench_bidir_group bg = {
		.num_conns = g->qps,
		.conn_ctl = g->ctl,
		.timeout_s = s->o->timeout_s,
		.ctl = &g->ctlbuf,
	};
	uint32_t i;

	for (i = 0; i < g->qps; i++)
		if (!g->by_index[i])
			return -EPROTO;
	b->flags |= KRDMA_BENCH_CREDITS;
	b->conns_uptr = (uintptr_t)g->by_index;
	return bench_credits_get(s->fd, &bg, b);
}

static void srv_run(struct srv *s, struct srv_group *g)
{
	struct bench_result r = { .size = g->max_size };
	struct krdma_bench *b = &r.b;
	bool lat = g->flags & BH_LATENCY;
	int ret;

	b->size = sizeof(*b);
	b->flags = KRDMA_BENCH_SERVER | (lat ? KRDMA_BENCH_LATENCY : 0) |
		   (g->flags & BH_VALIDATE ? KRDMA_BENCH_VALIDATE : 0) |
		   (g->flags & BH_NOTIFY ? KRDMA_BENCH_NOTIFY : 0) |
		   (g->flags & BH_ONE_CPU || g->qps == 1 ?
		    0 : KRDMA_BENCH_PER_CPU);
	b->opcode = bench_ops[g->op].opcode;
	b->num_conns = g->qps;
	b->conns_uptr = (uintptr_t)g->handles;
	b->local_buf = g->buf.handle;
	b->msg_size = g->max_size;
	if (s->o->transport == KRDMA_TRANSPORT_UD &&
	    !srv_ud_size(s, g, &b->msg_size))
		return;
	b->tx_depth = lat ? 4 : 2 * g->tx_depth;
	/*
	 * A ping-pong's replies are signaled one in as many as may be in
	 * flight, not each (ib_send_lat's server signals as its client does,
	 * one in 100 by default): a completion per reply is work, and a CQE
	 * to poll, that perftest's server does not have.
	 */
	b->signal_every = lat ? b->tx_depth : 1;
	b->timeout_ms = g->timeout_s * 1000;
	/* its client refuses the run (bench_client.c): no failure here */
	if (dev_is_iwarp(s->fd, g->dev_index) && !g->credits) {
		warn_msg("bench: a client asked for %s, whose server speaks "
			 "with immediate data, over iWARP: not served",
			 bench_ops[g->op].name);
		g->ran = true;
		return;
	}
	ret = g->credits ? srv_credits(s, g, b) : 0;
	if (!ret)
		ret = ioctl(s->fd, KRDMA_BENCH, b) ? -errno : 0;
	srv_print_run(s, g, b, ret);
}

/* -b: the run toward the client, once all its connections have joined */
static void srv_bidir(struct srv *s, struct srv_group *g)
{
	struct bench_bidir_group bg = {
		.op = g->op,
		.flags = g->flags,
		.conns = g->handles,
		.num_conns = g->qps,
		.conn_ctl = g->ctl,
		.transport = s->o->transport,
		.max_size = g->max_size,
		.tx_depth = g->tx_depth,
		/* its own, not a client's: it holds this loop */
		.timeout_s = s->o->timeout_s,
		.buf = &g->buf,
		.ctl = &g->ctlbuf,
	};
	struct krdma_bench b;
	uint32_t i;
	int ret;

	ret = bench_bidir_serve(s->fd, &bg, &b);
	srv_print_run(s, g, &b, ret);
	/*
	 * RC: the REPORT was the last word, and the client waits for this; or
	 * no REPORT comes, which the client learns from this
	 */
	for (i = 0; s->o->transport != KRDMA_TRANSPORT_UC &&
	     i < g->joined; i++)
		bench_cm_disconnect(s->fd, g->handles[i]);
}

static void srv_disconnected(struct srv *s, uint32_t handle)
{
	struct srv_group *g;
	uint32_t gi;

	verbs_destroy(s->fd, handle);
	if (handle >= s->conn_group_len || !s->conn_group[handle])
		return;
	gi = s->conn_group[handle] - 1;
	s->conn_group[handle] = 0;
	g = &s->groups[gi];
	if (--g->live)
		return;
	/* a client served (not one that left before all its QPs joined) */
	if (g->op && g->joined == g->qps)
		s->finished = true;
	srv_group_free(s, g);
}

/*
 * UD: the group's connections are done, as a disconnect would say over
 * RC and UC; the last one frees the group, and with it its handles.
 */
static void srv_ud_done(struct srv *s, struct srv_group *g)
{
	uint32_t handles[BENCH_MAX_QPS], n = g->joined, i;

	memcpy(handles, g->handles, n * sizeof(*handles));
	for (i = 0; i < n; i++)
		srv_disconnected(s, handles[i]);
}

static void srv_request(struct srv *s, const struct krdma_event *ev)
{
	const struct bench_hello *h = (const void *)ev->private_data;
	struct krdma_cm_accept ac = {
		.size = sizeof(ac),
		.handle = ev->handle,
		.private_data_len = sizeof(struct bench_adv),
		.timeout_ms = s->o->timeout_s * 1000,
	};
	struct bench_adv adv = {
		.magic = htobe32(BENCH_MAGIC),
		.version = htobe16(BENCH_VERSION),
	};
	uint64_t dev_max, len;
	struct srv_group *g;
	uint32_t depth, index, dev_index = s->dev_index;
	bool lat;
	int ret;

	if (ev->private_data_len < sizeof(*h) ||
	    be32toh(h->magic) != BENCH_MAGIC ||
	    be16toh(h->version) != BENCH_VERSION) {
		srv_reject(s, ev->handle);
		return;
	}
	/* the two ends' kernel runs talk to each other */
	if (be32toh(h->kproto) != s->kproto) {
		warn_msg("bench: refused a client whose krdma.ko speaks bench "
			 "protocol %u (this one's: %u)", be32toh(h->kproto),
			 s->kproto);
		srv_reject(s, ev->handle);
		return;
	}
	/* over UC, what bench_check_opts() lets a client ask */
	if (s->o->transport == KRDMA_TRANSPORT_UC &&
	    (be16toh(h->op) == BOP_READ || is_atomic(be16toh(h->op)))) {
		srv_reject(s, ev->handle);
		return;
	}
	/* -b: write and read, over RC or UC (bench_check_opts()) */
	if ((be32toh(h->flags) & BH_BIDIR) &&
	    (s->o->transport == KRDMA_TRANSPORT_UD ||
	     (be16toh(h->op) != BOP_WRITE && be16toh(h->op) != BOP_READ))) {
		srv_reject(s, ev->handle);
		return;
	}
	/* over UD: send and send_imm, and --conns */
	if (s->o->transport == KRDMA_TRANSPORT_UD && h->op &&
	    be16toh(h->op) != BOP_SEND && be16toh(h->op) != BOP_SEND_IMM) {
		srv_reject(s, ev->handle);
		return;
	}
	if (!h->op) {	/* --conns: a connection, nothing more */
		ac.caps = (struct krdma_qp_caps){ .max_send_wr = 4,
			.max_recv_wr = 4, .max_send_sge = 1,
			.max_recv_sge = 1 };
		ret = krdma_ioctl_quiet(s->fd, KRDMA_CM_ACCEPT, &ac);
		if (ret)
			err_msg("bench: accept: %s", strerror(-ret));
		/*
		 * UD: the SIDR reply has gone, and no disconnect will come
		 * to end the connection
		 */
		if (ret || s->o->transport == KRDMA_TRANSPORT_UD)
			verbs_destroy(s->fd, ev->handle);
		return;
	}
	g = srv_group(s, be32toh(h->group), h);
	index = be16toh(h->index);
	if (!g || index >= g->qps || g->joined >= g->qps) {
		srv_reject(s, ev->handle);
		/* a group this hello made, and nothing else would free */
		if (g && !g->joined)
			srv_group_free(s, g);
		return;
	}
	lat = g->flags & BH_LATENCY;
	depth = lat ? 4 : 2 * g->tx_depth;
	/*
	 * Without -d, the device the request came on: a buffer the run uses
	 * must be the connections' device's.  A module older than
	 * KRDMA_FEATURE_EVENT_DEVICE lists it in KRDMA_QUERY_SESSIONS.
	 */
	if (!s->o->ib.dev) {
		if (s->event_dev) {
			dev_index = ev->dev_index;
			ret = 0;
		} else {
			ret = bench_ib_conn_dev(s->fd, ev->handle, &dev_index);
		}
		if (ret) {
			dev_index = g->buf.handle ? g->dev_index : s->dev_index;
			warn_msg("bench: the device of a request: %s; taking "
				 "device %u", strerror(-ret), dev_index);
		}
	}
	if (g->op && g->buf.handle && dev_index != g->dev_index) {
		warn_msg("bench: refused a client whose connections came on "
			 "two devices");
		srv_reject(s, ev->handle);
		return;
	}
	if (g->op && !g->buf.handle) {
		g->dev_index = dev_index;
		dev_max = dev_max_buf(s->fd, dev_index);
		len = bench_buf_len(g->max_size, depth, g->flags & BH_VALIDATE,
				    bench_tail_len(s->o->transport, false,
						   g->qps), dev_max);
		g->credits = g->op == BOP_SEND &&
			     dev_is_iwarp(s->fd, dev_index);
		ret = bench_buf_get(s->fd, dev_index,
				    KRDMA_ACCESS_LOCAL_WRITE |
				    KRDMA_ACCESS_REMOTE_WRITE |
				    KRDMA_ACCESS_REMOTE_READ |
				    KRDMA_ACCESS_REMOTE_ATOMIC, len,
				    s->o->hugepages, &g->buf);
		/* -b, credits: the client's messages, apart from the slots */
		if (!ret && ((g->flags & BH_BIDIR) || g->credits))
			ret = verbs_buf_alloc(s->fd, dev_index,
					      KRDMA_ACCESS_LOCAL_WRITE |
					      KRDMA_ACCESS_REMOTE_WRITE,
					      BENCH_CTL_LEN, &g->ctlbuf);
		if (ret) {
			if (dev_max && len > dev_max)
				warn_msg("bench: refused a client: its messages need a buffer of %"
					 PRIu64 " bytes, more than the device's largest, %"
					 PRIu64, len, dev_max);
			srv_reject(s, ev->handle);
			srv_group_free(s, g);
			return;
		}
		bench_fill_pattern(g->buf.mem, g->buf.length);
	}
	adv.addr = htobe64(g->buf.addr);
	adv.length = htobe64(g->buf.length);
	adv.rkey = htobe32(g->buf.rkey);
	adv.ctl_addr = htobe64(g->ctlbuf.addr);
	adv.ctl_rkey = htobe32(g->ctlbuf.rkey);
	memcpy(ac.private_data, &adv, sizeof(adv));
	ac.flags = g->flags & BH_NOTIFY ? KRDMA_CONN_NOTIFY : 0;
	ac.caps.max_send_wr = g->op ? (lat ? 8 : g->tx_depth + 2) : 4;
	ac.caps.max_recv_wr = g->op && two_sided(g->op) ? depth + 2 : 4;
	ac.caps.max_send_sge = 1;
	/* UD: the GRH's and the payload's */
	ac.caps.max_recv_sge = s->o->transport == KRDMA_TRANSPORT_UD ? 2 : 1;
	/* a credits run's words go inline */
	ac.caps.max_inline_data = lat || g->credits ? 64 : 0;
	ret = krdma_ioctl_quiet(s->fd, KRDMA_CM_ACCEPT, &ac);
	if (ret == -EINVAL && ac.caps.max_inline_data && !g->credits) {
		ac.caps.max_inline_data = 0;
		ret = krdma_ioctl_quiet(s->fd, KRDMA_CM_ACCEPT, &ac);
	}
	if (ret) {
		err_msg("bench: accept: %s", strerror(-ret));
		verbs_destroy(s->fd, ev->handle);
		if (!g->joined)
			srv_group_free(s, g);
		return;
	}
	/* -b, credits: the client's first connection carries the answers */
	if (((g->flags & BH_BIDIR) || g->credits) && index == 0 &&
	    !g->have_ctl) {
		g->ctl = ev->handle;
		g->have_ctl = true;
	}
	g->handles[g->joined++] = ev->handle;
	if (!g->by_index[index])
		g->by_index[index] = ev->handle;
	g->last_join_ms = loop_now_ms();
	g->live++;
	srv_map(s, ev->handle, g - s->groups + 1);
	if (g->joined == 1)
		bench_uc_write_imm_warn(s->fd, ev->handle,
					dev_vendor_id(s->fd, g->dev_index),
					s->o->transport, g->op, g->max_size);
	/* -b: a client that never sent index 0 has no one to ask */
	if (g->joined == g->qps && (g->flags & BH_BIDIR)) {
		if (g->have_ctl)
			srv_bidir(s, g);
		else
			warn_msg("bench: -b: no connection of a client's "
				 "said it was its first: not served");
		return;
	}
	if (g->joined != g->qps || !g->op || !two_sided(g->op))
		return;
	srv_run(s, g);
	/* UD: no disconnect ends the connections; the run did */
	if (s->o->transport == KRDMA_TRANSPORT_UD)
		srv_ud_done(s, g);
}

/*
 * UD: a group whose client stopped connecting its QPs (it gave up, or
 * died) is let go -T after the last, as a disconnect would have it over RC.
 */
static void srv_ud_sweep(struct srv *s)
{
	int64_t now = loop_now_ms();
	unsigned int i;

	for (i = 0; i < SRV_MAX_GROUPS; i++) {
		struct srv_group *g = &s->groups[i];

		if (!g->used || g->joined == g->qps ||
		    now - g->last_join_ms <= g->timeout_s * 1000LL)
			continue;
		if (g->joined)
			srv_ud_done(s, g);
		else
			srv_group_free(s, g);
	}
}

int bench_serve(int fd, const struct bench_opts *o)
{
	struct krdma_cm_listen l = {
		.size = sizeof(l),
		.backlog = 1024,
		.transport = o->transport,
	};
	struct srv s = { .fd = fd, .o = o };
	struct krdma_event evs[16];
	char where[80];
	int ret, n, i;

	/* -d: on an address of that device, whose buffers the runs use */
	if (bench_ib_listen(fd, &o->ib, o->port, &l.addr, &s.dev_index))
		return 1;
	s.kproto = bench_protocol(fd);
	s.event_dev = krdma_features(fd) & KRDMA_FEATURE_EVENT_DEVICE;
	ret = krdma_ioctl_quiet(fd, KRDMA_CM_LISTEN, &l);
	if (ret) {
		addr_format(&l.addr, where, sizeof(where));
		if (o->ib.dev)
			err_msg("bench: cannot listen on %s: %s", where,
				strerror(-ret));
		else
			err_msg("bench: cannot listen on port %u: %s", o->port,
				strerror(-ret));
		return 1;
	}
	s.listener = l.handle;
	if (pr_is_json()) {
		pr_obj_begin(NULL);
		pr_str("event", "listening");
		pr_u64("port", l.port);
		pr_obj_end();
	} else if (o->ib.dev) {
		l.addr.port = l.port;
		addr_format(&l.addr, where, sizeof(where));
		printf("bench: listening on port %u (%s, %s)\n", l.port,
		       where, o->ib.dev);
	} else {
		printf("bench: listening on port %u\n", l.port);
	}
	fflush(stdout);
	while (!loop_stop && !(o->once && s.finished)) {
		if (o->transport == KRDMA_TRANSPORT_UD)
			srv_ud_sweep(&s);
		n = verbs_get_events(fd, evs, ARRAY_SIZE(evs), 200);
		if (n == -EINTR)
			break;
		if (n < 0) {
			err_msg("bench: events: %s", strerror(-n));
			ret = n;
			break;
		}
		for (i = 0; i < n; i++) {
			switch (evs[i].type) {
			case KRDMA_EVENT_CONNECT_REQUEST:
				srv_request(&s, &evs[i]);
				break;
			case KRDMA_EVENT_DISCONNECTED:
			case KRDMA_EVENT_CONN_ERROR:
				srv_disconnected(&s, evs[i].handle);
				break;
			case KRDMA_EVENT_OVERFLOW:
				warn_msg("bench: %d events lost (the event queue was full)",
					 evs[i].status);
				break;
			default:
				break;
			}
		}
	}
	for (i = 0; i < SRV_MAX_GROUPS; i++)
		if (s.groups[i].used)
			srv_group_free(&s, &s.groups[i]);
	free(s.conn_group);
	verbs_destroy(fd, s.listener);
	return ret || s.run_failed ? 1 : 0;
}

