/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krdmactl bench: what its files share (bench.c has the overview).
 *
 *   bench.c         the command: the module's ABI checked, a mode run
 *   bench_opts.c    options, and the combinations refused
 *   bench_stats.c   figures of a run, its lines, progress while it goes
 *   bench_proto.c   the wire protocol: hello, adv, READY and END
 *   bench_via.c     --via-ioctl: the loop in this process
 *   bench_client.c  a client's runs, and --conns
 *   bench_bidir.c   -b: the server's run toward the client, its figures
 *   bench_serve.c   the server
 *   bench_ib.c      device, port, GID, MTU and the QPs' addresses
 */
#ifndef KRDMACTL_BENCH_H
#define KRDMACTL_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "addr.h"
#include "bench_ib.h"
#include "krdmactl.h"
#include "loop.h"
#include "verbs.h"

#define BENCH_MAGIC 0x4b524442U		/* "KRDB" */
#define BENCH_VERSION 6
#define BENCH_MAX_QPS KRDMA_BENCH_MAX_CONNS
#define MIB 1048576.0
#define VIA_RECVS 32			/* --via-ioctl ping-pong's receives */
#define UD_ALL_MAX 4096U		/* -a over UD: no more than an MTU */

enum bench_op {
	BOP_NONE = 0,		/* --conns: connect only */
	BOP_SEND,
	BOP_SEND_IMM,
	BOP_WRITE,
	BOP_WRITE_IMM,
	BOP_READ,
	BOP_FADD,
	BOP_CSWAP,
};

enum {
	BH_LATENCY = 1 << 0,
	BH_VALIDATE = 1 << 1,
	BH_NOTIFY = 1 << 2,
	BH_ONE_CPU = 1 << 3,	/* the server keeps one loop as well */
	BH_ALL = 1 << 4,	/* -a: sizes up to max_size (UD: or the MTU) */
	BH_BIDIR = 1 << 5,	/* -b: the server runs the OP toward the client */
};

/* CONNECT private data, 36 bytes */
struct bench_hello {
	uint32_t magic;
	uint16_t version;
	uint16_t op;		/* enum bench_op */
	uint32_t flags;		/* BH_* */
	uint32_t max_size;	/* largest message of the runs */
	uint32_t tx_depth;
	uint16_t qps;		/* connections in the group */
	uint16_t index;		/* this one's index */
	uint32_t group;		/* random, names the group */
	uint32_t timeout_s;
	uint32_t kproto;	/* the client's KRDMA_BENCH_PROTOCOL */
};

/* ACCEPT private data, 40 bytes */
struct bench_adv {
	uint32_t magic;
	uint16_t version;
	uint16_t __reserved;
	uint64_t addr;		/* the slots the client's runs go to */
	uint64_t length;
	uint32_t rkey;
	uint32_t ctl_rkey;	/* -b: the server's control buffer */
	uint64_t ctl_addr;
};

/*
 * -b: the two sides' messages, each an RDMA WRITE of BENCH_BIDIR_MSG bytes
 * from the second half of the writer's control buffer (a buffer of
 * BENCH_CTL_LEN bytes of its own, apart from the slots the runs use) into
 * the first half of the peer's.  No receive takes them, so they meet
 * neither a run's completions nor RNR retries, and iWARP carries them as
 * well.  The reader polls the last word and then checks the first: both
 * name the message's kind once all of it is in (a copy, either way, lands
 * one of them last).
 */
enum bench_bidir_kind {
	BIDIR_REQ = 0x52455131,		/* "REQ1": client, its run's terms */
	BIDIR_READY = 0x52445931,	/* "RDY1": server, about to run */
	BIDIR_END = 0x454e4431,		/* "END1": client, its run is over */
	BIDIR_REPORT = 0x52505431,	/* "RPT1": server, its figures */
	/* iWARP SEND: client, where its connections' control areas are */
	BIDIR_CREDITS = 0x43524431,	/* "CRD1" */
};

/* REQ: where the server's run goes (the client's slots), for how long */
struct bench_bidir_req {
	uint32_t kind;		/* enum bench_bidir_kind */
	uint32_t size;		/* of each message */
	uint64_t addr;		/* the client's slots */
	uint64_t length;
	uint32_t rkey;
	uint32_t tx_depth;
	uint32_t cq_mod;
	uint32_t duration_ms;	/* or */
	uint64_t iters;
	uint64_t ctl_addr;	/* the client's control buffer */
	uint32_t ctl_rkey;
	uint32_t kind_end;	/* @kind again, the last word */
};

/* REPORT: the server's figures (READY and END: the kinds alone) */
struct bench_bidir_report {
	uint32_t kind;
	uint32_t __reserved;
	uint64_t ops;
	uint64_t bytes;
	uint64_t elapsed_ns;
	uint64_t peak_bps;
	uint32_t __reserved2[5];
	uint32_t kind_end;
};

#define BENCH_BIDIR_MSG 64U
/* -b: a side's control buffer: the peer's message, then its own */
#define BENCH_CTL_LEN (2 * BENCH_BIDIR_MSG)

_Static_assert(sizeof(struct bench_hello) == 36, "bench_hello");
_Static_assert(sizeof(struct bench_adv) == 40, "bench_adv");
_Static_assert(sizeof(struct bench_bidir_req) == BENCH_BIDIR_MSG,
	       "bidir_req");
_Static_assert(sizeof(struct bench_bidir_report) == BENCH_BIDIR_MSG,
	       "bidir_report");
_Static_assert(offsetof(struct bench_bidir_req, kind_end) ==
	       BENCH_BIDIR_MSG - 4 &&
	       offsetof(struct bench_bidir_report, kind_end) ==
	       BENCH_BIDIR_MSG - 4, "bidir kind_end");

/* An operation's name and the KRDMA_OP_ it runs, by BOP_ */
struct bench_op_info {
	const char *name;
	uint32_t opcode;
};

extern const struct bench_op_info bench_ops[BOP_CSWAP + 1];

static inline bool two_sided(int op)
{
	return op == BOP_SEND || op == BOP_SEND_IMM || op == BOP_WRITE_IMM;
}

static inline bool is_atomic(int op)
{
	return op == BOP_FADD || op == BOP_CSWAP;
}

enum { OUT_ALL = 0, OUT_BW, OUT_LAT };	/* --output */

struct bench_opts {
	int op;
	const char *host;
	uint32_t port;
	uint32_t size;
	bool have_size;
	bool all;
	uint64_t iters;
	bool have_iters;
	uint32_t duration_s;
	uint32_t qps;
	uint32_t tx_depth;
	uint32_t cq_mod;
	uint32_t inline_size;
	bool events;
	bool latency;
	bool validate;
	bool via_ioctl;
	bool one_cpu;
	uint32_t conns;
	uint32_t timeout_s;
	bool once;
	bool corrupt;		/* selftests: spoil the source pattern */
	bool copy_only;	/* the guest's memcpy bandwidth */
	uint32_t transport;	/* KRDMA_TRANSPORT_* */
	struct bench_ib_want ib;	/* -d, -i, -x, -m */
	bool report_gbits;
	int output;		/* OUT_* */
	bool run_infinitely;
	bool histogram;		/* -H: every latency, sorted */
	bool unsorted;		/* -U: every latency, in order */
	bool bidir;		/* -b: the server's run toward this host too */
	bool hugepages;		/* --use_hugepages: a zero-copy buffer */
};

/* A latency run's figures, made of its samples (ns) here. */
struct bench_lat {
	uint64_t samples;
	double min, max, typical, avg, stdev, p99, p999;
};

struct bench_result {
	uint32_t size;
	struct krdma_bench b;
	struct bench_lat lat;
	int err;
	bool bidir;		/* -b: remote holds the server's figures */
	struct krdma_bench remote;
};

struct bench_conn {
	uint32_t handle;
	uint32_t dev_index;
	struct bench_adv adv;
	uint32_t via_recvs;	/* receives --via-ioctl has posted, not taken */
	uint32_t qp_num;
	bool credits;		/* SEND over iWARP: KRDMA_BENCH_CREDITS */
};

/* a --via-ioctl run, on one connection (bench_via.c) */
struct via {
	int fd;
	uint32_t conn;
	const struct bench_opts *o;
	const struct verbs_buf *buf;
	struct bench_conn *bc;
	struct krdma_bench *b;
	struct bench_lat *lat;
	bool post_poll;		/* KRDMA_POST_POLL works */
	int64_t idle_since_ms;	/* the first of the polls since that had none */
	struct krdma_wr wr;	/* via_post()'s */
};

/* bench_opts.c */
int bench_parse(int argc, char **argv, struct bench_opts *o);
const char *bench_transport_name(uint32_t transport, bool upper);

/* bench_stats.c */
extern const char bench_bw_line[];
double bench_bw_unit(const struct bench_opts *o, double bytes_per_s);
void bench_print_header(const struct bench_opts *o, const char *dev,
			bool latency, const struct bench_ib_ends *ends);
void bench_print_row(const struct bench_opts *o,
		     const struct bench_result *r, bool latency);
void bench_lat_figures(const struct bench_opts *o, struct bench_lat *l,
		       uint64_t *s, uint64_t n);
uint64_t bench_lat_max_samples(uint64_t iters);
const char *bench_errno_hint(int err);
extern struct krdma_bench_progress bench_progress;
extern volatile int bench_progress_stop;
extern uint32_t bench_progress_size;
extern bool bench_progress_gbits;
void *bench_progress_thread(void *arg);

/* bench_proto.c */
void bench_fill_pattern(uint8_t *p, uint64_t len);
uint64_t bench_tail_len(uint32_t transport, bool credits, uint32_t qps);
uint64_t bench_buf_len(uint32_t size, uint32_t depth, bool validate,
		       uint64_t tail, uint64_t dev_max);
struct krdma_bench_ctl *bench_ctl_area(const struct verbs_buf *buf,
				       uint32_t qps);
int bench_buf_get(int fd, uint32_t dev_index, uint32_t access, uint64_t len,
		  bool huge, struct verbs_buf *b);
uint32_t bench_all_max(const struct bench_opts *o);
uint32_t bench_protocol(int fd);
extern struct krdma_sockaddr bench_src;
int bench_connect(int fd, const struct bench_opts *o,
		  const struct krdma_sockaddr *dst, uint32_t group,
		  uint32_t index, uint32_t qps, struct bench_conn *c,
		  bool want_adv);
bool bench_late_ready(const struct krdma_wc *wc);
int bench_wait_wc(int fd, uint32_t conn, uint32_t want, bool with_imm,
		  int64_t start_ms, uint32_t timeout_ms, struct krdma_wc *out);
int bench_send_end_report(int fd, uint32_t conn, uint32_t timeout_s,
			  uint32_t *bad);
int bench_until_answer(int fd, uint32_t conn, const struct bench_opts *o,
		       const struct verbs_buf *buf, uint32_t imm,
		       uint32_t *answer);
void bench_cm_disconnect(int fd, uint32_t conn);
void bench_disconnect(int fd, uint32_t conn);

/* bench_bidir.c */
int bench_bidir_request(int fd, const struct bench_opts *o,
			const struct bench_conn *c, const struct verbs_buf *buf,
			const struct verbs_buf *ctl, uint32_t size);
int bench_bidir_report(int fd, const struct bench_opts *o,
		       const struct bench_conn *c, const struct verbs_buf *ctl,
		       struct bench_result *r);
/* -b: what the server's run toward a client starts from */
struct bench_bidir_group {
	int op;
	uint32_t flags;		/* the hello's BH_* */
	const uint32_t *conns;
	uint32_t num_conns;
	uint32_t conn_ctl;	/* of conns, the one the answers go on */
	uint32_t transport;	/* KRDMA_TRANSPORT_RC or _UC */
	uint32_t max_size;	/* the hello's */
	uint32_t tx_depth;	/* the hello's, that the QPs hold */
	uint32_t timeout_s;	/* the server's -T */
	const struct verbs_buf *buf;
	const struct verbs_buf *ctl;	/* BENCH_CTL_LEN bytes */
};

int bench_bidir_serve(int fd, const struct bench_bidir_group *bg,
		      struct krdma_bench *b);
int bench_credits_request(int fd, const struct bench_opts *o,
			  const struct bench_conn *conns,
			  const struct verbs_buf *buf,
			  const struct verbs_buf *ctl);
int bench_credits_end(int fd, uint32_t conn, struct krdma_bench_ctl *c,
		      uint32_t timeout_s, uint32_t *bad);
int bench_credits_get(int fd, const struct bench_bidir_group *bg,
		      struct krdma_bench *b);

/* bench_via.c */
int bench_via_run(struct via *v, uint32_t size);

/* bench_client.c */
void bench_uc_write_imm_warn(int fd, uint32_t conn, uint32_t vendor_id,
			     uint32_t transport, int op, uint32_t max_size);
int bench_client(int fd, const struct bench_opts *o);
int bench_conns(int fd, const struct bench_opts *o);
int bench_memcpy(const struct bench_opts *o);

/* bench_serve.c */
int bench_serve(int fd, const struct bench_opts *o);

#endif /* KRDMACTL_BENCH_H */
