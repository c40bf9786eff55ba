// SPDX-License-Identifier: GPL-2.0
/*
 * A fuzzer for /dev/krdma: worker threads issue random and mutated ioctls
 * for every command of uapi/krdma.h (plus unknown ones), mmap(2) and poll(2)
 * on a few shared sessions, with valid handles mixed with garbage, sizes
 * short, long and with non-zero tails, random flags and reserved fields,
 * lengths and addresses near 2^32 and 2^64, and pointers into unmapped,
 * read-only and kernel memory.  Meanwhile one thread replaces and closes the
 * sessions' fds under the workers (dup2/close while they are in ioctls),
 * one interrupts them with signals, and one adds and deletes an rxe device
 * (rdma link add/delete on a dummy netdev).
 *
 * It asserts that every ioctl succeeds or fails with an errno the header
 * documents for that command (each other errno is listed with the command
 * and the argument's bytes), that every thread finishes once told to stop
 * (a call stuck in the kernel is reported with its command), that closing
 * every session leaves no device context and no pinned page behind, and
 * that the kernel logs nothing bad meanwhile (run.sh also fails a run whose
 * kernel log has a warning; the debug kernel panics on one).
 *
 * Environment:
 *   KRDMA_FUZZ_DURATION  seconds of fuzzing (default 60)
 *   KRDMA_FUZZ_THREADS   worker threads (default 4)
 *   KRDMA_FUZZ_SEED      seed (default: time); printed, for a rerun
 *   KRDMA_FUZZ_HOTPLUG   0: no rdma link add/delete in the background
 *   KRDMA_FUZZ_VERBOSE   1: print every unexpected errno as it happens
 *   KRDMA_FUZZ_ONLY      only these commands, e.g. "CM_LISTEN,CM_CONNECT"
 *                        (names as in KRDMA_<NAME>; "unknown" for the rest)
 */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <execinfo.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <sys/resource.h>

#include "krdma_test.h"

#define FZ_DEV "rxe_fz"
#define FZ_NETDEV "krdmafz0"
#define FZ_SLOTS 4
#define FZ_FD_BASE 900		/* the shared sessions' fd numbers */
#define FZ_POOL 48		/* objects remembered per session */
#define FZ_MAX_THREADS 32
#define FZ_MAX_DEVS 8
#define FZ_ARG_PAGES 4
#define FZ_DATA_PAGES 16
#define FZ_UREG_PAGES 64
#define FZ_NR_MIN 0x70		/* command numbers tried: 0x70 ... 0x9f */
#define FZ_NR_MAX 0x9f
#define FZ_MAX_REPORTS 24
#define FZ_MMAP (FZ_NR_MAX + 1)	/* stats slot of mmap(2) */

static long page_size;

/* ------------------------------------------------------------------ rng */

static inline uint64_t fz_next(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dull;
}

static inline uint32_t fz_below(uint64_t *s, uint32_t n)
{
	return n ? (uint32_t)(fz_next(s) % n) : 0;
}

static inline bool fz_chance(uint64_t *s, unsigned int percent)
{
	return fz_below(s, 100) < percent;
}

static const uint64_t fz_interesting[] = {
	0, 1, 2, 3, 4, 7, 8, 15, 16, 31, 32, 63, 64, 127, 128, 255, 256, 511,
	512, 1023, 1024, 4095, 4096, 4097, 8192, 65535, 65536, 65537,
	0x7fffffffull, 0x80000000ull, 0xfffffffeull, 0xffffffffull,
	0x100000000ull, 0x100000001ull, 0xfffffffffull, 1ull << 40,
	(1ull << 47) - 4096, 1ull << 47, 0x7fffffffffffffffull,
	0x8000000000000000ull, 0xffff888000000000ull, 0xfffffffffffff000ull,
	0xfffffffffffffffeull, 0xffffffffffffffffull,
};

static uint64_t fz_value(uint64_t *s)
{
	switch (fz_below(s, 4)) {
	case 0:
		return fz_next(s);
	case 1:
		return fz_below(s, 64);
	default:
		return fz_interesting[fz_below(s, ARRAY_SIZE(fz_interesting))] +
		       (fz_chance(s, 20) ? (int)fz_below(s, 5) - 2 : 0);
	}
}

/* --------------------------------------------------------- shared state */

enum fz_kind { K_NONE, K_BUF, K_UBUF, K_CONN, K_LISTEN, K_CMCONN, K_AH, K_SRQ };

struct fz_obj {
	uint32_t handle, kind, dev_index, qpn, transport, rkey;
	uint64_t addr, len, mmap_offset;
	uint16_t port;
	uint8_t gid[16];
};

struct fz_slot {
	pthread_mutex_t lock;
	unsigned int n;
	struct fz_obj obj[FZ_POOL];
};

struct fz_dev {
	uint32_t dev_index, port_num, gid_index;
	uint8_t gid[16];
};

struct fz_stat {
	atomic_ulong calls, ok;
	atomic_ulong err[160];
};

struct fz_report {
	unsigned int nr;
	int err;
	unsigned long count;
	uint32_t size;
	uint8_t bytes[64];
};

struct fz_thread {
	pthread_t tid;
	int index;
	uint64_t rng;
	uint8_t *arg;		/* FZ_ARG_PAGES, then a PROT_NONE page */
	uint8_t *data;		/* FZ_DATA_PAGES, then a PROT_NONE page */
	sigjmp_buf jmp;
	volatile sig_atomic_t in_touch;
	atomic_uint cur_nr;	/* command in progress, 0 if none */
	atomic_ullong cur_since;
	atomic_bool done;
};

static struct {
	atomic_bool stop;
	int nthreads;
	uint64_t seed;
	bool verbose;
	uint64_t only;		/* bit (nr - KRDMA_CMD_BASE), bit 63: unknown */
	struct fz_slot slots[FZ_SLOTS];
	pthread_mutex_t dev_lock;
	struct fz_dev devs[FZ_MAX_DEVS];
	unsigned int ndevs;
	uint32_t stale_dev[FZ_MAX_DEVS];
	unsigned int nstale;
	uint8_t *ureg;		/* FZ_UREG_PAGES for BUF_REG_USER */
	uint8_t *ro;		/* a read-only page */
	uint8_t *none;		/* a PROT_NONE page */
	const char *addr4, *addr6, *addr4b;
	struct fz_stat stat[FZ_NR_MAX + 2];	/* [FZ_NR_MAX + 1]: mmap */
	pthread_mutex_t report_lock;
	struct fz_report reports[FZ_MAX_REPORTS];
	unsigned int nreports;
	atomic_ulong unexpected, closes, replaces, hotplugs, sigs, sigbus;
	atomic_ulong mmaps, polls;
	struct fz_thread thr[FZ_MAX_THREADS];
} fz;

/* A command uapi/krdma.h defines (the others are the fuzzer's unknowns). */
static bool fz_known(unsigned int nr)
{
	return nr >= KRDMA_CMD_BASE && nr <= KT_CMD_LAST;
}

static const char *fz_cmd_name(unsigned int nr)
{
	static const char *const names[] = {
		"GET_INFO", "QUERY_DEVICES", "DESTROY", "BUF_ALLOC",
		"BUF_REG_USER", "BUF_RW", "CONN_CREATE", "CONN_MODIFY",
		"CONN_QUERY", "CM_LISTEN", "CM_CONNECT", "CM_ACCEPT",
		"CM_REJECT", "CM_DISCONNECT", "GET_EVENTS", "POST", "POLL",
		"AH_CREATE", "SRQ_CREATE", "BENCH", "QUERY_SESSIONS",
	};
	_Static_assert(ARRAY_SIZE(names) == KT_CMD_LAST - KRDMA_CMD_BASE + 1,
		       "a name for every command");

	if (nr == FZ_MMAP)
		return "mmap";
	if (fz_known(nr))
		return names[nr - KRDMA_CMD_BASE];
	return "unknown";
}

/*
 * The errnos uapi/krdma.h documents: the contract common to all commands,
 * plus what each command's own comment adds.
 */
static bool fz_errno_documented(unsigned int nr, int err)
{
	switch (err) {
	case ENOTTY: case EFAULT: case EINVAL: case E2BIG: case EOPNOTSUPP:
	case ENOENT: case ENODEV: case EPERM: case EMSGSIZE: case ENOMEM:
	case EBUSY: case ENETDOWN: case ENOBUFS: case ENFILE:
		return true;
	case EINTR:	/* "a signal ended a call that waits" */
		return nr == KRDMA_CMD_POLL || nr == KRDMA_CMD_GET_EVENTS ||
		       nr == KRDMA_CMD_CM_CONNECT || nr == KRDMA_CMD_CM_ACCEPT ||
		       nr == KRDMA_CMD_BENCH ||
		       /* ... and a POST whose WRs' pages are faulted in */
		       nr == KRDMA_CMD_POST ||
		       /* ... and an iWARP PD's registration connection */
		       nr == KRDMA_CMD_BUF_ALLOC || nr == KRDMA_CMD_BUF_REG_USER;
	case EAGAIN:	/* the per-CPU threads of every run at once */
		return nr == KRDMA_CMD_BENCH;
	case EPROTONOSUPPORT:	/* iWARP: no connection by hand, UC, UD */
		return nr == KRDMA_CMD_CONN_CREATE ||
		       nr == KRDMA_CMD_CM_CONNECT || nr == KRDMA_CMD_CM_ACCEPT;
	case ETIMEDOUT: case ENETUNREACH: case EHOSTUNREACH:
		/* neighbour resolution of a RoCE peer */
		if (nr == KRDMA_CMD_CONN_MODIFY || nr == KRDMA_CMD_AH_CREATE ||
		    nr == KRDMA_CMD_CM_CONNECT)
			return true;
		break;
	}
	switch (nr) {
	case KRDMA_CMD_BUF_ALLOC:
	case KRDMA_CMD_BUF_REG_USER:
		/* an iWARP PD's registration connection */
		return err == EADDRNOTAVAIL || err == ENETUNREACH ||
		       err == EHOSTUNREACH || err == ETIMEDOUT ||
		       err == ECONNREFUSED || err == EADDRINUSE || err == EIO;
	case KRDMA_CMD_CM_LISTEN:
		return err == EADDRNOTAVAIL || err == EADDRINUSE ||
		       err == EAFNOSUPPORT || err == EACCES;
	case KRDMA_CMD_CM_CONNECT:
		return err == EADDRNOTAVAIL || err == ECONNREFUSED ||
		       err == EACCES ||
		       err == ECONNABORTED || err == EAFNOSUPPORT ||
		       err == ECONNRESET;
	case KRDMA_CMD_CM_ACCEPT:	/* the handshake's outcomes */
		return err == ETIMEDOUT || err == ECONNREFUSED ||
		       err == ECONNRESET || err == EHOSTUNREACH ||
		       err == ECONNABORTED;
	case KRDMA_CMD_BENCH:
		return err == ETIMEDOUT || err == EIO;
	}
	return false;
}

static void fz_record(unsigned int nr, int ret, int err, const void *arg,
		      bool arg_readable)
{
	struct fz_stat *st = &fz.stat[fz_known(nr) || nr == FZ_MMAP ? nr : 0];
	unsigned int i;

	st->calls++;
	if (!ret) {
		st->ok++;
		return;
	}
	st->err[err < 160 && err > 0 ? err : 0]++;
	/*
	 * EBADF: the fd was closed under us, which is the point; mmap(2) has
	 * errnos of its own.
	 */
	if (err == EBADF || nr == FZ_MMAP || fz_errno_documented(nr, err))
		return;
	fz.unexpected++;
	pthread_mutex_lock(&fz.report_lock);
	for (i = 0; i < fz.nreports; i++)
		if (fz.reports[i].nr == nr && fz.reports[i].err == err)
			break;
	if (i < fz.nreports) {
		fz.reports[i].count++;
	} else if (i < FZ_MAX_REPORTS) {
		struct fz_report *r = &fz.reports[fz.nreports++];

		r->nr = nr;
		r->err = err;
		r->count = 1;
		if (arg_readable) {
			memcpy(&r->size, arg, 4);
			memcpy(r->bytes, arg, sizeof(r->bytes));
		}
		if (fz.verbose)
			fprintf(stderr, "# fuzz: KRDMA_%s: unexpected errno %d (%s)\n",
				fz_cmd_name(nr), err, strerror(err));
	}
	pthread_mutex_unlock(&fz.report_lock);
}

/* ------------------------------------------------------- object pools */

static void fz_pool_add(int slot, const struct fz_obj *o)
{
	struct fz_slot *s = &fz.slots[slot];

	pthread_mutex_lock(&s->lock);
	if (s->n < FZ_POOL)
		s->obj[s->n++] = *o;
	else
		s->obj[o->handle % FZ_POOL] = *o;
	pthread_mutex_unlock(&s->lock);
}

/* A random remembered object of @kind (K_NONE: any); false if none. */
static bool fz_pool_pick(struct fz_thread *t, int slot, enum fz_kind kind,
			 struct fz_obj *o)
{
	struct fz_slot *s = &fz.slots[slot];
	unsigned int i, start;
	bool found = false;

	pthread_mutex_lock(&s->lock);
	if (s->n) {
		start = fz_below(&t->rng, s->n);
		for (i = 0; i < s->n; i++) {
			struct fz_obj *c = &s->obj[(start + i) % s->n];

			if (kind == K_NONE || c->kind == kind ||
			    (kind == K_CONN && c->kind == K_CMCONN)) {
				*o = *c;
				found = true;
				break;
			}
		}
	}
	pthread_mutex_unlock(&s->lock);
	return found;
}

static void fz_pool_forget(int slot, uint32_t handle)
{
	struct fz_slot *s = &fz.slots[slot];
	unsigned int i;

	pthread_mutex_lock(&s->lock);
	for (i = 0; i < s->n; i++)
		if (s->obj[i].handle == handle) {
			s->obj[i] = s->obj[--s->n];
			break;
		}
	pthread_mutex_unlock(&s->lock);
}

static void fz_pool_clear(int slot)
{
	pthread_mutex_lock(&fz.slots[slot].lock);
	fz.slots[slot].n = 0;
	pthread_mutex_unlock(&fz.slots[slot].lock);
}

/* A handle: mostly one of the session's objects, sometimes garbage. */
static uint32_t fz_handle(struct fz_thread *t, int slot, enum fz_kind kind)
{
	struct fz_obj o;

	if (fz_chance(&t->rng, 85) && fz_pool_pick(t, slot, kind, &o))
		return o.handle;
	if (fz_chance(&t->rng, 50) &&
	    fz_pool_pick(t, fz_below(&t->rng, FZ_SLOTS), K_NONE, &o))
		return o.handle;	/* another session's */
	return (uint32_t)fz_value(&t->rng);
}

static void fz_dev_refresh(int fd)
{
	struct krdma_snap s;
	struct fz_dev devs[FZ_MAX_DEVS];
	unsigned int n = 0, i, j;

	if (krdma_snap_get(fd, 0, 0, &s))
		return;
	for (i = 0; i < s.ndev && n < FZ_MAX_DEVS; i++) {
		struct krdma_device_info *d = &s.devs[i];
		struct krdma_port_info *p;

		if (!d->phys_port_cnt || d->first_port >= s.nport)
			continue;
		p = &s.ports[d->first_port];
		if (p->first_gid > s.ngid || p->num_gids > s.ngid - p->first_gid)
			continue;
		devs[n].dev_index = d->dev_index;
		devs[n].port_num = p->port_num;
		devs[n].gid_index = 0;
		memset(devs[n].gid, 0, 16);
		for (j = 0; j < p->num_gids; j++) {
			struct krdma_gid_info *g = &s.gids[p->first_gid + j];

			if (g->gid_type == KRDMA_GID_TYPE_ROCE_UDP_ENCAP) {
				devs[n].gid_index = g->gid_index;
				memcpy(devs[n].gid, g->gid, 16);
				if (kt_gid_is_v4mapped(g->gid, NULL))
					break;
			}
		}
		n++;
	}
	krdma_snap_free(&s);
	pthread_mutex_lock(&fz.dev_lock);
	/* devices that went away are good garbage */
	for (i = 0; i < fz.ndevs; i++) {
		for (j = 0; j < n; j++)
			if (devs[j].dev_index == fz.devs[i].dev_index)
				break;
		if (j == n)
			fz.stale_dev[fz.nstale++ % FZ_MAX_DEVS] = fz.devs[i].dev_index;
	}
	memcpy(fz.devs, devs, sizeof(devs));
	fz.ndevs = n;
	pthread_mutex_unlock(&fz.dev_lock);
}

static struct fz_dev fz_dev(struct fz_thread *t)
{
	struct fz_dev d = { .port_num = 1 };

	pthread_mutex_lock(&fz.dev_lock);
	if (fz.ndevs && fz_chance(&t->rng, 90)) {
		d = fz.devs[fz_below(&t->rng, fz.ndevs)];
	} else if (fz.nstale && fz_chance(&t->rng, 50)) {
		d.dev_index = fz.stale_dev[fz_below(&t->rng,
			fz.nstale < FZ_MAX_DEVS ? fz.nstale : FZ_MAX_DEVS)];
	} else {
		d.dev_index = (uint32_t)fz_value(&t->rng);
	}
	pthread_mutex_unlock(&fz.dev_lock);
	if (fz_chance(&t->rng, 5))
		d.port_num = (uint32_t)fz_value(&t->rng);
	if (fz_chance(&t->rng, 5))
		d.gid_index = fz_below(&t->rng, 300);
	return d;
}

/* ---------------------------------------------------------- pointers */

/* A user pointer for @len bytes: mostly good, sometimes anything but. */
static uint64_t fz_ptr(struct fz_thread *t, uint64_t len)
{
	uint64_t data_len = FZ_DATA_PAGES * page_size;
	uint8_t *guard = t->data + data_len;

	if (len > data_len)
		len = data_len;
	if (fz_chance(&t->rng, 85))
		return (uintptr_t)t->data + fz_below(&t->rng, data_len - len + 1);
	switch (fz_below(&t->rng, 10)) {
	case 0: return 0;
	case 1: return (uintptr_t)guard - len / 2 - 1;	/* runs into the guard */
	case 2: return (uintptr_t)guard;
	case 3: return (uintptr_t)fz.ro;
	case 4: return (uintptr_t)fz.none;
	case 5: return 0xffff888000000000ull + fz_below(&t->rng, 1 << 20);
	case 6: return (1ull << 47) - page_size + fz_below(&t->rng, page_size);
	case 7: return (uintptr_t)fz.ureg + fz_below(&t->rng, FZ_UREG_PAGES * page_size);
	case 8: return (uintptr_t)t->data + 1;
	default: return fz_value(&t->rng);
	}
}

static void fz_addr(struct fz_thread *t, struct krdma_sockaddr *a, bool any_ok)
{
	const char *s;

	memset(a, 0, sizeof(*a));
	switch (fz_below(&t->rng, 8)) {
	case 0: case 1: case 2:
		s = fz.addr4; break;
	case 3:
		s = fz.addr6; break;
	case 4:
		s = fz.addr4b; break;
	case 5:
		s = any_ok ? "0.0.0.0" : "192.0.2.99"; break;
	case 6:
		s = "::"; break;
	default:
		s = NULL; break;
	}
	if (s && strchr(s, ':')) {
		a->family = AF_INET6;
		inet_pton(AF_INET6, s, a->addr);
	} else if (s) {
		a->family = AF_INET;
		inet_pton(AF_INET, s, a->addr);
	} else {
		a->family = fz_chance(&t->rng, 50) ? fz_value(&t->rng) : AF_INET;
		for (unsigned int i = 0; i < 16; i++)
			a->addr[i] = fz_next(&t->rng);
	}
	a->port = 18515 + fz_below(&t->rng, 8);
	if (fz_chance(&t->rng, 5))
		a->scope_id = fz_value(&t->rng);
}

static void fz_caps(struct fz_thread *t, struct krdma_qp_caps *c)
{
	memset(c, 0, sizeof(*c));
	if (fz_chance(&t->rng, 50))
		return;
	c->max_send_wr = fz_chance(&t->rng, 90) ? fz_below(&t->rng, 64) : fz_value(&t->rng);
	c->max_recv_wr = fz_chance(&t->rng, 90) ? fz_below(&t->rng, 64) : fz_value(&t->rng);
	c->max_send_sge = fz_chance(&t->rng, 90) ? fz_below(&t->rng, 5) : fz_value(&t->rng);
	c->max_recv_sge = fz_chance(&t->rng, 90) ? fz_below(&t->rng, 5) : fz_value(&t->rng);
	c->max_inline_data = fz_chance(&t->rng, 90) ? fz_below(&t->rng, 256) : fz_value(&t->rng);
	c->cq_depth = fz_chance(&t->rng, 90) ? fz_below(&t->rng, 256) : fz_value(&t->rng);
}

/* Blocking commands wait a little; sometimes long (signals end that). */
static uint32_t fz_timeout(struct fz_thread *t)
{
	if (fz_chance(&t->rng, 5))
		return fz_chance(&t->rng, 50) ? 0 : 3000;
	return fz_below(&t->rng, 4) ? fz_below(&t->rng, 50) : fz_below(&t->rng, 500);
}

static uint32_t fz_entry_size(struct fz_thread *t, uint32_t size)
{
	switch (fz_below(&t->rng, 12)) {
	case 0: return 0;
	case 1: return size - 1 - fz_below(&t->rng, size - 1);
	case 2: return size + 1 + fz_below(&t->rng, 64);
	case 3: return (uint32_t)fz_value(&t->rng);
	default: return size;
	}
}

static uint32_t fz_count(struct fz_thread *t, uint32_t typical)
{
	return fz_chance(&t->rng, 90) ? fz_below(&t->rng, typical + 1)
				      : (uint32_t)fz_value(&t->rng);
}

/* --------------------------------------------------------- generators */

/*
 * Zero what @wr's opcode does not read (uapi/krdma.h): a WR is refused for
 * any of it.  A send's UD addressing is kept if @ud, the connection's
 * transport as far as the fuzzer knows.
 */
static void fz_wr_clear_unused(struct krdma_wr *wr, bool ud)
{
	uint32_t op = wr->opcode;
	bool rdma = op == KRDMA_OP_RDMA_WRITE || op == KRDMA_OP_RDMA_WRITE_WITH_IMM ||
		    op == KRDMA_OP_RDMA_READ;
	bool atomic = op == KRDMA_OP_ATOMIC_FETCH_ADD || op == KRDMA_OP_ATOMIC_CMP_SWP;

	if (op != KRDMA_OP_SEND_WITH_IMM && op != KRDMA_OP_RDMA_WRITE_WITH_IMM &&
	    op != KRDMA_OP_SEND_WITH_INV && op != KRDMA_OP_LOCAL_INV)
		wr->imm_data = 0;
	if (!rdma && !atomic) {
		wr->remote_addr = 0;
		wr->rkey = 0;
	}
	if (!atomic)
		wr->compare_add = 0;
	if (op != KRDMA_OP_ATOMIC_CMP_SWP)
		wr->swap = 0;
	if (!ud || (op != KRDMA_OP_SEND && op != KRDMA_OP_SEND_WITH_IMM)) {
		wr->ah_handle = 0;
		wr->remote_qpn = 0;
		wr->remote_qkey = 0;
	}
}

static void fz_wr(struct fz_thread *t, int slot, bool ud, struct krdma_wr *wr)
{
	struct fz_obj o;
	unsigned int i, nsge;

	memset(wr, 0, sizeof(*wr));
	wr->wr_id = fz_next(&t->rng);
	wr->opcode = fz_chance(&t->rng, 95) ? fz_below(&t->rng, KRDMA_OP_MAX + 1)
					    : (uint32_t)fz_value(&t->rng);
	wr->flags = fz_chance(&t->rng, 90) ? fz_below(&t->rng, 16) : (uint32_t)fz_value(&t->rng);
	nsge = fz_chance(&t->rng, 95) ? fz_below(&t->rng, 4) : fz_below(&t->rng, KRDMA_MAX_SGE + 3);
	wr->num_sge = nsge;
	for (i = 0; i < nsge && i < KRDMA_MAX_SGE; i++) {
		struct krdma_sge *sge = &wr->sge[i];

		if (fz_pool_pick(t, slot, fz_chance(&t->rng, 70) ? K_BUF : K_UBUF, &o) &&
		    fz_chance(&t->rng, 90)) {
			sge->buf_handle = o.handle;
			sge->offset = fz_chance(&t->rng, 90) ? fz_below(&t->rng, o.len ? o.len : 1)
							    : fz_value(&t->rng);
			sge->length = fz_chance(&t->rng, 90) ?
				fz_below(&t->rng, o.len - (sge->offset < o.len ? sge->offset : o.len) + 1) :
				(uint32_t)fz_value(&t->rng);
		} else {
			sge->buf_handle = fz_handle(t, slot, K_NONE);
			sge->offset = fz_value(&t->rng);
			sge->length = fz_value(&t->rng);
		}
		if (fz_chance(&t->rng, 3))
			sge->__reserved = fz_value(&t->rng);
		if (fz_chance(&t->rng, 3))
			sge->__reserved2 = fz_value(&t->rng);
	}
	if (fz_pool_pick(t, fz_below(&t->rng, FZ_SLOTS), K_BUF, &o) && fz_chance(&t->rng, 85)) {
		wr->rkey = o.rkey;
		wr->remote_addr = o.addr + (fz_chance(&t->rng, 80) ? fz_below(&t->rng, o.len) & ~7u
								   : fz_value(&t->rng));
	} else {
		wr->rkey = fz_value(&t->rng);
		wr->remote_addr = fz_value(&t->rng);
	}
	wr->imm_data = fz_next(&t->rng);
	wr->ah_handle = fz_handle(t, slot, K_AH);
	wr->remote_qpn = fz_chance(&t->rng, 50) && fz_pool_pick(t, slot, K_CONN, &o) ? o.qpn
										: (uint32_t)fz_value(&t->rng);
	wr->remote_qkey = fz_chance(&t->rng, 80) ? 0x11111111 : (uint32_t)fz_value(&t->rng);
	wr->compare_add = fz_value(&t->rng);
	wr->swap = fz_value(&t->rng);
	/* mostly, the fields the opcode does not read are 0, as they must be */
	if (fz_chance(&t->rng, 95))
		fz_wr_clear_unused(wr, ud);
}

/*
 * Fill @buf (zeroed, room for FZ_ARG_PAGES pages) with a plausible argument
 * for command @nr; the caller mutates it afterwards.  Returns the struct's
 * size.
 */
static uint32_t fz_gen(struct fz_thread *t, int slot, unsigned int nr, void *buf)
{
	struct fz_dev d;
	struct fz_obj o;

	switch (nr) {
	case KRDMA_CMD_GET_INFO:
		return sizeof(struct krdma_info);
	case KRDMA_CMD_QUERY_DEVICES: {
		struct krdma_query_devices *q = buf;

		d = fz_dev(t);
		if (fz_chance(&t->rng, 30)) {
			q->flags = KRDMA_QUERY_DEVICES_ONE;
			q->dev_index = d.dev_index;
		}
		q->num_devices = fz_count(t, 8);
		q->num_ports = fz_count(t, 8);
		q->num_gids = fz_count(t, 32);
		q->device_entry_size = fz_entry_size(t, sizeof(struct krdma_device_info));
		q->port_entry_size = fz_entry_size(t, sizeof(struct krdma_port_info));
		q->gid_entry_size = fz_entry_size(t, sizeof(struct krdma_gid_info));
		q->devices_uptr = fz_ptr(t, (uint64_t)q->num_devices * q->device_entry_size);
		q->ports_uptr = fz_ptr(t, (uint64_t)q->num_ports * q->port_entry_size);
		q->gids_uptr = fz_ptr(t, (uint64_t)q->num_gids * q->gid_entry_size);
		return sizeof(*q);
	}
	case KRDMA_CMD_DESTROY: {
		struct krdma_destroy *x = buf;

		x->handle = fz_handle(t, slot, K_NONE);
		return sizeof(*x);
	}
	case KRDMA_CMD_BUF_ALLOC: {
		struct krdma_buf_alloc *a = buf;

		a->dev_index = fz_dev(t).dev_index;
		a->access = fz_chance(&t->rng, 90) ? fz_below(&t->rng, 32) : (uint32_t)fz_value(&t->rng);
		a->length = fz_chance(&t->rng, 85) ? 1 + fz_below(&t->rng, 3 * page_size)
						   : fz_value(&t->rng);
		return sizeof(*a);
	}
	case KRDMA_CMD_BUF_REG_USER: {
		struct krdma_buf_reg_user *r = buf;
		uint64_t span = FZ_UREG_PAGES * page_size;
		uint64_t off = fz_below(&t->rng, span);

		r->dev_index = fz_dev(t).dev_index;
		r->access = fz_chance(&t->rng, 90) ? fz_below(&t->rng, 32) : (uint32_t)fz_value(&t->rng);
		if (fz_chance(&t->rng, 5))
			r->flags = KRDMA_BUF_REG_WINDOW;
		if (fz_chance(&t->rng, 80)) {
			r->uaddr = (uintptr_t)fz.ureg + off;
			r->length = 1 + fz_below(&t->rng, span - off);
		} else {
			r->uaddr = fz_ptr(t, 0);
			r->length = fz_value(&t->rng);
		}
		/* room for the rkeys of several MRs, or too little, or none */
		if (fz_chance(&t->rng, 30)) {
			r->num_rkeys = fz_below(&t->rng, 8);
			r->rkeys_uptr = fz_ptr(t, 4 * r->num_rkeys);
		}
		return sizeof(*r);
	}
	case KRDMA_CMD_BUF_RW: {
		struct krdma_buf_rw *rw = buf;
		bool have = fz_pool_pick(t, slot, K_BUF, &o);

		rw->flags = fz_below(&t->rng, 2) ? KRDMA_BUF_RW_WRITE : 0;
		rw->handle = have && fz_chance(&t->rng, 90) ? o.handle : fz_handle(t, slot, K_NONE);
		if (have && fz_chance(&t->rng, 80)) {
			rw->offset = fz_below(&t->rng, o.len + 1);
			rw->length = fz_below(&t->rng, o.len - rw->offset + 1);
		} else {
			rw->offset = fz_value(&t->rng);
			rw->length = fz_value(&t->rng);
		}
		rw->data_uptr = fz_ptr(t, rw->length);
		return sizeof(*rw);
	}
	case KRDMA_CMD_CONN_CREATE: {
		struct krdma_conn_create *c = buf;

		d = fz_dev(t);
		c->dev_index = d.dev_index;
		c->port_num = d.port_num;
		c->gid_index = d.gid_index;
		c->transport = fz_chance(&t->rng, 95) ? fz_below(&t->rng, 3) : (uint32_t)fz_value(&t->rng);
		c->flags = fz_below(&t->rng, 4);
		c->srq_handle = (c->flags & KRDMA_CONN_SRQ) ? fz_handle(t, slot, K_SRQ) : 0;
		fz_caps(t, &c->caps);
		return sizeof(*c);
	}
	case KRDMA_CMD_CONN_MODIFY: {
		struct krdma_conn_modify *m = buf;
		struct fz_obj peer;

		m->handle = fz_handle(t, slot, K_CONN);
		if (fz_pool_pick(t, fz_below(&t->rng, FZ_SLOTS), K_CONN, &peer)) {
			m->dest_qp_num = peer.qpn;
			memcpy(m->dest_gid, peer.gid, 16);
		} else {
			m->dest_qp_num = fz_value(&t->rng);
			d = fz_dev(t);
			memcpy(m->dest_gid, d.gid, 16);
		}
		m->dest_psn = fz_chance(&t->rng, 50) ? 0 : (uint32_t)fz_next(&t->rng);
		if (fz_chance(&t->rng, 10))
			m->dest_lid = fz_value(&t->rng);
		if (fz_chance(&t->rng, 30))
			m->path_mtu = fz_chance(&t->rng, 70) ? 256u << fz_below(&t->rng, 5)
							     : (uint32_t)fz_value(&t->rng);
		if (fz_chance(&t->rng, 30)) {
			m->flags = KRDMA_CONN_MODIFY_RC_ATTRS;
			m->timeout = fz_below(&t->rng, 34);
			m->retry_cnt = fz_below(&t->rng, 9);
			m->rnr_retry = fz_below(&t->rng, 9);
			m->min_rnr_timer = fz_below(&t->rng, 34);
			m->access = fz_below(&t->rng, 32);
		}
		if (fz_chance(&t->rng, 20))
			m->max_rd_atomic = fz_count(t, 32);
		if (fz_chance(&t->rng, 20))
			m->max_dest_rd_atomic = fz_count(t, 32);
		if (fz_chance(&t->rng, 20))
			m->qkey = fz_value(&t->rng);
		return sizeof(*m);
	}
	case KRDMA_CMD_CONN_QUERY: {
		struct krdma_conn_query *q = buf;

		q->handle = fz_handle(t, slot, K_CONN);
		return sizeof(*q);
	}
	case KRDMA_CMD_CM_LISTEN: {
		struct krdma_cm_listen *l = buf;

		fz_addr(t, &l->addr, true);
		if (fz_chance(&t->rng, 10))
			l->addr.port = 0;
		l->backlog = fz_count(t, 8);
		l->transport = fz_chance(&t->rng, 95) ? fz_below(&t->rng, 3) : (uint32_t)fz_value(&t->rng);
		return sizeof(*l);
	}
	case KRDMA_CMD_CM_CONNECT: {
		struct krdma_cm_connect *c = buf;

		fz_addr(t, &c->dst, false);
		if (fz_pool_pick(t, fz_below(&t->rng, FZ_SLOTS), K_LISTEN, &o) &&
		    fz_chance(&t->rng, 70))
			c->dst.port = o.port;
		if (fz_chance(&t->rng, 30))
			fz_addr(t, &c->src, true);
		if (c->src.family == c->dst.family)
			c->src.port = 0;
		c->transport = fz_chance(&t->rng, 95) ? fz_below(&t->rng, 3) : (uint32_t)fz_value(&t->rng);
		c->timeout_ms = 50 + fz_timeout(t);
		c->flags = fz_below(&t->rng, 4);
		c->srq_handle = (c->flags & KRDMA_CONN_SRQ) ? fz_handle(t, slot, K_SRQ) : 0;
		fz_caps(t, &c->caps);
		c->private_data_len = fz_chance(&t->rng, 90) ? fz_below(&t->rng, 57)
							    : (uint32_t)fz_value(&t->rng);
		for (unsigned int i = 0; i < sizeof(c->private_data); i++)
			c->private_data[i] = fz_next(&t->rng);
		return sizeof(*c);
	}
	case KRDMA_CMD_CM_ACCEPT:
	case KRDMA_CMD_CM_REJECT: {
		struct krdma_cm_accept *a = buf;

		a->handle = fz_handle(t, slot, K_CMCONN);
		if (nr == KRDMA_CMD_CM_ACCEPT) {
			a->flags = fz_below(&t->rng, 4);
			a->srq_handle = (a->flags & KRDMA_CONN_SRQ) ? fz_handle(t, slot, K_SRQ) : 0;
			fz_caps(t, &a->caps);
			a->timeout_ms = 50 + fz_timeout(t);
		}
		a->private_data_len = fz_chance(&t->rng, 90) ? fz_below(&t->rng, 197)
							    : (uint32_t)fz_value(&t->rng);
		for (unsigned int i = 0; i < sizeof(a->private_data); i++)
			a->private_data[i] = fz_next(&t->rng);
		return sizeof(*a);
	}
	case KRDMA_CMD_CM_DISCONNECT: {
		struct krdma_cm_disconnect *x = buf;

		x->handle = fz_handle(t, slot, K_CMCONN);
		return sizeof(*x);
	}
	case KRDMA_CMD_GET_EVENTS: {
		struct krdma_get_events *e = buf;

		e->num_events = fz_count(t, 8);
		e->event_entry_size = fz_entry_size(t, sizeof(struct krdma_event));
		e->timeout_ms = fz_timeout(t);
		e->events_uptr = fz_ptr(t, (uint64_t)e->num_events * e->event_entry_size);
		return sizeof(*e);
	}
	case KRDMA_CMD_POST: {
		struct krdma_post *p = buf;
		struct krdma_wr *wrs = (void *)t->data;
		unsigned int i, n = fz_below(&t->rng, 6);
		bool ud = fz_chance(&t->rng, 50);	/* a CM connection's: unknown */

		if (fz_chance(&t->rng, 85) && fz_pool_pick(t, slot, K_CONN, &o)) {
			p->handle = o.handle;
			if (o.kind == K_CONN)
				ud = o.transport == KRDMA_TRANSPORT_UD;
		} else {
			p->handle = fz_handle(t, slot, K_CONN);
		}
		for (i = 0; i < n; i++)
			fz_wr(t, slot, ud, &wrs[i]);
		p->num_wrs = fz_chance(&t->rng, 95) ? n : (uint32_t)fz_value(&t->rng);
		p->wr_entry_size = fz_entry_size(t, sizeof(struct krdma_wr));
		p->wrs_uptr = fz_chance(&t->rng, 90) ? (uintptr_t)wrs : fz_ptr(t, 0);
		if (fz_chance(&t->rng, 30)) {
			/* and reap, into the rest of the data area */
			p->flags = KRDMA_POST_POLL;
			p->num_wcs = fz_count(t, 8);
			p->wc_entry_size = fz_entry_size(t, sizeof(struct krdma_wc));
			p->timeout_ms = fz_timeout(t);
			p->wcs_uptr = fz_ptr(t, (uint64_t)p->num_wcs * p->wc_entry_size);
		}
		return sizeof(*p);
	}
	case KRDMA_CMD_POLL: {
		struct krdma_poll *p = buf;

		p->handle = fz_handle(t, slot, K_CONN);
		p->num_wcs = fz_count(t, 16);
		p->wc_entry_size = fz_entry_size(t, sizeof(struct krdma_wc));
		p->timeout_ms = fz_timeout(t);
		p->wcs_uptr = fz_ptr(t, (uint64_t)p->num_wcs * p->wc_entry_size);
		return sizeof(*p);
	}
	case KRDMA_CMD_AH_CREATE: {
		struct krdma_ah_create *a = buf;

		a->conn_handle = fz_handle(t, slot, K_CONN);
		if (fz_pool_pick(t, slot, K_CONN, &o))
			memcpy(a->dest_gid, o.gid, 16);
		else
			memcpy(a->dest_gid, fz_dev(t).gid, 16);
		if (fz_chance(&t->rng, 10))
			a->dest_lid = fz_value(&t->rng);
		if (fz_chance(&t->rng, 10))
			a->dest_gid[fz_below(&t->rng, 16)] ^= 1 << fz_below(&t->rng, 8);
		return sizeof(*a);
	}
	case KRDMA_CMD_SRQ_CREATE: {
		struct krdma_srq_create *s = buf;

		s->dev_index = fz_dev(t).dev_index;
		s->max_wr = fz_count(t, 64);
		s->max_sge = fz_count(t, 4);
		return sizeof(*s);
	}
	case KRDMA_CMD_BENCH: {
		struct krdma_bench *b = buf;
		uint32_t *conns = (void *)(t->data + 8 * page_size);
		unsigned int i, n = 1 + fz_below(&t->rng, 3);

		b->flags = fz_below(&t->rng, 16);
		b->opcode = fz_chance(&t->rng, 95) ? fz_below(&t->rng, KRDMA_OP_MAX)
						   : (uint32_t)fz_value(&t->rng);
		for (i = 0; i < n; i++)
			conns[i] = fz_handle(t, slot, K_CONN);
		b->num_conns = fz_chance(&t->rng, 90) ? n : (uint32_t)fz_value(&t->rng);
		b->conns_uptr = fz_chance(&t->rng, 90) ? (uintptr_t)conns : fz_ptr(t, 0);
		if (fz_pool_pick(t, slot, K_BUF, &o)) {
			b->local_buf = o.handle;
			b->msg_size = 1 + fz_below(&t->rng, o.len);
		} else {
			b->local_buf = fz_handle(t, slot, K_BUF);
			b->msg_size = fz_value(&t->rng);
		}
		/* mostly where it may be: a one-sided client's */
		if ((fz_chance(&t->rng, 5) ||
		     (!(b->flags & KRDMA_BENCH_SERVER) &&
		      b->opcode != KRDMA_OP_SEND && b->opcode != KRDMA_OP_SEND_WITH_IMM)) &&
		    fz_pool_pick(t, fz_below(&t->rng, FZ_SLOTS), K_BUF, &o)) {
			b->remote_addr = o.addr;
			b->remote_length = o.len;
			b->remote_rkey = o.rkey;
		}
		b->tx_depth = fz_count(t, 16);
		b->iters = fz_chance(&t->rng, 90) ? fz_below(&t->rng, 64) : fz_value(&t->rng);
		b->duration_ms = fz_below(&t->rng, 200);
		b->signal_every = fz_count(t, 8);
		b->inline_size = fz_count(t, 64);
		b->timeout_ms = 50 + fz_timeout(t);
		if (fz_chance(&t->rng, 30))
			b->progress_uptr = fz_ptr(t, sizeof(struct krdma_bench_progress));
		/* latency samples: mostly a latency run's, mostly named whole */
		if ((b->flags & KRDMA_BENCH_LATENCY) ? fz_chance(&t->rng, 60) :
						       fz_chance(&t->rng, 5)) {
			b->max_samples = fz_chance(&t->rng, 90) ? fz_count(t, 64) :
								fz_value(&t->rng);
			b->samples_uptr = fz_chance(&t->rng, 95) ?
					  fz_ptr(t, 64 * sizeof(uint64_t)) : 0;
		}
		return sizeof(*b);
	}
	case KRDMA_CMD_QUERY_SESSIONS: {
		struct krdma_query_sessions *q = buf;

		/* the shared sessions and the fixture's, and their conns */
		q->num_sessions = fz_count(t, 8);
		q->num_conns = fz_count(t, 128);
		q->session_entry_size = fz_entry_size(t, sizeof(struct krdma_session_info));
		q->conn_entry_size = fz_entry_size(t, sizeof(struct krdma_conn_info));
		q->sessions_uptr = fz_ptr(t, (uint64_t)q->num_sessions * q->session_entry_size);
		q->conns_uptr = fz_ptr(t, (uint64_t)q->num_conns * q->conn_entry_size);
		return sizeof(*q);
	}
	}
	/* an unknown command: any bytes */
	return 8 + fz_below(&t->rng, 256);
}

/* What a successful call created or taught us. */
static void fz_learn(struct fz_thread *t, int slot, unsigned int nr, void *buf)
{
	struct fz_obj o = {};

	switch (nr) {
	case KRDMA_CMD_QUERY_DEVICES:
		return;
	case KRDMA_CMD_DESTROY:
		fz_pool_forget(slot, ((struct krdma_destroy *)buf)->handle);
		return;
	case KRDMA_CMD_CM_REJECT:
		fz_pool_forget(slot, ((struct krdma_cm_accept *)buf)->handle);
		return;
	case KRDMA_CMD_BUF_ALLOC: {
		struct krdma_buf_alloc *a = buf;

		o = (struct fz_obj){ .kind = K_BUF, .handle = a->handle,
			.dev_index = a->dev_index, .addr = a->addr,
			.len = a->length, .rkey = a->rkey,
			.mmap_offset = a->mmap_offset };
		break;
	}
	case KRDMA_CMD_BUF_REG_USER: {
		struct krdma_buf_reg_user *r = buf;

		o = (struct fz_obj){ .kind = K_UBUF, .handle = r->handle,
			.dev_index = r->dev_index, .addr = r->addr,
			.len = r->length, .rkey = r->rkey };
		break;
	}
	case KRDMA_CMD_CONN_CREATE: {
		struct krdma_conn_create *c = buf;

		o = (struct fz_obj){ .kind = K_CONN, .handle = c->handle,
			.dev_index = c->dev_index, .qpn = c->qp_num,
			.transport = c->transport };
		memcpy(o.gid, c->gid, 16);
		break;
	}
	case KRDMA_CMD_CM_LISTEN: {
		struct krdma_cm_listen *l = buf;

		o = (struct fz_obj){ .kind = K_LISTEN, .handle = l->handle,
			.port = l->port };
		break;
	}
	case KRDMA_CMD_CM_CONNECT: {
		struct krdma_cm_connect *c = buf;

		o = (struct fz_obj){ .kind = K_CMCONN, .handle = c->handle,
			.dev_index = c->dev_index, .qpn = c->qp_num };
		break;
	}
	case KRDMA_CMD_GET_EVENTS: {
		struct krdma_get_events *e = buf;
		unsigned int i;

		/* new connections to accept or reject */
		if (e->event_entry_size < sizeof(struct krdma_event) ||
		    e->events_uptr < (uintptr_t)t->data ||
		    e->events_uptr + (uint64_t)e->num_events * e->event_entry_size >
		    (uintptr_t)t->data + FZ_DATA_PAGES * page_size)
			return;
		for (i = 0; i < e->num_events && i < 64; i++) {
			struct krdma_event *ev = (void *)(uintptr_t)
				(e->events_uptr + (uint64_t)i * e->event_entry_size);

			if (ev->type == KRDMA_EVENT_CONNECT_REQUEST) {
				o = (struct fz_obj){ .kind = K_CMCONN, .handle = ev->handle };
				fz_pool_add(slot, &o);
			}
		}
		return;
	}
	case KRDMA_CMD_AH_CREATE:
		o = (struct fz_obj){ .kind = K_AH,
			.handle = ((struct krdma_ah_create *)buf)->handle };
		break;
	case KRDMA_CMD_SRQ_CREATE:
		o = (struct fz_obj){ .kind = K_SRQ,
			.handle = ((struct krdma_srq_create *)buf)->handle };
		break;
	default:
		return;
	}
	fz_pool_add(slot, &o);
	(void)t;
}

/* ----------------------------------------------------------- mutation */

static void fz_mutate(struct fz_thread *t, uint8_t *buf, uint32_t *size,
		      uint32_t room)
{
	unsigned int n = 1 + fz_below(&t->rng, 3), i;

	for (i = 0; i < n; i++) {
		/* offsets inside what the generator filled, at most @room */
		uint32_t span = *size < room - 72 ? *size : room - 72;
		uint32_t off;

		switch (fz_below(&t->rng, 9)) {
		case 0:	/* short */
			*size = fz_below(&t->rng, *size);
			break;
		case 1:	/* long, zero tail */
			*size += 1 + fz_below(&t->rng, 64);
			break;
		case 2:	/* long, non-zero tail */
			off = span + fz_below(&t->rng, 64);
			*size = off + 1 + fz_below(&t->rng, 8);
			buf[off] = 1 + fz_below(&t->rng, 255);
			break;
		case 3:	/* much longer, or absurd */
			*size = fz_chance(&t->rng, 50) ? room : (uint32_t)fz_value(&t->rng);
			break;
		case 4:	/* flags */
			((uint32_t *)buf)[1] = fz_chance(&t->rng, 50) ? 1u << fz_below(&t->rng, 32)
								       : (uint32_t)fz_value(&t->rng);
			break;
		case 5: case 6: /* a 32-bit field */
			off = 8 + 4 * fz_below(&t->rng, (span > 8 ? span - 8 : 4) / 4 + 1);
			if (off + 4 <= room)
				*(uint32_t *)(buf + off) = fz_value(&t->rng);
			break;
		case 7: /* a 64-bit field */
			off = 8 * fz_below(&t->rng, span / 8 + 1);
			if (off < 8)
				off = 8;
			if (off + 8 <= room)
				*(uint64_t *)(buf + off) = fz_value(&t->rng);
			break;
		default: /* bits */
			off = fz_below(&t->rng, span ? span : 1);
			if (off < room)
				buf[off] ^= 1 << fz_below(&t->rng, 8);
			break;
		}
	}
}

/* ------------------------------------------------------------ workers */

static __thread struct fz_thread *fz_self;

static void fz_on_signal(int sig, siginfo_t *si, void *uc)
{
	struct fz_thread *t = fz_self;

	if ((sig == SIGBUS || sig == SIGSEGV) && t && t->in_touch) {
		t->in_touch = 0;
		siglongjmp(t->jmp, 1);
	}
	/*
	 * The fuzzer's own fault: say where, and die of it (a fault while
	 * saying so, too: the default action is back first).
	 */
	if (sig == SIGBUS || sig == SIGSEGV) {
		void *bt[32];
		char msg[96];
		int n;

		signal(sig, SIG_DFL);
		n = snprintf(msg, sizeof(msg),
			     "# fuzz: signal %d (code %d) at %p, worker %d\n",
			     sig, si->si_code, si->si_addr, t ? t->index : -1);
		write(2, msg, n);
		n = backtrace(bt, 32);
		backtrace_symbols_fd(bt, n, 2);
	}
	(void)uc;
}

static unsigned int fz_pick_nr_any(struct fz_thread *t);

static unsigned int fz_pick_nr(struct fz_thread *t)
{
	for (;;) {
		unsigned int nr = fz_pick_nr_any(t);

		if (!fz.only || (fz.only & (fz_known(nr) ? 1ull << (nr - KRDMA_CMD_BASE)
							 : 1ull << 63)))
			return nr;
	}
}

static unsigned int fz_pick_nr_any(struct fz_thread *t)
{
	static const unsigned char weights[] = {
		/* GET_INFO .. QUERY_SESSIONS */
		2, 3, 8, 8, 5, 6, 8, 8, 3, 4, 5, 4, 3, 3, 5, 8, 6, 3, 2, 2, 3,
	};
	unsigned int total = 0, i, r;

	_Static_assert(ARRAY_SIZE(weights) == KT_CMD_LAST - KRDMA_CMD_BASE + 1,
		       "a weight for every command");

	if (fz_chance(&t->rng, 3))
		return FZ_NR_MIN + fz_below(&t->rng, FZ_NR_MAX - FZ_NR_MIN + 1);
	for (i = 0; i < ARRAY_SIZE(weights); i++)
		total += weights[i];
	r = fz_below(&t->rng, total);
	for (i = 0; i < ARRAY_SIZE(weights); i++) {
		if (r < weights[i])
			return KRDMA_CMD_BASE + i;
		r -= weights[i];
	}
	return KRDMA_CMD_BASE;
}

static void fz_ioctl(struct fz_thread *t)
{
	int slot = fz_below(&t->rng, FZ_SLOTS);
	unsigned int nr = fz_pick_nr(t);
	uint32_t room = FZ_ARG_PAGES * page_size, size;
	unsigned long cmd = _IO(KRDMA_TYPE, nr);
	uint8_t *buf = t->arg, *argp;
	bool readable = true, mutated = false;
	int ret, err;

	memset(buf, 0, room);
	size = fz_gen(t, slot, nr, buf);
	if (!fz_known(nr)) {
		for (uint32_t i = 8; i < size; i++)
			buf[i] = fz_chance(&t->rng, 50) ? 0 : fz_next(&t->rng);
	}
	if (fz_chance(&t->rng, 40)) {
		fz_mutate(t, buf, &size, room);
		mutated = true;
	}
	*(uint32_t *)buf = size;
	/* the command word: sometimes with a direction and size encoded */
	if (fz_chance(&t->rng, 3))
		cmd = _IOC(fz_below(&t->rng, 4), KRDMA_TYPE, nr, fz_below(&t->rng, 1 << 14));
	else if (fz_chance(&t->rng, 1))
		cmd = _IO(fz_below(&t->rng, 256), nr);
	argp = buf;
	if (fz_chance(&t->rng, 4)) {
		readable = false;
		switch (fz_below(&t->rng, 5)) {
		case 0: argp = NULL; break;
		case 1: argp = fz.none; break;
		case 2: argp = fz.ro; break;	/* all zero: size 0 */
		case 3: argp = (uint8_t *)(uintptr_t)0xffff888000001000ull; break;
		default: {
			/* the struct runs into the guard page */
			uint32_t in = (size < room ? size : room) / 2;

			argp = t->arg + room - (in > 4 ? in : 4);
			memmove(argp, buf, t->arg + room - argp);
			break;
		}
		}
	}
	(void)mutated;
	t->cur_since = kt_now_ms();
	t->cur_nr = nr;
	ret = ioctl(FZ_FD_BASE + slot, cmd, argp);
	err = errno;
	t->cur_nr = 0;
	fz_record(nr, ret, err, buf, readable);
	if (!ret && argp == buf && cmd == _IO(KRDMA_TYPE, nr))
		fz_learn(t, slot, nr, buf);
	if (!ret && nr == KRDMA_CMD_QUERY_DEVICES && fz_chance(&t->rng, 20))
		fz_dev_refresh(FZ_FD_BASE + slot);
}

/* mmap a buffer (or garbage), read its first byte, unmap. */
static void fz_mmap(struct fz_thread *t)
{
	int slot = fz_below(&t->rng, FZ_SLOTS);
	uint64_t off, len;
	struct fz_obj o;
	void *p;

	if (fz_pool_pick(t, slot, K_BUF, &o) && fz_chance(&t->rng, 85)) {
		off = o.mmap_offset;
		len = (o.len + page_size - 1) / page_size * page_size;
		if (fz_chance(&t->rng, 20))
			len += page_size * (1 + fz_below(&t->rng, 3));
		if (fz_chance(&t->rng, 10))
			off += page_size;
	} else {
		off = fz_value(&t->rng) & ~(uint64_t)(page_size - 1);
		len = page_size * (1 + fz_below(&t->rng, 4));
	}
	fz.mmaps++;
	p = mmap(NULL, len, fz_chance(&t->rng, 80) ? PROT_READ | PROT_WRITE : PROT_READ,
		 fz_chance(&t->rng, 90) ? MAP_SHARED : MAP_PRIVATE,
		 FZ_FD_BASE + slot, off);
	fz_record(FZ_MMAP, p == MAP_FAILED ? -1 : 0, errno, NULL, false);
	if (p == MAP_FAILED)
		return;
	if (!sigsetjmp(t->jmp, 1)) {
		t->in_touch = 1;
		(void)*(volatile uint8_t *)p;
		t->in_touch = 0;
	} else {
		fz.sigbus++;
	}
	munmap(p, len);
}

static void fz_poll(struct fz_thread *t)
{
	struct pollfd pfd[FZ_SLOTS];
	int i;

	for (i = 0; i < FZ_SLOTS; i++)
		pfd[i] = (struct pollfd){ .fd = FZ_FD_BASE + i,
					  .events = POLLIN | POLLOUT | POLLPRI };
	fz.polls++;
	t->cur_since = kt_now_ms();
	t->cur_nr = 1;
	poll(pfd, FZ_SLOTS, fz_below(&t->rng, 20));
	t->cur_nr = 0;
}

static void *fz_worker(void *arg)
{
	struct fz_thread *t = arg;
	sigset_t set;

	fz_self = t;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	while (!fz.stop) {
		unsigned int r = fz_below(&t->rng, 100);

		if (r < 3)
			fz_mmap(t);
		else if (r < 5)
			fz_poll(t);
		else
			fz_ioctl(t);
	}
	t->done = true;
	return NULL;
}

/* Replace or close the shared sessions under the workers. */
static void *fz_closer(void *arg)
{
	uint64_t rng = fz.seed ^ 0xc105e5;

	(void)arg;
	while (!fz.stop) {
		int slot = fz_below(&rng, FZ_SLOTS);
		int fd;

		usleep(20000 + fz_below(&rng, 200000));
		fz_pool_clear(slot);
		if (fz_chance(&rng, 30)) {
			/* a window in which the fd is closed: EBADF */
			close(FZ_FD_BASE + slot);
			fz.closes++;
			usleep(fz_below(&rng, 2000));
		}
		fd = krdma_open();
		if (fd < 0)
			continue;
		/* closes the old one if open */
		dup3(fd, FZ_FD_BASE + slot, O_CLOEXEC);
		close(fd);
		fz.replaces++;
	}
	return NULL;
}

/* Signals end long waits (and test every EINTR path). */
static void *fz_signaller(void *arg)
{
	uint64_t rng = fz.seed ^ 0x5195;

	(void)arg;
	while (!fz.stop) {
		usleep(50000 + fz_below(&rng, 200000));
		pthread_kill(fz.thr[fz_below(&rng, fz.nthreads)].tid, SIGUSR1);
		fz.sigs++;
	}
	return NULL;
}

static bool fz_path_exists(const char *fmt, const char *name)
{
	char path[256];
	struct stat st;

	snprintf(path, sizeof(path), fmt, name);
	return !stat(path, &st);
}

/* rdma link add/delete of FZ_DEV, now and then a link flap. */
static void *fz_hotplug(void *arg)
{
	uint64_t rng = fz.seed ^ 0x4077;
	int fd = krdma_open();

	(void)arg;
	while (!fz.stop) {
		usleep(200000 + fz_below(&rng, 1000000));
		if (fz.stop)
			break;
		if (fz_path_exists(SYSFS_IB "/%s", FZ_DEV)) {
			if (fz_chance(&rng, 15)) {
				krdma_run("ip link set " FZ_NETDEV " down; ip link set " FZ_NETDEV " up");
			} else {
				krdma_run("rdma link delete " FZ_DEV);
				fz.hotplugs++;
			}
		} else {
			krdma_run("rdma link add " FZ_DEV " type rxe netdev " FZ_NETDEV);
			fz.hotplugs++;
		}
		if (fd >= 0)
			fz_dev_refresh(fd);
	}
	if (fd >= 0)
		close(fd);
	return NULL;
}

/* ------------------------------------------------------------- fixture */

static unsigned long fz_env(const char *name, unsigned long def)
{
	const char *v = getenv(name);

	return v && *v ? strtoul(v, NULL, 0) : def;
}

/*
 * @pages of memory with FZ_RESERVE of PROT_NONE address space on either
 * side.  Above: output arrays with absurd entry sizes and counts written
 * from here fault (EFAULT) instead of running on into other memory.
 * Below as well: a mutated pointer (a flipped bit, a new low half) moves
 * by less than the reserve, and the kernel must not be handed the
 * fuzzer's own stacks or malloc arenas, which the allocator would put
 * right under the mapping (the kernel writes there as asked, and the
 * fuzzer dies of it).
 */
#define FZ_RESERVE (256ull << 30)

static void *fz_map(size_t pages, int prot)
{
	uint8_t *p = mmap(NULL, pages * page_size + 2 * FZ_RESERVE, PROT_NONE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	p += FZ_RESERVE;
	if (mprotect(p, pages * page_size, prot))
		return NULL;
	return p;
}

FIXTURE(fuzz)
{
	bool made_netdev;
	int fd;
	struct krdma_info info;
};

FIXTURE_SETUP(fuzz)
{
	self->fd = kt_session_open(_metadata);
	if (self->fd < 0)
		return;
	ASSERT_OK(krdma_info_get(self->fd, &self->info));
	if (fz_env("KRDMA_FUZZ_HOTPLUG", 1) && krdma_have_cmd("rdma")) {
		if (fz_path_exists(SYSFS_IB "/%s", FZ_DEV))
			krdma_run("rdma link delete " FZ_DEV);
		if (!fz_path_exists("/sys/class/net/%s", FZ_NETDEV)) {
			if (!krdma_run("ip link add " FZ_NETDEV " type dummy"))
				self->made_netdev = true;
		}
		krdma_run("ip link set " FZ_NETDEV " up");
	}
}

FIXTURE_TEARDOWN(fuzz)
{
	if (fz_path_exists(SYSFS_IB "/%s", FZ_DEV))
		krdma_run("rdma link delete " FZ_DEV);
	if (self->made_netdev)
		krdma_run("ip link delete " FZ_NETDEV);
	if (self->fd >= 0)
		close(self->fd);
}

static void fz_print_stats(struct __test_metadata *_metadata)
{
	unsigned int nr, e;

	for (nr = 0; nr <= FZ_MMAP; nr++) {
		struct fz_stat *st = &fz.stat[nr];
		char line[512];
		int len;

		if (!st->calls)
			continue;
		len = snprintf(line, sizeof(line), "%-14s %7lu calls %6lu ok",
			       nr ? fz_cmd_name(nr) : "unknown", (unsigned long)st->calls,
			       (unsigned long)st->ok);
		for (e = 0; e < 160 && len < (int)sizeof(line) - 24; e++)
			if (st->err[e])
				len += snprintf(line + len, sizeof(line) - len, " %s:%lu",
						e ? strerrorname_np(e) ?: "?" : "?",
						(unsigned long)st->err[e]);
		TH_LOG("%s", line);
	}
}

KRDMA_TEST_F_TIMEOUT(fuzz, random_ioctls, 100000)
{
	unsigned long duration = fz_env("KRDMA_FUZZ_DURATION", 60);
	pthread_t closer, signaller, hotplug;
	bool hot = fz_env("KRDMA_FUZZ_HOTPLUG", 1) && krdma_have_cmd("rdma") &&
		   fz_path_exists("/sys/class/net/%s", FZ_NETDEV);
	struct sigaction sa = { .sa_sigaction = fz_on_signal, .sa_flags = SA_SIGINFO };
	uint64_t start, deadline;
	uint64_t mark;
	int i, stuck = 0;
	struct krdma_info info;
	long pinned;

	page_size = sysconf(_SC_PAGESIZE);
	fz.nthreads = fz_env("KRDMA_FUZZ_THREADS", 4);
	if (fz.nthreads < 1)
		fz.nthreads = 1;
	if (fz.nthreads > FZ_MAX_THREADS)
		fz.nthreads = FZ_MAX_THREADS;
	fz.seed = fz_env("KRDMA_FUZZ_SEED", 0);
	if (!fz.seed)
		fz.seed = (uint64_t)time(NULL) * 2654435761u ^ getpid();
	fz.verbose = fz_env("KRDMA_FUZZ_VERBOSE", 0);
	if (getenv("KRDMA_FUZZ_ONLY")) {
		char *list = strdup(getenv("KRDMA_FUZZ_ONLY")), *tok, *save;
		unsigned int nr;

		for (tok = strtok_r(list, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
			if (!strcmp(tok, "unknown"))
				fz.only |= 1ull << 63;
			for (nr = KRDMA_CMD_BASE; nr <= KT_CMD_LAST; nr++)
				if (!strcmp(tok, fz_cmd_name(nr)))
					fz.only |= 1ull << (nr - KRDMA_CMD_BASE);
		}
		free(list);
		ASSERT_NE(0ull, fz.only) {
			TH_LOG("KRDMA_FUZZ_ONLY names no command");
		}
		TH_LOG("only %s", getenv("KRDMA_FUZZ_ONLY"));
	}
	fz.addr4 = kt_test_addr(false);
	fz.addr6 = kt_test_addr(true) ?: "2001:db8::1";
	fz.addr4b = getenv("RXE1_ADDR") ?: "192.0.2.11";
	TH_LOG("seed %llu, %d threads, %lu s, hotplug %s (KRDMA_FUZZ_SEED, "
	       "KRDMA_FUZZ_THREADS, KRDMA_FUZZ_DURATION, KRDMA_FUZZ_HOTPLUG)",
	       (unsigned long long)fz.seed, fz.nthreads, duration, hot ? "on" : "off");

	{
		/* backtrace() loads libgcc on first use: not in the handler */
		void *bt[1];

		backtrace(bt, 1);
	}
	sigaction(SIGUSR1, &sa, NULL);	/* no SA_RESTART: EINTR */
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigaction(SIGBUS, &sa, NULL);
	sigaction(SIGSEGV, &sa, NULL);
	pthread_mutex_init(&fz.dev_lock, NULL);
	pthread_mutex_init(&fz.report_lock, NULL);
	for (i = 0; i < FZ_SLOTS; i++) {
		int fd = krdma_open();

		ASSERT_LE(0, fd);
		ASSERT_EQ(FZ_FD_BASE + i, dup3(fd, FZ_FD_BASE + i, O_CLOEXEC));
		close(fd);
		pthread_mutex_init(&fz.slots[i].lock, NULL);
	}
	fz.ureg = fz_map(FZ_UREG_PAGES, PROT_READ | PROT_WRITE);
	fz.ro = fz_map(1, PROT_READ);
	fz.none = fz_map(1, PROT_NONE);
	ASSERT_TRUE(fz.ureg && fz.ro && fz.none);
	memset(fz.ureg, 0x5a, FZ_UREG_PAGES * page_size);
	fz_dev_refresh(self->fd);
	/*
	 * Pinned memory is charged to RLIMIT_MEMLOCK without CAP_IPC_LOCK:
	 * huge lengths fail with ENOMEM instead of exhausting the VM.
	 */
	ASSERT_OK(kt_drop_cap(14));	/* CAP_IPC_LOCK */
	{
		struct rlimit rl = { 64 << 20, 64 << 20 };

		ASSERT_OK(setrlimit(RLIMIT_MEMLOCK, &rl));
	}
	mark = kt_dmesg_mark();

	for (i = 0; i < fz.nthreads; i++) {
		struct fz_thread *t = &fz.thr[i];

		t->index = i;
		t->rng = fz.seed * 0x9e3779b97f4a7c15ull + i + 1;
		t->arg = fz_map(FZ_ARG_PAGES, PROT_READ | PROT_WRITE);
		t->data = fz_map(FZ_DATA_PAGES, PROT_READ | PROT_WRITE);
		ASSERT_TRUE(t->arg && t->data);
		ASSERT_EQ(0, pthread_create(&t->tid, NULL, fz_worker, t));
	}
	ASSERT_EQ(0, pthread_create(&closer, NULL, fz_closer, NULL));
	ASSERT_EQ(0, pthread_create(&signaller, NULL, fz_signaller, NULL));
	if (hot)
		ASSERT_EQ(0, pthread_create(&hotplug, NULL, fz_hotplug, NULL));

	start = kt_now_ms();
	while (kt_now_ms() - start < duration * 1000)
		usleep(100000);
	fz.stop = true;
	/*
	 * The signaller first: its pthread_kill() on a worker that has been
	 * joined would touch a freed thread descriptor.
	 */
	pthread_join(signaller, NULL);

	/* every worker must come back; wake sleepers meanwhile */
	deadline = kt_now_ms() + 60000;
	for (i = 0; i < fz.nthreads; i++) {
		struct fz_thread *t = &fz.thr[i];

		while (!t->done && kt_now_ms() < deadline) {
			pthread_kill(t->tid, SIGUSR1);
			usleep(20000);
		}
		if (!t->done) {
			unsigned int nr = t->cur_nr;

			TH_LOG("worker %d stuck for %llu ms in %s%s", i,
			       (unsigned long long)(kt_now_ms() - t->cur_since),
			       nr == 1 ? "poll(2)" : "KRDMA_",
			       nr == 1 ? "" : fz_cmd_name(nr));
			stuck++;
		}
	}
	if (stuck) {
		fz_print_stats(_metadata);
		krdma_run("cat /proc/%d/task/*/stack 2>/dev/null | head -n 80", getpid());
		/* a thread stuck in the kernel would hang the exit as well */
		ASSERT_EQ(0, stuck);
	}
	for (i = 0; i < fz.nthreads; i++)
		pthread_join(fz.thr[i].tid, NULL);
	pthread_join(closer, NULL);
	if (hot)
		pthread_join(hotplug, NULL);

	TH_LOG("%lu fd replacements (%lu with the fd closed), %lu signals, %lu hotplug "
	       "steps, %lu mmaps (%lu faults), %lu polls",
	       (unsigned long)fz.replaces, (unsigned long)fz.closes,
	       (unsigned long)fz.sigs, (unsigned long)fz.hotplugs,
	       (unsigned long)fz.mmaps, (unsigned long)fz.sigbus,
	       (unsigned long)fz.polls);
	fz_print_stats(_metadata);

	/* closing every session frees every context and unpins everything */
	for (i = 0; i < FZ_SLOTS; i++)
		close(FZ_FD_BASE + i);
	if (fz_path_exists(SYSFS_IB "/%s", FZ_DEV))
		krdma_run("rdma link delete " FZ_DEV);
	close(self->fd);
	self->fd = krdma_open();
	ASSERT_LE(0, self->fd);
	for (i = 0; i < 100; i++) {
		ASSERT_OK(krdma_info_get(self->fd, &info));
		if (info.num_device_contexts == info.num_devices)
			break;
		usleep(100000);
	}
	EXPECT_EQ(info.num_devices, info.num_device_contexts) {
		TH_LOG("device contexts left behind after every session closed");
	}
	EXPECT_EQ(self->info.num_devices, info.num_devices);
	pinned = kt_vm_pin_kb();
	EXPECT_TRUE(pinned <= 0) {
		TH_LOG("VmPin %ld kB after every session closed", pinned);
	}
	EXPECT_EQ(0, kt_dmesg_bad_since(mark)) {
		krdma_run("dmesg | tail -n 80");
	}

	for (i = 0; i < (int)fz.nreports; i++) {
		struct fz_report *r = &fz.reports[i];
		char hex[3 * sizeof(r->bytes) + 1];
		unsigned int j;

		for (j = 0; j < sizeof(r->bytes); j++)
			snprintf(hex + 3 * j, 4, "%02x ", r->bytes[j]);
		TH_LOG("KRDMA_%s: errno %d %s (%s) %lu times, not in the header; "
		       "first argument (size %u): %s", fz_cmd_name(r->nr), r->err,
		       strerrorname_np(r->err) ?: "?", strerror(r->err), r->count,
		       r->size, hex);
	}
	EXPECT_EQ(0ul, (unsigned long)fz.unexpected);
}

TEST_HARNESS_MAIN
