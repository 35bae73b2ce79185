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
 * `tolerance_pct`. Series `slice`: every complete slice, in ns. */
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
    rtb_time start, end, gaps;
    uint64_t count;
} slice;

struct rr;

typedef struct rr_thread {
    struct rr *x;
    int id;
    slice *log;
    size_t cap, n, dropped;
    uint64_t count, ngaps;
    size_t complete; /* leading slices that a switch ended (not the stop) */
} rr_thread;

typedef struct rr {
    rtb_ctx *ctx;
    atomic_int last; /* who ran last; -1 before anyone */
} rr;

static void close_slice(rr_thread *me, slice *cur, rtb_time end)
{
    cur->end = end;
    if (me->n < me->cap)
        me->log[me->n++] = *cur;
    else
        me->dropped++;
}

static void worker(void *arg)
{
    rr_thread *me = arg;
    rr *x = me->x;
    slice cur = {0};
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
            cur = (slice){.start = t};
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
    return s->end - s->start - s->gaps;
}

/* Slices that began after the stop are leftovers of threads seeing it;
 * of those that began before, the last one was cut short by it. */
static void mark_complete(rr_thread *t, int n, rtb_time stopped)
{
    int cut = -1;
    for (int i = 0; i < n; i++) {
        t[i].complete = 0;
        while (t[i].complete < t[i].n && t[i].log[t[i].complete].start < stopped)
            t[i].complete++;
        if (t[i].complete &&
            (cut < 0 || t[i].log[t[i].complete - 1].start > t[cut].log[t[cut].complete - 1].start))
            cut = i;
    }
    if (cut >= 0)
        t[cut].complete--;
}

static int cmp_time(const void *a, const void *b)
{
    rtb_time x = *(const rtb_time *)a, y = *(const rtb_time *)b;
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

static int first_slice(const rr_thread *t, int n, int64_t tol, char *out, size_t cap)
{
    size_t later = 0;
    for (int i = 0; i < n; i++)
        later += t[i].complete > 1 ? t[i].complete - 1 : 0;
    rtb_time *v = later ? rtb_mem_alloc(later * sizeof *v) : NULL;
    if (!v) {
        snprintf(out, cap, "no later slice to compare the first ones with: raise duration_ms");
        return -1;
    }
    size_t k = 0;
    rtb_time longest_first = 0;
    for (int i = 0; i < n; i++) {
        for (size_t j = 1; j < t[i].complete; j++)
            v[k++] = length(&t[i].log[j]);
        if (t[i].complete && length(&t[i].log[0]) > longest_first)
            longest_first = length(&t[i].log[0]);
    }
    qsort(v, later, sizeof *v, cmp_time);
    rtb_time median = v[later / 2];
    rtb_mem_free(v);
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
    /* Static, not on the stack: one case runs at a time. */
    static rr_thread t[16];
    static rtb_thread th[16];
    memset(t, 0, sizeof t);
    rtb_series s;
    /* Without real-time priority slices can be far shorter than 1 ms. */
    size_t cap = (size_t)(duration / 100000) + 16;
    if (cap > 100000)
        cap = 100000;
    rtb_result r = RTB_PASSED;
    if (rtb_series_init(&s, "slice", cap * (size_t)n) != RTB_OK)
        return RTB_ERROR;
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
    a.stack_size = 64 * 1024;
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
            for (size_t k = 0; k < t[i].complete; k++)
                rtb_series_push(&s, length(&t[i].log[k]));
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
