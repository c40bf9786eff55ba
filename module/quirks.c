// SPDX-License-Identifier: GPL-2.0
/*
 * The workarounds of quirks.h that take more than a test at the call site.
 */
#include <linux/completion.h>
#include <linux/cpu.h>
#include <linux/interrupt.h>
#include <linux/slab.h>
#include <linux/workqueue.h>

#include "quirks.h"

/**
 * struct krdma_tasklet_mark - a tasklet queued behind those of one CPU
 * @tasklet: on the CPU's tasklet list, which runs in order
 * @ran: completed by @tasklet
 */
struct krdma_tasklet_mark {
	struct tasklet_struct tasklet;
	struct completion ran;
};

static void krdma_tasklet_mark_run(struct tasklet_struct *t)
{
	struct krdma_tasklet_mark *mark = from_tasklet(mark, t, tasklet);

	complete(&mark->ran);
}

/* A work on one CPU: once its mark has run, so have the tasklets before. */
static void krdma_tasklet_mark_cpu(struct work_struct *work)
{
	struct krdma_tasklet_mark mark;

	tasklet_setup(&mark.tasklet, krdma_tasklet_mark_run);
	init_completion(&mark.ran);
	/* with bottom halves off it runs at their enable, here, if it can */
	local_bh_disable();
	tasklet_schedule(&mark.tasklet);
	local_bh_enable();
	wait_for_completion(&mark.ran);
	/* the softirq still holds it (its RUN bit) when complete() wakes us */
	tasklet_kill(&mark.tasklet);
}

/* Without memory for a work per CPU: one CPU at a time, a work on the stack. */
static void krdma_tasklet_barrier_serial(void)
{
	struct work_struct work;
	int cpu;

	INIT_WORK_ONSTACK(&work, krdma_tasklet_mark_cpu);
	for_each_online_cpu(cpu) {
		queue_work_on(cpu, system_highpri_wq, &work);
		flush_work(&work);
	}
	destroy_work_on_stack(&work);
}

/*
 * Every online CPU at once, a work of @works each; without @works, one
 * CPU at a time.  Under cpus_read_lock() (lockdep_assert_cpus_held() is
 * not exported).
 */
static void krdma_tasklet_barrier(struct work_struct *works)
{
	int cpu;

	if (!works) {
		krdma_tasklet_barrier_serial();
		return;
	}
	for_each_online_cpu(cpu) {
		INIT_WORK(&works[cpu], krdma_tasklet_mark_cpu);
		queue_work_on(cpu, system_highpri_wq, &works[cpu]);
	}
	for_each_online_cpu(cpu)
		flush_work(&works[cpu]);
}

/**
 * krdma_cq_quiesce() - wait out @ibdev's completion tasklets
 * @ibdev: the device whose CQ is to be destroyed
 *
 * Between the destruction of a CQ's last QP, after which nothing schedules
 * its handler, and ib_destroy_cq(), on a device with %KRDMA_QUIRK_CQ_TASKLET.
 * Two rounds: a tasklet that a CPU finds still running on another is
 * queued again, behind the first round's mark.  CPU hotplug is held off
 * so that no CPU is missed.
 *
 * Context: process context; sleeps, allocates (GFP_KERNEL), takes
 * cpus_read_lock() and flushes works of system_highpri_wq.
 */
void krdma_cq_quiesce(struct ib_device *ibdev)
{
	struct work_struct *works;

	if (!krdma_quirk(ibdev, KRDMA_QUIRK_CQ_TASKLET))
		return;
	/* no memory: the rounds go one CPU at a time */
	works = kcalloc(nr_cpu_ids, sizeof(*works), GFP_KERNEL | __GFP_NOWARN);
	cpus_read_lock();
	krdma_tasklet_barrier(works);
	krdma_tasklet_barrier(works);
	cpus_read_unlock();
	kfree(works);
}
