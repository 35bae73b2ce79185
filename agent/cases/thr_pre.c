/* SPDX-License-Identifier: Apache-2.0 */
/* THR-PRE: task preemption time. A high-priority test thread blocks on a
 * semaphore; a medium-priority control thread wakes every `period_us`,
 * stamps and gives it; the test thread stamps on waking and blocks again.
 * Sample = wake stamp - give stamp. Lower-priority "kernel" load threads
 * on the same CPU fill the time in between with system calls that hold
 * kernel locks, so the control thread's wake-up and give find the kernel
 * in the middle of such work. The test thread sends its series out as the
 * buffer fills, after a push and before its next take: the control thread
 * (lower) cannot stamp and give until the test thread blocks, so no sample
 * spans the drain (a board's RAM holds a buffer of samples, not the run's).
 * Where the drain's write can block (a pipe), a give stamped before the
 * drain ended is not timed: its wake-up is counted apart. */
#include <stdlib.h>

#include "../core/rtb.h"
#include "rtb/load.h"

static const rtb_param_def params[] = {
    {.name = "duration_ms", .help = "measurement time", .def = {1000}, .ndef = 1, .min = 1,
     .max = 3600000},
    {.name = "period_us", .help = "control thread's sleep between gives (the load runs then)",
     .def = {250}, .ndef = 1, .min = 10, .max = 1000000},
    {.name = "load_threads", .help = "background kernel-load threads (0: none)", .def = {2},
     .ndef = 1, .min = 0, .max = 64},
};

typedef struct pre {
    rtb_ctx *ctx;
    rtb_sem go;
    rtb_series s;
    rtb_time period;
    _Atomic rtb_stamp given; /* the control thread's stamp before the give */
    atomic_bool done;       /* the control thread gave for the last time */
    size_t gives;
    size_t during_drain;    /* wake-ups not timed: given while the series drained */
} pre;

static void test_thread(void *arg)
{
    pre *x = arg;
    rtb_stamp drained = 0; /* when the last drain ended */
    for (;;) {
        if (rtb_sem_take(&x->go, x->ctx->deadline) != RTB_OK)
            break;
        rtb_stamp t = rtb_stamp_now();
        /* `stop` too: a broken semaphore would otherwise spin here above
         * the control thread, which could then never say `done`. */
        if (atomic_load(&x->done) || atomic_load_explicit(&x->ctx->stop, memory_order_relaxed))
            break;
        rtb_stamp given = atomic_load_explicit(&x->given, memory_order_relaxed);
        if (given < drained) {
            x->during_drain++;
            continue;
        }
        rtb_series_push(&x->s, rtb_stamp_ns(t - given));
        uint64_t sent = x->s.sent;
        rtb_series_drain(&x->s);
        if (x->s.sent != sent)
            drained = rtb_stamp_now();
    }
}

static void control_thread(void *arg)
{
    pre *x = arg;
    while (!atomic_load_explicit(&x->ctx->stop, memory_order_relaxed)) {
        rtb_sleep_until(rtb_clock_now() + x->period);
        if (atomic_load_explicit(&x->ctx->stop, memory_order_relaxed))
            break;
        atomic_store_explicit(&x->given, rtb_stamp_now(), memory_order_relaxed);
        rtb_sem_give(&x->go);
        x->gives++;
    }
    atomic_store(&x->done, true);
    rtb_sem_give(&x->go);
}

static rtb_result run(rtb_ctx *ctx)
{
    pre x = {.ctx = ctx, .period = rtb_param(ctx, "period_us") * 1000};
    int nload = (int)rtb_param(ctx, "load_threads");
    char why[256];
    if (rtb_load_check("kernel", nload, why, sizeof why) == RTB_ENOTSUP)
        return rtb_unsupported(ctx, "%s", why); /* before any buffer is held */
    if (rtb_series_init_streamed(&x.s, ctx, "preempt", ctx->opt->max_samples) != RTB_OK) {
        rtb_emit_check_error(ctx, "buffer", "no memory for %llu samples",
                             (unsigned long long)ctx->opt->max_samples);
        return RTB_ERROR;
    }
    rtb_sem_create(&x.go, 0);
    /* Above everything of the case on its CPU: nothing runs until the
     * monitor sleeps. */
    rtb_thread_self_set(RTB_PRIO_MAX - 1, ctx->opt->cpu);
    /* Four distinct levels within 1..97: shift the base if it is too close
     * to either end. */
    int b = ctx->opt->priority < 2 ? 2 : ctx->opt->priority > 95 ? 95 : ctx->opt->priority;
    rtb_thread_attr at = rtb_attr(ctx, "pre-test", 0), ac = rtb_attr(ctx, "pre-control", 0);
    rtb_thread_attr al = rtb_attr(ctx, "load", 0);
    at.priority = b + 2;
    ac.priority = b + 1;
    al.priority = b - 1;
    rtb_load *load = NULL;
    bool loaded = false;
    char err[256];
    rtb_result r = RTB_PASSED;
    rtb_thread th[2];
    int created = 0;
    int lrc = rtb_load_start(&load, "kernel", nload, ctx->opt->cpu, al.priority, err, sizeof err);
    if (lrc == RTB_ENOTSUP) {
        r = rtb_unsupported(ctx, "%s", err);
    } else if (lrc != RTB_OK) {
        rtb_emit_check_error(ctx, "load", "%s", err);
        r = RTB_ERROR;
    } else {
        loaded = load != NULL;
        if (rtb_thread_create(&th[0], &at, test_thread, &x) == RTB_OK)
            created++;
        if (created == 1 && rtb_thread_create(&th[1], &ac, control_thread, &x) == RTB_OK)
            created++;
        if (created == 2) {
            rtb_monitor(ctx, rtb_param(ctx, "duration_ms") * 1000000);
        } else {
            rtb_emit_check_error(ctx, "threads", "could not create the test and control threads");
            r = RTB_ERROR;
            atomic_store(&x.done, true);
            rtb_sem_give(&x.go);
        }
    }
    if (rtb_join_all(ctx, th, created) != RTB_OK)
        r = RTB_ERROR;
    rtb_load_stats ls;
    if (rtb_load_stop(load, ctx->deadline + 2000000000, &ls) != RTB_OK)
        r = RTB_ERROR;
    if (loaded) {
        /* Figures "under load" mean nothing if the load never got the CPU. */
        bool ran = ls.ops_total > 0;
        if (ran && ls.ops_min == 0) /* less load than asked, still under load */
            rtb_warn(ctx, "load_idle", "a kernel-load thread completed no operation");
        char where[32] = "normal priority";
        if (ctx->port->realtime)
            snprintf(where, sizeof where, "priority %d", al.priority);
        rtb_emit_check(ctx, "load_ran", ran,
                       "%d kernel-load threads at %s: %llu operations, the least busy %llu",
                       ls.threads, where, (unsigned long long)ls.ops_total,
                       (unsigned long long)ls.ops_min);
        if (!ran && r == RTB_PASSED)
            r = RTB_FAILED;
    }
    if (r == RTB_PASSED && x.s.hist.n + x.during_drain + 1 < x.gives)
        rtb_warn(ctx, "lost_wakeups", "%llu gives but %llu wake-ups", (unsigned long long)x.gives,
                 (unsigned long long)(x.s.hist.n + x.during_drain));
    if (x.during_drain)
        rtb_warn(ctx, "given_during_drain", "%llu wake-ups not timed: given while the series "
                 "was sent out", (unsigned long long)x.during_drain);
    if (r != RTB_UNSUPPORTED)
        rtb_emit_series(ctx, &x.s);
    rtb_series_free(&x.s);
    rtb_sem_delete(&x.go);
    return r;
}

const rtb_case rtb_case_thr_pre = {
    .id = "THR-PRE",
    .title = "Task preemption time under kernel load",
    .params = params,
    .nparams = sizeof params / sizeof params[0],
    .run = run,
    .headline = 2,
};
