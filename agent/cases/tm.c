/* SPDX-License-Identifier: Apache-2.0 */
/* The TM cases' monitor (tm.h). */
#include "tm.h"

static uint64_t total(tm *t, int n)
{
    uint64_t s = 0;
    for (int i = 0; i < n; i++)
        s += atomic_load_explicit(&t->count[i], memory_order_relaxed);
    return s;
}

static rtb_result tm_run(rtb_ctx *ctx, tm *t, const rtb_thread_attr *attrs, rtb_thread_fn fn,
                         int n)
{
    rtb_time window = rtb_param(ctx, "window_ms") * 1000000;
    int64_t windows = rtb_param(ctx, "duration_ms") * 1000000 / window;
    if (windows < 1)
        windows = 1;
    size_t cap = (size_t)windows < ctx->opt->max_samples ? (size_t)windows
                                                         : ctx->opt->max_samples;
    rtb_series score;
    if (rtb_series_init(&score, "score", cap) != RTB_OK) {
        rtb_emit_check_error(ctx, "buffer", "no memory for %lld windows", (long long)windows);
        return RTB_ERROR;
    }
    rtb_series_set_kind(&score, RTB_KIND_RATE);
    t->ctx = ctx;
    t->windows = windows;
    /* Above every worker, on their CPU: it takes the CPU once a window. */
    rtb_thread_self_set(RTB_PRIO_MAX - 1, ctx->opt->cpu);
    rtb_thread th[TM_MAX_WORKERS];
    int started = 0;
    rtb_result r = RTB_PASSED;
    for (int i = 0; i < n; i++) {
        t->w[i] = (tm_worker){t, i};
        if (rtb_thread_create(&th[i], &attrs[i], fn, &t->w[i]) != RTB_OK) {
            rtb_emit_check_error(ctx, "threads", "could not create worker %d of %d", i + 1, n);
            r = RTB_ERROR;
            break;
        }
        started++;
    }
    rtb_time next = rtb_clock_now(), last = next;
    uint64_t before = total(t, n);
    for (int64_t k = 0; k < windows && r == RTB_PASSED && !atomic_load(&ctx->stop); k++) {
        next += window;
        rtb_sleep_until(next);
        /* A window is from one wake-up to the next, not the nominal length:
         * woken late, it counted longer (and the next one shorter), and the
         * rate over the nominal length overstated it. */
        rtb_time at = rtb_clock_now();
        uint64_t now = total(t, n);
        uint64_t span = at > last ? (uint64_t)(at - last) : 1;
        rtb_series_push(&score, (int64_t)((now - before) * 1000000000ull / span));
        before = now;
        last = at;
    }
    atomic_store(&t->quit, true);
    if (t->unblock)
        t->unblock(t);
    if (rtb_join_all(ctx, th, started) != RTB_OK)
        r = RTB_ERROR;
    if (r == RTB_PASSED)
        rtb_emit_series(ctx, &score);
    rtb_series_free(&score);
    return r;
}

bool tm_even(rtb_ctx *ctx, tm *t, int n, uint64_t spread, const char *what)
{
    uint64_t lo = UINT64_MAX, hi = 0;
    for (int i = 0; i < n; i++) {
        uint64_t c = atomic_load(&t->count[i]);
        lo = c < lo ? c : lo;
        hi = c > hi ? c : hi;
    }
    if (!ctx->port->realtime) {
        rtb_emit_check_skip(ctx, "even", "needs real-time priority: %s", what);
        return true;
    }
    rtb_emit_check(ctx, "even", hi - lo <= spread,
                   "%d workers counted %llu..%llu (at most %llu apart: %s)", n,
                   (unsigned long long)lo, (unsigned long long)hi, (unsigned long long)spread,
                   what);
    return hi - lo <= spread;
}

rtb_result tm_one(rtb_ctx *ctx, const tm_spec *spec)
{
    if (spec->n < 1 || spec->n > TM_MAX_WORKERS) {
        rtb_emit_check_error(ctx, "threads", "%d workers: 1..%d", spec->n, TM_MAX_WORKERS);
        return RTB_ERROR;
    }
    tm *t = rtb_mem_calloc(1, sizeof *t);
    if (!t) {
        rtb_emit_check_error(ctx, "buffer", "no memory");
        return RTB_ERROR;
    }
    t->ctx = ctx;
    t->arg = spec->arg;
    t->unblock = spec->unblock;
    rtb_thread_attr a[TM_MAX_WORKERS];
    for (int i = 0; i < spec->n; i++)
        a[i] = rtb_attr(ctx, spec->names ? spec->names[i] : spec->name, i * spec->prio_step);
    rtb_result r = tm_run(ctx, t, a, spec->fn, spec->n);
    if (r == RTB_PASSED && spec->after)
        r = spec->after(ctx, t);
    uint64_t spread = spec->spread + spec->spread_per_window * (uint64_t)t->windows;
    if (r == RTB_PASSED && spread && !tm_even(ctx, t, spec->n, spread, spec->what))
        r = RTB_FAILED;
    rtb_mem_free(t);
    return r;
}

static void irq_handler(void *arg) { rtb_sem_give_isr(&((tm_irq *)arg)->sem); }

static void irq_unblock(tm *t) { rtb_sem_give(&((tm_irq *)t->arg)->sem); }

bool tm_irq_open(tm_irq *o)
{
    o->status = rtb_event_create(&o->ev, irq_handler, o, NULL);
    return o->status == RTB_OK;
}

static rtb_result irq_after(rtb_ctx *ctx, tm *t)
{
    const tm_irq *o = t->arg;
    if (o->status == RTB_OK)
        return RTB_PASSED;
    rtb_emit_check_error(ctx, "event", "no event source (status %d)", o->status);
    return RTB_ERROR;
}

rtb_result tm_irq_one(rtb_ctx *ctx, tm_spec spec)
{
    tm_irq *o = rtb_mem_calloc(1, sizeof *o);
    if (!o || rtb_sem_create(&o->sem, 0) != RTB_OK) {
        rtb_mem_free(o);
        rtb_emit_check_error(ctx, "setup", "no memory or no semaphore");
        return RTB_ERROR;
    }
    o->status = RTB_EFAIL;
    spec.arg = o;
    spec.unblock = irq_unblock;
    spec.after = irq_after;
    rtb_result r = tm_one(ctx, &spec);
    if (o->status == RTB_OK)
        rtb_event_delete(&o->ev);
    rtb_sem_delete(&o->sem);
    rtb_mem_free(o);
    return r;
}
