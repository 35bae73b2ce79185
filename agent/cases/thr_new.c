/* SPDX-License-Identifier: Apache-2.0 */
/* THR-NEW: thread create and delete time, in three scenarios. The calling
 * thread, at priority p on the measurement CPU, creates:
 *   1. never run: a thread at p-1, deleted before it ever runs. Creation
 *      and deletion are the durations of the two calls.
 *   2. run and terminate: a thread at p+1 that runs at once, stamps twice
 *      and returns. Creation = call start until its first stamp; deletion
 *      = its last stamp until the join returns.
 *   3. run and block: a thread at p+1 that runs at once, stamps and blocks
 *      on a semaphore. Creation as in 2; deletion = the duration of
 *      rtb_thread_delete of the blocked thread.
 * The six series stream out after each round of the three scenarios, when
 * no thread of the case is alive: a board's RAM holds a buffer of each. */
#include "../core/rtb.h"

static const rtb_param_def params[] = {
    {.name = "iterations", .help = "creations per scenario", .def = {200}, .ndef = 1, .min = 1,
     .max = 1000000},
};

typedef struct born {
    rtb_sem block;
    rtb_time deadline;
    _Atomic rtb_stamp first, last;
} born;

static void never_run(void *arg)
{
    born *b = arg;
    atomic_store_explicit(&b->first, rtb_stamp_now(), memory_order_relaxed);
}

static void run_and_exit(void *arg)
{
    born *b = arg;
    atomic_store_explicit(&b->first, rtb_stamp_now(), memory_order_relaxed);
    atomic_store_explicit(&b->last, rtb_stamp_now(), memory_order_relaxed);
}

static void run_and_block(void *arg)
{
    born *b = arg;
    atomic_store_explicit(&b->first, rtb_stamp_now(), memory_order_relaxed);
    rtb_sem_take(&b->block, b->deadline);
}

/* Without real-time priority (or with a wrong create) the new thread need
 * not have run yet: sleep, so that even a lower-priority one gets to. */
static bool await_first(const born *b)
{
    rtb_time give_up = rtb_clock_now() + 1000000000;
    while (!atomic_load(&b->first) && rtb_clock_now() < give_up)
        rtb_sleep_until(rtb_clock_now() + 100000);
    return atomic_load(&b->first) != 0;
}

/* The creator's level, with room for one level below and one above. */
static int creator_priority(const rtb_ctx *ctx)
{
    int p = ctx->opt->priority;
    return p < 2 ? 2 : p > RTB_PRIO_MAX - 3 ? RTB_PRIO_MAX - 3 : p;
}

typedef struct tally {
    size_t failed;     /* a call failed */
    size_t off_script; /* the thread ran (1) or did not run at once (2, 3) */
} tally;

/* One creation and deletion; t0..t1 bracket the create call. */
static int measure(rtb_ctx *ctx, int scenario, rtb_thread *th, born *b, rtb_stamp t0,
                   rtb_stamp t1, rtb_series *cr, rtb_series *de, tally *t)
{
    rtb_stamp first = atomic_load_explicit(&b->first, memory_order_relaxed);
    if (scenario == 1) {
        rtb_stamp t2 = rtb_stamp_now();
        int rc = rtb_thread_delete(th);
        rtb_stamp t3 = rtb_stamp_now();
        t->off_script += first != 0;
        rtb_series_push(cr, rtb_stamp_ns(t1 - t0));
        rtb_series_push(de, rtb_stamp_ns(t3 - t2));
        return rc;
    }
    if (scenario == 2) {
        int rc = rtb_thread_join(th, ctx->deadline);
        rtb_stamp t2 = rtb_stamp_now();
        t->off_script += !first || first > t1;
        if (rc == RTB_OK) {
            rtb_series_push(cr, rtb_stamp_ns(atomic_load(&b->first) - t0));
            rtb_series_push(de, rtb_stamp_ns(t2 - atomic_load(&b->last)));
        }
        return rc;
    }
    t->off_script += !first;
    if (!await_first(b)) {
        rtb_thread_delete(th);
        return RTB_ETIMEDOUT;
    }
    rtb_stamp t2 = rtb_stamp_now();
    int rc = rtb_thread_delete(th);
    rtb_stamp t3 = rtb_stamp_now();
    rtb_series_push(cr, rtb_stamp_ns(atomic_load(&b->first) - t0));
    rtb_series_push(de, rtb_stamp_ns(t3 - t2));
    return rc;
}

static void one(rtb_ctx *ctx, int scenario, rtb_series *cr, rtb_series *de, tally *t)
{
    static const rtb_thread_fn fns[] = {never_run, run_and_exit, run_and_block};
    rtb_thread_attr a = rtb_attr(ctx, "thr-new", 0);
    a.priority = creator_priority(ctx) + (scenario == 1 ? -1 : 1);
    born b = {.deadline = ctx->deadline};
    /* A semaphore per thread: a port's semaphore need not survive the
     * deletion of a thread blocked on it. */
    if (rtb_sem_create(&b.block, 0) != RTB_OK) {
        t->failed++;
        return;
    }
    rtb_thread th;
    rtb_stamp t0 = rtb_stamp_now();
    int rc = rtb_thread_create(&th, &a, fns[scenario - 1], &b);
    rtb_stamp t1 = rtb_stamp_now();
    if (rc == RTB_OK)
        rc = measure(ctx, scenario, &th, &b, t0, t1, cr, de, t);
    if (rc != RTB_OK)
        t->failed++;
    rtb_sem_delete(&b.block);
}

static rtb_result run(rtb_ctx *ctx)
{
    static const char *const what[] = {"", "never run", "run and terminate", "run and block"};
    size_t n = (size_t)rtb_param(ctx, "iterations");
    rtb_series cr[3], de[3];
    int ready = 0;
    for (; ready < 3; ready++) {
        if (rtb_series_init_streamed(&cr[ready], ctx, "create", n) != RTB_OK)
            break;
        if (rtb_series_init_streamed(&de[ready], ctx, "delete", n) != RTB_OK) {
            rtb_series_free(&cr[ready]);
            break;
        }
        rtb_series_set_point(&cr[ready], "scenario", ready + 1);
        rtb_series_set_point(&de[ready], "scenario", ready + 1);
    }
    rtb_result r = RTB_PASSED;
    if (ready < 3) {
        rtb_emit_check_error(ctx, "buffer", "no memory for %llu samples", (unsigned long long)n);
        r = RTB_ERROR;
    }
    /* This thread is the creator, at the case's base priority: new
     * threads are placed relative to it. */
    rtb_thread_self_set(creator_priority(ctx), ctx->opt->cpu);
    /* Interleaved, so that no scenario alone pays for the first creations
     * (fresh stacks, cold caches). */
    tally t[3] = {{0}};
    for (size_t i = 0; i < n && r == RTB_PASSED && !atomic_load(&ctx->stop); i++) {
        for (int sc = 1; sc <= 3; sc++)
            one(ctx, sc, &cr[sc - 1], &de[sc - 1], &t[sc - 1]);
        for (int sc = 0; sc < 3; sc++) { /* between rounds: nothing is measured */
            rtb_series_drain(&cr[sc]);
            rtb_series_drain(&de[sc]);
        }
    }
    for (int sc = 1; sc <= 3; sc++) {
        if (t[sc - 1].failed) {
            rtb_emit_check_error(ctx, "calls", "scenario %d (%s): %llu of %llu iterations failed",
                                 sc, what[sc], (unsigned long long)t[sc - 1].failed,
                                 (unsigned long long)n);
            r = RTB_ERROR;
        }
        if (t[sc - 1].off_script)
            rtb_warn(ctx, ctx->port->realtime ? "off_script" : "not_realtime",
                     "scenario %d (%s): in %llu of %llu iterations the new thread %s", sc,
                     what[sc], (unsigned long long)t[sc - 1].off_script, (unsigned long long)n,
                     sc == 1 ? "ran before it was deleted" : "had not run when create returned");
    }
    for (int i = 0; i < ready; i++) {
        rtb_emit_series(ctx, &cr[i]);
        rtb_emit_series(ctx, &de[i]);
        rtb_series_free(&cr[i]);
        rtb_series_free(&de[i]);
    }
    return r;
}

const rtb_case rtb_case_thr_new = {
    .id = "THR-NEW",
    .title = "Thread create and delete time (never run, run and terminate, run and block)",
    .params = params,
    .nparams = sizeof params / sizeof params[0],
    .run = run,
};
