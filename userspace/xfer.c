// SPDX-License-Identifier: GPL-2.0
/*
 * krdmactl serve and its clients: shared helpers (see xfer.h for the
 * protocol).
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "krdmactl.h"
#include "names.h"
#include "xfer.h"

volatile int xfer_stop;

static void xfer_on_signal(int sig)
{
	xfer_stop = sig;
}

/* No SA_RESTART: a blocking ioctl or poll(2) returns EINTR. */
void xfer_catch_signals(void)
{
	struct sigaction sa = { .sa_handler = xfer_on_signal };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

int64_t xfer_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

const char *xfer_msg_name(uint32_t type)
{
	switch (type) {
	case XM_SEND: return "SEND";
	case XM_WRITTEN: return "WRITTEN";
	case XM_FILE: return "FILE";
	case XM_CHUNK: return "CHUNK";
	case XM_DONE: return "DONE";
	case XM_BYE: return "BYE";
	case XM_HELLO: return "HELLO";
	case XM_SYNC: return "SYNC";
	case XM_TALLY: return "TALLY";
	case XM_OK: return "OK";
	case XM_BAD: return "BAD";
	case XM_NEXT: return "NEXT";
	case XM_GOOD: return "GOOD";
	case XM_ERR: return "ERR";
	}
	return "unknown";
}

/* CRC-32 (IEEE 802.3, as zlib's crc32()), bit by bit: sizes here are small */
uint32_t xfer_crc32(uint32_t crc, const void *data, size_t len)
{
	static uint32_t table[256];
	const uint8_t *p = data;
	uint32_t c;
	unsigned int i, j;

	if (!table[1]) {
		for (i = 0; i < 256; i++) {
			c = i;
			for (j = 0; j < 8; j++)
				c = c & 1 ? 0xedb88320U ^ (c >> 1) : c >> 1;
			table[i] = c;
		}
	}
	crc = ~crc;
	while (len--)
		crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

static uint64_t pattern_word(uint64_t seed, uint64_t word)
{
	uint64_t x = word * 0x9e3779b97f4a7c15ULL ^ seed * 0xbf58476d1ce4e5b9ULL;

	x ^= x >> 31;
	x *= 0x94d049bb133111ebULL;
	return x ^ (x >> 29);
}

uint8_t xfer_pattern_byte(uint64_t seed, uint64_t off)
{
	return pattern_word(seed, off >> 3) >> ((off & 7) * 8);
}

void xfer_pattern_fill(uint8_t *p, uint64_t seed, uint64_t off, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = xfer_pattern_byte(seed, off + i);
}

int64_t xfer_pattern_check(const uint8_t *p, uint64_t seed, uint64_t off,
			   size_t len, bool zero)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != (zero ? 0 : xfer_pattern_byte(seed, off + i)))
			return (int64_t)i;
	return -1;
}

/*
 * Open @path to read it whole: a regular file only.  O_NONBLOCK, so that a
 * FIFO is refused rather than waited on in open(); /proc and device files
 * say a size they do not have.  Returns the fd, or -errno after a message.
 */
int xfer_open_file(const char *cmd, const char *path, struct stat *st)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	int err;

	if (fd < 0 || fstat(fd, st)) {
		err = errno;
		err_msg("%s: %s: %s", cmd, path, strerror(err));
		if (fd >= 0)
			close(fd);
		return -err;
	}
	if (!S_ISREG(st->st_mode)) {
		err_msg("%s: %s: not a regular file", cmd, path);
		close(fd);
		return -EINVAL;
	}
	return fd;
}

int xfer_parse_addr(const char *cmd, const char *what, const char *arg,
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

void xfer_format_addr(const struct krdma_sockaddr *sa, char *buf, size_t len)
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

static int xfer_transport_of(const char *name, size_t len)
{
	unsigned int i;

	for (i = 0; i < nr_transport_names; i++)
		if (strlen(transport_names[i]) == len &&
		    !strncmp(name, transport_names[i], len))
			return i;
	return -1;
}

int xfer_parse_transport(const char *cmd, const char *arg, bool list,
			 uint32_t *mask)
{
	const char *p = arg;
	size_t len;
	int t;

	*mask = 0;
	for (;;) {
		len = list ? strcspn(p, ",") : strlen(p);
		t = xfer_transport_of(p, len);
		if (t < 0) {
			err_msg("%s: -t/--transport: \"%.*s\" is not rc, uc or "
				"ud", cmd, (int)len, p);
			return EXIT_USAGE;
		}
		*mask |= 1U << t;
		if (!p[len])
			return 0;
		p += len + 1;
	}
}

const char *xfer_transport_name(uint32_t transport)
{
	return transport < nr_transport_names ? transport_names[transport] :
						"?";
}

uint32_t xfer_port_mtu(int fd, uint32_t dev_index)
{
	struct dev_snapshot snap;
	uint32_t i, mtu = 0;

	if (query_devices(fd, true, dev_index, &snap))
		return 0;
	for (i = 0; i < snap.num_ports; i++)
		if (snap.ports[i].dev_index == dev_index &&
		    snap.ports[i].state == KRDMA_PORT_ACTIVE &&
		    (!mtu || snap.ports[i].active_mtu < mtu))
			mtu = snap.ports[i].active_mtu;
	free_snapshot(&snap);
	if (!mtu)
		err_msg("no active port on device %u", dev_index);
	return mtu;
}

void xfer_msg_init(struct xfer_msg *m, uint32_t type)
{
	memset(m, 0, sizeof(*m));
	m->magic = htobe32(XFER_MAGIC);
	m->version = htobe16(XFER_VERSION);
	m->type = htobe16(type);
}

const char *xfer_msg_check(const struct xfer_msg *m, uint32_t byte_len)
{
	if (byte_len < sizeof(*m))
		return "short control message";
	if (be32toh(m->magic) != XFER_MAGIC)
		return "control message without the krdmactl magic";
	if (be16toh(m->version) != XFER_VERSION)
		return "control message of another protocol version";
	if (!memchr(m->text, 0, sizeof(m->text)))
		return "control message text not terminated";
	return NULL;
}

void xfer_msg_text(struct xfer_msg *m, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(m->text, sizeof(m->text), fmt, ap);
	va_end(ap);
}

int xfer_buf_alloc(int fd, uint32_t dev_index, uint32_t access,
		   uint64_t length, struct xfer_buf *b)
{
	struct krdma_buf_alloc ba = {
		.size = sizeof(ba),
		.dev_index = dev_index,
		.access = access,
		.length = length,
	};
	long page = sysconf(_SC_PAGESIZE);
	void *mem;
	int ret;

	memset(b, 0, sizeof(*b));
	ret = krdma_ioctl(fd, KRDMA_BUF_ALLOC, &ba);
	if (ret)
		return ret;
	b->handle = ba.handle;
	b->lkey = ba.lkey;
	b->rkey = ba.rkey;
	b->addr = ba.addr;
	b->length = length;
	b->map_len = (length + page - 1) / page * page;
	mem = mmap(NULL, b->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		   ba.mmap_offset);
	if (mem == MAP_FAILED) {
		ret = -errno;
		err_msg("mmap of a %llu-byte buffer: %s",
			(unsigned long long)length, strerror(-ret));
		xfer_destroy(fd, b->handle);
		b->handle = 0;
		return ret;
	}
	b->mem = mem;
	return 0;
}

void xfer_buf_free(int fd, struct xfer_buf *b)
{
	if (b->mem)
		munmap(b->mem, b->map_len);
	if (b->handle)
		xfer_destroy(fd, b->handle);
	memset(b, 0, sizeof(*b));
}

int xfer_destroy(int fd, uint32_t handle)
{
	struct krdma_destroy d = { .size = sizeof(d), .handle = handle };

	return krdma_ioctl_quiet(fd, KRDMA_DESTROY, &d);
}

int xfer_post_one(int fd, uint32_t conn, struct krdma_wr *wr)
{
	struct krdma_post post = {
		.size = sizeof(post),
		.handle = conn,
		.num_wrs = 1,
		.wr_entry_size = sizeof(*wr),
		.wrs_uptr = (uintptr_t)wr,
	};

	return krdma_ioctl(fd, KRDMA_POST, &post);
}

int xfer_post_recv(int fd, uint32_t conn, uint64_t wr_id, uint32_t buf,
		   uint64_t offset, uint32_t length)
{
	struct krdma_wr wr = {
		.wr_id = wr_id,
		.opcode = KRDMA_OP_RECV,
		.num_sge = 1,
		.sge[0] = { .buf_handle = buf, .offset = offset,
			    .length = length },
	};

	return xfer_post_one(fd, conn, &wr);
}

/*
 * Every slot's message starts XFER_GRH_LEN bytes in; a UD receive starts
 * at the slot itself, so that its GRH lands in front of the message.
 */
int xfer_post_slot(int fd, uint32_t conn, uint64_t wr_id,
		   const struct xfer_buf *buf, uint32_t slot,
		   uint32_t transport)
{
	uint32_t grh = transport == KRDMA_TRANSPORT_UD ? XFER_GRH_LEN : 0;

	return xfer_post_recv(fd, conn, wr_id, buf->handle,
			      (uint64_t)slot * XFER_SLOT + XFER_GRH_LEN - grh,
			      XFER_MSG_MAX + grh);
}

const struct xfer_msg *xfer_slot_msg(const struct xfer_buf *buf,
				     uint32_t slot, uint32_t transport,
				     uint32_t byte_len, uint32_t *len)
{
	uint32_t grh = transport == KRDMA_TRANSPORT_UD ? XFER_GRH_LEN : 0;

	*len = byte_len > grh ? byte_len - grh : 0;
	return (const void *)(buf->mem + (uint64_t)slot * XFER_SLOT +
			      XFER_GRH_LEN);
}

/*
 * Up to @max completions of @conn within @timeout_ms: how many, or -errno
 * (reports nothing).
 */
int xfer_poll(int fd, uint32_t conn, struct krdma_wc *wcs, uint32_t max,
	      uint32_t timeout_ms)
{
	struct krdma_poll p = {
		.size = sizeof(p),
		.handle = conn,
		.num_wcs = max,
		.wc_entry_size = sizeof(*wcs),
		.timeout_ms = timeout_ms,
		.wcs_uptr = (uintptr_t)wcs,
	};
	int ret;

	ret = krdma_ioctl_quiet(fd, KRDMA_POLL, &p);
	return ret ? ret : (int)p.num_wcs;
}

/*
 * Up to @max CM events within @timeout_ms: how many, or -errno (reports
 * nothing).
 */
int xfer_get_events(int fd, struct krdma_event *evs, uint32_t max,
		    uint32_t timeout_ms)
{
	struct krdma_get_events ge = {
		.size = sizeof(ge),
		.num_events = max,
		.event_entry_size = sizeof(*evs),
		.timeout_ms = timeout_ms,
		.events_uptr = (uintptr_t)evs,
	};
	int ret;

	ret = krdma_ioctl_quiet(fd, KRDMA_GET_EVENTS, &ge);
	return ret ? ret : (int)ge.num_events;
}
