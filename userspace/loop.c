// SPDX-License-Identifier: GPL-2.0
/*
 * krdmactl: the stop flag of the commands' wait loops, and their clock.
 */
#include <signal.h>
#include <time.h>

#include "loop.h"

volatile int loop_stop;

static void loop_on_signal(int sig)
{
	loop_stop = sig;
}

/* No SA_RESTART: a blocking ioctl or poll(2) returns EINTR. */
void loop_catch_signals(void)
{
	struct sigaction sa = { .sa_handler = loop_on_signal };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

int64_t loop_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
