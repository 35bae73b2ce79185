/* SPDX-License-Identifier: Apache-2.0 */
/* IRQ-DLT: dispatch latency, from the handler's last instruction until the
 * interrupted thread runs again. The target spins stamping (irq_spin.c);
 * the handler's last act is its stamp; the sample is the target's first
 * stamp after it. Timer and raised sources alike.
 *
 * Self-test (blocker_us): for random events the handler, after its last
 * stamp, wakes a higher-priority thread on the same CPU that busy-waits D;
 * the interrupted thread can only resume after it, so the max must reach D
 * (the RTOS case of an ISR readying a higher-priority task). */
#include <stdlib.h>

#include "irq.h"

static const rtb_param_def params[] = {
    IRQ_SOURCE_PARAM,
    IRQ_SPIN_PARAMS,
    {.name = "blocker_us",
     .help = "self-test knob: after random handlers a higher-priority thread holds the CPU this "
             "long, so the max must reach it (0 = off)",
     .def = {0}, .ndef = 1, .min = 0, .max = 100000},
};

typedef struct dlt {
    rtb_ctx *ctx;
    irq_spin *sp;
    rtb_sem blk;
    atomic_bool done;
    unsigned char *pick; /* events after which the blocker runs */
    size_t npick;
    rtb_time blocker;
    atomic_size_t blocked;
    rtb_series s;
} dlt;

static void handler(void *arg)
{
    dlt *d = arg;
    size_t k = irq_spin_enter(d->sp);
    irq_spin_leave(d->sp, k);
    /* After the last stamp: in the measured window, so only for the
     * self-test (the event's index in the run picks it). */
    if (d->pick && (k += irq_spin_base(d->sp)) < d->npick && d->pick[k])
        rtb_sem_give_isr(&d->blk);
}

static void blocker_main(void *arg)
{
    dlt *d = arg;
    while (rtb_sem_take(&d->blk, d->ctx->deadline) == RTB_OK && !atomic_load(&d->done)) {
        rtb_time until = rtb_ts_now() + d->blocker;
        while (rtb_ts_now() < until)
            ;
        atomic_fetch_add(&d->blocked, 1);
    }
}

static void on_finish(void *arg)
{
    dlt *d = arg;
    atomic_store(&d->done, true);
    rtb_sem_give(&d->blk);
}

/* Between blocks (irq_spin_run): nothing is measured. */
static void on_block(void *arg, size_t handled)
{
    dlt *d = arg;
    for (size_t k = 0; k < handled; k++) {
        rtb_time end = irq_spin_end_of(d->sp, k), resume = irq_spin_resume_of(d->sp, k);
        if (end && resume) {
            rtb_series_push(&d->s, resume - end);
            rtb_series_drain(&d->s);
        }
    }
}

static rtb_result run_source(rtb_ctx *ctx, int source, size_t count, rtb_time period)
{
    dlt d = {.ctx = ctx, .blocker = rtb_param(ctx, "blocker_us") * 1000};
    if (d.blocker > 0 && !ctx->port->realtime) {
        rtb_warn(ctx, "not_realtime", "the self-test blocker needs real-time priority: off");
        d.blocker = 0;
    }
    rtb_series *s = &d.s;
    size_t cap = count < ctx->opt->max_samples ? count : ctx->opt->max_samples;
    if (rtb_series_init_streamed(s, ctx, source == IRQ_TIMER ? "timer_dispatch" : "raised_dispatch",
                                 cap) != RTB_OK) {
        rtb_emit_check_error(ctx, "buffer", "no memory for %llu samples", (unsigned long long)cap);
        return RTB_ERROR;
    }
    irq_spin_cfg cfg = {.source = source, .count = count, .period = period, .handler = handler,
                        .arg = &d, .on_finish = on_finish, .on_block = on_block};
    d.sp = irq_spin_new(ctx, &cfg);
    if (d.blocker > 0 && (d.pick = rtb_mem_calloc(count, 1)) != NULL) {
        uint32_t rnd = 0x68e31da4u;
        d.npick = count;
        for (size_t k = 0; k < count; k++)
            d.pick[k] = irq_rand(&rnd) % 8 == 0;
    }
    if (!d.sp || (d.blocker > 0 && !d.pick)) {
        irq_spin_free(d.sp);
        rtb_mem_free(d.pick);
        rtb_series_free(s);
        rtb_emit_check_error(ctx, "buffer", "no memory for %llu events", (unsigned long long)count);
        return RTB_ERROR;
    }
    rtb_sem_create(&d.blk, 0);
    rtb_thread blk;
    bool has_blk = false;
    rtb_thread_self_set(RTB_PRIO_MAX - 1, irq_cpu(ctx));
    if (d.blocker > 0) {
        rtb_thread_attr ab = irq_attr(ctx, "irq-blocker", 2, irq_cpu(ctx));
        has_blk = rtb_thread_create(&blk, &ab, blocker_main, &d) == RTB_OK;
    }
    irq_spin_out out;
    int rc = irq_spin_run(d.sp, &out);
    if (has_blk && rtb_join_all(ctx, &blk, 1) != RTB_OK)
        rc = RTB_EFAIL;
    rtb_result r = RTB_PASSED;
    if (rc != RTB_OK) {
        irq_spin_run_error(ctx, source, rc);
        r = RTB_ERROR;
    } else {
        if (d.blocker > 0)
            rtb_warn(ctx, "self_test", "blocker held the CPU after %llu handlers for %lld ns",
                     (unsigned long long)atomic_load(&d.blocked), (long long)d.blocker);
        if (!irq_spin_check(ctx, source, count, &out))
            r = RTB_FAILED;
        rtb_emit_series(ctx, s);
    }
    rtb_series_free(s);
    rtb_sem_delete(&d.blk);
    irq_spin_free(d.sp);
    rtb_mem_free(d.pick);
    return r;
}

static rtb_result run(rtb_ctx *ctx)
{
    return irq_spin_sources(ctx, run_source);
}

const rtb_case rtb_case_irq_dlt = {
    .id = "IRQ-DLT",
    .title = "Dispatch latency: handler's last instruction to the interrupted thread",
    .params = params,
    .nparams = sizeof params / sizeof params[0],
    .run = run,
};
