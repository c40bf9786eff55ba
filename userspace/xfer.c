// SPDX-License-Identifier: GPL-2.0
/*
 * krdmactl serve and its clients: shared helpers (see xfer.h for the
 * protocol).
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "krdmactl.h"
#include "names.h"
#include "xfer.h"

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

/*
 * Every slot's message starts XFER_GRH_LEN bytes in; a UD receive starts
 * at the slot itself, so that its GRH lands in front of the message.
 */
int xfer_post_slot(int fd, uint32_t conn, uint64_t wr_id,
		   const struct verbs_buf *buf, uint32_t slot,
		   uint32_t transport)
{
	uint32_t grh = transport == KRDMA_TRANSPORT_UD ? XFER_GRH_LEN : 0;

	return verbs_post_recv(fd, conn, wr_id, buf->handle,
			       (uint64_t)slot * XFER_SLOT + XFER_GRH_LEN - grh,
			       XFER_MSG_MAX + grh);
}

const struct xfer_msg *xfer_slot_msg(const struct verbs_buf *buf,
				     uint32_t slot, uint32_t transport,
				     uint32_t byte_len, uint32_t *len)
{
	uint32_t grh = transport == KRDMA_TRANSPORT_UD ? XFER_GRH_LEN : 0;

	*len = byte_len > grh ? byte_len - grh : 0;
	return (const void *)(buf->mem + (uint64_t)slot * XFER_SLOT +
			      XFER_GRH_LEN);
}
