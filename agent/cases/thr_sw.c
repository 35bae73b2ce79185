/* SPDX-License-Identifier: Apache-2.0 */
/* THR-SW: switch between threads of the same priority. N threads of equal
 * priority on one CPU each loop: take a timestamp into the shared log,
 * yield. Consecutive stamps of different threads are switch times. The
 * sweep over N shows whether the scheduler's cost grows with the number of
 * ready threads. */
#include <stdlib.h>
#include <string.h>

#include "../core/rtb.h"

static const rtb_param_def params[] = {
    {.name = "n", .help = "threads (a sweep)", .def = {2, 5, 10, 128, 1000}, .ndef = 5, .min = 2,
     .max = 4096, .list = true},
    {.name = "duration_ms", .help = "measurement time per point", .def = {300}, .ndef = 1,
     .min = 1, .max = 3600000},
};

typedef struct sw_log {
    rtb_ctx *ctx;
    rtb_time *ts;
    uint32_t *who;
    size_t cap;
    atomic_size_t pos;
} sw_log;

typedef struct sw_thread {
    sw_log *log;
    uint32_t id;
} sw_thread;

static void worker(void *arg)
{
    const sw_thread *me = arg;
    sw_log *log = me->log;
    /* The first run includes thread start-up: not a switch, not measured. */
    rtb_thread_yield();
    while (!atomic_load_explicit(&log->ctx->stop, memory_order_relaxed) ||
           RTB_INJECTED(RTB_INJ_IGNORE_STOP)) {
        rtb_time t = rtb_ts_now();
        size_t i = atomic_fetch_add_explicit(&log->pos, 1, memory_order_relaxed);
        if (i >= log->cap) {
            atomic_store(&log->ctx->stop, true);
            if (RTB_INJECTED(RTB_INJ_IGNORE_STOP)) {
                rtb_thread_yield();
                continue;
            }
            break;
        }
        log->ts[i] = t;
        log->who[i] = me->id;
        rtb_thread_yield();
    }
}

/* Turns the log into switch samples; returns the number of out-of-turn
 * stamps. Equal-priority FIFO threads must take strict turns: every window
 * of `threads` consecutive stamps holds each thread once, in a fixed order
 * (which order is the scheduler's business, so only periodicity counts). */
static size_t analyse(const sw_log *log, size_t n, uint32_t threads, rtb_series *s,
                      size_t *same)
{
    size_t out_of_turn = 0;
    *same = 0;
    for (size_t i = 0; i + 1 < n; i++) {
        if (i + threads < n && log->who[i + threads] != log->who[i])
            out_of_turn++;
        if (log->who[i + 1] == log->who[i]) {
            (*same)++; /* a yield that did not switch */
            continue;
        }
        /* Stamping and claiming a slot are two steps: a thread preempted
         * between them (time slicing, without SCHED_FIFO) logs an earlier
         * stamp after a later one. That pair is no switch: not a sample,
         * and counted out of turn. */
        if (log->ts[i + 1] < log->ts[i]) {
            out_of_turn++;
            continue;
        }
        rtb_series_push(s, log->ts[i + 1] - log->ts[i]);
    }
    /* Periodicity alone would accept a subset of threads taking turns. */
    bool *seen = rtb_mem_calloc(threads, sizeof *seen);
    size_t distinct = 0;
    for (size_t i = 0; seen && i < n && i < threads; i++)
        if (log->who[i] < threads && !seen[log->who[i]]) {
            seen[log->who[i]] = true;
            distinct++;
        }
    rtb_mem_free(seen);
    if (n >= threads && distinct < threads)
        out_of_turn += threads - distinct;
    return out_of_turn;
}

static rtb_result run_point(rtb_ctx *ctx, sw_log *log, unsigned n, rtb_time duration)
{
    rtb_thread *th = rtb_mem_calloc(n, sizeof *th);
    sw_thread *args = rtb_mem_calloc(n, sizeof *args);
    rtb_series s;
    if (!th || !args || rtb_series_init(&s, "switch", log->cap) != RTB_OK) {
        rtb_mem_free(th);
        rtb_mem_free(args);
        rtb_emit_check_error(ctx, "resources", "no memory for %u threads", n);
        return RTB_ERROR;
    }
    rtb_series_set_point(&s, "n", n);
    atomic_store(&log->pos, 0);
    atomic_store(&ctx->stop, false);
    /* The monitor outranks the workers on their CPU: none runs until it
     * sleeps, so all start together. */
    rtb_thread_self_set(RTB_PRIO_MAX - 1, ctx->opt->cpu);
    rtb_thread_attr attr = rtb_attr(ctx, "thr-sw", 0);
    attr.stack_size = 64 * 1024;
    unsigned created = 0;
    for (; created < n; created++) {
        args[created] = (sw_thread){.log = log, .id = created};
        if (rtb_thread_create(&th[created], &attr, worker, &args[created]) != RTB_OK)
            break;
    }
    rtb_result r = RTB_PASSED;
    if (created < n) {
        atomic_store(&ctx->stop, true);
        rtb_emit_check_error(ctx, "threads", "only %u of %u threads could be created", created,
                             n);
        r = RTB_ERROR;
    } else {
        rtb_monitor(ctx, duration);
    }
    if (rtb_join_all(ctx, th, (int)created) != RTB_OK)
        r = RTB_ERROR;
    size_t len = atomic_load(&log->pos);
    if (len > log->cap)
        len = log->cap;
    size_t same;
    size_t out_of_turn = analyse(log, len, n, &s, &same);
    if (r == RTB_PASSED && ctx->port->realtime) {
        bool ok = out_of_turn == 0 && same == 0;
        rtb_emit_check(ctx, "rotation", ok,
                       "n=%u: %zu switches, %zu out of turn, %zu yields without a switch", n,
                       (size_t)s.hist.n, out_of_turn, same);
        if (!ok)
            r = RTB_FAILED;
    } else if (same || out_of_turn)
        rtb_warn(ctx, "not_realtime",
                 "n=%u: %zu yields without a switch, %zu out of turn (no strict FIFO rotation "
                 "without real-time priority)",
                 n, same, out_of_turn);
    if (len == log->cap)
        rtb_warn(ctx, "buffer_full", "n=%u: the log filled before the duration; raise --max-samples",
                 n);
    rtb_emit_series(ctx, &s);
    rtb_series_free(&s);
    rtb_mem_free(th);
    rtb_mem_free(args);
    return r;
}

static rtb_result run(rtb_ctx *ctx)
{
    sw_log log = {.ctx = ctx, .cap = ctx->opt->max_samples};
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
    .tasks = "n",
};
