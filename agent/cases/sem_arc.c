/* SPDX-License-Identifier: Apache-2.0 */
/* SEM-ARC: take and give under contention. A semaphore at 0; W waiters of
 * distinct priorities above the creator, all on the measurement CPU. Each
 * round the creator lets the waiters attempt one by one, highest priority
 * first (every newcomer queues behind all present waiters: the longest
 * walk for a priority-sorted wait list). Acquisition = the waiter's stamp
 * before its take until the creator runs again (the block and a switch
 * included). Then the creator gives W times; release = the give until the
 * highest waiter runs and stamps. The sweep over W asks whether either
 * grows with the number of waiters. Waiters are reused across rounds: after
 * each wake a waiter parks on its own start semaphore.
 *
 * Stamps are kept for a block of rounds (rtb_stamp_block of the point's
 * attempts: all of them on POSIX, 128 on a board, whole rounds): after a
 * block the creator turns them into samples and sends the series' full
 * buffers while every waiter is parked on its start semaphore, as between
 * any two rounds; each sample lies inside one attempt or one release. A
 * point of more waiters than a board holds (RTB_CASE_THREADS: W=32, 128 in
 * 64 KiB) is skipped with the reason; POSIX runs every point. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/rtb.h"

#define TOP_PRIO (RTB_PRIO_MAX - 2) /* 98 and 99: monitor and watchdog */

static const rtb_param_def params[] = {
    {.name = "waiters", .help = "blocked waiters W (a sweep)", .def = {1, 8, 32, 128}, .ndef = 4,
     .min = 1, .max = 256, .list = true},
    {.name = "rounds", .help = "attempt/release rounds per point", .def = {100}, .ndef = 1,
     .min = 1, .max = 10000},
};

typedef struct arc arc;

typedef struct arc_waiter {
    rtb_sem start; /* first: rtb_sem is aligned */
    arc *x;
    int64_t slot;  /* attempt index the creator assigned */
} arc_waiter;

struct arc {
    rtb_ctx *ctx;
    rtb_sem s;
    atomic_bool quit;
    atomic_llong attempted, woken;
    rtb_stamp *t_a, *t_c, *t_g, *t_w; /* one block, from attempt `base` on */
    int64_t base, slots;
};

static void waiter(void *arg)
{
    arc_waiter *w = arg;
    arc *x = w->x;
    for (;;) {
        if (rtb_sem_take(&w->start, x->ctx->deadline) != RTB_OK || atomic_load(&x->quit))
            return;
        x->t_a[w->slot - x->base] = rtb_stamp_now();
        atomic_fetch_add_explicit(&x->attempted, 1, memory_order_relaxed);
        if (rtb_sem_take(&x->s, x->ctx->deadline) != RTB_OK)
            return;
        rtb_stamp t = rtb_stamp_now();
        /* A wake left over from an earlier block (the creator gave up
         * waiting for it at the deadline) has no slot. */
        int64_t k = atomic_fetch_add_explicit(&x->woken, 1, memory_order_relaxed) - x->base;
        if (k >= 0 && k < x->slots)
            x->t_w[k] = t;
    }
}

/* With real-time priority the waiter has already done its part when the
 * creator's call returns; without it the creator must let it catch up. */
static int64_t catch_up(const arc *x, const atomic_llong *counter, int64_t want)
{
    int64_t late = 0;
    while (atomic_load_explicit(counter, memory_order_relaxed) < want &&
           rtb_clock_now() < x->ctx->deadline) {
        late = 1;
        rtb_thread_yield();
    }
    return late;
}

/* The block of attempts [x->base, j) into samples (nothing is measured:
 * the waiters are parked), then the next block starts at j. */
static void block_samples(arc *x, int64_t j, rtb_series *acq, rtb_series *rel)
{
    int64_t woken = atomic_load(&x->woken);
    for (int64_t k = x->base; k < j; k++) {
        rtb_series_push(acq, rtb_stamp_ns(x->t_c[k - x->base] - x->t_a[k - x->base]));
        if (k < woken)
            rtb_series_push(rel, rtb_stamp_ns(x->t_w[k - x->base] - x->t_g[k - x->base]));
        rtb_series_drain(acq);
        rtb_series_drain(rel);
    }
    x->base = j;
}

static rtb_result run_point(rtb_ctx *ctx, int w_count, int64_t rounds)
{
    size_t total = (size_t)w_count * (size_t)rounds;
    size_t cap = total < ctx->opt->max_samples ? total : ctx->opt->max_samples;
    arc x = {.ctx = ctx};
    /* Whole rounds a block, one at least. */
    int64_t per = (int64_t)(rtb_stamp_block(total) / (size_t)w_count);
    if (per < 1)
        per = 1;
    x.slots = per * w_count;
    size_t slots = (size_t)x.slots;
    arc_waiter *w = rtb_mem_calloc((size_t)w_count, sizeof *w);
    rtb_thread *th = rtb_mem_calloc((size_t)w_count, sizeof *th);
    x.t_a = rtb_mem_calloc(slots, sizeof *x.t_a);
    x.t_c = rtb_mem_calloc(slots, sizeof *x.t_c);
    x.t_g = rtb_mem_calloc(slots, sizeof *x.t_g);
    x.t_w = rtb_mem_calloc(slots, sizeof *x.t_w);
    rtb_series acq, rel;
    rtb_result r = RTB_PASSED;
    bool series_ok = false;
    if (w && th && x.t_a && x.t_c && x.t_g && x.t_w && rtb_series_init_streamed(&acq, ctx, "acquire", cap) == RTB_OK) {
        if (rtb_series_init_streamed(&rel, ctx, "release", cap) == RTB_OK)
            series_ok = true;
        else
            rtb_series_free(&acq);
    }
    if (!series_ok || rtb_sem_create(&x.s, 0) != RTB_OK) {
        rtb_emit_check_error(ctx, "resources", "W=%d: no memory or no semaphore", w_count);
        rtb_mem_free(w), rtb_mem_free(th), rtb_mem_free(x.t_a), rtb_mem_free(x.t_c), rtb_mem_free(x.t_g), rtb_mem_free(x.t_w);
        if (series_ok) {
            rtb_series_free(&acq);
            rtb_series_free(&rel);
        }
        return RTB_ERROR;
    }
    /* Fault them in now: t_a and t_g are stored inside the samples. */
    memset(x.t_a, 0, slots * sizeof *x.t_a);
    memset(x.t_c, 0, slots * sizeof *x.t_c);
    memset(x.t_g, 0, slots * sizeof *x.t_g);
    memset(x.t_w, 0, slots * sizeof *x.t_w);
    rtb_series_set_point(&acq, "n", w_count);
    rtb_series_set_point(&rel, "n", w_count);

    /* Creator just below the waiters, everything within 1..97; past 96
     * waiters the levels run out and neighbours share one. */
    int creator = ctx->opt->priority;
    if (creator > TOP_PRIO - w_count)
        creator = TOP_PRIO - w_count;
    if (creator < 1)
        creator = 1;
    int levels = TOP_PRIO - creator;
    if (w_count > levels)
        rtb_warn(ctx, "priorities_repeat",
                 "W=%d: creator at %d, waiters at %d..%d: only %d distinct priorities, so "
                 "waiters share them (equal ones queue in arrival order)",
                 w_count, creator, creator + 1, TOP_PRIO, levels);
    rtb_thread_self_set(creator, ctx->opt->cpu);
    int created = 0;
    for (; created < w_count; created++) {
        int i = created;
        int prio = creator + 1 + (w_count <= levels ? i : (int)((int64_t)i * levels / w_count));
        w[i].x = &x;
        rtb_thread_attr a = rtb_attr(ctx, "arc-waiter", prio - ctx->opt->priority);
        a.stack_size = RTB_WORKER_STACK;
        if (rtb_sem_create(&w[i].start, 0) != RTB_OK)
            break;
        if (rtb_thread_create(&th[i], &a, waiter, &w[i]) != RTB_OK) {
            rtb_sem_delete(&w[i].start);
            break;
        }
    }
    int64_t late = 0, j = 0;
    if (created < w_count) {
        rtb_emit_check_error(ctx, "threads", "W=%d: only %d waiters could be created", w_count,
                             created);
        r = RTB_ERROR;
    }
    for (int64_t round = 0; round < rounds && r == RTB_PASSED; round++) {
        if (round && round % per == 0)
            block_samples(&x, j, &acq, &rel);
        int64_t first = j;
        for (int i = w_count - 1; i >= 0; i--, j++) {
            w[i].slot = j;
            rtb_sem_give(&w[i].start);
            late += catch_up(&x, &x.attempted, j + 1);
            x.t_c[j - x.base] = rtb_stamp_now();
        }
        for (int64_t k = first; k < j; k++) {
            x.t_g[k - x.base] = rtb_stamp_now();
            rtb_sem_give(&x.s);
            late += catch_up(&x, &x.woken, k + 1);
        }
    }
    atomic_store(&x.quit, true);
    for (int i = 0; i < created; i++)
        rtb_sem_give(&w[i].start);
    if (rtb_join_all(ctx, th, created) != RTB_OK)
        r = RTB_ERROR;
    int64_t woken = atomic_load(&x.woken);
    if (r == RTB_PASSED)
        block_samples(&x, j, &acq, &rel); /* the last block: the threads are joined */
    if (r == RTB_PASSED && (late || woken != j))
        rtb_warn(ctx, ctx->port->realtime ? "not_preempted" : "not_realtime",
                 "W=%d: %lld of %lld calls returned before the waiter had run (the creator "
                 "waited for it); %lld of %lld gives woke a waiter",
                 w_count, (long long)late, (long long)(2 * j), (long long)woken, (long long)j);
    rtb_emit_series(ctx, &acq);
    rtb_emit_series(ctx, &rel);
    rtb_series_free(&acq);
    rtb_series_free(&rel);
    for (int i = 0; i < created; i++)
        rtb_sem_delete(&w[i].start);
    rtb_sem_delete(&x.s);
    rtb_mem_free(w), rtb_mem_free(th), rtb_mem_free(x.t_a), rtb_mem_free(x.t_c), rtb_mem_free(x.t_g), rtb_mem_free(x.t_w);
    return r;
}

static rtb_result run(rtb_ctx *ctx)
{
    const int64_t *ws;
    int points = rtb_param_list(ctx, "waiters", &ws);
    int64_t rounds = rtb_param(ctx, "rounds");
    rtb_result worst = RTB_PASSED;
    for (int i = 0; i < points && worst == RTB_PASSED; i++) {
        /* More waiters than priorities below the runner's: they would
         * share one, which a kernel of one task per priority refuses. */
        if (ctx->port->one_task_per_priority && ws[i] > TOP_PRIO - 1) {
            rtb_emit_check_skip(ctx, "threads", "W=%lld: more waiters than the %d priorities "
                                "below the runner's; %s", (long long)ws[i], TOP_PRIO - 1,
                                ctx->port->one_task_detail);
            continue;
        }
        char point[24];
        snprintf(point, sizeof point, "W=%lld", (long long)ws[i]);
        if (!rtb_threads_fit(ctx, point, ws[i]))
            continue;
        worst = run_point(ctx, (int)ws[i], rounds);
    }
    return worst;
}

const rtb_case rtb_case_sem_arc = {
    .id = "SEM-ARC",
    .title = "Semaphore take / give under contention vs number of waiters",
    .params = params,
    .nparams = sizeof params / sizeof params[0],
    .run = run,
    .tasks = "n",
};
