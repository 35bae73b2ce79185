/* SPDX-License-Identifier: Apache-2.0 */
/* SEM-TAKE: binary semaphore take (a counting semaphore kept at 0 or 1).
 * `available`: the take finds the unit and returns. `unavailable`: thread
 * H stamps and takes at 0; it blocks and the next thread on the CPU, L
 * (lower), resumes and stamps: the sample spans the take's way into the
 * kernel, the block and the switch out. L then gives, H wakes and repeats.
 * `unavailable` keeps its stamps a block of rounds at a time
 * (rtb_stamp_block: all of them on POSIX, 128 on a board): H turns a block
 * into samples at the top of its next round, before its stamp, while L
 * (lower, it has stamped the block's last round) waits to run, as at the
 * start. */
#include <stdlib.h>
#include <string.h>

#include "../core/rtb.h"

static const rtb_param_def params[] = {
    {.name = "iterations", .help = "takes per series", .def = {10000}, .ndef = 1, .min = 1,
     .max = 10000000},
};

typedef struct tk {
    rtb_ctx *ctx;
    rtb_sem s;
    int64_t n; /* rounds, the first one (thread start-up) not a sample */
    int64_t blk, taken; /* rounds in a block of stamps; turned into samples */
    int64_t negative;   /* rounds with L ahead of H: no sample */
    rtb_series *out;
    rtb_stamp *th, *tl; /* round i at i % blk */
    atomic_llong h_round;  /* rounds H has stamped */
    atomic_llong l_round;
    atomic_bool quit;      /* set-up failed: H must leave after its take */
} tk;

/* Rounds taken..upto (L stamped them) into samples, between rounds. */
static void take_block(tk *x, int64_t upto)
{
    for (int64_t i = x->taken; i < upto; i++) {
        int64_t k = i % x->blk;
        if (i == 0) /* thread start-up */
            continue;
        if (x->tl[k] < x->th[k]) { /* L stamped before H blocked: not a sample */
            x->negative++;
        } else {
            rtb_series_push(x->out, rtb_stamp_ns(x->tl[k] - x->th[k]));
            rtb_series_drain(x->out); /* between rounds: nothing is measured */
        }
    }
    if (upto > x->taken)
        x->taken = upto;
}

static void thread_h(void *arg)
{
    tk *x = arg;
    for (int64_t i = 0; i < x->n; i++) {
        if (i % x->blk == 0 && i > 0) /* L gave for the block's last round */
            take_block(x, i);
        x->th[i % x->blk] = rtb_stamp_now();
        atomic_store_explicit(&x->h_round, i + 1, memory_order_relaxed);
        if (rtb_sem_take(&x->s, x->ctx->deadline) != RTB_OK || atomic_load(&x->quit))
            break;
    }
    atomic_store(&x->h_round, x->n + 1); /* L must not wait for us any more */
}

static void thread_l(void *arg)
{
    tk *x = arg;
    for (int64_t i = 0; i < x->n; i++) {
        /* With real-time priority H has already stamped and blocked when L
         * gets here; without it L must not run ahead of H. */
        while (atomic_load_explicit(&x->h_round, memory_order_relaxed) <= i &&
               rtb_clock_now() < x->ctx->deadline)
            rtb_thread_yield();
        x->tl[i % x->blk] = rtb_stamp_now();
        atomic_store_explicit(&x->l_round, i + 1, memory_order_relaxed);
        rtb_sem_give(&x->s);
    }
}

static rtb_result unavailable(rtb_ctx *ctx, int64_t iterations, rtb_series *out)
{
    tk x = {.ctx = ctx, .n = iterations + 1, .out = out};
    x.blk = (int64_t)rtb_stamp_block((size_t)x.n);
    x.th = rtb_mem_calloc((size_t)x.blk, sizeof *x.th);
    x.tl = rtb_mem_calloc((size_t)x.blk, sizeof *x.tl);
    rtb_result r = RTB_PASSED;
    if (!x.th || !x.tl || rtb_sem_create(&x.s, 0) != RTB_OK) {
        rtb_mem_free(x.th);
        rtb_mem_free(x.tl);
        rtb_emit_check_error(ctx, "setup", "no memory for %lld rounds or no semaphore",
                             (long long)x.n);
        return RTB_ERROR;
    }
    /* Fault them in now: H stores its stamp inside the sample. */
    memset(x.th, 0, (size_t)x.blk * sizeof *x.th);
    memset(x.tl, 0, (size_t)x.blk * sizeof *x.tl);
    rtb_thread th[2];
    /* At --priority 97, H would be clamped to L's level: shift both down. */
    int low = ctx->opt->priority > RTB_PRIO_MAX - 3 ? -1 : 0;
    rtb_thread_attr ah = rtb_attr(ctx, "take-h", low + 1), al = rtb_attr(ctx, "take-l", low);
    /* We outrank both: they start when we block in the join, H first. */
    rtb_thread_self_set(RTB_PRIO_MAX - 1, ctx->opt->cpu);
    int made = 0;
    if (rtb_thread_create(&th[made], &ah, thread_h, &x) == RTB_OK)
        made++;
    if (made == 1 && rtb_thread_create(&th[made], &al, thread_l, &x) == RTB_OK)
        made++;
    if (made < 2) {
        atomic_store(&x.quit, true);
        rtb_sem_give(&x.s);
        rtb_emit_check_error(ctx, "threads", "could not create the two threads");
        r = RTB_ERROR;
    }
    if (rtb_join_all(ctx, th, made) != RTB_OK)
        r = RTB_ERROR;
    int64_t done = atomic_load(&x.l_round);
    take_block(&x, done); /* the rest, after the threads */
    int64_t negative = x.negative;
    if (r == RTB_PASSED && (done < x.n || negative))
        rtb_warn(ctx, "incomplete", "unavailable: %lld of %lld rounds completed, %lld with L "
                 "ahead of H (no sample)", (long long)done - 1, (long long)iterations,
                 (long long)negative);
    rtb_sem_delete(&x.s);
    rtb_mem_free(x.th);
    rtb_mem_free(x.tl);
    return r;
}

static rtb_result run(rtb_ctx *ctx)
{
    int64_t iterations = rtb_param(ctx, "iterations");
    size_t cap = (size_t)iterations < ctx->opt->max_samples ? (size_t)iterations
                                                            : ctx->opt->max_samples;
    rtb_series av, un;
    rtb_sem s;
    if (rtb_series_init_streamed(&av, ctx, "available", cap) != RTB_OK) {
        rtb_emit_check_error(ctx, "buffer", "no memory for %llu samples", (unsigned long long)cap);
        return RTB_ERROR;
    }
    if (rtb_series_init_streamed(&un, ctx, "unavailable", cap) != RTB_OK || rtb_sem_create(&s, 1) != RTB_OK) {
        rtb_series_free(&av);
        rtb_emit_check_error(ctx, "setup", "no memory for %llu samples or no semaphore",
                             (unsigned long long)cap);
        return RTB_ERROR;
    }
    rtb_result r = RTB_PASSED;
    rtb_thread_self_set(rtb_attr(ctx, "sem-take", 1).priority, ctx->opt->cpu);
    int64_t failures = 0;
    for (int64_t i = 0; i < iterations && !atomic_load(&ctx->stop); i++) {
        rtb_stamp t0 = rtb_stamp_now();
        int rc = rtb_sem_take(&s, ctx->deadline);
        rtb_stamp t1 = rtb_stamp_now();
        if (rc != RTB_OK) {
            failures++;
            break;
        }
        rtb_series_push(&av, rtb_stamp_ns(t1 - t0));
        rtb_sem_give(&s); /* back to 1, untimed */
        rtb_series_drain(&av); /* between windows: a full buffer goes out */
    }
    rtb_sem_delete(&s);
    if (failures) {
        rtb_emit_check_error(ctx, "calls", "a take of an available semaphore failed");
        r = RTB_ERROR;
    }
    if (unavailable(ctx, iterations, &un) != RTB_PASSED)
        r = RTB_ERROR;
    rtb_emit_series(ctx, &av);
    rtb_emit_series(ctx, &un);
    rtb_series_free(&av);
    rtb_series_free(&un);
    return r;
}

const rtb_case rtb_case_sem_take = {
    .id = "SEM-TAKE",
    .title = "Binary semaphore take, available and unavailable",
    .params = params,
    .nparams = sizeof params / sizeof params[0],
    .run = run,
};
