/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krdmactl serve / send / write / read / atomic / copy: the wire protocol
 * and the pieces the server (xfer_serve.c) and the clients (xfer_client.c)
 * share (xfer.c).
 *
 * Connections are rdma_cm connections (KRDMA_CM_CONNECT / CM_ACCEPT) of the
 * transport the client chose with -t: RC (the default), UC or UD.  RC and UC
 * connect with a CM REQ/REP in the rdma_cm TCP port space, UD with SIDR in
 * the UDP port space; a listener takes one transport, so "serve -t rc,ud"
 * listens twice on one port, while RC and UC need a port each.  Every
 * integer on the wire is big-endian.
 *
 * 1. The client's CONNECT private data is struct xfer_hello: magic,
 *    version and the operation it is about to do (informative).  A request
 *    without the magic is rejected.
 *
 * 2. The server's ACCEPT private data is struct xfer_adv, which the client
 *    reads from its ESTABLISHED event (UD: the SIDR reply's): the server's
 *    data buffer (addr, rkey, length; registered LOCAL_WRITE|REMOTE_WRITE|
 *    REMOTE_READ|REMOTE_ATOMIC), what it was filled with at start
 *    (XFER_FILL_*), and the largest control message it receives (UD: at
 *    most its path MTU).  The server has one data buffer shared by all its
 *    clients: atomics of concurrent clients meet there.
 *
 * 3. Control messages are SENDs of struct xfer_msg, followed (XM_SEND only)
 *    by the payload.  The server keeps receives posted for them.  Requests
 *    and replies:
 *
 *      XM_SEND    payload, length, crc32         -> XM_OK | XM_BAD
 *      XM_WRITTEN "I RDMA-wrote @length bytes at @offset, pattern seed
 *                 @arg, crc32 @crc" (sent as SEND_WITH_IMM, imm = crc32)
 *                                                -> XM_OK | XM_BAD
 *      XM_FILE    name in @text, @length, @digest (SHA-256); @arg
 *                 XFER_FILE_RESUME: continue the copy of this very file
 *                 (name, length and digest equal) if the server holds
 *                 one, parked by a lost connection or still owned by a
 *                 connection it has not seen die yet
 *                                                -> XM_NEXT | XM_ERR
 *                 (XM_NEXT's @offset: the bytes the server holds, where
 *                 the client goes on; @length: the chunks they were)
 *      XM_CHUNK   chunk @seq (from 0), @length bytes RDMA-written at
 *                 offset 0 of the data buffer, @crc their CRC-32
 *                                                -> XM_NEXT | XM_ERR
 *      XM_DONE    end of the file               -> XM_GOOD | XM_BAD
 *      XM_BYE     the client is done; @text says what it did (one-sided
 *                 operations the server cannot see), no reply
 *      XM_HELLO   UC and UD: "are your receives posted?"   -> XM_OK
 *      XM_SYNC    streams: "you have taken what came before"  -> XM_OK
 *      XM_TALLY   streams: "I sent @length messages, @seq 0 ... @length
 *                 - 1"                           -> XM_OK | XM_BAD
 *                 (@offset: how many arrived, @length: how many did not;
 *                 XM_BAD's text lists the first missing ones)
 *
 *    A stream (send -n N) is N XM_SENDs with @arg XFER_SEND_STREAM, sent
 *    as SEND_WITH_IMM with the immediate @seq (so that a filter on the wire
 *    can tell them from the other messages): no answer each; after every
 *    XFER_STREAM_WINDOW of them an XM_SYNC, so that they never outrun the
 *    receives the server has posted, and at the end an XM_TALLY.  The
 *    server counts what arrived by @seq, so a loss is counted exactly.
 *
 *    XM_BAD, XM_ERR and XM_GOOD carry a human-readable reason in @text.
 *    Every reply echoes the request's @seq, and its type in @arg, so that
 *    a client can tell a late answer to an earlier request from the one it
 *    waits for.
 *
 * 4. UC and UD have no acknowledgements and no RNR retries: a message that
 *    finds no receive posted is dropped.  The server can post its receives
 *    only once the accept has created its QP, so a UC or UD client first
 *    sends XM_HELLO every XFER_RETRY_MS until an answer comes (within -T);
 *    XM_SYNC and XM_TALLY are resent the same way, the other requests are
 *    sent once, and only the server's answer counts as success (an RDMA
 *    WRITE that did not land shows as XM_BAD).  UC
 *    offers send, write and copy; UD offers send only, one message of at
 *    most the path MTU (struct xfer_msg included); RDMA READ and atomics
 *    are RC only.
 *
 * 5. UD: receives start with the 40-byte GRH, so every receive slot has
 *    XFER_GRH_LEN bytes of room in front of the message.  The server's UD
 *    connection knows no peer: it answers through an address handle made
 *    from the client's address (the CONNECT_REQUEST's peer; on RoCE v2 an
 *    IPv4 address becomes its IPv4-mapped GID) and the QP number the
 *    client's messages came from (the completion's src_qp).  A UD client
 *    has nothing to disconnect: after XM_BYE it closes.
 *
 * Patterns: byte i of the data buffer "has the pattern of seed S" when it
 * equals xfer_pattern_byte(S, i) (i is the offset in the server's buffer).
 * The server fills its buffer with seed 0 (or zeroes with --fill zero);
 * "write" uses a random non-zero seed so that a write that did not land is
 * noticed.
 */
#ifndef KRDMACTL_XFER_H
#define KRDMACTL_XFER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <krdma.h>

#include "verbs.h"

#define XFER_DEFAULT_PORT 18516
#define XFER_DEFAULT_TIMEOUT 10		/* seconds, -T */
#define XFER_DEFAULT_SIZE (1U << 20)	/* serve --size */
#define XFER_MAGIC 0x4b524458U		/* "KRDX" */
#define XFER_VERSION 1
#define XFER_MAX_PAYLOAD 65536		/* XM_SEND */
#define XFER_TEXT_MAX 128
#define XFER_GRH_LEN 40			/* in front of a UD receive */
#define XFER_RETRY_MS 250		/* UC/UD: XM_HELLO resent this often */
#define XFER_STREAM_WINDOW 3		/* stream messages between XM_SYNCs */
#define XFER_STREAM_MAX 1000000		/* messages in a stream */
#define XFER_SEND_STREAM 1		/* XM_SEND @arg: a stream message */
#define XFER_FILE_RESUME 1		/* XM_FILE @arg: resume if you can */
/*
 * The timers krdma gives RC connections over rdma_cm (README: those of a
 * manual connection): local ACK timeout 4.096 us * 2^14, 7 retries.  A
 * RETRY_EXC_ERR comes after about (7 + 1) * 67 ms of silence.
 */
#define XFER_CM_ACK_TIMEOUT 14
#define XFER_CM_RETRY_CNT 7
#define XFER_CM_RNR_RETRY 7
#define XFER_CM_MIN_RNR_TIMER 12

enum xfer_fill {
	XFER_FILL_PATTERN = 0,
	XFER_FILL_ZERO = 1,
};

enum xfer_op {
	XFER_OP_SEND = 1,
	XFER_OP_WRITE,
	XFER_OP_READ,
	XFER_OP_ATOMIC,
	XFER_OP_COPY,
};

/* CONNECT private data (client -> server), 8 bytes */
struct xfer_hello {
	uint32_t magic;
	uint16_t version;
	uint16_t op;		/* enum xfer_op */
};

/* ACCEPT private data (server -> client), 40 bytes */
struct xfer_adv {
	uint32_t magic;
	uint16_t version;
	uint16_t fill;		/* enum xfer_fill */
	uint64_t addr;		/* data buffer, for the rkey */
	uint32_t rkey;
	uint32_t max_msg;	/* bytes one control message may have */
	uint64_t length;	/* data buffer bytes */
	uint64_t __reserved;
};

enum xfer_msg_type {
	XM_SEND = 1,
	XM_WRITTEN = 2,
	XM_FILE = 3,
	XM_CHUNK = 4,
	XM_DONE = 5,
	XM_BYE = 6,
	XM_HELLO = 7,
	XM_SYNC = 8,
	XM_TALLY = 9,
	XM_OK = 16,
	XM_BAD = 17,
	XM_NEXT = 18,
	XM_GOOD = 19,
	XM_ERR = 20,
};

/* A control message, 200 bytes, then the payload (XM_SEND) */
struct xfer_msg {
	uint32_t magic;
	uint16_t version;
	uint16_t type;		/* enum xfer_msg_type */
	uint32_t seq;
	uint32_t crc;
	uint64_t offset;
	uint64_t length;
	uint64_t arg;
	uint8_t digest[32];
	char text[XFER_TEXT_MAX];	/* NUL-terminated */
};

#define XFER_MSG_MAX (sizeof(struct xfer_msg) + XFER_MAX_PAYLOAD)
/* A receive slot: the GRH room, then the message */
#define XFER_SLOT (XFER_GRH_LEN + XFER_MSG_MAX)

_Static_assert(sizeof(struct xfer_hello) == 8, "xfer_hello");
_Static_assert(sizeof(struct xfer_adv) == 40, "xfer_adv");
_Static_assert(sizeof(struct xfer_msg) == 200, "xfer_msg");

/* xfer.c */
const char *xfer_msg_name(uint32_t type);
uint32_t xfer_crc32(uint32_t crc, const void *data, size_t len);
uint8_t xfer_pattern_byte(uint64_t seed, uint64_t off);
void xfer_pattern_fill(uint8_t *p, uint64_t seed, uint64_t off, size_t len);
/* index of the first byte that differs, or -1 */
int64_t xfer_pattern_check(const uint8_t *p, uint64_t seed, uint64_t off,
			   size_t len, bool zero);
struct stat;
int xfer_open_file(const char *cmd, const char *path, struct stat *st);
/*
 * -t: one of rc, uc, ud or, with @list, a comma-separated set of them; a
 * mask of (1 << KRDMA_TRANSPORT_*): 0, or EXIT_USAGE (reported).
 */
int xfer_parse_transport(const char *cmd, const char *arg, bool list,
			 uint32_t *mask);
/* the smallest active MTU of the device's ports, or 0 (reported) */
uint32_t xfer_port_mtu(int fd, uint32_t dev_index);
void xfer_msg_init(struct xfer_msg *m, uint32_t type);
/* checks magic, version and size of a received message; NULL if fine */
const char *xfer_msg_check(const struct xfer_msg *m, uint32_t byte_len);
void xfer_msg_text(struct xfer_msg *m, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Receive slot @slot (of XFER_SLOT bytes from offset 0) of @buf. */
int xfer_post_slot(int fd, uint32_t conn, uint64_t wr_id,
		   const struct verbs_buf *buf, uint32_t slot,
		   uint32_t transport);
/* The message a completion of slot @slot brought, its length in @len. */
const struct xfer_msg *xfer_slot_msg(const struct verbs_buf *buf,
				     uint32_t slot, uint32_t transport,
				     uint32_t byte_len, uint32_t *len);
#endif /* KRDMACTL_XFER_H */
