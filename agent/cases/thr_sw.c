/* SPDX-License-Identifier: Apache-2.0 */
/* THR-SW: switch between threads of the same priority. N threads of equal
 * priority on one CPU each loop: take a timestamp into the shared log,
 * yield. Consecutive stamps of different threads are switch times. The
 * sweep over N shows whether the scheduler's cost grows with the number of
 * ready threads. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/rtb.h"

static const rtb_param_def params[] = {
    {.name = "n", .help = "threads (a sweep)", .def = {2, 5, 10, 128, 1000}, .ndef = 5, .min = 2,
     .max = 4096, .list = true},
    {.name = "duration_ms", .help = "measurement time per point", .def = {300}, .ndef = 1,
     .min = 1, .max = 3600000},
};

/* The log holds one window of stamps (--max-samples; on a board one block,
 * rtb_stamp_block). A machine that switches millions of times a second
 * fills it in well under a second, so a point runs as a series of windows:
 * when the log is full the workers park, the monitor analyses the window
 * (sending the series' buffer each time it fills, rtb_series_drain),
 * empties the log and releases them, until the duration is over. Nothing
 * of this happens between a stamp and the next one: the pair that spans a
 * window's end is not a sample, and a released worker yields once before
 * it stamps. A board's smaller window has more such pairs, never another
 * kind of sample.
 * A point of more threads than the board holds (RTB_CASE_THREADS: n=128,
 * 1000 in 64 KiB) is skipped with the reason; POSIX runs every point. */
typedef struct sw_log {
    rtb_ctx *ctx;
    rtb_stamp *ts; /* ticks (rtb_stamp_now), converted when analysed */
    uint32_t *who;
    size_t cap;
    atomic_size_t pos;
    uint32_t threads;
    atomic_uint parked; /* workers waiting at the end of this window */
    rtb_sem full;       /* given by the last worker to park */
    /* Window w's workers wait on gate[w % 2]: a released worker that fills
     * the next window before a slower one has left the gate cannot take
     * the slower one's token. */
    rtb_sem gate[2];
    bool *seen; /* analysis scratch, one per thread */
} sw_log;

typedef struct sw_thread {
    sw_log *log;
    uint32_t id;
} sw_thread;

/* What the analysis of every window of a point adds up to. */
typedef struct sw_tally {
    uint64_t stamps, windows, same, out_of_turn;
} sw_tally;

static bool stopped(const sw_log *log)
{
    return atomic_load_explicit(&log->ctx->stop, memory_order_relaxed) &&
           !RTB_INJECTED(RTB_INJ_IGNORE_STOP);
}

static void worker(void *arg)
{
    const sw_thread *me = arg;
    sw_log *log = me->log;
    for (unsigned w = 0;; w++) {
        /* The first run after start-up or a release is no switch: not
         * measured. */
        rtb_thread_yield();
        while (!stopped(log)) {
            rtb_stamp t = rtb_stamp_now();
            size_t i = atomic_fetch_add_explicit(&log->pos, 1, memory_order_relaxed);
            if (i >= log->cap)
                break;
            log->ts[i] = t;
            log->who[i] = me->id;
            rtb_thread_yield();
        }
        if (stopped(log))
            return;
        if (atomic_fetch_add(&log->parked, 1) + 1 == log->threads)
            rtb_sem_give(&log->full);
        rtb_sem_take(&log->gate[w % 2], RTB_FOREVER);
    }
}

/* Turns one window of the log into switch samples. Equal-priority FIFO
 * threads must take strict turns: every run of `threads` consecutive
 * stamps holds each thread once, in a fixed order (which order is the
 * scheduler's business, so only periodicity counts). */
static void analyse(const sw_log *log, size_t n, rtb_series *s, sw_tally *t)
{
    uint32_t threads = log->threads;
    if (n == 0)
        return;
    t->stamps += n;
    t->windows++;
    for (size_t i = 0; i + 1 < n; i++) {
        if (i + threads < n && log->who[i + threads] != log->who[i])
            t->out_of_turn++;
        if (log->who[i + 1] == log->who[i]) {
            t->same++; /* a yield that did not switch */
            continue;
        }
        /* Stamping and claiming a slot are two steps: a thread preempted
         * between them (time slicing, without SCHED_FIFO) logs an earlier
         * stamp after a later one. That pair is no switch: not a sample,
         * and counted out of turn. */
        if (log->ts[i + 1] < log->ts[i]) {
            t->out_of_turn++;
            continue;
        }
        rtb_series_push(s, rtb_stamp_ns(log->ts[i + 1] - log->ts[i]));
        rtb_series_drain(s); /* the workers are parked or joined */
    }
    /* Periodicity alone would accept a subset of threads taking turns. */
    memset(log->seen, 0, threads * sizeof *log->seen);
    size_t distinct = 0;
    for (size_t i = 0; i < n && i < threads; i++)
        if (log->who[i] < threads && !log->seen[log->who[i]]) {
            log->seen[log->who[i]] = true;
            distinct++;
        }
    if (n >= threads && distinct < threads)
        t->out_of_turn += threads - distinct;
}

/* The monitor (top priority on the workers' CPU): window after window
 * until the duration is over, then stops the workers. */
static void measure(rtb_ctx *ctx, sw_log *log, rtb_time duration, rtb_series *s, sw_tally *t)
{
    rtb_time end = rtb_clock_now() + duration;
    unsigned w = 0;
    while (rtb_sem_take(&log->full, end) == RTB_OK) {
        /* Every worker is parked: the log is still. */
        analyse(log, log->cap, s, t);
        atomic_store(&log->pos, 0);
        atomic_store(&log->parked, 0);
        if (rtb_clock_now() >= end)
            break;
        for (uint32_t k = 0; k < log->threads; k++)
            rtb_sem_give(&log->gate[w % 2]);
        w++;
    }
    atomic_store(&ctx->stop, true);
    /* Those parked (or about to) leave at once and see the stop. */
    for (uint32_t k = 0; k < log->threads; k++)
        rtb_sem_give(&log->gate[w % 2]);
}

static rtb_result run_point(rtb_ctx *ctx, sw_log *log, unsigned n, rtb_time duration)
{
    char point[24];
    snprintf(point, sizeof point, "n=%u", n);
    if (!rtb_threads_fit(ctx, point, n))
        return RTB_PASSED; /* skipped, with the reason: the other points run */
    rtb_thread *th = rtb_mem_calloc(n, sizeof *th);
    sw_thread *args = rtb_mem_calloc(n, sizeof *args);
    log->seen = rtb_mem_calloc(n, sizeof *log->seen);
    rtb_series s;
    bool sems = false;
    if (th && args && log->seen && rtb_sem_create(&log->full, 0) == RTB_OK) {
        sems = rtb_sem_create(&log->gate[0], 0) == RTB_OK;
        if (sems && rtb_sem_create(&log->gate[1], 0) != RTB_OK) {
            rtb_sem_delete(&log->gate[0]);
            sems = false;
        }
        if (!sems)
            rtb_sem_delete(&log->full);
    }
    /* Raw samples: the first --max-samples switches; the later ones are in
     * the histogram and counted as `dropped`. */
    if (!sems || rtb_series_init_streamed(&s, ctx, "switch", ctx->opt->max_samples) != RTB_OK) {
        if (sems) {
            rtb_sem_delete(&log->full);
            rtb_sem_delete(&log->gate[0]);
            rtb_sem_delete(&log->gate[1]);
        }
        rtb_mem_free(log->seen);
        rtb_mem_free(args);
        rtb_mem_free(th);
        rtb_emit_check_error(ctx, "resources", "no memory for %u threads", n);
        return RTB_ERROR;
    }
    rtb_series_set_point(&s, "n", n);
    log->threads = n;
    atomic_store(&log->pos, 0);
    atomic_store(&log->parked, 0);
    atomic_store(&ctx->stop, false);
    /* The monitor outranks the workers on their CPU: none runs until it
     * blocks, so all start together. */
    rtb_thread_self_set(RTB_PRIO_MAX - 1, ctx->opt->cpu);
    rtb_thread_attr attr = rtb_attr(ctx, "thr-sw", 0);
    attr.stack_size = RTB_WORKER_STACK;
    unsigned created = 0;
    for (; created < n; created++) {
        args[created] = (sw_thread){.log = log, .id = created};
        if (rtb_thread_create(&th[created], &attr, worker, &args[created]) != RTB_OK)
            break;
    }
    rtb_result r = RTB_PASSED;
    sw_tally t = {0};
    if (created < n) {
        atomic_store(&ctx->stop, true);
        rtb_emit_check_error(ctx, "threads", "only %u of %u threads could be created", created,
                             n);
        r = RTB_ERROR;
    } else {
        measure(ctx, log, duration, &s, &t);
    }
    if (rtb_join_all(ctx, th, (int)created) != RTB_OK)
        r = RTB_ERROR;
    size_t len = atomic_load(&log->pos);
    if (len > log->cap)
        len = log->cap;
    analyse(log, len, &s, &t); /* the window the stop ended */
    if (r == RTB_PASSED && ctx->port->realtime) {
        bool ok = t.out_of_turn == 0 && t.same == 0;
        rtb_emit_check(ctx, "rotation", ok,
                       "n=%u: %llu switches from %llu stamps in %llu windows, %llu out of turn, "
                       "%llu yields without a switch",
                       n, (unsigned long long)s.hist.n, (unsigned long long)t.stamps,
                       (unsigned long long)t.windows, (unsigned long long)t.out_of_turn,
                       (unsigned long long)t.same);
        if (!ok)
            r = RTB_FAILED;
    } else if (t.same || t.out_of_turn)
        rtb_warn(ctx, "not_realtime",
                 "n=%u: %llu yields without a switch, %llu out of turn (no strict FIFO rotation "
                 "without real-time priority)",
                 n, (unsigned long long)t.same, (unsigned long long)t.out_of_turn);
    rtb_tags tags = {.attr_key = "windows", .attr_value = (int64_t)t.windows};
    rtb_emit_series_tagged(ctx, &s, &tags);
    rtb_series_free(&s);
    rtb_sem_delete(&log->full);
    rtb_sem_delete(&log->gate[0]);
    rtb_sem_delete(&log->gate[1]);
    rtb_mem_free(log->seen);
    rtb_mem_free(args);
    rtb_mem_free(th);
    return r;
}

static rtb_result run(rtb_ctx *ctx)
{
    sw_log log = {.ctx = ctx, .cap = rtb_stamp_block(ctx->opt->max_samples)};
    log.ts = rtb_mem_calloc(log.cap, sizeof *log.ts);
    log.who = rtb_mem_calloc(log.cap, sizeof *log.who);
    rtb_result worst = RTB_PASSED;
    if (!log.ts || !log.who) {
        rtb_emit_check_error(ctx, "buffer", "no memory for %zu samples", log.cap);
        worst = RTB_ERROR;
    } else { /* fault it in now: a worker stores its stamp inside a switch */
        memset(log.ts, 0, log.cap * sizeof *log.ts);
        memset(log.who, 0, log.cap * sizeof *log.who);
    }
    const int64_t *ns;
    int points = rtb_param_list(ctx, "n", &ns);
    rtb_time duration = rtb_param(ctx, "duration_ms") * 1000000;
    for (int i = 0; i < points && worst != RTB_ERROR; i++) {
        rtb_result r = run_point(ctx, &log, (uint32_t)ns[i], duration);
        if (r != RTB_PASSED)
            worst = r;
    }
    rtb_mem_free(log.ts);
    rtb_mem_free(log.who);
    return worst;
}

const rtb_case rtb_case_thr_sw = {
    .id = "THR-SW",
    .title = "Switch between threads of the same priority",
    .params = params,
    .nparams = sizeof params / sizeof params[0],
    .run = run,
    .unsupported_here = rtb_needs_shared_priorities,
    .tasks = "n",
    .sigma3 = true,
    .headline = 1,
};
