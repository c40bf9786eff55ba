/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krdmactl: what the commands' wait loops share: the flag SIGINT and
 * SIGTERM set to end them, and the clock of their deadlines.  loop.c.
 */
#ifndef KRDMACTL_LOOP_H
#define KRDMACTL_LOOP_H

#include <stdint.h>

extern volatile int loop_stop;	/* set by SIGINT/SIGTERM */
void loop_catch_signals(void);
int64_t loop_now_ms(void);

#endif /* KRDMACTL_LOOP_H */
