// SPDX-License-Identifier: GPL-2.0
/*
 * cpu_samples: where every CPU's time goes while a command runs.
 *
 *   cpu_samples [-F HZ] [-t N] [-m MODULE]... [-f FUNCTION]... -- COMMAND...
 *
 * Samples every online CPU with perf's cpu-clock (HZ times a second,
 * default 999) and its kernel call chain, runs COMMAND, and prints
 *
 *   cpu_samples: wall S cpus N samples T lost L coverage V NAME C ...
 *   user C kernel C irq C idle C
 *
 * S the seconds COMMAND ran; V the samples over what HZ on N CPUs for S
 * seconds would give (a vCPU that falls behind drops timer periods: every
 * class then reads low alike); each C the CPU seconds of a class (its
 * samples / HZ, summed over the CPUs).  The chain is read from the
 * sampled IP outward, up to the first interrupt or softirq entry:
 *
 *  - the first frame that is a -f FUNCTION or lies in a -m MODULE takes
 *    the sample (so a CQ poll, -f rxe_poll_cq, is apart from the rest of
 *    -m rdma_rxe, and the copies and CRCs rxe calls count for rxe);
 *  - else, an entry reached: irq (softirq and interrupt work that is no
 *    class's, such as a tasklet put back because it runs elsewhere);
 *  - else the idle task's samples are idle; user space's, user; the rest
 *    of the kernel's, kernel.
 *
 * -t N adds the N kernel functions most sampled (where the IP was), one
 * "cpu_samples: top SECONDS FUNCTION [MODULE]" line each.  Root only
 * (system-wide sampling, kernel addresses).  Exits with COMMAND's status,
 * or 125 when sampling could not start.
 */
#include <errno.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_CLASSES	8	/* -m and -f */
#define RING_PAGES	64	/* data pages per CPU, a power of two */
#define FAILED		125

struct ksym {
	uint64_t addr;
	char *name;		/* "function [module]" */
	uint64_t hits;		/* samples whose IP was here */
	int class;		/* index in classes[], -1: none of them */
	int entry;		/* an interrupt or softirq entry */
};

/* what -m and -f name, in their order */
static struct {
	const char *name;
	int function;		/* -f, else -m */
} classes[MAX_CLASSES];
static int nr_classes;

static struct ksym *syms;
static size_t nr_syms;

struct ring {
	int fd;
	struct perf_event_mmap_page *page;
	unsigned char *data;
	size_t size;
};

/* per class: -m's and -f's, then the fixed ones */
enum { C_USER = MAX_CLASSES, C_KERNEL, C_IRQ, C_IDLE, NR_COUNTS };
static uint64_t counts[NR_COUNTS];
static uint64_t lost;

static void die(const char *what)
{
	fprintf(stderr, "cpu_samples: %s: %s\n", what, strerror(errno));
	exit(FAILED);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: cpu_samples [-F HZ] [-t N] [-m MODULE]... [-f FUNCTION]... -- COMMAND [ARG]...\n");
	exit(FAILED);
}

static int by_addr(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* a function's class, else its module's: -1 for none */
static int class_of(const char *name, const char *module)
{
	int i;

	for (i = 0; i < nr_classes; i++)
		if (classes[i].function && !strcmp(name, classes[i].name))
			return i;
	for (i = 0; i < nr_classes; i++)
		if (!classes[i].function && !strcmp(module, classes[i].name))
			return i;
	return -1;
}

/* where an interrupt's or a softirq's work begins on a stack */
static int is_entry(const char *name)
{
	return !strncmp(name, "asm_sysvec_", 11) ||
	       !strncmp(name, "asm_common_interrupt", 20) ||
	       !strcmp(name, "handle_softirqs") ||
	       !strcmp(name, "__do_softirq");
}

static void add_ksym(uint64_t addr, const char *name, const char *module)
{
	static size_t room;
	struct ksym *s;

	if (nr_syms == room) {
		room = room ? room * 2 : 65536;
		syms = realloc(syms, room * sizeof(*syms));
		if (!syms)
			die("realloc");
	}
	s = &syms[nr_syms++];
	s->addr = addr;
	s->class = class_of(name, module);
	s->entry = is_entry(name);
	s->hits = 0;
	if (asprintf(&s->name, "%s%s%s%s", name, *module ? " [" : "", module,
		     *module ? "]" : "") < 0)
		die("asprintf");
}

/* /proc/kallsyms' text and weak symbols, sorted ("ADDR TYPE NAME\t[MOD]") */
static void read_kallsyms(void)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	char *line = NULL, *addr, *type, *name, *module, *save;
	size_t len = 0;

	if (!f)
		die("/proc/kallsyms");
	while (getline(&line, &len, f) > 0) {
		addr = strtok_r(line, " \t\n", &save);
		type = strtok_r(NULL, " \t\n", &save);
		name = strtok_r(NULL, " \t\n", &save);
		module = strtok_r(NULL, " \t\n", &save);
		if (!name || !strchr("tTwW", type[0]) ||
		    !strtoull(addr, NULL, 16))
			continue;
		if (module && module[0] == '[') {
			module++;
			module[strcspn(module, "]")] = '\0';
		} else {
			module = "";
		}
		add_ksym(strtoull(addr, NULL, 16), name, module);
	}
	free(line);
	fclose(f);
	if (!nr_syms) {
		errno = EPERM;
		die("no kernel addresses in /proc/kallsyms");
	}
	qsort(syms, nr_syms, sizeof(*syms), by_addr);
}

/* the symbol @ip lies in; NULL below the first or far past the last */
static struct ksym *lookup(uint64_t ip)
{
	size_t lo = 0, hi = nr_syms;

	if (ip < syms[0].addr)
		return NULL;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (syms[mid].addr <= ip)
			lo = mid;
		else
			hi = mid;
	}
	if (lo == nr_syms - 1 && ip - syms[lo].addr >= 1 << 20)
		return NULL;
	return &syms[lo];
}

/* the class of a sample's kernel chain @ips[@nr]: -1 if none decides */
static int chain_class(const uint64_t *ips, uint64_t nr)
{
	int caller = 0;
	uint64_t i;

	for (i = 0; i < nr; i++) {
		const struct ksym *s;

		if (ips[i] >= (uint64_t)PERF_CONTEXT_MAX)
			continue;	/* a context marker */
		/* a caller's frame holds a return address: the call is before */
		s = lookup(ips[i] - caller);
		caller = 1;
		if (!s)
			continue;
		if (s->class >= 0)
			return s->class;
		if (s->entry)
			return C_IRQ;
	}
	return -1;
}

/* one PERF_RECORD_SAMPLE of @size bytes after its header */
static void account(const uint64_t *rec, size_t size, uint16_t misc)
{
	uint64_t ip = rec[0], nr = rec[2];
	uint32_t pid = (uint32_t)rec[1];	/* u32 pid, u32 tid */
	struct ksym *s;
	int class;

	if (size < 3 * sizeof(*rec))
		return;
	if (nr > size / sizeof(*rec) - 3)
		nr = size / sizeof(*rec) - 3;
	s = (misc & PERF_RECORD_MISC_CPUMODE_MASK) ==
	    PERF_RECORD_MISC_KERNEL ? lookup(ip) : NULL;
	if (s)
		s->hits++;
	class = chain_class(rec + 3, nr);
	if (class < 0 && !pid)
		class = C_IDLE;
	else if (class < 0)
		class = (misc & PERF_RECORD_MISC_CPUMODE_MASK) ==
			PERF_RECORD_MISC_USER ? C_USER : C_KERNEL;
	counts[class]++;
}

/* every whole record between the ring's tail and head */
static void drain(struct ring *r)
{
	uint64_t head = __atomic_load_n(&r->page->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = r->page->data_tail;
	static uint64_t rec[8192];	/* holds a record of any u16 size */

	while (tail < head) {
		struct perf_event_header h;
		size_t off = tail & (r->size - 1), i;
		unsigned char *dst = (unsigned char *)rec;

		for (i = 0; i < sizeof(h); i++)
			((unsigned char *)&h)[i] = r->data[(off + i) & (r->size - 1)];
		if (h.size < sizeof(h))
			break;
		for (i = 0; i < h.size; i++)
			dst[i] = r->data[(off + i) & (r->size - 1)];
		if (h.type == PERF_RECORD_SAMPLE)
			account(rec + 1, h.size - sizeof(h), h.misc);
		else if (h.type == PERF_RECORD_LOST)
			lost += rec[2];	/* u64 id, u64 lost */
		tail += h.size;
	}
	__atomic_store_n(&r->page->data_tail, tail, __ATOMIC_RELEASE);
}

/* CPU @cpu's event and ring: 0, or -1 for a CPU that is not online */
static int open_ring(struct ring *r, int cpu, int hz)
{
	long page = sysconf(_SC_PAGESIZE);
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_period = 1000000000ULL / hz,
		.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID |
			       PERF_SAMPLE_CALLCHAIN,
		.disabled = 1,
		.exclude_callchain_user = 1,
	};
	void *map;

	r->fd = syscall(SYS_perf_event_open, &attr, -1, cpu, -1,
			PERF_FLAG_FD_CLOEXEC);
	if (r->fd < 0 && errno == ENODEV)
		return -1;
	if (r->fd < 0)
		die("perf_event_open");
	r->size = RING_PAGES * page;
	map = mmap(NULL, r->size + page, PROT_READ | PROT_WRITE, MAP_SHARED,
		   r->fd, 0);
	if (map == MAP_FAILED)
		die("mmap");
	r->page = map;
	r->data = (unsigned char *)map + page;
	return 0;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int by_hits(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->hits > y->hits ? -1 : x->hits < y->hits;
}

static void report(double wall, int ncpus, int hz, int top)
{
	static const char * const fixed[] = { "user", "kernel", "irq", "idle" };
	uint64_t total = 0;
	int i;

	for (i = 0; i < NR_COUNTS; i++)
		total += counts[i];
	printf("cpu_samples: wall %.3f cpus %d samples %" PRIu64 " lost %"
	       PRIu64 " coverage %.3f", wall, ncpus, total, lost,
	       total / (wall * ncpus * hz));
	for (i = 0; i < nr_classes; i++)
		printf(" %s %.3f", classes[i].name, (double)counts[i] / hz);
	for (i = 0; i < NR_COUNTS - C_USER; i++)
		printf(" %s %.3f", fixed[i], (double)counts[C_USER + i] / hz);
	printf("\n");
	/* sorts syms[]: no lookup after this */
	qsort(syms, nr_syms, sizeof(*syms), by_hits);
	for (i = 0; i < top && (size_t)i < nr_syms && syms[i].hits; i++)
		printf("cpu_samples: top %.3f %s\n", (double)syms[i].hits / hz,
		       syms[i].name);
}

/* a whole number from @lo to @hi, else usage */
static int number(const char *s, int lo, int hi)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (*end || end == s || v < lo || v > hi)
		usage();
	return v;
}

int main(int argc, char **argv)
{
	int hz = 999, top = 0, ncpus = 0, cpu, opt, status;
	long ncpus_conf = sysconf(_SC_NPROCESSORS_CONF);
	struct ring *rings;
	double t0, wall;
	pid_t child;

	while ((opt = getopt(argc, argv, "+F:t:m:f:")) != -1) {
		if (opt == 'F') {
			hz = number(optarg, 1, 100000);
		} else if (opt == 't') {
			top = number(optarg, 0, 1000);
		} else if (opt == 'm' || opt == 'f') {
			if (nr_classes == MAX_CLASSES) {
				fprintf(stderr, "cpu_samples: at most %d -m and -f\n",
					MAX_CLASSES);
				exit(FAILED);
			}
			classes[nr_classes].name = optarg;
			classes[nr_classes++].function = opt == 'f';
		} else {
			usage();
		}
	}
	if (optind >= argc)
		usage();
	read_kallsyms();
	rings = calloc(ncpus_conf, sizeof(*rings));
	if (!rings)
		die("calloc");
	for (cpu = 0; cpu < ncpus_conf; cpu++)
		if (!open_ring(&rings[ncpus], cpu, hz))
			ncpus++;
	/* waitpid() must see the child, whatever SIGCHLD was left as */
	signal(SIGCHLD, SIG_DFL);

	t0 = now();
	for (cpu = 0; cpu < ncpus; cpu++)
		if (ioctl(rings[cpu].fd, PERF_EVENT_IOC_ENABLE, 0))
			die("PERF_EVENT_IOC_ENABLE");
	child = fork();
	if (child < 0)
		die("fork");
	if (!child) {
		execvp(argv[optind], argv + optind);
		fprintf(stderr, "cpu_samples: %s: %s\n", argv[optind],
			strerror(errno));
		_exit(127);
	}
	/* a ring holds ~0.7 s of 1 kHz samples with 40-frame chains */
	for (;;) {
		pid_t done = waitpid(child, &status, WNOHANG);

		if (done == child)
			break;
		if (done < 0 && errno != EINTR)
			die("waitpid");
		for (cpu = 0; cpu < ncpus; cpu++)
			drain(&rings[cpu]);
		usleep(20000);
	}
	for (cpu = 0; cpu < ncpus; cpu++)
		ioctl(rings[cpu].fd, PERF_EVENT_IOC_DISABLE, 0);
	wall = now() - t0;
	for (cpu = 0; cpu < ncpus; cpu++)
		drain(&rings[cpu]);
	report(wall, ncpus, hz, top);
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + WTERMSIG(status);
}
