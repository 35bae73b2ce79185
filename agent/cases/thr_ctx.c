/* SPDX-License-Identifier: Apache-2.0 */
/* THR-CTX: context switch against the number of tasks. A low thread L and
 * a high thread H hand the CPU to each other by semaphore: L stamps and
 * gives H's semaphore (H preempts it), H stamps, gives L's and blocks on
 * its own, L resumes. The stamps alternate L, H, L, H...; consecutive ones
 * are switch times. Each point of the sweep first parks `extra` threads
 * at random priorities strictly between L and H, blocked on a semaphore:
 * if the scheduler's cost grows with the number of tasks it knows of, the
 * switches of the long list are slower (the host compares the short
 * list's min with the long list's max).
 *
 * The rounds run in blocks (rtb_stamp_block: all of them in one on POSIX,
 * 128 on a board): L stamps the block's last stamp, hands it to the
 * creator (the top priority) and waits for the next block, whose first
 * stamp it takes afresh. The creator turns the block's stamps into samples
 * and sends the series' full buffer meanwhile: no sample spans it, and H is
 * blocked on its semaphore as between any two rounds. A point of more
 * threads than a board holds (RTB_CASE_THREADS: extra=500 in 64 KiB) is
 * skipped with the reason; POSIX runs every point. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/rtb.h"

static const rtb_param_def params[] = {
    {.name = "iterations", .help = "hand-off rounds per point (two switches each)",
     .def = {10000}, .ndef = 1, .min = 1, .max = 10000000},
    {.name = "extra", .help = "blocked threads between the two (a sweep)", .def = {0, 500},
     .ndef = 2, .min = 0, .max = 4096, .list = true},
};

/* Fixed: the same priorities on every run, so runs compare. */
#define SEED 0x2545F491u

typedef struct ctxsw {
    rtb_ctx *ctx;
    rtb_sem to_high, to_low, park;
    rtb_sem go, done; /* the creator and L, at a block's ends */
    rtb_stamp *log;   /* one block: L at even indices, H at odd */
    size_t rounds, block;
    atomic_int parked;
    atomic_bool quit; /* the creator ends the hand-off early */
    size_t h_done;    /* rounds H completed */
} ctxsw;

static void low(void *arg)
{
    ctxsw *x = arg;
    for (size_t base = 0; base < x->rounds; base += x->block) {
        if (rtb_sem_take(&x->go, x->ctx->deadline) != RTB_OK || atomic_load(&x->quit))
            return;
        size_t b = x->rounds - base < x->block ? x->rounds - base : x->block, i = 0;
        for (; i < b; i++) {
            x->log[2 * i] = rtb_stamp_now();
            rtb_sem_give(&x->to_high);
            if (rtb_sem_take(&x->to_low, x->ctx->deadline) != RTB_OK)
                break;
        }
        if (i == b)
            x->log[2 * i] = rtb_stamp_now();
        rtb_sem_give(&x->done);
        if (i < b)
            return;
    }
}

static void high(void *arg)
{
    ctxsw *x = arg;
    for (size_t i = 0; i < x->rounds; i++) {
        if (rtb_sem_take(&x->to_high, x->ctx->deadline) != RTB_OK)
            return;
        x->log[2 * (i % x->block) + 1] = rtb_stamp_now();
        x->h_done = i + 1;
        rtb_sem_give(&x->to_low);
    }
}

static void parked(void *arg)
{
    ctxsw *x = arg;
    atomic_fetch_add(&x->parked, 1);
    rtb_sem_take(&x->park, x->ctx->deadline);
}

static uint32_t xorshift(uint32_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

/* Creates the extra threads and waits until every one is blocked. */
static int park_extras(rtb_ctx *ctx, ctxsw *x, rtb_thread *th, int n, int lo, int hi, int *made)
{
    uint32_t seed = SEED;
    rtb_thread_attr a = rtb_attr(ctx, "ctx-extra", 0);
    a.stack_size = RTB_WORKER_STACK;
    for (*made = 0; *made < n; (*made)++) {
        a.priority = lo + 1 + (int)(xorshift(&seed) % (uint32_t)(hi - lo - 1));
        if (rtb_thread_create(&th[*made], &a, parked, x) != RTB_OK)
            return RTB_ENOMEM;
    }
    /* They outrank nothing of ours but the monitor's sleep: each runs,
     * counts itself and blocks. */
    rtb_time give_up = rtb_clock_now() + 5000000000;
    while (atomic_load(&x->parked) < n) {
        if (rtb_clock_now() > give_up)
            return RTB_ETIMEDOUT;
        rtb_sleep_until(rtb_clock_now() + 1000000);
    }
    return RTB_OK;
}

/* The creator's side of the blocks: each block's stamps become samples
 * while L waits for the next. False: the hand-off stopped short. */
static bool run_blocks(rtb_ctx *ctx, ctxsw *x, rtb_series *s)
{
    for (size_t base = 0; base < x->rounds; base += x->block) {
        size_t b = x->rounds - base < x->block ? x->rounds - base : x->block;
        rtb_sem_give(&x->go);
        if (rtb_sem_take(&x->done, ctx->deadline) != RTB_OK)
            return false;
        /* A block cut short ends at H's last stamp. */
        size_t stamps = x->h_done == base + b ? 2 * b + 1 : 2 * (x->h_done - base);
        for (size_t i = 0; i + 1 < stamps; i++) {
            rtb_series_push(s, rtb_stamp_ns(x->log[i + 1] - x->log[i]));
            rtb_series_drain(s);
        }
        if (x->h_done < base + b)
            return false;
    }
    return true;
}

static rtb_result run_point(rtb_ctx *ctx, ctxsw *x, int extra, int lo, int hi)
{
    char point[24];
    snprintf(point, sizeof point, "n=%d", extra);
    if (!rtb_threads_fit(ctx, point, (int64_t)extra + 2))
        return RTB_PASSED; /* skipped, with the reason: the other points run */
    rtb_series s;
    rtb_thread *ex = rtb_mem_calloc((size_t)extra + 1, sizeof *ex);
    if (!ex || rtb_series_init_streamed(&s, ctx, "switch", 2 * x->rounds) != RTB_OK) {
        rtb_mem_free(ex);
        rtb_emit_check_error(ctx, "resources", "no memory for %d threads", extra);
        return RTB_ERROR;
    }
    rtb_series_set_point(&s, "n", extra);
    atomic_store(&x->parked, 0);
    x->h_done = 0;
    atomic_store(&x->quit, false);
    rtb_sem_create(&x->to_high, 0);
    rtb_sem_create(&x->to_low, 0);
    rtb_sem_create(&x->park, 0);
    rtb_sem_create(&x->go, 0);
    rtb_sem_create(&x->done, 0);
    rtb_thread_self_set(RTB_PRIO_MAX - 1, ctx->opt->cpu);
    rtb_result r = RTB_PASSED;
    int made = 0;
    int rc = park_extras(ctx, x, ex, extra, lo, hi, &made);
    if (rc != RTB_OK) {
        rtb_emit_check_error(ctx, "threads", "n=%d: %s (%d created, %d blocked)", extra,
                             rc == RTB_ENOMEM ? "could not create the extra threads"
                                              : "the extra threads did not all block",
                             made, atomic_load(&x->parked));
        r = RTB_ERROR;
    } else {
        rtb_thread pair[2];
        rtb_thread_attr ah = rtb_attr(ctx, "ctx-high", 0), al = rtb_attr(ctx, "ctx-low", 0);
        ah.priority = hi;
        al.priority = lo;
        ah.stack_size = al.stack_size = RTB_WORKER_STACK;
        int n = 0;
        if (rtb_thread_create(&pair[0], &ah, high, x) == RTB_OK)
            n++;
        if (n == 1 && rtb_thread_create(&pair[1], &al, low, x) == RTB_OK)
            n++;
        if (n < 2) {
            rtb_emit_check_error(ctx, "threads", "could not create the switching pair");
            r = RTB_ERROR;
            rtb_thread_delete(&pair[0]); /* blocked in its first take */
            n = 0;
        } else if (!run_blocks(ctx, x, &s)) {
            atomic_store(&x->quit, true); /* L waits for a block, or has returned */
            rtb_sem_give(&x->go);
        }
        if (rtb_join_all(ctx, pair, n) != RTB_OK)
            r = RTB_ERROR;
    }
    for (int i = 0; i < made; i++)
        rtb_sem_give(&x->park);
    if (rtb_join_all(ctx, ex, made) != RTB_OK)
        r = RTB_ERROR;
    if (r == RTB_PASSED) {
        if (x->h_done < x->rounds) {
            rtb_emit_check_error(ctx, "handoff", "n=%d: only %llu of %llu rounds completed", extra,
                                 (unsigned long long)x->h_done, (unsigned long long)x->rounds);
            r = RTB_ERROR;
        }
    }
    rtb_emit_series(ctx, &s);
    rtb_series_free(&s);
    rtb_sem_delete(&x->to_high);
    rtb_sem_delete(&x->to_low);
    rtb_sem_delete(&x->park);
    rtb_sem_delete(&x->go);
    rtb_sem_delete(&x->done);
    rtb_mem_free(ex);
    return r;
}

static rtb_result run(rtb_ctx *ctx)
{
    /* Room for many priorities between the two, inside what rtb_attr
     * allows (the top two belong to the monitor and the watchdog). */
    int lo = rtb_attr(ctx, "", -10).priority, hi = rtb_attr(ctx, "", 10).priority;
    ctxsw x = {.ctx = ctx, .rounds = (size_t)rtb_param(ctx, "iterations")};
    x.block = rtb_stamp_block(x.rounds);
    if (hi - lo < 2) {
        rtb_emit_check_error(ctx, "priorities", "no priority between %d and %d: change --priority",
                             lo, hi);
        return RTB_ERROR;
    }
    x.log = rtb_mem_alloc((2 * x.block + 1) * sizeof *x.log);
    if (!x.log) {
        rtb_emit_check_error(ctx, "buffer", "no memory for %llu stamps",
                             (unsigned long long)2 * x.block + 1);
        return RTB_ERROR;
    }
    memset(x.log, 0xff, (2 * x.block + 1) * sizeof *x.log); /* fault it in now */
    const int64_t *extras;
    int points = rtb_param_list(ctx, "extra", &extras);
    rtb_result worst = RTB_PASSED;
    for (int i = 0; i < points && worst != RTB_ERROR; i++) {
        rtb_result r = run_point(ctx, &x, (int)extras[i], lo, hi);
        if (r != RTB_PASSED)
            worst = r;
    }
    rtb_mem_free(x.log);
    return worst;
}

const rtb_case rtb_case_thr_ctx = {
    .id = "THR-CTX",
    .title = "Context switch against the number of tasks",
    .params = params,
    .nparams = sizeof params / sizeof params[0],
    .run = run,
    .unsupported_here = rtb_needs_shared_priorities,
    .tasks = "n",
};
