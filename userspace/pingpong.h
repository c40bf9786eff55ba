/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krdmactl pingpong: the pieces shared by the verbs side (pingpong.c) and
 * the TCP address exchange (pp_exch.c).
 */
#ifndef KRDMACTL_PINGPONG_H
#define KRDMACTL_PINGPONG_H

#include <stdbool.h>
#include <stdint.h>

/* What one side tells the other, as ibv_*_pingpong's struct pingpong_dest. */
struct pp_dest {
	uint32_t lid;
	uint32_t qpn;
	uint32_t psn;
	uint8_t gid[16];
};

/*
 * The message: "%04x:%06x:%06x:%s" with the GID as 32 hex digits, sent with
 * its NUL, always sizeof() this template (52 bytes).  The client ends the
 * exchange with "done" and its NUL.
 */
#define PP_MSG_TEMPLATE "0000:000000:000000:00000000000000000000000000000000"
#define PP_MSG_SIZE sizeof(PP_MSG_TEMPLATE)
#define PP_DONE "done"

/*
 * pp_exch.c; each reports its own failure.  The first two return the
 * connected socket, the others 0; all -errno on failure.
 */
int pp_tcp_connect(const char *host, uint32_t port, int timeout_ms);
int pp_tcp_accept(uint32_t port, int timeout_ms);
int pp_send_dest(int sock, const struct pp_dest *dest);
int pp_recv_dest(int sock, int timeout_ms, struct pp_dest *dest);
int pp_send_done(int sock);
int pp_recv_done(int sock, int timeout_ms);

#endif /* KRDMACTL_PINGPONG_H */
