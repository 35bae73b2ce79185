/* SPDX-License-Identifier: Apache-2.0 */
/* The spinning-target engine of IRQ-DLT and IRQ-TLT (irq.h): the target
 * thread spins reading the clock, so every event interrupts it running;
 * the first stamp it takes after a handler's last stamp is the time it ran
 * again. Timer source: a periodic timer aimed at the target. Signal source:
 * a raiser on another CPU (or, on one CPU, above the target on its CPU)
 * raising on the same period grid. */
#include <stdlib.h>
#include <string.h>

#include "irq.h"

#define START_DELAY 2000000
#define SPIN_LEAD 100000 /* the target spins from this long before each event */

struct irq_spin {
    rtb_ctx *ctx;
    irq_spin_cfg cfg;
    int cpu;
    rtb_event ev;
    rtb_sem ready, raiser_done;
    rtb_time *h_end, *resume;
    size_t cap, count, base; /* count: the run's events; base: the block's first */
    atomic_size_t n_begin, n_end;
    atomic_bool ev_ok, finished, abort, finish_called, disarmed;
    bool has_raiser;
    rtb_time t0;
    int rc, raise_rc;
    size_t raised, nested, resumed, asleep;
    int64_t overruns;
};

size_t irq_spin_enter(irq_spin *sp)
{
    size_t k = atomic_fetch_add_explicit(&sp->n_begin, 1, memory_order_relaxed);
    /* Disarm from the handler: with a period shorter than a handler the
     * target would never run again to do it. First, before any stamp: in
     * the measured window (IRQ-TLT's is from its stamp to the woken
     * thread) the last event's sample had the disarm in it (FreeRTOS:
     * 13.00 us against 11.72 us for every other one). */
    if (sp->cfg.source == IRQ_TIMER &&
        (int64_t)k + 1 + rtb_event_overruns(&sp->ev) >= (int64_t)sp->cfg.count &&
        !atomic_exchange(&sp->disarmed, true))
        rtb_event_disarm_isr(&sp->ev);
    return k;
}

rtb_time irq_spin_leave(irq_spin *sp, size_t k)
{
    rtb_time t = rtb_ts_now();
    if (k < sp->cap)
        sp->h_end[k] = t;
    atomic_store_explicit(&sp->n_end, k + 1, memory_order_release);
    return t;
}

rtb_time irq_spin_end_of(const irq_spin *sp, size_t k)
{
    return k < sp->cap ? sp->h_end[k] : 0;
}

rtb_time irq_spin_resume_of(const irq_spin *sp, size_t k)
{
    return k < sp->cap ? sp->resume[k] : 0;
}

static void finish(irq_spin *sp)
{
    atomic_store(&sp->finished, true);
    if (sp->cfg.on_finish && !atomic_exchange(&sp->finish_called, true))
        sp->cfg.on_finish(sp->cfg.arg);
}

/* The measured loop: nothing but clock reads and loads. A handler that
 * lands between the stamp and the load ends after that stamp, so the next
 * stamp is the first one after it. Between events the target sleeps when
 * the period leaves room, so that it spins only around each event: a
 * thread spinning at a real-time priority for seconds would meet the
 * kernel's RT throttling (or fair server), which then stalls it for tens
 * of ms, and that is not what is measured here. */
static void spin(irq_spin *sp, rtb_time bound)
{
    size_t seen = 0, count = sp->cfg.count;
    rtb_time p = sp->cfg.period, phase, grain = rtb_release_grain(&phase);
    bool nap = p > 3 * SPIN_LEAD, due = nap;
    for (;;) {
        rtb_time t = rtb_ts_now();
        size_t h = atomic_load_explicit(&sp->n_end, memory_order_acquire);
        if (h > sp->cap)
            break;
        if (h != seen && t >= sp->h_end[h - 1]) {
            sp->resume[h - 1] = t;
            sp->nested += h - seen - 1;
            sp->resumed++;
            seen = h;
            due = nap;
        }
        int64_t o = rtb_event_overruns(&sp->ev);
        if (seen == h && (int64_t)h + o >= (int64_t)count)
            break;
        if (t > bound || atomic_load_explicit(&sp->abort, memory_order_relaxed))
            break; /* events lost: never spin on */
        if (due) {
            due = false;
            /* The next event on the grid: expiry h + o, or raise h. */
            size_t next = sp->cfg.source == IRQ_TIMER ? h + (size_t)o : h;
            rtb_time wake = sp->t0 + (rtb_time)next * p - SPIN_LEAD;
            /* A tick kernel's sleep ends on a tick, the first at or after
             * its end: the last tick before `wake`, or it slept through
             * every other event of a grid finer than the tick. */
            if (grain > 0)
                wake = rtb_on_grain(wake - grain + 1, grain, phase);
            if (wake > rtb_clock_now()) {
                rtb_sleep_until(wake);
                /* Handlers that ran while it slept found no running thread
                 * to interrupt: no sample. */
                size_t after = atomic_load_explicit(&sp->n_end, memory_order_acquire);
                if (after != h) {
                    sp->asleep += after - h;
                    seen = after;
                }
            }
        }
    }
}

static void target_main(void *arg)
{
    irq_spin *sp = arg;
    rtb_ctx *ctx = sp->ctx;
    bool timer = sp->cfg.source == IRQ_TIMER;
    int rc = rtb_event_create(&sp->ev, sp->cfg.handler, sp->cfg.arg, NULL);
    bool created = rc == RTB_OK;
    rtb_time now = rtb_clock_now();
    sp->t0 = irq_first_event(now + START_DELAY, sp->cfg.period);
    rtb_time span = (sp->t0 - now) + (rtb_time)sp->cfg.count * sp->cfg.period;
    rtb_time bound = rtb_ts_now() + (irq_wait_deadline(ctx, span) - rtb_clock_now());
    if (created && timer)
        rc = rtb_event_arm(&sp->ev, sp->t0, sp->cfg.period);
    sp->rc = rc;
    atomic_store(&sp->ev_ok, rc == RTB_OK);
    if (sp->has_raiser)
        rtb_sem_give(&sp->ready);
    if (rc == RTB_OK)
        spin(sp, bound);
    atomic_store(&sp->finished, true);
    /* The raiser must be gone before the event is. */
    if (sp->has_raiser && rtb_sem_take(&sp->raiser_done, ctx->deadline) != RTB_OK)
        created = false; /* still raising: leave it, the watchdog ends the run */
    if (created) {
        sp->overruns = rtb_event_overruns(&sp->ev);
        if (timer)
            rtb_event_arm(&sp->ev, 0, 0);
        rtb_event_delete(&sp->ev);
    }
}

static void raiser_main(void *arg)
{
    irq_spin *sp = arg;
    if (rtb_sem_take(&sp->ready, sp->ctx->deadline) != RTB_OK || !atomic_load(&sp->ev_ok))
        goto out;
    rtb_time next = sp->t0;
    /* On one CPU the raiser is above the target, so every handler returns
     * into it and the target resumes once it blocks again (its sleep). So
     * after the last one too: it sleeps on the grid until the target is
     * done, by the same path, instead of ending there, or the last sample
     * is the raiser's exit, not a dispatch (FreeRTOS: 255 us against
     * 13.6 us for every other sample). */
    for (size_t i = 0;; i++) {
        rtb_sleep_until(next);
        next += sp->cfg.period;
        if (atomic_load(&sp->finished))
            break;
        if (i >= sp->cfg.count) {
            if (next > sp->ctx->deadline)
                break;
            continue;
        }
        int rc = rtb_event_raise(&sp->ev);
        if (rc != RTB_OK) {
            sp->raise_rc = rc;
            atomic_store(&sp->abort, true);
            break;
        }
        sp->raised = i + 1;
    }
out:
    rtb_sem_give(&sp->raiser_done);
}

irq_spin *irq_spin_new(rtb_ctx *ctx, const irq_spin_cfg *cfg)
{
    irq_spin *sp = rtb_mem_calloc(1, sizeof *sp);
    if (!sp)
        return NULL;
    sp->ctx = ctx;
    sp->cfg = *cfg;
    sp->cap = rtb_stamp_block(cfg->count);
    sp->count = cfg->count;
    sp->cpu = irq_cpu(ctx);
    sp->h_end = rtb_mem_calloc(sp->cap, sizeof *sp->h_end);
    sp->resume = rtb_mem_calloc(sp->cap, sizeof *sp->resume);
    if (!sp->h_end || !sp->resume) {
        irq_spin_free(sp);
        return NULL;
    }
    /* Fault the pages in now, not in the handler. */
    memset(sp->h_end, 0, sp->cap * sizeof *sp->h_end);
    memset(sp->resume, 0, sp->cap * sizeof *sp->resume);
    return sp;
}

void irq_spin_free(irq_spin *sp)
{
    if (!sp)
        return;
    rtb_mem_free(sp->h_end);
    rtb_mem_free(sp->resume);
    rtb_mem_free(sp);
}

size_t irq_spin_base(const irq_spin *sp) { return sp->base; }

/* One block of `count` events: what the run did at its start (semaphores,
 * the target and raiser created, the timer armed on a fresh grid) and at
 * its end (joined), into `out`. */
static int run_block(irq_spin *sp, size_t count, irq_spin_out *out)
{
    rtb_ctx *ctx = sp->ctx;
    sp->cfg.count = count;
    atomic_store(&sp->n_begin, 0);
    atomic_store(&sp->n_end, 0);
    atomic_store(&sp->ev_ok, false);
    atomic_store(&sp->finished, false);
    atomic_store(&sp->abort, false);
    atomic_store(&sp->disarmed, false);
    sp->rc = sp->raise_rc = RTB_OK;
    sp->raised = sp->nested = sp->resumed = sp->asleep = 0;
    sp->overruns = 0;
    memset(sp->h_end, 0, count * sizeof *sp->h_end);
    memset(sp->resume, 0, count * sizeof *sp->resume);
    int other = irq_other_cpu(ctx);
    sp->has_raiser = sp->cfg.source == IRQ_RAISED;
    bool remote = other >= 0;
    rtb_thread_attr at = irq_attr(ctx, "irq-target", 0, sp->cpu);
    /* Sharing the target's CPU, the raiser must outrank it to run at all. */
    rtb_thread_attr ar = irq_attr(ctx, "irq-raiser", remote ? 0 : 1, remote ? other : sp->cpu);
    rtb_sem_create(&sp->ready, 0);
    rtb_sem_create(&sp->raiser_done, 0);
    rtb_thread th[2];
    int nth = 0;
    rtb_thread_self_set(RTB_PRIO_MAX - 1, sp->cpu);
    int rc = rtb_thread_create(&th[nth], &at, target_main, sp);
    if (rc == RTB_OK) {
        nth++;
        if (sp->has_raiser && (rc = rtb_thread_create(&th[nth], &ar, raiser_main, sp)) == RTB_OK)
            nth++;
        if (rc != RTB_OK) {
            atomic_store(&sp->abort, true);
            rtb_sem_give(&sp->raiser_done);
        }
    }
    int jrc = rtb_join_all(ctx, th, nth);
    if (rc == RTB_OK)
        rc = jrc != RTB_OK ? jrc : sp->rc != RTB_OK ? sp->rc : sp->raise_rc;
    size_t runs = atomic_load(&sp->n_end);
    out->handled = runs < count ? runs : count;
    out->overruns = sp->overruns;
    if (out->overruns > (int64_t)(count - out->handled))
        out->overruns = (int64_t)(count - out->handled);
    out->missing = count - out->handled - (size_t)out->overruns;
    out->nested = sp->nested;
    out->resumed = sp->resumed;
    out->asleep = sp->asleep;
    if (sp->has_raiser)
        snprintf(out->where, sizeof out->where,
                 "handler on a spinning thread on CPU %d at priority %d, raised every %lld ns "
                 "from CPU %d at priority %d",
                 sp->cpu, at.priority, (long long)sp->cfg.period, ar.cpu, ar.priority);
    else
        snprintf(out->where, sizeof out->where,
                 "handler on a spinning thread on CPU %d at priority %d, period %lld ns", sp->cpu,
                 at.priority, (long long)sp->cfg.period);
    rtb_sem_delete(&sp->ready);
    rtb_sem_delete(&sp->raiser_done);
    return rc;
}

/* The events run in blocks of rtb_stamp_block(count) (one block on POSIX;
 * 128 on a board, whose RAM holds one block of stamps). Each block starts
 * as the run did (threads created, the timer armed START_DELAY ahead on a
 * fresh grid) and ends as it did (the timer disarmed by the last handler,
 * the threads joined); then the case's on_block turns its stamps into
 * samples and drains its series. No sample spans a block boundary, and
 * nothing is sent while an event is pending. A block that loses events
 * ends the run; the events it never ran count as lost, as the events after
 * a loss did in one run. */
int irq_spin_run(irq_spin *sp, irq_spin_out *out)
{
    memset(out, 0, sizeof *out);
    int rc = RTB_OK;
    for (sp->base = 0; sp->base < sp->count;) {
        size_t n = sp->count - sp->base < sp->cap ? sp->count - sp->base : sp->cap;
        irq_spin_out b = {0};
        rc = run_block(sp, n, &b);
        memcpy(out->where, b.where, sizeof out->where);
        if (rc != RTB_OK)
            break;
        out->handled += b.handled;
        out->overruns += b.overruns;
        out->missing += b.missing;
        out->nested += b.nested;
        out->resumed += b.resumed;
        out->asleep += b.asleep;
        if (sp->cfg.on_block)
            sp->cfg.on_block(sp->cfg.arg, b.handled);
        sp->base += n;
        if (b.missing) {
            out->missing += sp->count - sp->base;
            break;
        }
    }
    sp->cfg.count = sp->count;
    finish(sp); /* the case's helpers wait for it */
    return rc;
}

rtb_result irq_spin_sources(rtb_ctx *ctx, irq_spin_source_fn fn)
{
    const int64_t *sources;
    int nsrc = rtb_param_list(ctx, "source", &sources);
    rtb_time period = rtb_param(ctx, "period_us") * 1000;
    rtb_result worst = RTB_PASSED;
    for (int i = 0; i < nsrc; i++) {
        size_t count = irq_fit_count(ctx, (size_t)rtb_param(ctx, "count"), period * (nsrc - i));
        rtb_result r = fn(ctx, (int)sources[i], count, period);
        if (r == RTB_ERROR || (r == RTB_FAILED && worst == RTB_PASSED))
            worst = r;
    }
    return worst;
}

void irq_spin_run_error(rtb_ctx *ctx, int source, int rc)
{
    rtb_emit_check_error(ctx, source == IRQ_TIMER ? "timer_delivery" : "raised_delivery",
                         "%s could not run (error %d)", irq_mechanism(ctx, source), rc);
}

bool irq_spin_check(rtb_ctx *ctx, int source, size_t count, const irq_spin_out *out)
{
    char name[32];
    const char *src = irq_source_name(source);
    snprintf(name, sizeof name, "%s_delivery", src);
    bool ok = out->missing == 0;
    rtb_emit_check(ctx, name, ok,
                   "%s; %s: %llu events, %llu handled, %lld lost as timer overruns, %llu lost "
                   "without trace; no resume sample for %llu handlers run back to back and %llu "
                   "that found the thread asleep", irq_mechanism(ctx, source), out->where,
                   (unsigned long long)count, (unsigned long long)out->handled,
                   (long long)out->overruns, (unsigned long long)out->missing,
                   (unsigned long long)out->nested, (unsigned long long)out->asleep);
    if (out->overruns > 0)
        rtb_warn(ctx, "overrun", "%s: %lld of %llu expiries came while the previous event was "
                 "still pending", src, (long long)out->overruns, (unsigned long long)count);
    return ok;
}
