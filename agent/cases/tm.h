/* SPDX-License-Identifier: Apache-2.0 */
/* What the TM cases share (Thread-Metric's method, written from its
 * published description): worker threads count units of work as fast as
 * the OS lets them; a monitor of the top priority wakes every `window_ms`
 * and records the work done in that window as a rate (series `score`, kind
 * rate, per second), for `duration_ms`. Higher is better; RTOSes on one
 * board are ranked by it. */
#ifndef RTB_CASES_TM_H
#define RTB_CASES_TM_H

#include "../core/rtb.h"

#define TM_MAX_WORKERS 5

#define TM_PARAMS                                                                            \
    {.name = "duration_ms", .help = "measured time", .def = {1000}, .ndef = 1, .min = 10,    \
     .max = 86400000},                                                                       \
    {.name = "window_ms", .help = "one score sample per window", .def = {100}, .ndef = 1,    \
     .min = 1, .max = 60000}

typedef struct tm tm;
typedef struct tm_worker {
    tm *t;
    int i;
} tm_worker;

struct tm {
    rtb_ctx *ctx;
    atomic_bool quit;
    _Atomic uint64_t count[TM_MAX_WORKERS];
    tm_worker w[TM_MAX_WORKERS];
    /* After quit: wakes workers blocked in the OS (may be NULL). */
    void (*unblock)(tm *t);
    void *arg; /* the case's own objects */
    int64_t windows; /* the monitor's wake-ups (tm_run sets it) */
};

static inline bool tm_running(tm *t)
{
    return !atomic_load_explicit(&t->quit, memory_order_relaxed) &&
           !atomic_load_explicit(&t->ctx->stop, memory_order_relaxed);
}

static inline void tm_count(tm_worker *w)
{
    atomic_fetch_add_explicit(&w->t->count[w->i], 1, memory_order_relaxed);
}

/* One TM case, start to end: the monitor, `n` workers running `fn` (worker
 * i named names[i] or `name`, at rtb_attr's priority offset i * prio_step,
 * its argument &t->w[i]), the score windows, the stop and the join. */
typedef struct tm_spec {
    rtb_thread_fn fn;
    int n;
    const char *name;
    const char *const *names; /* one a worker, or NULL: `name` for all */
    int prio_step;
    void *arg;               /* the case's own objects (t->arg) */
    void (*unblock)(tm *t);  /* after quit: wakes workers blocked in the OS */
    /* After a run that passed, before the even check: the case's own
     * verdict on its objects (NULL: none). */
    rtb_result (*after)(rtb_ctx *ctx, tm *t);
    /* Thread-Metric's check where the work is shared (tm_even, `what`):
     * counts within spread + spread_per_window x windows; 0, 0: none. */
    uint64_t spread, spread_per_window;
    const char *what;
} tm_spec;
rtb_result tm_one(rtb_ctx *ctx, const tm_spec *spec);
/* Thread-Metric's own check where the work is shared: every worker's count
 * within `spread` of the others (real-time priority only: without it the
 * scheduler's fairness, not the OS's order, decides). */
bool tm_even(rtb_ctx *ctx, tm *t, int n, uint64_t spread, const char *what);

/* TM-IRQ and TM-IRQ-PRE: the port's event, whose handler gives `sem`. */
typedef struct tm_irq {
    rtb_sem sem;
    rtb_event ev;
    int status; /* of rtb_event_create, in the raising worker */
} tm_irq;

/* In the raising worker: the event, created there so that its handler
 * interrupts that thread; false when the port has none (status says). */
bool tm_irq_open(tm_irq *o);
/* A TM case around a tm_irq (the workers' w->t->arg, which this sets, with
 * its unblock): says when the event source was missing. */
rtb_result tm_irq_one(rtb_ctx *ctx, tm_spec spec);

#endif
