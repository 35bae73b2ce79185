/* SPDX-License-Identifier: Apache-2.0 */
/* What the IRQ cases share: where their threads run, how each event source
 * is named, and the two measurement engines (docs/cases.md, "IRQ").
 *
 * The "interrupt" is the port's event (POSIX: a real-time signal whose
 * handler runs on a target thread; an RTOS: a hardware interrupt). Its
 * handler calls only the port's interrupt-context functions (port.h). Two
 * sources: a periodic timer
 * (rtb_event_arm; the event time is the programmed expiry, in the
 * rtb_clock_now() clock) and a software raise from another thread
 * (rtb_event_raise; the event time is the raiser's rtb_ts_now() stamp). */
#ifndef RTB_CASES_IRQ_H
#define RTB_CASES_IRQ_H

#include "../core/rtb.h"

enum { IRQ_TIMER = 0, IRQ_RAISED = 1 }; /* raised: rtb_event_raise from a thread */

#define IRQ_SOURCE_PARAM                                                                     \
    {.name = "source", .help = "event sources, a list: 0 = periodic timer, 1 = raised by a " \
                               "thread",                                                     \
     .def = {0, 1}, .ndef = 2, .min = 0, .max = 1, .list = true}

/* "timer" / "raised": the prefix of every series and check name. */
const char *irq_source_name(int source);
/* How the source reaches the handler on this port, for check details. */
const char *irq_mechanism(const rtb_ctx *ctx, int source);
/* The CPU the interrupted threads run on: --cpu, or the last CPU when none
 * was given (priorities only order threads that share a CPU). */
int irq_cpu(const rtb_ctx *ctx);
/* Another CPU for a raiser that must run while the measured CPU is busy,
 * or -1 on a single-CPU machine. */
int irq_other_cpu(const rtb_ctx *ctx);
rtb_thread_attr irq_attr(const rtb_ctx *ctx, const char *name, int prio_offset, int cpu);
/* A deadline for events expected to take `span` ns from now: generous for
 * a noisy machine, never later than a second before the case's own. */
rtb_time irq_wait_deadline(const rtb_ctx *ctx, rtb_time span);
/* Cuts `count` events of `period` ns so that they fit in what is left of
 * the case's budget, less a margin (a warning says so); returns the new
 * count. */
size_t irq_fit_count(rtb_ctx *ctx, size_t count, rtb_time period);
uint32_t irq_rand(uint32_t *state);
/* The first event of a timer grid of `period`, at or after `t`, at a fixed
 * phase against a tick-based kernel's tick (irq.c). */
rtb_time irq_first_event(rtb_time t, rtb_time period);

/* ---- latency engine (irq_lat.c): IRQ-LAT, IRQ-RSP, IRQ-SUS ----------- */

/* The target thread is blocked (an idle CPU) when each event comes. */
typedef struct irq_lat_cfg {
    int source;
    size_t count;
    rtb_time period;   /* timer period; raiser spacing (0: raise again once handled) */
    bool raiser_remote; /* raise from another CPU (else: same CPU, lower priority) */
    rtb_time blocker;  /* self-test: a higher-priority thread holds the CPU this long
                        * across randomly chosen events (0: off) */
} irq_lat_cfg;

typedef struct irq_lat_out {
    size_t events;    /* events the source produced (timer: expiries due) */
    size_t handled;   /* events whose handler ran */
    int64_t overruns; /* timer expiries merged into one still pending (lost) */
    size_t missing;   /* events neither handled nor counted as overruns */
    size_t bad;       /* handler runs that match no event, or run before it */
    size_t blocked;   /* events the self-test blocker held */
    char where[160];  /* placement of the threads, for check details */
} irq_lat_out;

/* Runs the events and pushes one latency per handled event into `s` (may
 * be NULL). RTB_OK, or an RTB_E* code when the source could not run. */
int irq_lat_measure(rtb_ctx *ctx, const irq_lat_cfg *cfg, rtb_series *s, irq_lat_out *out);
/* The `source_delivery` check: every event handled or counted as lost, none
 * unaccounted for; warns about overruns. Returns the check's verdict. */
bool irq_lat_check(rtb_ctx *ctx, const irq_lat_cfg *cfg, const irq_lat_out *out);

/* ---- spinning-target engine (irq_spin.c): IRQ-DLT, IRQ-TLT ----------- */

/* The target thread spins stamping, so each event interrupts it running;
 * after each handler, its first stamp is its resume time. When the period
 * leaves room it sleeps between events and spins from 100 us before each. */
typedef struct irq_spin irq_spin;

typedef struct irq_spin_cfg {
    int source;
    size_t count;
    rtb_time period;
    /* The case's handler; it calls irq_spin_enter first and irq_spin_leave
     * last, with the index enter gave. */
    rtb_event_fn handler;
    void *arg;
    /* Called once when the last block is done (wake helpers). */
    void (*on_finish)(void *arg);
    /* Called after each block (irq_spin_run) with its handled events: the
     * stamps of k < handled become samples, the series drain. */
    void (*on_block)(void *arg, size_t handled);
} irq_spin_cfg;

typedef struct irq_spin_out {
    size_t handled;    /* handler runs */
    int64_t overruns;  /* timer expiries merged (lost) */
    size_t missing;    /* events neither handled nor counted as lost */
    size_t nested;     /* handlers run back to back: no resume between */
    size_t asleep;     /* handlers that came while the target slept between events */
    size_t resumed;    /* handlers followed by a resume stamp */
    char where[160];
} irq_spin_out;

/* The parameters after IRQ_SOURCE_PARAM that IRQ-DLT and IRQ-TLT share. */
#define IRQ_SPIN_PARAMS                                                                       \
    {.name = "count", .help = "events per source", .def = {5000}, .ndef = 1, .min = 10,       \
     .max = 100000000},                                                                       \
    {.name = "period_us", .help = "event period (timer and raiser)", .def = {1000}, .ndef = 1, \
     .min = 10, .max = 1000000}

/* One source's measurement in a spinning case. */
typedef rtb_result (*irq_spin_source_fn)(rtb_ctx *ctx, int source, size_t count,
                                         rtb_time period);
/* The case's run: `fn` once per listed source, with `count` cut to what is
 * left of the budget; returns the worst result (error over failed). */
rtb_result irq_spin_sources(rtb_ctx *ctx, irq_spin_source_fn fn);
/* The `<source>_delivery` error verdict for a source that could not run. */
void irq_spin_run_error(rtb_ctx *ctx, int source, int rc);

/* The handler's index in the block (irq_spin_base: the block's first
 * event in the run). */
size_t irq_spin_enter(irq_spin *sp);
size_t irq_spin_base(const irq_spin *sp);
/* Stamps the handler's end (returned) and publishes it to the target. */
rtb_time irq_spin_leave(irq_spin *sp, size_t k);
/* In on_block: the handler's end stamp and the resume stamp of the
 * block's event k (0: none). */
rtb_time irq_spin_end_of(const irq_spin *sp, size_t k);
rtb_time irq_spin_resume_of(const irq_spin *sp, size_t k);
/* Creates the engine for `cfg` (NULL: no memory). */
irq_spin *irq_spin_new(rtb_ctx *ctx, const irq_spin_cfg *cfg);
/* Runs the target (and raiser) block by block (irq_spin.c), joined when
 * it returns; the priorities: target at base, raiser above it when it
 * shares the CPU. */
int irq_spin_run(irq_spin *sp, irq_spin_out *out);
void irq_spin_free(irq_spin *sp);
bool irq_spin_check(rtb_ctx *ctx, int source, size_t count, const irq_spin_out *out);

#endif
