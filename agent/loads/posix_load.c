/* SPDX-License-Identifier: Apache-2.0 */
/* The load engine on POSIX: threads placed round-robin over the load CPUs,
 * at normal scheduling (SCHED_OTHER) unless a real-time priority was asked
 * for, a private temporary folder for the kinds that write files, and a
 * start that returns only once every thread is running. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "load_impl.h"

const load_kind *const load_kinds[] = {&load_kind_cpu, &load_kind_memory, &load_kind_kernel,
                                       &load_kind_io,  &load_kind_irq,    &load_kind_stress};
const int load_nkinds = sizeof load_kinds / sizeof load_kinds[0];

/* Without a case budget (max_ms 0), how long starting may take. */
#define READY_TIMEOUT_NS 10000000000LL

void load_ready(load_worker *w) { atomic_fetch_add(&w->load->ready, 1); }

void load_fail(load_worker *w, const char *fmt, ...)
{
    static atomic_flag claimed; /* the first failure's words are enough */
    if (!atomic_flag_test_and_set(&claimed)) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(w->load->fail_msg, sizeof w->load->fail_msg, fmt, ap);
        va_end(ap);
        atomic_flag_clear(&claimed);
    }
    atomic_fetch_add(&w->load->failed, 1);
}

static void entry(void *arg)
{
    load_worker *w = arg;
    w->load->spec.kind->run(w);
}

typedef struct helper {
    const rtb_load *load;
    rtb_thread_fn fn;
    void *arg;
} helper;

static void helper_entry(void *arg)
{
    helper h = *(helper *)arg;
    free(arg);
    h.fn(h.arg);
}

static rtb_thread_attr attr_of(const rtb_load *l, const char *name, int cpu)
{
    /* Priority 0: normal scheduling (SCHED_OTHER), below every case thread. */
    return (rtb_thread_attr){.name = name, .priority = l->priority ? l->priority : 1, .cpu = cpu,
                             .stack_size = 256 * 1024, .normal = l->priority == 0};
}

int load_helper(load_worker *w, rtb_thread *th, rtb_thread_fn fn, void *arg)
{
    helper *h = malloc(sizeof *h);
    if (!h)
        return RTB_ENOMEM;
    *h = (helper){w->load, fn, arg};
    rtb_thread_attr a = attr_of(w->load, "load-helper", w->cpu);
    int rc = rtb_thread_create(th, &a, helper_entry, h);
    if (rc != RTB_OK)
        free(h);
    return rc;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

void load_remove_tree(const char *path) { nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS); }

/* A zombie is gone too: orphans wait for an init that may be slow to reap. */
static bool alive(int pid)
{
    if (kill(pid, 0) != 0 && errno == ESRCH)
        return false;
    char path[64], stat[256];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return true; /* no /proc: kill() said it exists */
    size_t n = fread(stat, 1, sizeof stat - 1, f);
    fclose(f);
    stat[n] = '\0';
    const char *paren = strrchr(stat, ')');
    return !(paren && paren[1] == ' ' && paren[2] == 'Z');
}

/* A folder (or file) left by an agent that was killed before it could
 * clean up: the next load start removes it once its owner is gone. */
static void sweep_stale(const char *base)
{
    DIR *d = opendir(base);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        int pid;
        char rest[32];
        if (sscanf(e->d_name, "rtbench-load-%d-%31s", &pid, rest) != 2 || pid <= 0 ||
            pid == getpid())
            continue;
        if (!alive(pid)) {
            char path[512];
            snprintf(path, sizeof path, "%s/%s", base, e->d_name);
            load_remove_tree(path);
        }
    }
    closedir(d);
}

const char *load_tmp_base(void)
{
    const char *tmp = getenv("TMPDIR");
    return tmp && *tmp ? tmp : "/tmp";
}

static int make_dir(rtb_load *l, char *err, size_t errcap)
{
    const char *base = load_tmp_base();
    snprintf(l->dir, sizeof l->dir, "%s/rtbench-load-%d-XXXXXX", base, (int)getpid());
    if (!mkdtemp(l->dir)) {
        snprintf(err, errcap, "load %s: cannot create a folder in %s: %s", l->spec.kind->name,
                 base, strerror(errno));
        return RTB_EFAIL;
    }
    l->have_dir = true;
    return RTB_OK;
}

static void release(rtb_load *l)
{
    if (l->have_dir)
        load_remove_tree(l->dir);
    free(l->w);
    free(l);
}

/* Past the deadline, a thread still inside its write or fsync is waiting
 * for the machine: an io thread's fsync behind stress-ng's hdd writer
 * waited over 20 s for its pages' writeback (2026-11-26). It ends once
 * that returns, so it is waited for, this long at most; a thread outside
 * its I/O past the deadline is stuck in rtbench. */
#define IN_IO_GRACE_NS 300000000000LL

static void stop_threads(rtb_load *l, rtb_time deadline, int *rc)
{
    atomic_store(&l->stop, true);
    for (int i = 0; i < l->started; i++) {
        load_worker *w = &l->w[i];
        int r = rtb_thread_join(&w->th, deadline);
        /* Out of its I/O, it ends within moments: 100 ms more, once. Only
         * a thread seen waiting in its I/O counts as stopped late; one
         * that was never there is rtbench's own and fails below if it
         * misses the 100 ms too. */
        bool left_io = false, seen_in_io = false;
        while (r == RTB_ETIMEDOUT && !left_io && rtb_clock_now() < deadline + IN_IO_GRACE_NS) {
            left_io = !atomic_load(&w->in_io);
            seen_in_io = seen_in_io || !left_io;
            r = rtb_thread_join(&w->th, rtb_clock_now() + (left_io ? 100000000 : 1000000000));
        }
        rtb_time late = rtb_clock_now() - deadline;
        if (seen_in_io && r == RTB_OK && late > l->stopped_late_ns)
            l->stopped_late_ns = late;
        if (r != RTB_OK)
            *rc = r;
    }
}

int rtb_load_stop(rtb_load *l, rtb_time deadline, rtb_load_stats *st)
{
    if (st)
        *st = (rtb_load_stats){0};
    if (!l)
        return RTB_OK;
    int rc = RTB_OK;
    if (l->spec.kind->stop)
        l->spec.kind->stop(l, deadline);
    else
        stop_threads(l, deadline, &rc);
    if (st) {
        st->unit = l->spec.kind->unit;
        st->stopped_late_ns = l->stopped_late_ns;
        if (l->spec.kind->stop) {
            st->threads = 1;
            st->ops_total = st->ops_min = l->child_ms;
        } else {
            st->threads = l->started;
            st->ops_min = l->started ? UINT64_MAX : 0;
            for (int i = 0; i < l->started; i++) {
                uint64_t ops = atomic_load(&l->w[i].ops);
                st->ops_total += ops;
                if (ops < st->ops_min)
                    st->ops_min = ops;
            }
        }
    }
    /* A thread still running uses this memory: leave it (the run is about
     * to end in error anyway). */
    if (rc == RTB_OK)
        release(l);
    return rc;
}

/* Why rtb_thread_create failed, in words (the port maps errno to these). */
static const char *create_error(int rc)
{
    switch (rc) {
    case RTB_EAGAIN: return "EAGAIN: the OS's thread or process limit";
    case RTB_ENOMEM: return "ENOMEM: no memory for the thread or its stack";
    case RTB_EPERM: return "EPERM: its scheduling policy or CPU is not permitted";
    case RTB_EINVAL: return "EINVAL: its attributes are refused (priority, CPU, stack)";
    case RTB_ENOTSUP: return "not supported";
    default: return "the OS refused";
    }
}

int rtb_load_begin(rtb_load **out, const rtb_load_spec *spec, const rtb_load_place *place,
                   char *err, size_t errcap)
{
    *out = NULL;
    const load_kind *k = spec->kind;
    int n = spec->threads >= 0 ? spec->threads
            : place->threads > 0 ? place->threads
            : place->ncpus > 0   ? place->ncpus
                                 : 1;
    if (n == 0 && !k->start)
        return RTB_OK;
    rtb_load *l = calloc(1, sizeof *l);
    if (!l || (!k->start && !(l->w = calloc((size_t)n, sizeof *l->w)))) {
        free(l);
        snprintf(err, errcap, "load %s: no memory for %d threads", k->name, n);
        return RTB_ENOMEM;
    }
    l->spec = *spec;
    l->n = n;
    l->priority = spec->priority;
    for (int i = 0; i < place->ncpus && l->ncpus < (int)(sizeof l->cpus / sizeof *l->cpus); i++)
        l->cpus[l->ncpus++] = place->cpus[i];
    sweep_stale(load_tmp_base());
    if (k->needs_dir && make_dir(l, err, errcap) != RTB_OK) {
        release(l);
        return RTB_EFAIL;
    }
    if (k->start) {
        if (k->start(l, place, err, errcap) != RTB_OK) {
            release(l);
            return RTB_EFAIL;
        }
        *out = l;
        return RTB_OK;
    }
    char name[16];
    snprintf(name, sizeof name, "load-%s", k->name);
    for (; l->started < n; l->started++) {
        load_worker *w = &l->w[l->started];
        *w = (load_worker){.load = l, .id = l->started,
                           .cpu = place->ncpus ? place->cpus[l->started % place->ncpus] : -1};
        rtb_thread_attr a = attr_of(l, name, w->cpu);
        int rc = rtb_thread_create(&w->th, &a, entry, w);
        if (rc != RTB_OK) {
            snprintf(err, errcap, "load %s: only %d of %d threads could be created (%s)",
                     k->name, l->started, n, create_error(rc));
            rtb_load_stop(l, rtb_clock_now() + 5000000000LL, NULL);
            return RTB_ENOMEM;
        }
    }
    if (place->no_wait) {
        *out = l;
        return RTB_OK;
    }
    /* Measuring must not start before the load does. A busy machine may
     * take seconds to run a new thread: it gets the case's whole budget,
     * and the caller says when that was late (rtb_load_start_ns). */
    rtb_time t0 = rtb_clock_now();
    rtb_time wait = place->max_ms > 0 ? place->max_ms * 1000000 : READY_TIMEOUT_NS;
    while (atomic_load(&l->ready) + atomic_load(&l->failed) < n && rtb_clock_now() - t0 < wait)
        rtb_sleep_until(rtb_clock_now() + 1000000);
    l->start_ns = rtb_clock_now() - t0;
    int ready = atomic_load(&l->ready), failed = atomic_load(&l->failed);
    if (ready < n) {
        if (failed)
            snprintf(err, errcap, "load %s: %s", k->name, l->fail_msg);
        else
            snprintf(err, errcap,
                     "load %s: %d of %d threads never ran within the case's budget (%.1f s)",
                     k->name, n - ready, n, (double)wait / 1e9);
        rtb_load_stop(l, rtb_clock_now() + 5000000000LL, NULL);
        return RTB_EFAIL;
    }
    /* Count from here: work done while starting is not work under the case. */
    for (int i = 0; i < n; i++)
        atomic_store(&l->w[i].ops, 0);
    *out = l;
    return RTB_OK;
}

rtb_time rtb_load_start_ns(const rtb_load *l) { return l ? l->start_ns : 0; }

void rtb_load_describe(const rtb_load *l, char *buf, size_t cap)
{
    if (l->spec.kind->start) {
        snprintf(buf, cap, "stress-ng %s (pid %d, its own process group)",
                 load_stress_args(&l->spec), l->pid);
        return;
    }
    size_t len = (size_t)snprintf(buf, cap, "%d thread%s (", l->started,
                                  l->started == 1 ? "" : "s");
    if (len < cap)
        len += (size_t)(l->priority ? snprintf(buf + len, cap - len, "real-time priority %d",
                                               l->priority)
                                    : snprintf(buf + len, cap - len, "SCHED_OTHER"));
    if (len < cap && l->ncpus == 0)
        len += (size_t)snprintf(buf + len, cap - len, ") on any CPU");
    /* The CPUs the threads are on: fewer threads than CPUs use the first. */
    int on = l->started < l->ncpus ? l->started : l->ncpus;
    for (int i = 0; i < on && len < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%d",
                                i ? "," : on > 1 ? ") on CPUs " : ") on CPU ", l->cpus[i]);
}

int rtb_load_check(const char *kind, int n, char *err, size_t errcap)
{
    (void)kind, (void)n, (void)err, (void)errcap; /* every kind runs here */
    return RTB_OK;
}

int rtb_load_start(rtb_load **out, const char *kind, int n, int cpu, int priority, char *err,
                   size_t errcap)
{
    *out = NULL;
    rtb_load_spec spec;
    int nspec = 0;
    if (rtb_load_parse(kind, &spec, 1, &nspec, err, errcap) != RTB_OK)
        return RTB_EINVAL;
    if (nspec != 1 || spec.kind->start) {
        snprintf(err, errcap, "load '%s': one thread kind expected", kind);
        return RTB_EINVAL;
    }
    spec.threads = n;
    spec.priority = priority;
    rtb_load_place place = {.cpus = &cpu, .ncpus = cpu >= 0, .threads = n, .no_wait = true};
    return rtb_load_begin(out, &spec, &place, err, errcap);
}
