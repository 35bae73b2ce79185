/* SPDX-License-Identifier: Apache-2.0 */
/* SEM-SHF: semaphore shuffle. Thread A (lower) timestamps and gives S, then
 * takes P; thread B (higher) takes S, timestamps, gives P. Sample = B's
 * stamp - A's stamp: from giving a semaphore to its waiter running. Both
 * run on the measurement CPU, so the give must switch to B. */
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
    rtb_stamp *ta, *tb;
    size_t cap, na, nb;
    atomic_bool done;   /* A stopped giving */
    atomic_bool b_done; /* B stopped taking */
} shf;

static void thread_a(void *arg)
{
    shf *x = arg;
    while (!atomic_load_explicit(&x->ctx->stop, memory_order_relaxed) && x->na < x->cap) {
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
        if (atomic_load_explicit(&x->ctx->stop, memory_order_relaxed) || x->nb == x->cap)
            break;
        x->tb[x->nb++] = rtb_stamp_now();
        rtb_sem_give(&x->p);
    }
    atomic_store(&x->b_done, true);
    rtb_sem_give(&x->p); /* A may be waiting for a turn that will not come */
}

/* B must stamp after A gave and before A's next stamp, once per give. */
static bool check_order(rtb_ctx *ctx, const shf *x)
{
    size_t bad = 0, n = x->na < x->nb ? x->na : x->nb;
    for (size_t i = 0; i < n; i++)
        if (x->tb[i] < x->ta[i] || (i + 1 < x->na && x->tb[i] > x->ta[i + 1]))
            bad++;
    bool counts_ok = x->na == x->nb || x->na == x->nb + 1;
    bool ok = bad == 0 && counts_ok && n > 0;
    rtb_emit_check(ctx, "order", ok, "A gave %llu times, B ran %llu times, %llu out of order",
                   (unsigned long long)x->na, (unsigned long long)x->nb, (unsigned long long)bad);
    return ok;
}

static rtb_result run(rtb_ctx *ctx)
{
    shf x = {.ctx = ctx, .cap = ctx->opt->max_samples};
    rtb_series s;
    rtb_thread th[2]; /* B, A */
    x.ta = rtb_mem_calloc(x.cap, sizeof *x.ta);
    x.tb = rtb_mem_calloc(x.cap, sizeof *x.tb);
    if (!x.ta || !x.tb || rtb_series_init_streamed(&s, ctx, "give_to_run", x.cap) != RTB_OK) {
        rtb_mem_free(x.ta);
        rtb_mem_free(x.tb);
        rtb_emit_check_error(ctx, "buffer", "no memory for %llu samples",
                             (unsigned long long)x.cap);
        return RTB_ERROR;
    }
    /* Fault them in now: A stores its stamp inside the sample. */
    memset(x.ta, 0, x.cap * sizeof *x.ta);
    memset(x.tb, 0, x.cap * sizeof *x.tb);
    rtb_sem_create(&x.s, 0);
    rtb_sem_create(&x.p, 0);
    rtb_thread_attr aa = rtb_attr(ctx, "shf-a", 0), ab = rtb_attr(ctx, "shf-b", 1);
    rtb_thread_self_set(RTB_PRIO_MAX - 1, ctx->opt->cpu);
    rtb_thread_create(&th[0], &ab, thread_b, &x);
    rtb_thread_create(&th[1], &aa, thread_a, &x);
    rtb_monitor(ctx, rtb_param(ctx, "duration_ms") * 1000000);
    int rc = rtb_join_all(ctx, th, 2);

    size_t n = x.na < x.nb ? x.na : x.nb;
    for (size_t i = 0; i < n; i++) {
        rtb_series_push(&s, rtb_stamp_ns(x.tb[i] - x.ta[i]));
        rtb_series_drain(&s); /* after the threads: nothing is measured */
    }
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
