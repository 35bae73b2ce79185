/* SPDX-License-Identifier: Apache-2.0 */
/* THR-B-RR: round-robin fairness. `threads` equal-priority SCHED_RR
 * threads on one CPU each loop: stamp, count, and see whether it was the
 * last thread to run (a shared "last runner" variable). When it was not,
 * its previous slice has ended and a new one begins.
 * A higher-priority interruption (the monitor, a kernel thread, RT
 * throttling) is not a switch: the interrupted thread resumes and is still
 * the last runner; gaps of its own stamps longer than GAP_NS are left out
 * of its slice length and counted apart.
 *
 * Checks: `fairness` - over the same number of complete slices per thread,
 * the counts differ by at most `tolerance_pct` of their mean; `first_slice`
 * - no thread's first slice is longer than the median later slice plus
 * `tolerance_pct`. Series `slice`: every complete slice, in ns.
 *
 * Each thread logs its slices (length, count; the start of its last three
 * only: a thread sees the stop at its next iteration, so at most its last
 * slice began after it, and only the last complete one's start is
 * compared, mark_complete). Both checks read the
 * first r slices of each thread only, r the fewest complete slices of any
 * thread (at most the mean), so a log of a thread's share of the slices
 * holds all they read. A kernel that slices on its tick (rtb_release_grain
 * > 0: FreeRTOS's time slicing, uC/OS-III's quantum of one tick) makes at
 * most one slice a tick: a board's log holds a share of duration / tick,
 * plus a margin (308 slices a thread at 600 ms, not 6,016); elsewhere a
 * slice may be far shorter than 1 ms (no real-time priority) and the log
 * holds one a 100 us. A thread past its log (unfair slicing) is counted in
 * `buffer_full`. */
#include <stdlib.h>
#include <string.h>

#include "../core/rtb.h"

static const rtb_param_def params[] = {
    {.name = "threads", .help = "equal-priority threads", .def = {2}, .ndef = 1, .min = 2,
     .max = 16},
    {.name = "duration_ms", .help = "measurement time (CPU-bound at real-time priority: keep "
                                    "it short)",
     .def = {600}, .ndef = 1, .min = 1, .max = 60000},
    {.name = "tolerance_pct", .help = "allowed spread of counts and of the first slice, in %",
     .def = {10}, .ndef = 1, .min = 0, .max = 1000},
    {.name = "round_robin", .help = "1: SCHED_RR; 0: SCHED_FIFO, the negative control",
     .def = {1}, .ndef = 1, .min = 0, .max = 1},
};

#define GAP_NS 1000000

typedef struct slice {
    rtb_time len; /* end - start - gaps */
    uint64_t count;
} slice;

/* The slice a thread is in. */
typedef struct open_slice {
    rtb_time start, gaps;
    uint64_t count;
} open_slice;

#define STARTS 3 /* starts kept of the last logged slices */

struct rr;

typedef struct rr_thread {
    struct rr *x;
    int id;
    slice *log;
    size_t cap, n, dropped;
    rtb_time starts[STARTS]; /* of log[n - STARTS .. n - 1] */
    uint64_t count, ngaps;
    size_t complete; /* leading slices that a switch ended (not the stop) */
} rr_thread;

typedef struct rr {
    rtb_ctx *ctx;
    atomic_int last; /* who ran last; -1 before anyone */
} rr;

static void close_slice(rr_thread *me, const open_slice *cur, rtb_time end)
{
    if (me->n < me->cap) {
        me->log[me->n++] = (slice){.len = end - cur->start - cur->gaps, .count = cur->count};
        memmove(me->starts, me->starts + 1, (STARTS - 1) * sizeof *me->starts);
        me->starts[STARTS - 1] = cur->start;
    } else {
        me->dropped++;
    }
}

/* The start of logged slice k, k among the last STARTS. */
static rtb_time start_of(const rr_thread *t, size_t k)
{
    return t->starts[STARTS - (t->n - k)];
}

static void worker(void *arg)
{
    rr_thread *me = arg;
    rr *x = me->x;
    open_slice cur = {0};
    rtb_time prev = 0;
    bool in = false;
    for (;;) {
        rtb_time t = rtb_ts_now();
        /* After the stop: a thread resuming now must not take the stop's
         * delay for part of its slice. */
        if (atomic_load_explicit(&x->ctx->stop, memory_order_relaxed))
            break;
        if (atomic_load_explicit(&x->last, memory_order_relaxed) != me->id) {
            /* The switch came before this stamp (the long gap is before
             * it) or between it and the load (then the stamp is the old
             * slice's last and the new slice needs a fresh one). */
            bool before = !in || t - prev > GAP_NS;
            if (in && !before) {
                cur.count++;
                me->count++;
            }
            if (in)
                close_slice(me, &cur, before ? prev : t);
            atomic_store_explicit(&x->last, me->id, memory_order_relaxed);
            if (!before)
                t = rtb_ts_now();
            cur = (open_slice){.start = t};
            in = true;
        } else if (t - prev > GAP_NS) {
            cur.gaps += t - prev;
            me->ngaps++;
        }
        cur.count++;
        me->count++;
        prev = t;
    }
    if (in)
        close_slice(me, &cur, prev);
}

static rtb_time length(const slice *s)
{
    return s->len;
}

/* Slices that began after the stop are leftovers of threads seeing it;
 * of those that began before, the last one was cut short by it. */
static void mark_complete(rr_thread *t, int n, rtb_time stopped)
{
    int cut = -1;
    for (int i = 0; i < n; i++) {
        t[i].complete = t[i].n;
        while (t[i].complete && t[i].n - t[i].complete < STARTS &&
               start_of(&t[i], t[i].complete - 1) >= stopped)
            t[i].complete--;
        if (t[i].complete && t[i].n - t[i].complete < STARTS &&
            (cut < 0 || start_of(&t[i], t[i].complete - 1) > start_of(&t[cut], t[cut].complete - 1)))
            cut = i;
    }
    if (cut >= 0)
        t[cut].complete--;
}

static int cmp_len(const void *a, const void *b)
{
    rtb_time x = ((const slice *)a)->len, y = ((const slice *)b)->len;
    return (x > y) - (x < y);
}

/* 1 pass, 0 fail, -1 not enough data (detail in `out`); `host_noise`: the
 * counts are off but the CPU time is not. */
static int fairness(const rr_thread *t, int n, int64_t tol, char *out, size_t cap,
                     bool *host_noise)
{
    *host_noise = false;
    size_t r = SIZE_MAX;
    for (int i = 0; i < n; i++)
        if (t[i].complete < r)
            r = t[i].complete;
    if (r == 0) {
        for (int i = 0; i < n; i++)
            if (t[i].count == 0) {
                snprintf(out, cap,
                         "thread %d never ran while the others counted: equal-priority threads "
                         "did not share the CPU",
                         i);
                return 0;
            }
        snprintf(out, cap, "not every thread completed a slice: raise duration_ms");
        return -1;
    }
    uint64_t lo = UINT64_MAX, hi = 0, sum = 0;
    rtb_time tlo = INT64_MAX, thi = 0, tsum = 0;
    for (int i = 0; i < n; i++) {
        uint64_t c = 0;
        rtb_time cpu = 0;
        for (size_t k = 0; k < r; k++) {
            c += t[i].log[k].count;
            cpu += length(&t[i].log[k]);
        }
        lo = c < lo ? c : lo;
        hi = c > hi ? c : hi;
        sum += c;
        tlo = cpu < tlo ? cpu : tlo;
        thi = cpu > thi ? cpu : thi;
        tsum += cpu;
    }
    double spread = (double)(hi - lo) * 100.0 * n / (double)sum;
    /* Time alone shows whether a count spread is the scheduler's doing or
     * the CPU's speed varying (a shared host). */
    double tspread = tsum ? (double)(thi - tlo) * 100.0 * n / (double)tsum : 0.0;
    snprintf(out, cap,
             "counts over %llu slices each: %llu..%llu, spread %.1f%% of the mean (limit %lld%%); "
             "time in those slices spread %.1f%%", (unsigned long long)r, (unsigned long long)lo,
             (unsigned long long)hi, spread, (long long)tol, tspread);
    *host_noise = spread > (double)tol && tspread <= (double)tol;
    return spread <= (double)tol;
}

/* The last reader of the logs: sorts each thread's later slices in place
 * by length and walks them merged up to the median (no copy of them all:
 * a board's RAM). */
static int first_slice(rr_thread *t, int n, int64_t tol, char *out, size_t cap)
{
    size_t later = 0;
    for (int i = 0; i < n; i++)
        later += t[i].complete > 1 ? t[i].complete - 1 : 0;
    if (!later) {
        snprintf(out, cap, "no later slice to compare the first ones with: raise duration_ms");
        return -1;
    }
    rtb_time longest_first = 0;
    size_t at[16] = {0}; /* per thread: later slices merged so far */
    for (int i = 0; i < n; i++) {
        if (t[i].complete && length(&t[i].log[0]) > longest_first)
            longest_first = length(&t[i].log[0]);
        if (t[i].complete > 1)
            qsort(t[i].log + 1, t[i].complete - 1, sizeof *t[i].log, cmp_len);
    }
    rtb_time median = 0;
    for (size_t k = 0; k <= later / 2; k++) {
        int pick = -1;
        for (int i = 0; i < n; i++)
            if (1 + at[i] < t[i].complete &&
                (pick < 0 || length(&t[i].log[1 + at[i]]) < length(&t[pick].log[1 + at[pick]])))
                pick = i;
        median = length(&t[pick].log[1 + at[pick]]);
        at[pick]++;
    }
    bool ok = (double)longest_first <= (double)median * (1.0 + (double)tol / 100.0);
    snprintf(out, cap, "longest first slice %.2f ms, median later slice %.2f ms (%llu), ratio %.2f",
             (double)longest_first / 1e6, (double)median / 1e6, (unsigned long long)later,
             median ? (double)longest_first / (double)median : 0.0);
    return ok;
}

static void verdict(rtb_ctx *ctx, const char *name, int v, const char *detail, bool *failed,
                    bool *errored)
{
    if (v < 0) {
        rtb_emit_check_error(ctx, name, "%s", detail);
        *errored = true;
    } else {
        rtb_emit_check(ctx, name, v == 1, "%s", detail);
        *failed |= v == 0;
    }
}

static rtb_result run(rtb_ctx *ctx)
{
    int n = (int)rtb_param(ctx, "threads");
    int64_t tol = rtb_param(ctx, "tolerance_pct");
    rtb_time duration = rtb_param(ctx, "duration_ms") * 1000000;
    rr x = {.ctx = ctx};
    atomic_init(&x.last, -1);
    /* From the case's memory, not static: a board's static RAM is every
     * case's (1.4 KiB for 16 threads). */
    rr_thread *t = rtb_mem_calloc((size_t)n, sizeof *t);
    rtb_thread *th = rtb_mem_calloc((size_t)n, sizeof *th);
    rtb_series s;
    rtb_time phase, tick = rtb_release_grain(&phase);
    size_t cap = tick > 0 ? (size_t)(duration / tick) / (size_t)n + 8
                          : (size_t)(duration / 100000) + 16;
    if (cap > 100000)
        cap = 100000;
    rtb_result r = RTB_PASSED;
    /* As many as the logs hold: at most one sample a logged slice. */
    if (!t || !th || rtb_series_init_streamed(&s, ctx, "slice", cap * (size_t)n) != RTB_OK) {
        rtb_mem_free(t);
        rtb_mem_free(th);
        rtb_emit_check_error(ctx, "resources", "no memory for %d threads", n);
        return RTB_ERROR;
    }
    rtb_series_set_kind(&s, RTB_KIND_DURATION); /* as long as the quantum: no cost */
    for (int i = 0; i < n; i++) {
        t[i] = (rr_thread){.x = &x, .id = i, .cap = cap, .log = rtb_mem_alloc(cap * sizeof(slice))};
        if (!t[i].log)
            r = RTB_ERROR;
        else /* fault it in now, not at a switch */
            memset(t[i].log, 0xff, cap * sizeof(slice));
    }
    rtb_thread_self_set(RTB_PRIO_MAX - 1, ctx->opt->cpu);
    rtb_thread_attr a = rtb_attr(ctx, "thr-rr", 0);
    a.stack_size = RTB_WORKER_STACK;
    a.round_robin = rtb_param(ctx, "round_robin") != 0;
    int created = 0;
    rtb_time stopped = 0;
    for (; r == RTB_PASSED && created < n; created++)
        if (rtb_thread_create(&th[created], &a, worker, &t[created]) != RTB_OK)
            break;
    if (r != RTB_PASSED || created < n) {
        atomic_store(&ctx->stop, true);
        rtb_emit_check_error(ctx, "threads", "could not set up %d threads", n);
        r = RTB_ERROR;
    } else {
        /* Nothing ran yet (the monitor outranks them): all start together. */
        rtb_monitor(ctx, duration);
        stopped = rtb_ts_now();
    }
    if (rtb_join_all(ctx, th, created) != RTB_OK)
        r = RTB_ERROR;
    if (r == RTB_PASSED) {
        mark_complete(t, n, stopped);
        uint64_t ngaps = 0;
        size_t dropped = 0;
        for (int i = 0; i < n; i++) {
            for (size_t k = 0; k < t[i].complete; k++) {
                rtb_series_push(&s, length(&t[i].log[k]));
                rtb_series_drain(&s); /* the threads are joined */
            }
            ngaps += t[i].ngaps;
            dropped += t[i].dropped;
        }
        if (ngaps)
            rtb_warn(ctx, "gaps",
                     "%llu pauses over %d ms inside slices (higher-priority work or RT "
                     "throttling): left out of the slice lengths",
                     (unsigned long long)ngaps, GAP_NS / 1000000);
        if (dropped)
            rtb_warn(ctx, "buffer_full", "%llu slices beyond the log were not analysed",
                     (unsigned long long)dropped);
        char detail[512];
        bool failed = false, errored = false, skipped = false;
        static const char *const names[] = {"fairness", "first_slice"};
        if (!rtb_checks_need_realtime(ctx, names, 2, "SCHED_RR was not available")) {
            skipped = true;
        } else {
            bool noise;
            verdict(ctx, "fairness", fairness(t, n, tol, detail, sizeof detail, &noise), detail,
                    &failed, &errored);
            if (noise)
                rtb_warn(ctx, "rate_varies",
                         "the threads held the CPU for even times but counted at different "
                         "rates: the CPU's speed varied between slices (a shared or virtual "
                         "machine?), which the count-based method cannot tell from unfairness");
            verdict(ctx, "first_slice", first_slice(t, n, tol, detail, sizeof detail), detail,
                    &failed, &errored);
        }
        /* A wrong scheduler is the finding even when the other check had
         * too little to go on. */
        r = failed ? RTB_FAILED : errored ? RTB_ERROR : skipped ? RTB_SKIPPED : RTB_PASSED;
    }
    rtb_emit_series(ctx, &s);
    rtb_series_free(&s);
    for (int i = 0; i < n; i++)
        rtb_mem_free(t[i].log);
    rtb_mem_free(th);
    rtb_mem_free(t);
    return r;
}

const rtb_case rtb_case_thr_b_rr = {
    .id = "THR-B-RR",
    .title = "Round-robin fairness and slice lengths",
    .params = params,
    .nparams = sizeof params / sizeof params[0],
    .run = run,
    .unsupported_here = rtb_needs_shared_priorities,
};
