/* SPDX-License-Identifier: Apache-2.0 */
/* SEM-SHF: semaphore shuffle. Thread A (lower) timestamps and gives S, then
 * takes P; thread B (higher) takes S, timestamps, gives P. Sample = B's
 * stamp - A's stamp: from giving a semaphore to its waiter running. Both
 * run on the measurement CPU, so the give must switch to B.
 * The stamps are kept a block of rounds at a time (rtb_stamp_block: the
 * whole run on POSIX, 128 rounds on a board). At a block's end A, which has
 * had B's last give, turns the block into samples and sends them out while
 * B waits for S, as at the start: a round begins with A's stamp, so no
 * sample spans it. */
#include <stdlib.h>
#include <string.h>

#include "../core/rtb.h"

static const rtb_param_def params[] = {
    {.name = "duration_ms", .help = "measurement time", .def = {500}, .ndef = 1, .min = 1,
     .max = 3600000},
};

typedef struct shf {
    rtb_ctx *ctx;
    rtb_sem s, p;
    rtb_series *out;
    rtb_stamp *ta, *tb; /* a block of rounds */
    size_t cap, blk;    /* rounds in all, in a block */
    size_t na, nb;      /* stamps in this block */
    size_t ta_all, tb_all; /* in the blocks done */
    size_t bad;         /* rounds out of order */
    bool last_pending;  /* a done block's last round awaits the next one's first stamp */
    bool last_bad;
    rtb_stamp last_tb;
    atomic_bool done;   /* A stopped giving */
    atomic_bool b_done; /* B stopped taking */
} shf;

/* B must stamp after A gave and before A's next stamp, once per give:
 * checked and turned into samples, a block at a time, between rounds. The
 * last round of a block that is not the run's last waits for the next
 * block's first stamp of A. */
static void take_block(shf *x, bool final)
{
    if (x->last_pending)
        x->bad += x->last_bad || (x->na > 0 && x->last_tb > x->ta[0]);
    x->last_pending = false;
    size_t n = x->na < x->nb ? x->na : x->nb;
    for (size_t i = 0; i < n; i++) {
        bool early = x->tb[i] < x->ta[i];
        if (!final && i + 1 == x->na) {
            x->last_pending = true;
            x->last_bad = early;
            x->last_tb = x->tb[i];
        } else {
            x->bad += early || (i + 1 < x->na && x->tb[i] > x->ta[i + 1]);
        }
        rtb_series_push(x->out, rtb_stamp_ns(x->tb[i] - x->ta[i]));
        rtb_series_drain(x->out); /* between rounds: nothing is measured */
    }
    x->ta_all += x->na;
    x->tb_all += x->nb;
    x->na = x->nb = 0;
}

static void thread_a(void *arg)
{
    shf *x = arg;
    while (!atomic_load_explicit(&x->ctx->stop, memory_order_relaxed) &&
           x->ta_all + x->na < x->cap) {
        if (x->na == x->blk) /* B stamped the block's last round and waits for S */
            take_block(x, false);
        x->ta[x->na++] = rtb_stamp_now();
        rtb_sem_give(&x->s);
        if (rtb_sem_take(&x->p, x->ctx->deadline) != RTB_OK || atomic_load(&x->b_done))
            break;
    }
    atomic_store(&x->done, true);
    rtb_sem_give(&x->s); /* let B see `done` */
}

static void thread_b(void *arg)
{
    shf *x = arg;
    for (;;) {
        if (rtb_sem_take(&x->s, x->ctx->deadline) != RTB_OK || atomic_load(&x->done))
            break;
        /* A broken semaphore lets B run on without A: bound it. */
        if (atomic_load_explicit(&x->ctx->stop, memory_order_relaxed) || x->nb == x->blk)
            break;
        x->tb[x->nb++] = rtb_stamp_now();
        rtb_sem_give(&x->p);
    }
    atomic_store(&x->b_done, true);
    rtb_sem_give(&x->p); /* A may be waiting for a turn that will not come */
}

static bool check_order(rtb_ctx *ctx, const shf *x)
{
    size_t na = x->ta_all, nb = x->tb_all;
    bool counts_ok = na == nb || na == nb + 1;
    bool ok = x->bad == 0 && counts_ok && na > 0 && nb > 0;
    rtb_emit_check(ctx, "order", ok, "A gave %llu times, B ran %llu times, %llu out of order",
                   (unsigned long long)na, (unsigned long long)nb, (unsigned long long)x->bad);
    return ok;
}

static rtb_result run(rtb_ctx *ctx)
{
    shf x = {.ctx = ctx, .cap = ctx->opt->max_samples};
    x.blk = rtb_stamp_block(x.cap);
    rtb_series s;
    x.out = &s;
    rtb_thread th[2]; /* B, A */
    x.ta = rtb_mem_calloc(x.blk, sizeof *x.ta);
    x.tb = rtb_mem_calloc(x.blk, sizeof *x.tb);
    if (!x.ta || !x.tb || rtb_series_init_streamed(&s, ctx, "give_to_run", x.cap) != RTB_OK) {
        rtb_mem_free(x.ta);
        rtb_mem_free(x.tb);
        rtb_emit_check_error(ctx, "buffer", "no memory for %llu samples",
                             (unsigned long long)x.cap);
        return RTB_ERROR;
    }
    /* Fault them in now: A stores its stamp inside the sample. */
    memset(x.ta, 0, x.blk * sizeof *x.ta);
    memset(x.tb, 0, x.blk * sizeof *x.tb);
    rtb_sem_create(&x.s, 0);
    rtb_sem_create(&x.p, 0);
    rtb_thread_attr aa = rtb_attr(ctx, "shf-a", 0), ab = rtb_attr(ctx, "shf-b", 1);
    rtb_thread_self_set(RTB_PRIO_MAX - 1, ctx->opt->cpu);
    rtb_thread_create(&th[0], &ab, thread_b, &x);
    rtb_thread_create(&th[1], &aa, thread_a, &x);
    rtb_monitor(ctx, rtb_param(ctx, "duration_ms") * 1000000);
    int rc = rtb_join_all(ctx, th, 2);

    take_block(&x, true); /* the last one, after the threads */
    bool ok = check_order(ctx, &x);
    rtb_emit_series(ctx, &s);
    rtb_series_free(&s);
    rtb_sem_delete(&x.s);
    rtb_sem_delete(&x.p);
    rtb_mem_free(x.ta);
    rtb_mem_free(x.tb);
    if (rc != RTB_OK)
        return RTB_ERROR;
    return ok ? RTB_PASSED : RTB_FAILED;
}

const rtb_case rtb_case_sem_shf = {
    .id = "SEM-SHF",
    .title = "Semaphore shuffle: give to waiter running",
    .params = params,
    .nparams = sizeof params / sizeof params[0],
    .run = run,
    .headline = 4,
};
