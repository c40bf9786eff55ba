// SPDX-License-Identifier: GPL-2.0
/*
 * The threads of a %KRDMA_BENCH_PER_CPU run: the connections are shared
 * out among the caller's thread, which keeps the first share, and one
 * kernel thread bound to each other CPU the caller may run on, at most one
 * per connection.  Each runs krdma_bench_loop() over its share with its own
 * WR chains and figures; struct krdma_bench_shared holds what they share
 * (totals, the peak window, the first failure, the reason to stop).  The
 * caller publishes progress while it waits for every thread, then adds
 * their figures to its own and returns.
 *
 * The threads busy-poll for the caller, so they are charged to it as
 * vhost's workers are to their owner: its cgroups (cpu.max, cpuset) and
 * its nice.  Every run's threads together are at most bench_max_threads.
 */
#include <linux/capability.h>
#include <linux/cgroup.h>
#include <linux/cpu.h>
#include <linux/cpumask.h>
#include <linux/kthread.h>
#include <linux/ktime.h>
#include <linux/moduleparam.h>
#include <linux/seq_file.h>
#include <linux/sched.h>
#include <linux/slab.h>

#include "bench.h"
#include "krdma_compat.h"

/* (0: one per possible CPU, so that runs never hold more CPUs than exist) */
static unsigned int bench_max_threads;
module_param(bench_max_threads, uint, 0644);
MODULE_PARM_DESC(bench_max_threads,
		 "kernel threads of all per-CPU bench runs at once, at most (default 0: one per CPU)");

static atomic_t krdma_bench_threads_in_use = ATOMIC_INIT(0);

/* Room for @n more threads under bench_max_threads, taken; or false. */
static bool krdma_bench_threads_reserve(u32 n)
{
	unsigned int max = READ_ONCE(bench_max_threads) ?: num_possible_cpus();

	if (atomic_add_return(n, &krdma_bench_threads_in_use) <= (int)max)
		return true;
	atomic_sub(n, &krdma_bench_threads_in_use);
	return false;
}

static void krdma_bench_threads_release(u32 n)
{
	atomic_sub(n, &krdma_bench_threads_in_use);
}

/* debugfs "users": the per-CPU threads every user's runs hold now. */
void krdma_bench_threads_show(struct seq_file *m)
{
	seq_printf(m, "bench_threads %d max %u\n",
		   atomic_read(&krdma_bench_threads_in_use),
		   READ_ONCE(bench_max_threads) ?: num_possible_cpus());
}

/*
 * Is @task, a kernel thread charged to the caller, held to the caller's
 * CPU limit (cpu.max)?  Yes where the caller's cpu cgroup is the root,
 * which has none.  Elsewhere the thread must share that cgroup, which
 * kernels attaching a kernel thread to the v1 hierarchies only (5.10
 * among them) do not do in v2; and even then, since task-based throttling
 * (6.18), cpu.max throttles a task only on its way back to user space,
 * which a kernel thread never takes.
 */
static bool krdma_bench_thread_limited(struct task_struct *task)
{
#ifdef CONFIG_CGROUP_SCHED
	struct cgroup_subsys_state *mine;
	bool limited;

	rcu_read_lock();
	mine = task_css(current, cpu_cgrp_id);
	limited = !mine->parent ||
		  (task_css(task, cpu_cgrp_id) == mine &&
		   KRDMA_CPU_MAX_HOLDS_KTHREADS);
	rcu_read_unlock();
	return limited;
#else
	return true;
#endif
}

/*
 * Charge @task, a thread working for the caller, to it: its cgroups and
 * nice, as vhost_attach_cgroups() does for a vhost worker.  Before
 * kthread_bind(): a cpuset refuses a task that may not change CPUs.  A
 * thread that would still escape the caller's CPU limit is for a caller
 * with CAP_SYS_ADMIN only, free of such limits anyway.
 */
static int krdma_bench_thread_charge(struct task_struct *task)
{
	int ret;

	ret = cgroup_attach_task_all(current, task);
	if (ret)
		return ret;
	if (!krdma_bench_thread_limited(task) && !capable(CAP_SYS_ADMIN))
		return -EPERM;
	set_user_nice(task, task_nice(current));
	return 0;
}

static int krdma_bench_thread_fn(void *data)
{
	struct krdma_bench_thread *t = data;
	int ret = krdma_bench_loop(&t->run);

	if (ret)
		krdma_bench_stop(&t->run, ret);
	/*
	 * Completing and exiting in one call of the core kernel: once the
	 * caller sees @done it may return and the module go, and no code of
	 * the module runs on this thread after that.
	 */
	kthread_complete_and_exit(&t->done, 0);
}

/*
 * Thread @t's share, connections [@first, @end) of @run's, for @cpu: made
 * and charged, not yet bound nor woken.
 */
static int krdma_bench_thread_init(struct krdma_bench_run *run,
				   struct krdma_bench_thread *t, u32 first,
				   u32 end, unsigned int cpu)
{
	int ret;

	t->cmd = *run->cmd;
	t->cmd.progress_uptr = 0;	/* the caller's thread publishes it */
	t->cmd.samples_uptr = 0;	/* and keeps the samples */
	t->cmd.max_samples = 0;
	t->run = *run;
	t->run.cmd = &t->cmd;
	t->run.bconns = run->bconns + first;
	t->run.num_conns = end - first;
	t->run.samples = NULL;
	t->run.threads = NULL;
	t->run.num_threads = 0;
	t->run.wrs = NULL;
	t->run.sges = NULL;
	t->run.rwrs = NULL;
	t->run.rsges = NULL;
	init_completion(&t->done);
	ret = krdma_bench_alloc(&t->run);
	if (ret)
		goto err;
	t->task = kthread_create(krdma_bench_thread_fn, t, "krdma_bench/%u",
				 cpu);
	if (IS_ERR(t->task)) {
		ret = PTR_ERR(t->task);
		goto err;
	}
	ret = krdma_bench_thread_charge(t->task);
	if (ret) {
		/* never woken: kthread_stop() ends it before it runs */
		kthread_stop(t->task);
		goto err;
	}
	t->cpu = cpu;
	return 0;
err:
	krdma_bench_free_chains(&t->run);
	return ret;
}

/* Stop threads made by krdma_bench_spawn() and never woken, free them. */
static void krdma_bench_unspawn(struct krdma_bench_run *run)
{
	u32 i;

	/* never woken: kthread_stop() ends them before they run */
	for (i = 0; i < run->num_threads; i++) {
		kthread_stop(run->threads[i].task);
		krdma_bench_free_chains(&run->threads[i].run);
	}
	kvfree(run->threads);
	run->threads = NULL;
	run->num_threads = 0;
}

/* Make @n - 1 threads, for the CPUs of @mask after the caller's. */
static int krdma_bench_make_threads(struct krdma_bench_run *run, u32 n,
				    const struct cpumask *mask)
{
	unsigned int cpu = raw_smp_processor_id();
	u32 total = run->num_conns, i;
	int ret;

	run->threads = kvcalloc(n - 1, sizeof(*run->threads), GFP_KERNEL);
	if (!run->threads)
		return -ENOMEM;
	for (i = 1; i < n; i++) {
		cpu = cpumask_next(cpu, mask);
		if (cpu >= nr_cpu_ids)
			cpu = cpumask_first(mask);
		ret = krdma_bench_thread_init(run, &run->threads[i - 1],
					      total * i / n,
					      total * (i + 1) / n, cpu);
		if (ret) {
			krdma_bench_unspawn(run);
			return ret;
		}
		run->num_threads = i;
	}
	run->num_conns = total / n;
	return 0;
}

/*
 * Bind each thread to its CPU, or, if that went offline since, to another
 * the caller may use, and wake it.  Holding the hotplug lock, no CPU goes
 * away before its thread is bound and woken.
 */
static void krdma_bench_start_threads(struct krdma_bench_run *run)
{
	unsigned int cpu;
	u32 i;

	cpus_read_lock();
	for (i = 0; i < run->num_threads; i++) {
		struct krdma_bench_thread *t = &run->threads[i];

		cpu = t->cpu;
		if (!cpu_online(cpu))
			cpu = cpumask_any_and(cpu_online_mask,
					      current->cpus_ptr);
		kthread_bind(t->task, cpu);
		wake_up_process(t->task);
	}
	cpus_read_unlock();
}

/*
 * Share the connections out among as many threads as the caller may use
 * CPUs (its affinity, online now), at most one per connection: the
 * caller's, which keeps the first share, and one kernel thread bound to
 * each other of those CPUs; start them.  The CPUs are those the caller
 * could run on itself, so a process confined to some CPUs does not spin on
 * others.  The threads are made outside the hotplug lock: charging them
 * takes the cgroup mutex, which is taken before it.
 */
int krdma_bench_spawn(struct krdma_bench_run *run)
{
	cpumask_var_t mask;
	int ret = 0;
	u32 n;

	if (!zalloc_cpumask_var(&mask, GFP_KERNEL))
		return -ENOMEM;
	cpumask_and(mask, cpu_online_mask, current->cpus_ptr);
	n = min_t(u32, run->num_conns, cpumask_weight(mask));
	if (n > 1) {
		if (!krdma_bench_threads_reserve(n - 1)) {
			ret = -EAGAIN;
			goto out;
		}
		ret = krdma_bench_make_threads(run, n, mask);
		if (ret) {
			krdma_bench_threads_release(n - 1);
			goto out;
		}
	}
	krdma_bench_start_threads(run);
out:
	free_cpumask_var(mask);
	return ret;
}

/* Wait for the threads; a signal meanwhile stops them all. */
void krdma_bench_join(struct krdma_bench_run *run)
{
	u32 i;

	for (i = 0; i < run->num_threads; i++) {
		struct krdma_bench_thread *t = &run->threads[i];
		long left;

		for (;;) {
			left = wait_for_completion_interruptible_timeout(&t->done,
									 HZ / 10);
			if (left)
				break;
			/* the caller keeps publishing the run's progress */
			krdma_bench_progress(run, krdma_bench_now());
		}
		if (left < 0) {
			krdma_bench_stop(run, -EINTR);
			wait_for_completion(&t->done);
		}
	}
}

/* Add the threads' figures to the caller's, and free their shares. */
void krdma_bench_merge(struct krdma_bench_run *run)
{
	struct krdma_bench *cmd = run->cmd;
	u32 i;

	for (i = 0; i < run->num_threads; i++) {
		struct krdma_bench_run *tr = &run->threads[i].run;
		struct krdma_bench *tc = tr->cmd;

		run->num_conns += tr->num_conns;
		run->ops += tr->ops;
		run->bytes += tr->bytes;
		if (tr->start_ns &&
		    (!run->start_ns || tr->start_ns < run->start_ns))
			run->start_ns = tr->start_ns;
		run->last_event_ns = max(run->last_event_ns,
					 tr->last_event_ns);
		cmd->cq_polls += tc->cq_polls;
		cmd->empty_polls += tc->empty_polls;
		cmd->post_calls += tc->post_calls;
		cmd->validate_errors += tc->validate_errors;
		krdma_bench_free_chains(tr);
	}
	krdma_bench_threads_release(run->num_threads);
	kvfree(run->threads);
	run->threads = NULL;
	run->num_threads = 0;
}
