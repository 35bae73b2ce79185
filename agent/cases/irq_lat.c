/* SPDX-License-Identifier: Apache-2.0 */
/* IRQ-LAT: interrupt latency, from the event to the first instruction of
 * its handler, with the handler running on a blocked (idle) thread.
 *
 * Timer source: a periodic timer whose event is handled on the target thread;
 * the event time is the programmed expiry t0 + i * period, in the
 * rtb_clock_now() clock, so the handler stamps with rtb_clock_now_isr().
 * Expiries merged into an event still pending (overruns) have no sample
 * and are counted as lost. Signal source: a raiser thread stamps with
 * rtb_ts_now() and raises; the handler stamps with rtb_ts_now().
 *
 * Also the engine of IRQ-RSP (under load) and IRQ-SUS (lost events). */
#include <stdlib.h>
#include <string.h>

#include "irq.h"

#define START_DELAY 2000000    /* first event: after every thread is in place */
#define ACK_TIMEOUT 1000000000 /* a raised event not handled by then is lost */
#define BLOCK_LEAD 300000      /* the blocker holds the CPU this long before its event */
#define BLOCK_EVERY 8          /* about one event in BLOCK_EVERY/2+1 is held */

typedef struct lat {
    rtb_ctx *ctx;
    irq_lat_cfg cfg;
    int cpu, helpers;
    rtb_event ev;
    rtb_sem ready, done, ack, blk_go;
    rtb_time *h_ts;  /* handler's first stamp: per handler run (timer), per event (raised) */
    int64_t *h_ovr;  /* timer: overruns counted up to and including this event */
    rtb_time *r_ts;  /* raised: the raiser's stamp */
    size_t cap;
    atomic_size_t n;   /* handler runs */
    atomic_size_t cur; /* raised: the event being raised */
    atomic_bool signalled, finished, ev_ok, abort;
    rtb_time t0, wait_until;
    int rc;
    size_t raised; /* raised: events raised */
    int raise_rc;
    _Atomic rtb_time blk_until;
    atomic_bool blk_spinning, blk_broken;
    atomic_size_t blocked;
    uint32_t rnd_raise, rnd_block; /* the blockers' picks, on across blocks */
    int64_t ovr_end;               /* timer: the overruns when it stopped */
} lat;

static void on_timer(void *arg)
{
    rtb_time t = rtb_clock_now_isr(); /* first: the expiry's own clock */
    lat *x = arg;
    size_t k = atomic_fetch_add_explicit(&x->n, 1, memory_order_relaxed);
    /* The port has already added this event's overruns. */
    int64_t o = rtb_event_overruns(&x->ev);
    if (k < x->cap) {
        x->h_ts[k] = t;
        x->h_ovr[k] = o;
    }
    if ((int64_t)k + 1 + o >= (int64_t)x->cfg.count && !atomic_exchange(&x->signalled, true)) {
        /* Disarm here: with a period shorter than a handler, events come
         * back to back and the target would never leave its handlers. */
        rtb_event_disarm_isr(&x->ev);
        rtb_sem_give_isr(&x->done);
    }
    RTB_INJECT_DELAY(RTB_INJ_EVENT_DELAY);
}

static void on_raise(void *arg)
{
    rtb_time t = rtb_ts_now();
    lat *x = arg;
    size_t i = atomic_load(&x->cur);
    atomic_fetch_add_explicit(&x->n, 1, memory_order_relaxed);
    if (i < x->cap && x->h_ts[i] == 0)
        x->h_ts[i] = t;
    RTB_INJECT_DELAY(RTB_INJ_EVENT_DELAY);
    rtb_sem_give_isr(&x->ack);
}

static void target_main(void *arg)
{
    lat *x = arg;
    bool timer = x->cfg.source == IRQ_TIMER;
    int rc = rtb_event_create(&x->ev, timer ? on_timer : on_raise, x, NULL);
    bool created = rc == RTB_OK;
    x->wait_until = x->ctx->deadline - 1000000000;
    if (created && timer) {
        x->t0 = irq_first_event(rtb_clock_now() + START_DELAY, x->cfg.period);
        x->wait_until =
            irq_wait_deadline(x->ctx, START_DELAY + (rtb_time)x->cfg.count * x->cfg.period);
        rc = rtb_event_arm(&x->ev, x->t0, x->cfg.period);
    }
    x->rc = rc;
    atomic_store(&x->ev_ok, rc == RTB_OK);
    for (int i = 0; i < x->helpers; i++)
        rtb_sem_give(&x->ready);
    /* A lost event ends the wait here. */
    if (rc == RTB_OK && !atomic_load(&x->abort) &&
        rtb_sem_take(&x->done, x->wait_until) != RTB_OK && !timer) {
        /* The raiser must be gone before the event is: it stops at abort. */
        atomic_store(&x->abort, true);
        if (rtb_sem_take(&x->done, x->ctx->deadline) != RTB_OK)
            created = false; /* still raising: leave it, the watchdog ends the run */
    }
    if (created) {
        if (timer) {
            x->ovr_end = rtb_event_overruns(&x->ev);
            rtb_event_arm(&x->ev, 0, 0);
        }
        rtb_event_delete(&x->ev);
    }
    atomic_store(&x->finished, true);
    rtb_sem_give(&x->blk_go);
}

/* Signal source with the self-test blocker: the blocker must be spinning
 * on the target's CPU before the raise, and keeps spinning until D after
 * the raiser's stamp, so that event's latency is at least D. */
static bool blocker_hold(lat *x)
{
    if (atomic_load(&x->blk_broken))
        return false;
    rtb_sem_give(&x->blk_go);
    rtb_time limit = rtb_ts_now() + ACK_TIMEOUT;
    while (!atomic_load(&x->blk_spinning)) {
        if (rtb_ts_now() > limit) {
            atomic_store(&x->blk_broken, true); /* let it go whenever it comes */
            return false;
        }
    }
    return true;
}

static void raiser_main(void *arg)
{
    lat *x = arg;
    rtb_ctx *ctx = x->ctx;
    if (rtb_sem_take(&x->ready, ctx->deadline) != RTB_OK || !atomic_load(&x->ev_ok))
        goto out;
    rtb_time next = rtb_clock_now() + START_DELAY;
    for (size_t i = 0; i < x->cfg.count && !atomic_load(&x->abort); i++) {
        if (x->cfg.period > 0) {
            rtb_sleep_until(next);
            next += x->cfg.period;
        }
        bool blk = x->cfg.blocker > 0 && irq_rand(&x->rnd_raise) % BLOCK_EVERY == 0 &&
                   blocker_hold(x);
        atomic_store(&x->cur, i);
        rtb_time t = rtb_ts_now();
        x->r_ts[i] = t;
        if (blk)
            atomic_store(&x->blk_until, t + x->cfg.blocker);
        int rc = rtb_event_raise(&x->ev);
        if (rc != RTB_OK) {
            x->raise_rc = rc;
            break;
        }
        x->raised = i + 1;
        rtb_time limit = rtb_clock_now() + ACK_TIMEOUT + x->cfg.blocker;
        if (rtb_sem_take(&x->ack, limit < ctx->deadline ? limit : ctx->deadline) != RTB_OK)
            break; /* lost: it and the events never raised count as missing */
        if (blk)
            atomic_fetch_add(&x->blocked, 1);
    }
out:
    rtb_sem_give(&x->done);
}

static void blocker_timer(lat *x)
{
    rtb_time p = x->cfg.period;
    size_t k = 1 + irq_rand(&x->rnd_block) % BLOCK_EVERY;
    while (!atomic_load(&x->finished) && k < x->cfg.count) {
        rtb_time e = x->t0 + (rtb_time)k * p;
        rtb_sleep_until(e - BLOCK_LEAD);
        rtb_time now = rtb_clock_now();
        if (now < e && !atomic_load(&x->finished)) {
            /* Holding the CPU from before the expiry until D after it: that
             * event's handler cannot start earlier. */
            while ((now = rtb_clock_now()) < e + x->cfg.blocker)
                ;
            atomic_fetch_add(&x->blocked, 1);
        }
        k = (size_t)((now - x->t0) / p) + 2 + irq_rand(&x->rnd_block) % BLOCK_EVERY;
    }
}

static void blocker_signal(lat *x)
{
    for (;;) {
        if (rtb_sem_take(&x->blk_go, x->ctx->deadline) != RTB_OK || atomic_load(&x->finished))
            return;
        atomic_store(&x->blk_until, 0);
        atomic_store(&x->blk_spinning, true);
        rtb_time bound = rtb_ts_now() + ACK_TIMEOUT + x->cfg.blocker, u;
        while (((u = atomic_load(&x->blk_until)) == 0 || rtb_ts_now() < u) &&
               rtb_ts_now() < bound && !atomic_load(&x->blk_broken))
            ;
        atomic_store(&x->blk_spinning, false);
    }
}

static void blocker_main(void *arg)
{
    lat *x = arg;
    if (rtb_sem_take(&x->ready, x->ctx->deadline) != RTB_OK || !atomic_load(&x->ev_ok))
        return;
    if (x->cfg.source == IRQ_TIMER)
        blocker_timer(x);
    else
        blocker_signal(x);
}

/* Outside measured windows: a streamed series sends a full buffer out. */
static void push(rtb_series *s, rtb_time d)
{
    rtb_series_push(s, d);
    rtb_series_drain(s);
}

static void analyse_timer(const lat *x, rtb_series *s, irq_lat_out *out)
{
    size_t runs = atomic_load(&x->n), count = x->cfg.count, covered = 0;
    size_t n = runs > x->cap ? x->cap : runs;
    int64_t before = 0; /* overruns of the events before this one */
    for (size_t k = 0; k < n; k++) {
        size_t idx = k + (size_t)before; /* the expiry that generated this event */
        if (idx >= count)
            break;
        rtb_time d = x->h_ts[k] - (x->t0 + (rtb_time)idx * x->cfg.period);
        if (d < 0)
            out->bad++; /* a handler before its expiry: the pairing is wrong */
        else if (s)
            push(s, d);
        out->handled++;
        covered = idx + 1 + (size_t)(x->h_ovr[k] - before);
        before = x->h_ovr[k];
    }
    if (runs > n && covered < count) {
        /* Counted only (no series, stamps for the first cap runs): the runs
         * after them, and the expiries merged up to the last, the port's
         * count when the timer stopped. */
        covered = runs + (size_t)x->ovr_end;
        out->handled += runs - n;
    }
    if (covered > count)
        covered = count;
    if (out->handled > covered)
        out->handled = covered; /* runs after the last expiry: none of its events */
    out->events = count;
    out->overruns = (int64_t)(covered - out->handled);
    out->missing = count - covered;
}

static void analyse_raised(const lat *x, rtb_series *s, irq_lat_out *out)
{
    for (size_t i = 0; i < x->raised; i++) {
        if (!x->h_ts[i]) {
            out->missing++;
            continue;
        }
        rtb_time d = x->h_ts[i] - x->r_ts[i];
        if (d < 0)
            out->bad++;
        else if (s)
            push(s, d);
        out->handled++;
    }
    size_t runs = atomic_load(&x->n);
    if (runs > out->handled + out->missing)
        out->bad += runs - out->handled - out->missing; /* handler runs nobody raised */
    /* Never raised because an earlier one was lost: lost as well. */
    out->missing += x->cfg.count - x->raised;
    out->events = x->cfg.count;
}

static void *zalloc(size_t n, size_t size)
{
    void *p = rtb_mem_calloc(n ? n : 1, size);
    if (p)
        memset(p, 0, (n ? n : 1) * size); /* fault the pages in now */
    return p;
}

/* One block of events: everything the run did at its start (semaphores,
 * threads, the timer armed on a fresh grid START_DELAY ahead) and at its
 * end (joined, analysed), for `count` events. */
static int run_block(rtb_ctx *ctx, lat *x, size_t count, rtb_series *s, irq_lat_out *out)
{
    bool timer = x->cfg.source == IRQ_TIMER;
    x->cfg.count = count;
    atomic_store(&x->n, 0);
    atomic_store(&x->cur, 0);
    atomic_store(&x->signalled, false);
    atomic_store(&x->finished, false);
    atomic_store(&x->ev_ok, false);
    atomic_store(&x->abort, false);
    atomic_store(&x->blk_until, 0);
    atomic_store(&x->blk_spinning, false);
    atomic_store(&x->blocked, 0);
    x->rc = RTB_OK;
    x->raise_rc = RTB_OK;
    x->ovr_end = 0;
    x->raised = 0;
    memset(x->h_ts, 0, (count < x->cap ? count : x->cap) * sizeof *x->h_ts);
    int other = irq_other_cpu(ctx);
    bool remote = !timer && (x->cfg.raiser_remote || x->cfg.blocker > 0) && other >= 0;
    int raiser_cpu = remote ? other : x->cpu;
    rtb_sem_create(&x->ready, 0);
    rtb_sem_create(&x->done, 0);
    rtb_sem_create(&x->ack, 0);
    rtb_sem_create(&x->blk_go, 0);

    x->helpers = !timer + (x->cfg.blocker > 0);
    rtb_thread th[3];
    int nth = 0, rc = RTB_OK;
    rtb_thread_attr at = irq_attr(ctx, "irq-target", 1, x->cpu);
    rtb_thread_attr ar = irq_attr(ctx, "irq-raiser", 0, raiser_cpu);
    rtb_thread_attr ab = irq_attr(ctx, "irq-blocker", 2, x->cpu);
    /* Above them all on their CPU: none runs before all exist. */
    rtb_thread_self_set(RTB_PRIO_MAX - 1, x->cpu);
    rc = rtb_thread_create(&th[nth], &at, target_main, x);
    if (rc == RTB_OK) {
        nth++;
        if (!timer && (rc = rtb_thread_create(&th[nth], &ar, raiser_main, x)) == RTB_OK)
            nth++;
        if (rc == RTB_OK && x->cfg.blocker > 0 &&
            (rc = rtb_thread_create(&th[nth], &ab, blocker_main, x)) == RTB_OK)
            nth++;
        if (rc != RTB_OK) { /* let the target go */
            atomic_store(&x->abort, true);
            if (timer || nth == 1)
                rtb_sem_give(&x->done); /* else the raiser gives it as it stops */
        }
    }
    int jrc = rtb_join_all(ctx, th, nth);
    if (rc == RTB_OK)
        rc = jrc != RTB_OK ? jrc : x->rc != RTB_OK ? x->rc : x->raise_rc;
    if (rc == RTB_OK) {
        if (timer)
            analyse_timer(x, s, out);
        else
            analyse_raised(x, s, out);
    }
    out->blocked = atomic_load(&x->blocked);
    if (timer)
        snprintf(out->where, sizeof out->where,
                 "handler on a blocked thread on CPU %d at priority %d, period %lld ns", x->cpu,
                 at.priority, (long long)x->cfg.period);
    else
        snprintf(out->where, sizeof out->where,
                 "handler on a blocked thread on CPU %d at priority %d, raised from CPU %d at "
                 "priority %d%s",
                 x->cpu, at.priority, raiser_cpu, ar.priority,
                 remote ? "" : " (same CPU, lower priority)");
    rtb_sem_delete(&x->ready);
    rtb_sem_delete(&x->done);
    rtb_sem_delete(&x->ack);
    rtb_sem_delete(&x->blk_go);
    return rc;
}

/* The events run in blocks of rtb_stamp_block(count) (all of them in one
 * on POSIX; 128 on a board, whose RAM holds one block of stamps): each
 * block starts as the run did, with every thread in place and the timer
 * armed on a fresh grid, and ends as it did, the timer disarmed and the
 * threads joined; then its stamps become samples, pushed between
 * rtb_series_drain calls. So no sample spans a block boundary and the
 * drain's sending runs while no event is pending. A block that loses
 * events ends the run, and the events it never ran count as lost, as the
 * events after a loss did in one run. */
int irq_lat_measure(rtb_ctx *ctx, const irq_lat_cfg *cfg, rtb_series *s, irq_lat_out *out)
{
    memset(out, 0, sizeof *out);
    bool timer = cfg->source == IRQ_TIMER;
    if (timer && cfg->period <= 0)
        return RTB_EINVAL;
    lat *x = zalloc(1, sizeof *x);
    if (!x)
        return RTB_ENOMEM;
    x->ctx = ctx;
    x->cfg = *cfg;
    x->cap = rtb_stamp_block(cfg->count);
    x->rnd_raise = 0x2545f491u;
    x->rnd_block = 0x1b873593u;
    x->cpu = irq_cpu(ctx);
    x->h_ts = zalloc(x->cap, sizeof *x->h_ts);
    x->h_ovr = timer ? zalloc(x->cap, sizeof *x->h_ovr) : NULL;
    x->r_ts = timer ? NULL : zalloc(x->cap, sizeof *x->r_ts);
    if (!x->h_ts || (timer ? !x->h_ovr : !x->r_ts)) {
        rtb_mem_free(x->h_ts);
        rtb_mem_free(x->h_ovr);
        rtb_mem_free(x->r_ts);
        rtb_mem_free(x);
        return RTB_ENOMEM;
    }
    int other = irq_other_cpu(ctx);
    if (cfg->blocker > 0 && !ctx->port->realtime) {
        rtb_warn(ctx, "not_realtime", "the self-test blocker needs real-time priority: off");
        x->cfg.blocker = 0;
    } else if (cfg->blocker > 0 && !timer && other < 0) {
        rtb_warn(ctx, "blocker", "the blocker of the raised source needs two CPUs: off");
        x->cfg.blocker = 0;
    }
    /* Timer events with no series (IRQ-SUS, a rate) run in one block: a
     * block's fresh start is not what a sustained rate is. Its handlers
     * stamp the first cap events; the rest are counted. */
    size_t block = timer && !s ? cfg->count : x->cap;
    int rc = RTB_OK;
    for (size_t done = 0; done < cfg->count;) {
        size_t n = cfg->count - done < block ? cfg->count - done : block;
        irq_lat_out b = {0};
        rc = run_block(ctx, x, n, s, &b);
        memcpy(out->where, b.where, sizeof out->where);
        out->blocked += b.blocked;
        if (rc != RTB_OK)
            break;
        out->events += b.events;
        out->handled += b.handled;
        out->overruns += b.overruns;
        out->missing += b.missing;
        out->bad += b.bad;
        done += n;
        if (b.missing) {
            out->events += cfg->count - done;
            out->missing += cfg->count - done;
            break;
        }
    }
    if (x->cfg.blocker > 0) {
        size_t len = strlen(out->where);
        snprintf(out->where + len, sizeof out->where - len,
                 "; self-test blocker held %llu events for %lld ns",
                 (unsigned long long)out->blocked, (long long)x->cfg.blocker);
    }
    rtb_mem_free(x->h_ts);
    rtb_mem_free(x->h_ovr);
    rtb_mem_free(x->r_ts);
    rtb_mem_free(x);
    return rc;
}

bool irq_lat_check(rtb_ctx *ctx, const irq_lat_cfg *cfg, const irq_lat_out *out)
{
    char name[32];
    const char *src = irq_source_name(cfg->source);
    snprintf(name, sizeof name, "%s_delivery", src);
    bool ok = out->missing == 0 && out->bad == 0;
    rtb_emit_check(ctx, name, ok,
                   "%s; %s: %llu events, %llu handled, %lld lost as timer overruns, %llu lost "
                   "without trace, %llu handler runs matching no event",
                   irq_mechanism(ctx, cfg->source), out->where, (unsigned long long)out->events,
                   (unsigned long long)out->handled, (long long)out->overruns,
                   (unsigned long long)out->missing, (unsigned long long)out->bad);
    if (out->overruns > 0)
        rtb_warn(ctx, "overrun",
                 "%s: %lld of %llu expiries came while the previous event was still pending "
                 "(a handler later than the period) and have no latency sample",
                 src, (long long)out->overruns, (unsigned long long)out->events);
    return ok;
}

/* ---- the case --------------------------------------------------------- */

static const rtb_param_def params[] = {
    IRQ_SOURCE_PARAM,
    {.name = "count", .help = "events per source", .def = {10000}, .ndef = 1, .min = 10,
     .max = 100000000},
    {.name = "period_us", .help = "timer period", .def = {1000}, .ndef = 1, .min = 10,
     .max = 1000000},
    {.name = "blocker_us",
     .help = "self-test knob: a higher-priority thread on the target's CPU holds it this long "
             "across random events, so the max must reach it (0 = off)",
     .def = {0}, .ndef = 1, .min = 0, .max = 100000},
};

static rtb_result run(rtb_ctx *ctx)
{
    const int64_t *sources;
    int nsrc = rtb_param_list(ctx, "source", &sources);
    rtb_time period = rtb_param(ctx, "period_us") * 1000;
    rtb_result r = RTB_PASSED;
    for (int i = 0; i < nsrc; i++) {
        irq_lat_cfg cfg = {.source = (int)sources[i],
                           .count = (size_t)rtb_param(ctx, "count"),
                           .blocker = rtb_param(ctx, "blocker_us") * 1000};
        if (cfg.source == IRQ_TIMER) {
            cfg.period = period;
            /* The raised source raises back to back: it needs little time. */
            cfg.count = irq_fit_count(ctx, cfg.count, period);
        }
        rtb_series s;
        size_t cap = cfg.count < ctx->opt->max_samples ? cfg.count : ctx->opt->max_samples;
        if (rtb_series_init_streamed(&s, ctx,
                                     cfg.source == IRQ_TIMER ? "timer_latency" : "raised_latency",
                                     cap) != RTB_OK) {
            rtb_emit_check_error(ctx, "buffer", "no memory for %llu samples",
                                 (unsigned long long)cap);
            return RTB_ERROR;
        }
        irq_lat_out out;
        int rc = irq_lat_measure(ctx, &cfg, &s, &out);
        if (rc != RTB_OK) {
            rtb_emit_check_error(ctx, cfg.source == IRQ_TIMER ? "timer_delivery" : "raised_delivery",
                                 "%s could not run (error %d)", irq_mechanism(ctx, cfg.source), rc);
            r = RTB_ERROR;
        } else {
            if (!irq_lat_check(ctx, &cfg, &out) && r == RTB_PASSED)
                r = RTB_FAILED;
            rtb_emit_series(ctx, &s);
        }
        rtb_series_free(&s);
    }
    return r;
}

const rtb_case rtb_case_irq_lat = {
    .id = "IRQ-LAT",
    .title = "Interrupt latency: event to the handler's first instruction",
    .params = params,
    .nparams = sizeof params / sizeof params[0],
    .run = run,
};
