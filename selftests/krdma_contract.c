// SPDX-License-Identifier: GPL-2.0
/*
 * The rules every command keeps (uapi/krdma.h, "General ioctl format" and
 * "Errors"), tried on each command of the table below:
 *
 *  - size rules (short, long with a zero or non-zero tail, absurd),
 *    unknown command numbers and encodings, unknown flag bits;
 *  - lengths, offsets, counts and addresses near 2^32 and 2^64;
 *  - output structs and arrays written in full: no byte left as the
 *    caller had it or as the kernel's stack had it (string tails, reserved
 *    fields, private data past its length, unused address bytes).
 */
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/resource.h>

#include "krdma_test.h"

static bool kr_implemented(const struct krdma_info *info, unsigned int nr)
{
	switch (nr) {
	case KRDMA_CMD_QUERY_DEVICES:
		return info->features & KRDMA_FEATURE_QUERY_DEVICES;
	case KRDMA_CMD_BUF_ALLOC: case KRDMA_CMD_BUF_RW:
		return info->features & KRDMA_FEATURE_BUFFERS;
	case KRDMA_CMD_BUF_REG_USER:
		return info->features & KRDMA_FEATURE_USER_BUFFERS;
	case KRDMA_CMD_CONN_CREATE: case KRDMA_CMD_CONN_MODIFY:
		return info->features & KRDMA_FEATURE_MANUAL_CONN;
	case KRDMA_CMD_CM_LISTEN: case KRDMA_CMD_CM_CONNECT:
	case KRDMA_CMD_CM_ACCEPT: case KRDMA_CMD_CM_REJECT:
	case KRDMA_CMD_CM_DISCONNECT: case KRDMA_CMD_GET_EVENTS:
		return info->features & KRDMA_FEATURE_RDMA_CM;
	case KRDMA_CMD_SRQ_CREATE:
		return info->features & KRDMA_FEATURE_SRQ;
	case KRDMA_CMD_BENCH:
		return info->features & KRDMA_FEATURE_BENCH;
	case KRDMA_CMD_QUERY_SESSIONS:
		return info->features & KRDMA_FEATURE_QUERY_SESSIONS;
	}
	return nr >= KRDMA_CMD_BASE && nr <= KT_CMD_LAST;
}

/*
 * Every command: its number, name, struct size, documented flags, and the
 * shortest size it takes (a struct that grew takes its older size too).
 */
static const struct kr_cmd {
	unsigned int nr;
	const char *name;
	uint32_t size;
	uint32_t flags;
	uint32_t min_size;
} kr_cmds[] = {
#define C(n, s, f) { KRDMA_CMD_##n, #n, sizeof(struct s), f, sizeof(struct s) }
	/* (bench_protocol came in a second version of the struct) */
	{ KRDMA_CMD_GET_INFO, "GET_INFO", sizeof(struct krdma_info), 0,
	  offsetof(struct krdma_info, bench_protocol) },
	C(QUERY_DEVICES, krdma_query_devices, KRDMA_QUERY_DEVICES_ONE),
	C(DESTROY, krdma_destroy, 0),
	C(BUF_ALLOC, krdma_buf_alloc, 0),
	/* (mr_length ... num_mrs came in a second version of the struct) */
	{ KRDMA_CMD_BUF_REG_USER, "BUF_REG_USER",
	  sizeof(struct krdma_buf_reg_user), KRDMA_BUF_REG_WINDOW,
	  offsetofend(struct krdma_buf_reg_user, addr) },
	C(BUF_RW, krdma_buf_rw, KRDMA_BUF_RW_WRITE),
	C(CONN_CREATE, krdma_conn_create, KRDMA_CONN_NOTIFY | KRDMA_CONN_SRQ),
	C(CONN_MODIFY, krdma_conn_modify, KRDMA_CONN_MODIFY_RC_ATTRS),
	/* (sq_psn and rq_psn came in a second version of the struct) */
	{ KRDMA_CMD_CONN_QUERY, "CONN_QUERY", sizeof(struct krdma_conn_query), 0,
	  offsetof(struct krdma_conn_query, sq_psn) },
	C(CM_LISTEN, krdma_cm_listen, 0),
	{ KRDMA_CMD_CM_CONNECT, "CM_CONNECT", sizeof(struct krdma_cm_connect),
	  KRDMA_CONN_NOTIFY | KRDMA_CONN_SRQ | KRDMA_CONN_CM_TIMERS,
	  offsetof(struct krdma_cm_connect, ack_timeout) },
	C(CM_ACCEPT, krdma_cm_accept, KRDMA_CONN_NOTIFY | KRDMA_CONN_SRQ),
	C(CM_REJECT, krdma_cm_accept, 0),
	C(CM_DISCONNECT, krdma_cm_disconnect, 0),
	C(GET_EVENTS, krdma_get_events, 0),
	{ KRDMA_CMD_POST, "POST", sizeof(struct krdma_post), KRDMA_POST_POLL,
	  offsetof(struct krdma_post, num_wcs) },
	C(POLL, krdma_poll, 0),
	C(AH_CREATE, krdma_ah_create, 0),
	C(SRQ_CREATE, krdma_srq_create, 0),
	C(BENCH, krdma_bench, KRDMA_BENCH_LATENCY | KRDMA_BENCH_NOTIFY |
			      KRDMA_BENCH_VALIDATE | KRDMA_BENCH_SERVER),
	C(QUERY_SESSIONS, krdma_query_sessions, 0),
#undef C
};
_Static_assert(ARRAY_SIZE(kr_cmds) == KT_CMD_LAST - KRDMA_CMD_BASE + 1,
	       "kr_cmds[] lists every command");


static bool kr_all_bytes(const void *p, size_t len, uint8_t val)
{
	const uint8_t *b = p;

	while (len--)
		if (*b++ != val)
			return false;
	return true;
}

/* Bytes after the first NUL of a fixed-size string field must be zero. */
#define EXPECT_STR_TAIL_ZERO(field, what, ...)				\
	do {								\
		const char *__nul = memchr((field), 0, sizeof(field));	\
									\
		EXPECT_NE(NULL, __nul) {				\
			TH_LOG(what ": not NUL-terminated", ##__VA_ARGS__); \
		}							\
		if (__nul)						\
			EXPECT_TRUE(kr_all_bytes(__nul, sizeof(field) -	\
					(__nul - (const char *)(field)), 0)) { \
				TH_LOG(what ": bytes after the NUL", ##__VA_ARGS__); \
			}						\
	} while (0)

KT_INFO_FIXTURE(contract)

static uint8_t kr_ureg_mem[1 << 16] __attribute__((aligned(4096)));

/* ------------------------------------------------------------------------
 * Size rules and unknown commands, for every command
 */

KRDMA_TEST_F(contract, sizes_every_command)
{
	/* three pages, then a hole: a size past them faults at the hole */
	uint8_t *buf = mmap(NULL, 4 * 4096, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	const size_t room = 3 * 4096;
	unsigned int i, checked = 0;

	ASSERT_NE(MAP_FAILED, buf);
	ASSERT_OK(mprotect(buf + room, 4096, PROT_NONE));

	for (i = 0; i < ARRAY_SIZE(kr_cmds); i++) {
		const struct kr_cmd *c = &kr_cmds[i];
		unsigned long cmd = _IO(KRDMA_TYPE, c->nr);
		uint32_t sz;

		if (!kr_implemented(&self->info, c->nr))
			continue;
		checked++;
		/* size 0 and every size short of the struct: EINVAL */
		for (sz = 0; sz < c->min_size; sz++) {
			memset(buf, 0, room);
			*(uint32_t *)buf = sz;
			EXPECT_ERRNO(EINVAL, ioctl(self->fd, cmd, buf),
				     "KRDMA_%s size %u", c->name, sz);
		}
		/* a non-zero byte past the struct: E2BIG, whatever else */
		for (sz = c->size + 1; sz <= c->size + 64; sz += 7) {
			memset(buf, 0, room);
			*(uint32_t *)buf = sz;
			buf[sz - 1] = 0x80;
			EXPECT_ERRNO(E2BIG, ioctl(self->fd, cmd, buf),
				     "KRDMA_%s size %u, last byte set", c->name, sz);
		}
		memset(buf, 0, room);
		*(uint32_t *)buf = 2 * 4096;
		buf[2 * 4096 - 1] = 1;
		EXPECT_ERRNO(E2BIG, ioctl(self->fd, cmd, buf),
			     "KRDMA_%s size 8192, last byte set", c->name);
		/* a zero tail that runs past the caller's memory: EFAULT */
		memset(buf, 0, room);
		*(uint32_t *)(buf + room - 2048) = KRDMA_MAX_CMD_SIZE;
		EXPECT_ERRNO(EFAULT, ioctl(self->fd, cmd, buf + room - 2048),
			     "KRDMA_%s size %u, its end unmapped", c->name,
			     KRDMA_MAX_CMD_SIZE);
		/* past the cap: E2BIG before the tail is read at all */
		memset(buf, 0, room);
		*(uint32_t *)buf = UINT32_MAX;
		EXPECT_ERRNO(E2BIG, ioctl(self->fd, cmd, buf),
			     "KRDMA_%s size 4 GiB - 1", c->name);
		/* the argument itself unreadable */
		EXPECT_ERRNO(EFAULT, ioctl(self->fd, cmd, NULL),
			     "KRDMA_%s NULL argument", c->name);
		EXPECT_ERRNO(EFAULT, ioctl(self->fd, cmd, (void *)-4096L),
			     "KRDMA_%s kernel-half argument", c->name);
	}
	TH_LOG("%u commands", checked);
	munmap(buf, 4 * 4096);
}

/* Every number of the type but the known ones, and the known ones with a
 * direction or size encoded: ENOTTY; another type: ENOTTY. */
KRDMA_TEST_F(contract, unknown_command_encodings)
{
	uint8_t buf[512] = {};
	unsigned int nr, dir;

	*(uint32_t *)buf = 64;
	for (nr = 0; nr < 256; nr++) {
		if (nr >= KRDMA_CMD_BASE && nr <= KT_CMD_LAST)
			continue;
		EXPECT_ERRNO(ENOTTY, ioctl(self->fd, _IO(KRDMA_TYPE, nr), buf),
			     "nr 0x%x", nr);
	}
	for (nr = KRDMA_CMD_BASE; nr <= KT_CMD_LAST; nr++) {
		for (dir = 1; dir < 4; dir++)
			EXPECT_ERRNO(ENOTTY, ioctl(self->fd, _IOC(dir, KRDMA_TYPE, nr, 64), buf),
				     "nr 0x%x dir %u", nr, dir);
		EXPECT_ERRNO(ENOTTY, ioctl(self->fd, _IOC(0, KRDMA_TYPE, nr, 8), buf),
			     "nr 0x%x size 8", nr);
		EXPECT_ERRNO(ENOTTY, ioctl(self->fd, _IO(KRDMA_TYPE + 1, nr), buf),
			     "type 0x%x nr 0x%x", KRDMA_TYPE + 1, nr);
	}
}

/*
 * Unknown flag bits never succeed; when the call succeeds without them,
 * they make it fail with EOPNOTSUPP.  The arguments are the simplest valid
 * ones this session can make.
 */
KRDMA_TEST_F_TIMEOUT(contract, unknown_flags_every_command, 120)
{
	struct kt_buf kb = {};
	struct kt_conn rc = {}, ud = {};
	uint32_t ah = 0, listener = 0;
	uint16_t port = 0;
	unsigned int i, bit;
	static uint8_t data[4096];
	/* QUERY_SESSIONS': more room than a test bed has sessions and conns */
	static struct krdma_session_info sessions[256];
	static struct krdma_conn_info conns[1024];

	if (!self->have_dev)
		SKIP(return, "no device with an active port");
	test_cmd_buf_alloc(self->dev.dev_index, KT_ACCESS_ALL, 4096, &kb);
	test_cmd_conn_create(&self->dev, KRDMA_TRANSPORT_RC, 0, NULL, &rc);
	test_cmd_conn_create(&self->dev, KRDMA_TRANSPORT_UD, 0, NULL, &ud);
	test_cmd_conn_connect(&ud, NULL);
	test_cmd_ah_create(ud.handle, self->dev.gid, &ah);
	if (self->info.features & KRDMA_FEATURE_RDMA_CM)
		ASSERT_OK(kc_listen(self->fd, kt_test_addr(false), 0, &listener, &port));

	for (i = 0; i < ARRAY_SIZE(kr_cmds); i++) {
		const struct kr_cmd *c = &kr_cmds[i];
		union {
			uint8_t raw[2048];
			struct krdma_query_devices q;
			struct krdma_destroy d;
			struct krdma_buf_alloc ba;
			struct krdma_buf_reg_user ru;
			struct krdma_buf_rw rw;
			struct krdma_conn_create cc;
			struct krdma_conn_modify cm;
			struct krdma_conn_query cq;
			struct krdma_cm_listen l;
			struct krdma_cm_connect cn;
			struct krdma_cm_accept ac;
			struct krdma_cm_disconnect dc;
			struct krdma_get_events ge;
			struct krdma_post po;
			struct krdma_poll pl;
			struct krdma_ah_create ahc;
			struct krdma_srq_create sc;
			struct krdma_query_sessions qs;
		} base, arg;
		int base_ret, base_err;

		if (!kr_implemented(&self->info, c->nr) || c->nr == KRDMA_CMD_BENCH)
			continue;
		memset(&base, 0, sizeof(base));
		switch (c->nr) {
		case KRDMA_CMD_QUERY_DEVICES:
			base.q.device_entry_size = sizeof(struct krdma_device_info);
			base.q.port_entry_size = sizeof(struct krdma_port_info);
			base.q.gid_entry_size = sizeof(struct krdma_gid_info);
			break;
		case KRDMA_CMD_DESTROY:
			base.d.handle = 0x7ffffff0;	/* unknown: ENOENT at best */
			break;
		case KRDMA_CMD_BUF_ALLOC:
			base.ba.dev_index = self->dev.dev_index;
			base.ba.length = 64;
			break;
		case KRDMA_CMD_BUF_REG_USER:
			base.ru.dev_index = self->dev.dev_index;
			base.ru.uaddr = (uintptr_t)kr_ureg_mem;
			base.ru.length = 64;
			break;
		case KRDMA_CMD_BUF_RW:
			base.rw.handle = kb.handle;
			base.rw.length = 64;
			base.rw.data_uptr = (uintptr_t)data;
			break;
		case KRDMA_CMD_CONN_CREATE:
			base.cc.dev_index = self->dev.dev_index;
			base.cc.port_num = self->dev.port_num;
			base.cc.gid_index = self->dev.gid_index;
			break;
		case KRDMA_CMD_CONN_MODIFY:
			base.cm.handle = 0x7ffffff0;
			break;
		case KRDMA_CMD_CONN_QUERY:
			base.cq.handle = rc.handle;
			break;
		case KRDMA_CMD_CM_LISTEN:
			kc_sockaddr(&base.l.addr, kt_test_addr(false), 0);
			break;
		case KRDMA_CMD_CM_CONNECT:
			/* to our own listener: nothing accepts, so it would time out */
			kc_sockaddr(&base.cn.dst, kt_test_addr(false), port);
			base.cn.timeout_ms = 1;
			break;
		case KRDMA_CMD_CM_ACCEPT:
		case KRDMA_CMD_CM_REJECT:
			base.ac.handle = rc.handle;	/* not a request */
			base.ac.timeout_ms = 1;
			break;
		case KRDMA_CMD_CM_DISCONNECT:
			base.dc.handle = rc.handle;
			break;
		case KRDMA_CMD_GET_EVENTS:
			base.ge.event_entry_size = sizeof(struct krdma_event);
			break;
		case KRDMA_CMD_POST:
			base.po.handle = rc.handle;
			base.po.wr_entry_size = sizeof(struct krdma_wr);
			base.po.wrs_uptr = (uintptr_t)data;
			break;
		case KRDMA_CMD_POLL:
			base.pl.handle = rc.handle;
			base.pl.wc_entry_size = sizeof(struct krdma_wc);
			base.pl.wcs_uptr = (uintptr_t)data;
			break;
		case KRDMA_CMD_AH_CREATE:
			base.ahc.conn_handle = ud.handle;
			memcpy(base.ahc.dest_gid, self->dev.gid, 16);
			break;
		case KRDMA_CMD_SRQ_CREATE:
			base.sc.dev_index = self->dev.dev_index;
			break;
		case KRDMA_CMD_QUERY_SESSIONS:
			/* creates nothing; EMSGSIZE if the arrays are short */
			base.qs.num_sessions = ARRAY_SIZE(sessions);
			base.qs.session_entry_size = sizeof(sessions[0]);
			base.qs.sessions_uptr = (uintptr_t)sessions;
			base.qs.num_conns = ARRAY_SIZE(conns);
			base.qs.conn_entry_size = sizeof(conns[0]);
			base.qs.conns_uptr = (uintptr_t)conns;
			break;
		}
		*(uint32_t *)base.raw = c->size;
		/* the call without unknown flags, undone if it created something */
		arg = base;
		base_ret = ioctl(self->fd, _IO(KRDMA_TYPE, c->nr), &arg);
		base_err = base_ret ? errno : 0;
		if (!base_ret) {
			switch (c->nr) {
			case KRDMA_CMD_BUF_ALLOC: kt_destroy(self->fd, arg.ba.handle); break;
			case KRDMA_CMD_BUF_REG_USER: kt_destroy(self->fd, arg.ru.handle); break;
			case KRDMA_CMD_CONN_CREATE: kt_destroy(self->fd, arg.cc.handle); break;
			case KRDMA_CMD_CM_LISTEN: kt_destroy(self->fd, arg.l.handle); break;
			case KRDMA_CMD_AH_CREATE: kt_destroy(self->fd, arg.ahc.handle); break;
			case KRDMA_CMD_SRQ_CREATE: kt_destroy(self->fd, arg.sc.handle); break;
			}
		}
		for (bit = 0; bit < 32; bit++) {
			if (c->flags & (1u << bit))
				continue;
			arg = base;
			((uint32_t *)arg.raw)[1] = 1u << bit;
			if (!base_ret) {
				EXPECT_ERRNO(EOPNOTSUPP, ioctl(self->fd, _IO(KRDMA_TYPE, c->nr), &arg),
					     "KRDMA_%s flags 0x%x", c->name, 1u << bit);
			} else {
				int ret = ioctl(self->fd, _IO(KRDMA_TYPE, c->nr), &arg);
				int err = errno;

				EXPECT_EQ(-1, ret) {
					TH_LOG("KRDMA_%s flags 0x%x succeeded", c->name, 1u << bit);
				}
				EXPECT_TRUE(err == EOPNOTSUPP || err == base_err) {
					TH_LOG("KRDMA_%s flags 0x%x: %s (without: %s)",
					       c->name, 1u << bit, strerror(err),
					       strerror(base_err));
				}
			}
		}
	}
	kt_destroy(self->fd, ah);
	kt_destroy(self->fd, ud.handle);
	kt_destroy(self->fd, rc.handle);
	kt_destroy(self->fd, kb.handle);
	if (listener)
		kt_destroy(self->fd, listener);
}

/* ------------------------------------------------------------------------
 * Values near 2^32 and 2^64
 */

static const uint64_t kr_big[] = {
	0xffffffffull, 0x100000000ull, 0x100000001ull, 0xfffffffffull,
	0x7fffffffffffffffull, 0x8000000000000000ull, 0xfffffffffffff000ull,
	0xfffffffffffffff8ull, 0xffffffffffffffffull,
};

/* The call must fail with one of the listed errnos (0-terminated). */
#define EXPECT_FAILS_WITH(call, errs, fmt, ...)				\
	do {								\
		const int *__e = (errs);				\
		int __r = (call), __err = errno;			\
		bool __ok = false;					\
									\
		EXPECT_EQ(-1, __r) {					\
			TH_LOG(fmt ": succeeded", ##__VA_ARGS__);	\
		}							\
		if (__r == -1) {					\
			for (; *__e; __e++)				\
				__ok |= *__e == __err;			\
			EXPECT_TRUE(__ok) {				\
				TH_LOG(fmt ": %s", ##__VA_ARGS__, strerror(__err)); \
			}						\
		}							\
	} while (0)

KRDMA_TEST_F_TIMEOUT(contract, near_2_32_and_2_64, 300)
{
	static const int einval_enomem[] = { EINVAL, ENOMEM, 0 };
	static const int einval_efault[] = { EINVAL, EFAULT, ENOMEM, 0 };
	static const int einval_efault_msgsize[] = { EINVAL, EFAULT, EMSGSIZE, E2BIG, 0 };
	static uint8_t data[4096];
	struct kt_buf kb;
	struct kt_conn a, b;
	struct rlimit rl = { 64 << 20, 64 << 20 };
	unsigned int i;
	pid_t pid;
	int status;

	if (!self->have_dev)
		SKIP(return, "no device with an active port");
	test_cmd_buf_alloc(self->dev.dev_index, KT_ACCESS_ALL, 4096, &kb);

	for (i = 0; i < ARRAY_SIZE(kr_big); i++) {
		uint64_t v = kr_big[i];
		struct krdma_buf_reg_user r = {
			.size = sizeof(r), .dev_index = self->dev.dev_index,
		};
		struct krdma_buf_rw rw = {
			.size = sizeof(rw), .handle = kb.handle,
			.data_uptr = (uintptr_t)data,
		};

		/* offset and length: out of the buffer, or wrapping */
		rw.offset = v;
		rw.length = 1;
		EXPECT_FAILS_WITH(ioctl(self->fd, KRDMA_BUF_RW, &rw), einval_efault,
				  "BUF_RW offset 0x%llx", (unsigned long long)v);
		rw.offset = 8;
		rw.length = v;
		EXPECT_FAILS_WITH(ioctl(self->fd, KRDMA_BUF_RW, &rw), einval_efault,
				  "BUF_RW length 0x%llx", (unsigned long long)v);
		rw.offset = 0;
		rw.length = 8;
		rw.data_uptr = v;
		EXPECT_FAILS_WITH(ioctl(self->fd, KRDMA_BUF_RW, &rw), einval_efault,
				  "BUF_RW data_uptr 0x%llx", (unsigned long long)v);
		/* user registrations past the top, or wrapping */
		r.uaddr = (uintptr_t)kr_ureg_mem;
		r.length = v;
		EXPECT_FAILS_WITH(ioctl(self->fd, KRDMA_BUF_REG_USER, &r), einval_efault,
				  "BUF_REG_USER length 0x%llx", (unsigned long long)v);
		r.uaddr = v;
		r.length = 4096;
		EXPECT_FAILS_WITH(ioctl(self->fd, KRDMA_BUF_REG_USER, &r), einval_efault,
				  "BUF_REG_USER uaddr 0x%llx", (unsigned long long)v);
	}
	/* wrap exactly: offset + length == 2^64 */
	{
		struct krdma_buf_rw rw = {
			.size = sizeof(rw), .handle = kb.handle, .offset = 16,
			.length = (uint64_t)-16, .data_uptr = (uintptr_t)data,
		};

		EXPECT_FAILS_WITH(ioctl(self->fd, KRDMA_BUF_RW, &rw), einval_efault,
				  "BUF_RW offset 16 length 2^64-16");
	}
	/* zero lengths: never a crash; BUF_ALLOC and REG_USER refuse them */
	{
		struct krdma_buf_rw rw = {
			.size = sizeof(rw), .handle = kb.handle, .offset = 4096,
			.data_uptr = (uintptr_t)data,
		};
		int ret = ioctl(self->fd, KRDMA_BUF_RW, &rw);

		EXPECT_TRUE(!ret || errno == EINVAL) {
			TH_LOG("BUF_RW length 0 at the end: %s", strerror(errno));
		}
	}

	/*
	 * Kernel buffers of huge lengths, without CAP_IPC_LOCK and with a
	 * 64 MiB RLIMIT_MEMLOCK: EINVAL (above max_mr_size) or ENOMEM, never
	 * an attempt that exhausts the VM.
	 */
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int bad = 0;

		if (kt_drop_cap(14) || setrlimit(RLIMIT_MEMLOCK, &rl))
			_exit(3);
		for (i = 0; i < ARRAY_SIZE(kr_big); i++) {
			struct krdma_buf_alloc ba = {
				.size = sizeof(ba), .dev_index = self->dev.dev_index,
				.length = kr_big[i],
			};

			if (!ioctl(self->fd, KRDMA_BUF_ALLOC, &ba) ||
			    (errno != EINVAL && errno != ENOMEM)) {
				fprintf(stderr, "# BUF_ALLOC length 0x%llx: %s\n",
					(unsigned long long)kr_big[i],
					strerror(errno));
				bad = 1;
			}
		}
		_exit(bad);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	(void)einval_enomem;

	/*
	 * Counts and entry sizes whose product overflows 32 or 64 bits.  The
	 * entries land anywhere in the address space, so a child process
	 * makes the calls and reports.
	 */
	test_cmd_conn_pair(&self->dev, KRDMA_TRANSPORT_RC, 0, NULL, &a, &b);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		static const uint32_t counts[] = { 0x10000, 0x10001, 0x80000000u, 0xffffffffu };
		static const uint32_t sizes[] = { 0x10000, 0x80000000u, 0xffffffffu };
		unsigned int j;
		int bad = 0;

		for (i = 0; i < ARRAY_SIZE(counts); i++) {
			for (j = 0; j < ARRAY_SIZE(sizes); j++) {
				struct krdma_post po = {
					.size = sizeof(po), .handle = a.handle,
					.num_wrs = counts[i], .wr_entry_size = sizes[j],
					.wrs_uptr = (uintptr_t)data,
				};
				struct krdma_poll pl = {
					.size = sizeof(pl), .handle = a.handle,
					.num_wcs = counts[i], .wc_entry_size = sizes[j],
					.wcs_uptr = (uintptr_t)data,
				};
				struct krdma_get_events ge = {
					.size = sizeof(ge), .num_events = counts[i],
					.event_entry_size = sizes[j],
					.events_uptr = (uintptr_t)data,
				};
				struct krdma_query_devices q = {
					.size = sizeof(q),
					.num_devices = counts[i], .device_entry_size = sizes[j],
					.num_ports = counts[i], .port_entry_size = sizes[j],
					.num_gids = counts[i], .gid_entry_size = sizes[j],
					.devices_uptr = (uintptr_t)data,
					.ports_uptr = (uintptr_t)data,
					.gids_uptr = (uintptr_t)data,
				};
				struct krdma_query_sessions qs = {
					.size = sizeof(qs),
					.num_sessions = counts[i],
					.session_entry_size = sizes[j],
					.num_conns = counts[i],
					.conn_entry_size = sizes[j],
					.sessions_uptr = (uintptr_t)data,
					.conns_uptr = (uintptr_t)data,
				};
				int ret;

				const int *e;

				ret = ioctl(self->fd, KRDMA_POST, &po);
				for (e = einval_efault_msgsize; *e && *e != errno; e++)
					;
				if (!ret || !*e) {
					fprintf(stderr, "# POST num_wrs 0x%x entry 0x%x: %s\n",
						counts[i], sizes[j], ret ? strerror(errno) : "success");
					bad++;
				}
				/* no completions or events: 0 of them is fine */
				ret = ioctl(self->fd, KRDMA_POLL, &pl);
				if (ret && !kt_common_errno(errno)) {
					fprintf(stderr, "# POLL num_wcs 0x%x entry 0x%x: %s\n",
						counts[i], sizes[j], strerror(errno));
					bad++;
				}
				ret = ioctl(self->fd, KRDMA_GET_EVENTS, &ge);
				if (ret && !kt_common_errno(errno)) {
					fprintf(stderr, "# GET_EVENTS num 0x%x entry 0x%x: %s\n",
						counts[i], sizes[j], strerror(errno));
					bad++;
				}
				ret = ioctl(self->fd, KRDMA_QUERY_DEVICES, &q);
				if (ret && !kt_common_errno(errno)) {
					fprintf(stderr, "# QUERY_DEVICES num 0x%x entry 0x%x: %s\n",
						counts[i], sizes[j], strerror(errno));
					bad++;
				}
				if (kr_implemented(&self->info, KRDMA_CMD_QUERY_SESSIONS)) {
					ret = ioctl(self->fd, KRDMA_QUERY_SESSIONS, &qs);
					if (ret && !kt_common_errno(errno)) {
						fprintf(stderr, "# QUERY_SESSIONS num 0x%x entry 0x%x: %s\n",
							counts[i], sizes[j], strerror(errno));
						bad++;
					}
				}
			}
		}
		_exit(bad > 100 ? 100 : bad);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		TH_LOG("overflowing counts: child status 0x%x", status);
	}
	/* WRs: SGE offsets and lengths, remote addresses near the top */
	for (i = 0; i < ARRAY_SIZE(kr_big); i++) {
		struct krdma_wr wr;
		struct krdma_wc wc[4];
		int ret;

		kt_wr_init(&wr, i, KRDMA_OP_RDMA_WRITE, KRDMA_WR_SIGNALED);
		kt_wr_sge(&wr, kb.handle, kr_big[i], 8);
		EXPECT_FAILS_WITH(kt_post1(self->fd, a.handle, &wr), einval_efault,
				  "SGE offset 0x%llx", (unsigned long long)kr_big[i]);
		kt_wr_init(&wr, i, KRDMA_OP_RDMA_WRITE, KRDMA_WR_SIGNALED);
		kt_wr_sge(&wr, kb.handle, 8, (uint32_t)kr_big[i]);
		if ((uint32_t)kr_big[i] > 4096 - 8)
			EXPECT_FAILS_WITH(kt_post1(self->fd, a.handle, &wr), einval_efault,
					  "SGE length 0x%x", (uint32_t)kr_big[i]);
		/* a remote address past the peer's buffer: posted, then an
		 * error completion (none where rxe sends no NAK for it, its
		 * requester resending forever); nothing written anywhere */
		if (kt_rxe_defect(KT_RXE_NO_ACCESS_NAK) ||
		    kt_dev_lacks(&self->dev, KT_CAP_REMOTE_ERR_WC))
			continue;
		kt_wr_init(&wr, 100 + i, KRDMA_OP_RDMA_WRITE, KRDMA_WR_SIGNALED);
		kt_wr_sge(&wr, kb.handle, 0, 8);
		wr.remote_addr = kb.addr + kr_big[i];
		wr.rkey = kb.rkey;
		ret = kt_post1(self->fd, a.handle, &wr);
		if (ret) {
			EXPECT_TRUE(kt_common_errno(errno)) {
				TH_LOG("remote_addr +0x%llx: %s",
				       (unsigned long long)kr_big[i], strerror(errno));
			}
			continue;
		}
		ret = kt_poll_n(self->fd, a.handle, wc, 1, 20000);
		ASSERT_EQ(1, ret);
		EXPECT_NE((uint32_t)KT_WC_SUCCESS, wc[0].status) {
			TH_LOG("RDMA WRITE to addr+0x%llx succeeded",
			       (unsigned long long)kr_big[i]);
		}
		/* the QP is in error now: make a fresh pair */
		kt_destroy(self->fd, a.handle);
		kt_destroy(self->fd, b.handle);
		test_cmd_conn_pair(&self->dev, KRDMA_TRANSPORT_RC, 0, NULL, &a,
				   &b);
	}
	kt_destroy(self->fd, a.handle);
	kt_destroy(self->fd, b.handle);
	kt_destroy(self->fd, kb.handle);
}

/* ------------------------------------------------------------------------
 * Outputs written in full
 */

KRDMA_TEST_F(contract, get_info_fully_written)
{
	struct krdma_info a, b;

	memset(&a, 0x00, sizeof(a));
	memset(&b, 0xff, sizeof(b));
	a.size = b.size = sizeof(a);
	a.flags = b.flags = 0;
	b.__reserved = 0;
	test_cmd_ioctl(KRDMA_GET_INFO, &a);
	test_cmd_ioctl(KRDMA_GET_INFO, &b);
	EXPECT_EQ(0, memcmp(&a, &b, sizeof(a))) {
		TH_LOG("bytes of krdma_info depend on what the caller left there");
	}
	EXPECT_STR_TAIL_ZERO(b.module_version, "module_version");
}

/* Two QUERY_DEVICES into arrays pre-filled with 0x00 and 0xff: identical. */
KRDMA_TEST_F(contract, query_devices_fully_written)
{
	struct krdma_snap s;
	struct krdma_query_devices q;
	void *arr[2][3];
	size_t len[3];
	unsigned int k, i;

	ASSERT_OK(krdma_snap_get(self->fd, 0, 0, &s));
	len[0] = (s.ndev + 1) * sizeof(struct krdma_device_info);
	len[1] = (s.nport + 1) * sizeof(struct krdma_port_info);
	len[2] = (s.ngid + 1) * sizeof(struct krdma_gid_info);
	for (k = 0; k < 2; k++) {
		for (i = 0; i < 3; i++) {
			arr[k][i] = malloc(len[i]);
			ASSERT_NE(NULL, arr[k][i]);
			memset(arr[k][i], k ? 0xff : 0x00, len[i]);
		}
		memset(&q, 0, sizeof(q));
		q.size = sizeof(q);
		q.num_devices = s.ndev + 1;
		q.num_ports = s.nport + 1;
		q.num_gids = s.ngid + 1;
		q.device_entry_size = sizeof(struct krdma_device_info);
		q.port_entry_size = sizeof(struct krdma_port_info);
		q.gid_entry_size = sizeof(struct krdma_gid_info);
		q.devices_uptr = (uintptr_t)arr[k][0];
		q.ports_uptr = (uintptr_t)arr[k][1];
		q.gids_uptr = (uintptr_t)arr[k][2];
		test_cmd_ioctl(KRDMA_QUERY_DEVICES, &q);
		ASSERT_EQ(s.ndev, q.num_devices);
		ASSERT_EQ(s.nport, q.num_ports);
		ASSERT_EQ(s.ngid, q.num_gids);
	}
	EXPECT_EQ(0, memcmp(arr[0][0], arr[1][0], s.ndev * sizeof(struct krdma_device_info)));
	EXPECT_EQ(0, memcmp(arr[0][1], arr[1][1], s.nport * sizeof(struct krdma_port_info)));
	EXPECT_EQ(0, memcmp(arr[0][2], arr[1][2], s.ngid * sizeof(struct krdma_gid_info)));
	for (i = 0; i < s.ndev; i++) {
		struct krdma_device_info *d = (struct krdma_device_info *)arr[1][0] + i;

		EXPECT_STR_TAIL_ZERO(d->name, "device %u name", i);
	}
	for (i = 0; i < s.nport; i++) {
		struct krdma_port_info *p = (struct krdma_port_info *)arr[1][1] + i;

		EXPECT_STR_TAIL_ZERO(p->netdev, "port %u netdev", i);
		EXPECT_EQ(0u, p->__reserved);
	}
	for (i = 0; i < s.ngid; i++) {
		struct krdma_gid_info *g = (struct krdma_gid_info *)arr[1][2] + i;

		EXPECT_STR_TAIL_ZERO(g->netdev, "gid %u netdev", i);
	}
	for (k = 0; k < 2; k++)
		for (i = 0; i < 3; i++)
			free(arr[k][i]);
	krdma_snap_free(&s);
}

/* CONN_QUERY writes every output whatever the caller left in it. */
KRDMA_TEST_F(contract, conn_query_fully_written)
{
	struct krdma_conn_query a, b;
	struct kt_conn c;

	if (!self->have_dev)
		SKIP(return, "no device with an active port");
	test_cmd_conn_create(&self->dev, KRDMA_TRANSPORT_RC, 0, NULL, &c);
	memset(&a, 0x00, sizeof(a));
	memset(&b, 0xff, sizeof(b));
	a.size = b.size = sizeof(a);
	a.flags = b.flags = 0;
	a.handle = b.handle = c.handle;
	a.__reserved = b.__reserved = 0;
	test_cmd_ioctl(KRDMA_CONN_QUERY, &a);
	test_cmd_ioctl(KRDMA_CONN_QUERY, &b);
	EXPECT_EQ(0, memcmp(&a, &b, sizeof(a)));
	kt_destroy(self->fd, c.handle);
}

/*
 * Completions: the same SEND / RECV / WRITE_WITH_IMM / failed WRITE polled
 * into arrays pre-filled with 0x00 and 0xff give the same bytes.
 */
static void kr_wcs(struct __test_metadata *_metadata, FIXTURE_DATA(contract) *self,
		   uint8_t fill, struct krdma_wc *out_send, struct krdma_wc *out_recv)
{
	struct kt_conn a, b;
	struct kt_buf sb, rb;
	struct krdma_wr wr;
	struct krdma_wc wc[8];
	int n;

	test_cmd_conn_pair(&self->dev, KRDMA_TRANSPORT_RC, 0, NULL, &a, &b);
	test_cmd_buf_alloc(self->dev.dev_index, KT_ACCESS_ALL, 4096, &sb);
	test_cmd_buf_alloc(self->dev.dev_index, KT_ACCESS_ALL, 4096, &rb);
	kt_wr_init(&wr, 1, KRDMA_OP_RECV, 0);
	kt_wr_sge(&wr, rb.handle, 0, 4096);
	test_cmd_post1(b.handle, &wr);
	kt_wr_init(&wr, 2, KRDMA_OP_RECV, 0);
	kt_wr_sge(&wr, rb.handle, 0, 4096);
	test_cmd_post1(b.handle, &wr);
	kt_wr_init(&wr, 3, KRDMA_OP_SEND, KRDMA_WR_SIGNALED);
	kt_wr_sge(&wr, sb.handle, 0, 100);
	test_cmd_post1(a.handle, &wr);
	kt_wr_init(&wr, 4, KRDMA_OP_RDMA_WRITE_WITH_IMM, KRDMA_WR_SIGNALED);
	kt_wr_sge(&wr, sb.handle, 0, 64);
	wr.imm_data = 0x1234;
	wr.remote_addr = rb.addr;
	wr.rkey = rb.rkey;
	test_cmd_post1(a.handle, &wr);

	memset(wc, fill, sizeof(wc));
	n = kt_poll_n(self->fd, a.handle, wc, 2, 20000);
	ASSERT_EQ(2, n);
	memcpy(out_send, wc, 2 * sizeof(*wc));
	memset(wc, fill, sizeof(wc));
	n = kt_poll_n(self->fd, b.handle, wc, 2, 20000);
	ASSERT_EQ(2, n);
	memcpy(out_recv, wc, 2 * sizeof(*wc));
	kt_destroy(self->fd, a.handle);
	kt_destroy(self->fd, b.handle);
	kt_destroy(self->fd, sb.handle);
	kt_destroy(self->fd, rb.handle);
}

KRDMA_TEST_F_TIMEOUT(contract, completions_fully_written, 120)
{
	struct krdma_wc s0[2], r0[2], s1[2], r1[2];
	int i;

	if (!self->have_dev)
		SKIP(return, "no device with an active port");
	/* kr_wcs() posts a WRITE_WITH_IMM */
	KT_NEED(&self->dev, KT_CAP_IMM);
	kr_wcs(_metadata, self, 0x00, s0, r0);
	kr_wcs(_metadata, self, 0xff, s1, r1);
	for (i = 0; i < 2; i++) {
		EXPECT_EQ(0, memcmp(&s0[i], &s1[i], sizeof(s0[i]))) {
			TH_LOG("send completion %d: wr_id %llu status %u opcode %u "
			       "byte_len %u/%u imm %x/%x src_qp %x/%x flags %x/%x "
			       "vendor_err %x/%x reserved %x/%x", i,
			       (unsigned long long)s1[i].wr_id, s1[i].status,
			       s1[i].opcode, s0[i].byte_len, s1[i].byte_len,
			       s0[i].imm_data, s1[i].imm_data, s0[i].src_qp,
			       s1[i].src_qp, s0[i].wc_flags, s1[i].wc_flags,
			       s0[i].vendor_err, s1[i].vendor_err,
			       s0[i].__reserved, s1[i].__reserved);
		}
		/* the QP number differs between the runs */
		r0[i].src_qp = r1[i].src_qp = 0;
		EXPECT_EQ(0, memcmp(&r0[i], &r1[i], sizeof(r0[i]))) {
			TH_LOG("receive completion %d differs between fills", i);
		}
		EXPECT_EQ(0u, s1[i].__reserved);
		EXPECT_EQ(0u, r1[i].__reserved);
	}
}

/*
 * CM events: the private data past its length, the address bytes past the
 * family's, and dev_index but in a request are zero, whatever the array
 * held before.
 */
KRDMA_TEST_F_TIMEOUT(contract, events_fully_written, 120)
{
	struct krdma_event ev[16];
	struct kc_connect c;
	uint32_t listener = 0;
	uint16_t port;
	uint8_t pd[56];
	int n, i, got = 0, fd2;

	if (!(self->info.features & KRDMA_FEATURE_RDMA_CM))
		SKIP(return, "no rdma_cm");
	fd2 = krdma_open();
	ASSERT_LE(0, fd2);
	for (i = 0; i < (int)sizeof(pd); i++)
		pd[i] = i + 1;
	ASSERT_OK(kc_listen(fd2, kt_test_addr(false), 0, &listener, &port));
	/* a request the listener rejects, with private data */
	kc_connect_init(&c, self->fd, kt_test_addr(false), port, pd, 20);
	ASSERT_EQ(0, kc_connect_start(&c));
	memset(ev, 0xff, sizeof(ev));
	if (kc_wait_event(fd2, KRDMA_EVENT_CONNECT_REQUEST, 0, CM_MS, &ev[0])) {
		int err = errno;

		kc_connect_join(&c, CM_MS);
		ASSERT_EQ(0, err) {
			TH_LOG("no CONNECT_REQUEST on port %u: %s; CM_CONNECT: %d (%s)",
			       port, strerror(err), c.ret, strerror(c.err));
		}
	}
	ASSERT_OK(kc_reject(fd2, ev[0].handle, pd, 30));
	ASSERT_EQ(0, kc_connect_join(&c, CM_MS));
	EXPECT_EQ(-1, c.ret);
	/* every event of both sessions, into arrays full of 0xff */
	for (i = 0; i < 2; i++) {
		int fd = i ? fd2 : self->fd;
		int k;

		memset(ev, 0xff, sizeof(ev));
		n = kc_events(fd, ev, 16, 0);
		if (n < 0)
			continue;
		for (k = 0; k < n; k++) {
			struct krdma_event *e = &ev[k];
			size_t alen = e->peer.family == AF_INET ? 4 : 16;

			got++;
			/* the request's device, the test device; else 0 */
			EXPECT_EQ(e->type == KRDMA_EVENT_CONNECT_REQUEST ?
				  self->dev.dev_index : 0u,
				  e->dev_index);
			EXPECT_LE(e->private_data_len, sizeof(e->private_data));
			if (e->private_data_len <= sizeof(e->private_data))
				EXPECT_TRUE(kr_all_bytes(e->private_data + e->private_data_len,
							 sizeof(e->private_data) - e->private_data_len, 0)) {
					TH_LOG("%s: private data past %u bytes not zero",
					       kc_event_name(e->type), e->private_data_len);
				}
			EXPECT_TRUE(e->peer.family == AF_INET || e->peer.family == AF_INET6 ||
				    (!e->peer.family && kr_all_bytes(&e->peer, sizeof(e->peer), 0))) {
				TH_LOG("%s: peer family %u", kc_event_name(e->type), e->peer.family);
			}
			EXPECT_TRUE(kr_all_bytes(e->peer.addr + alen, 16 - alen, 0)) {
				TH_LOG("%s: address bytes past the family's", kc_event_name(e->type));
			}
			if (e->peer.family == AF_INET)
				EXPECT_EQ(0u, e->peer.scope_id);
		}
	}
	TH_LOG("%d events checked", got);
	EXPECT_LT(0, got);
	kt_destroy(fd2, listener);
	close(fd2);
}

TEST_HARNESS_MAIN
