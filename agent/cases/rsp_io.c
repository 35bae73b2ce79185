/* SPDX-License-Identifier: Apache-2.0 */
/* RSP-IO: input edge to output edge, the oscilloscope method.
 *
 * The stimulator (rtb-stim, a separate process on another CPU at the top
 * real-time priority) drives the input line with edges at random
 * intervals and timestamps each edge and its answer on the output line;
 * the agent only answers. Nothing of the measurement happens in the agent:
 * its series are the stimulator's figures, read back after each scenario.
 *
 * Five scenarios on the measured CPU (docs/cases.md, "RSP-IO"):
 *   a: a polling loop (priority p) answers; alone.
 *   b: the polling loop and another running task of equal priority (p),
 *      working `task_us` between yields.
 *   c: b plus a handler on the same input (p+1): on Linux a thread blocked
 *      on the line's edge event, the nearest user-space equivalent of an
 *      interrupt handler; it takes the edge, the loop answers.
 *   d: the polling loop and the handler, no other task.
 *   e: the handler alone answers.
 * Rising and falling edges are separate series. */
#include <string.h>

#include "rsp.h"

#define SCENARIOS 5
#define WAIT_SLICE 50000000 /* the handler checks for the stop this often */

static const char *const scen_name[SCENARIOS] = {"a", "b", "c", "d", "e"};
static const char *const scen_what[SCENARIOS] = {
    "polling loop alone",
    "polling loop + another task of equal priority",
    "polling loop + task + handler on the same input",
    "polling loop + handler, no other task",
    "handler alone (a thread blocked on the line's edge event)",
};

typedef struct rsp {
    rtb_ctx *ctx;
    rtb_line line;
    rtb_stim stim;
    int scenario;
    int cpu;
    rtb_time task_ns;
    atomic_bool stop;
    atomic_size_t answered, handled, chunks, errors;
    int left; /* scenario runs still to come, this one included */
    rtb_sem ready;
    rtb_series rise, fall;
    rtb_tags tags; /* the point of both: scenario and line */
    char reply[160];
} rsp;

static bool has_loop(int s) { return s <= 3; }
static bool has_task(int s) { return s == 1 || s == 2; }
static bool has_handler(int s) { return s >= 2; }

/* The response path: the delay a test injects sits between seeing the
 * edge and driving the output, so it adds to every sample. */
static void respond(rsp *x, int level)
{
    RTB_INJECT_DELAY(RTB_INJ_LINE_DELAY);
    if (RTB_INJECTED(RTB_INJ_LINE_MUTE))
        return;
    if (rtb_line_set(&x->line, level) != RTB_OK)
        atomic_fetch_add_explicit(&x->errors, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&x->answered, 1, memory_order_relaxed);
}

static void loop_main(void *arg)
{
    rsp *x = arg;
    int last = 0, level;
    rtb_line_get(&x->line, &last); /* the level the last scenario left */
    rtb_sem_give(&x->ready);
    while (!atomic_load_explicit(&x->stop, memory_order_relaxed)) {
        if (rtb_line_get(&x->line, &level) == RTB_OK && level != last) {
            last = level;
            respond(x, level);
        }
        /* Cooperative: an equal-priority task gets the CPU here. */
        rtb_thread_yield();
    }
}

static void task_main(void *arg)
{
    rsp *x = arg;
    rtb_sem_give(&x->ready);
    while (!atomic_load_explicit(&x->stop, memory_order_relaxed)) {
        rtb_time until = rtb_clock_now() + x->task_ns;
        while (rtb_clock_now() < until)
            ;
        atomic_fetch_add_explicit(&x->chunks, 1, memory_order_relaxed);
        rtb_thread_yield();
    }
}

static void handler_main(void *arg)
{
    rsp *x = arg;
    bool answers = !has_loop(x->scenario);
    int last = 0, level;
    rtb_line_get(&x->line, &last);
    rtb_sem_give(&x->ready);
    while (!atomic_load_explicit(&x->stop, memory_order_relaxed)) {
        if (rtb_line_wait(&x->line, rtb_clock_now() + WAIT_SLICE, &level) != RTB_OK)
            continue;
        atomic_fetch_add_explicit(&x->handled, 1, memory_order_relaxed);
        if (answers && level != last) {
            last = level;
            respond(x, level);
        }
    }
}

static int start_threads(rsp *x, rtb_thread *th, int *nth)
{
    rtb_ctx *ctx = x->ctx;
    rtb_thread_attr al = rtb_attr(ctx, "rsp-loop", 0), at = rtb_attr(ctx, "rsp-task", 0),
                    ah = rtb_attr(ctx, "rsp-handler", 1);
    /* --no-pin: the responders go where the scheduler puts them. */
    al.cpu = at.cpu = ah.cpu = ctx->opt->pinned ? x->cpu : -1;
    al.stack_size = at.stack_size = ah.stack_size = 64 * 1024;
    int rc = RTB_OK;
    *nth = 0;
    if (has_handler(x->scenario) && (rc = rtb_thread_create(&th[*nth], &ah, handler_main, x)) == RTB_OK)
        ++*nth;
    if (rc == RTB_OK && has_loop(x->scenario) &&
        (rc = rtb_thread_create(&th[*nth], &al, loop_main, x)) == RTB_OK)
        ++*nth;
    if (rc == RTB_OK && has_task(x->scenario) &&
        (rc = rtb_thread_create(&th[*nth], &at, task_main, x)) == RTB_OK)
        ++*nth;
    for (int i = 0; rc == RTB_OK && i < *nth; i++)
        rc = rtb_sem_take(&x->ready, ctx->deadline - 1000000000);
    return rc;
}

typedef struct tally {
    long sent, lost, stale, parsed_lost[2], got[2];
} tally;

/* One scenario: the responders run while the stimulator sends `count`
 * edges; its per-edge figures go into the rising and falling series. */
static rtb_result scenario(rsp *x, const char *line_name, size_t count, const int64_t g[2],
                           rtb_time timeout, uint64_t seed)
{
    rtb_ctx *ctx = x->ctx;
    int s = x->scenario;
    char name[32];
    snprintf(name, sizeof name, "%s_%s_edges", scen_name[s], line_name);
    size_t cap = count / 2 + 1;
    if (cap > ctx->opt->max_samples)
        cap = ctx->opt->max_samples;
    memset(&x->fall, 0, sizeof x->fall);
    if (rtb_series_init(&x->rise, "rising", cap) != RTB_OK ||
        rtb_series_init(&x->fall, "falling", cap) != RTB_OK) {
        rtb_series_free(&x->fall);
        rtb_series_free(&x->rise);
        rtb_emit_check_error(ctx, name, "no memory for %llu samples", (unsigned long long)cap);
        return RTB_ERROR;
    }
    rtb_series *ser[2] = {&x->fall, &x->rise};
    x->tags = (rtb_tags){.key = {"scenario", "line"}, .value = {scen_name[s], line_name}};
    atomic_store(&x->stop, false);
    atomic_store(&x->answered, 0);
    atomic_store(&x->handled, 0);
    atomic_store(&x->chunks, 0);
    atomic_store(&x->errors, 0);
    rtb_thread th[3];
    int nth = 0;
    tally t = {0};
    bool done = false;
    rtb_result r = RTB_PASSED;
    int rc = start_threads(x, th, &nth);
    if (rc == RTB_OK) {
        /* A fair share of what is left of the case's budget: lost edges
         * (a timeout each) must not run the case past its hard deadline. */
        rtb_time now = rtb_clock_now(), last = ctx->deadline - 3000000000 - timeout;
        rtb_time until = now + (last - now) / (x->left > 0 ? x->left : 1);
        char cmd[128];
        snprintf(cmd, sizeof cmd, "run %llu %lld %lld %lld %llu %lld", (unsigned long long)count,
                 (long long)g[0], (long long)g[1], (long long)timeout, (unsigned long long)seed,
                 (long long)until);
        rtb_time limit = until + timeout + 1000000000;
        rc = rtb_stim_send(&x->stim, cmd);
        while (rc == RTB_OK && !done) {
            rc = rtb_stim_recv(&x->stim, x->reply, sizeof x->reply, limit);
            int lv;
            long long ns;
            if (rc != RTB_OK)
                break;
            if (sscanf(x->reply, "e %d %lld", &lv, &ns) == 2 && (lv == 0 || lv == 1) && ns > 0) {
                rtb_series_push(ser[lv], ns);
                t.got[lv]++;
            } else if (sscanf(x->reply, "l %d", &lv) == 1 && (lv == 0 || lv == 1)) {
                t.parsed_lost[lv]++;
            } else if (sscanf(x->reply, "done %ld %ld %ld", &t.sent, &t.lost, &t.stale) == 3) {
                done = true;
            } else {
                rtb_warn(ctx, "stimulator", "scenario %s: %s", scen_name[s], x->reply);
            }
        }
    }
    atomic_store(&x->stop, true);
    if (rtb_join_all(ctx, th, nth) != RTB_OK && r == RTB_PASSED)
        r = RTB_ERROR;
    long answered = t.got[0] + t.got[1], lost = t.parsed_lost[0] + t.parsed_lost[1];
    if (!done) {
        rtb_emit_check_error(ctx, name, "%s: %s", scen_what[s],
                             rc == RTB_ETIMEDOUT ? "the stimulator did not finish in time"
                             : rc == RTB_OK      ? "no result"
                                                 : "the responders or the stimulator failed");
        r = RTB_ERROR;
    } else if (answered + lost != t.sent || lost != t.lost) {
        rtb_emit_check_error(ctx, name, "%s: %ld edges sent, %ld answers and %ld lost read "
                             "back (stimulator: %ld lost)", scen_what[s], t.sent, answered,
                             lost, t.lost);
        r = RTB_ERROR;
    } else {
        if ((size_t)t.sent < count)
            rtb_warn(ctx, "truncated", "scenario %s over a %s line: %ld of %llu edges sent "
                     "within the case's time budget", scen_name[s], line_name, t.sent,
                     (unsigned long long)count);
        bool ok = lost == 0 && atomic_load(&x->errors) == 0;
        char where[32] = "any CPU (--no-pin)";
        if (ctx->opt->pinned)
            snprintf(where, sizeof where, "CPU %d", x->cpu);
        rtb_emit_check(ctx, name, ok,
                       "%s on %s over a %s line: %ld edges, %ld answered (rising %ld, "
                       "falling %ld), %ld lost (no answer within %lld ms: rising %ld, falling "
                       "%ld), %ld stale answers; the agent answered %llu times%s; the handler "
                       "took %llu edges first; the task ran %llu work chunks", scen_what[s], where,
                       line_name, t.sent, answered, t.got[1], t.got[0], lost,
                       (long long)(timeout / 1000000), t.parsed_lost[1], t.parsed_lost[0],
                       t.stale, (unsigned long long)atomic_load(&x->answered),
                       atomic_load(&x->errors) ? " (some output writes failed)" : "",
                       (unsigned long long)atomic_load(&x->handled),
                       (unsigned long long)atomic_load(&x->chunks));
        if (!ok)
            r = RTB_FAILED;
    }
    rtb_emit_series_tagged(ctx, &x->rise, &x->tags);
    rtb_emit_series_tagged(ctx, &x->fall, &x->tags);
    rtb_series_free(&x->fall); /* in reverse order: an arena takes back its top */
    rtb_series_free(&x->rise);
    return r;
}

static rtb_result worse(rtb_result a, rtb_result b)
{
    return a == RTB_ERROR || b == RTB_ERROR ? RTB_ERROR : a == RTB_FAILED ? a : b;
}

static rtb_result one_line(rsp *x, int kind)
{
    rtb_ctx *ctx = x->ctx;
    const char *line_name = rtb_line_kind_name(kind);
    char why[256] = "", where[96];
    snprintf(where, sizeof where, "/dev/gpiochip%lld:%lld:%lld:%lld:%lld",
             (long long)rtb_param(ctx, "gpio_chip"), (long long)rtb_param(ctx, "gpio_in"),
             (long long)rtb_param(ctx, "gpio_out"), (long long)rtb_param(ctx, "gpio_drive"),
             (long long)rtb_param(ctx, "gpio_sense"));
    char check[32];
    snprintf(check, sizeof check, "%s_line", line_name);
    int rc = rtb_line_open(&x->line, kind, where, why, sizeof why);
    if (rc == RTB_ENOTSUP) {
        rtb_emit_check_skip(ctx, check, "%s", why);
        return RTB_SKIPPED;
    }
    if (rc != RTB_OK) {
        rtb_emit_check_error(ctx, check, "%s", why);
        return RTB_ERROR;
    }
    /* Among the CPUs this process may run on (taskset, cpusets). */
    x->cpu = ctx->opt->cpu >= 0 ? ctx->opt->cpu
                                : rtb_cpu_allowed_at(ctx->port, rtb_cpus_allowed(ctx->port) - 1);
    int other = rtb_cpu_other(ctx->port, x->cpu);
    char extra[48] = "";
    int64_t skew = RTB_INJECT_VALUE(RTB_INJ_STIM_SKEW);
    if (skew)
        snprintf(extra, sizeof extra, "--skew %lld", (long long)skew);
    rc = rtb_stim_start(&x->stim, &x->line, other, extra, why, sizeof why);
    if (rc == RTB_ENOTSUP) { /* no instrument on this target: nothing to measure with */
        rtb_line_close(&x->line);
        rtb_emit_check_skip(ctx, "stimulator", "%s", why);
        return RTB_SKIPPED;
    }
    if (rc != RTB_OK) {
        rtb_line_close(&x->line);
        rtb_emit_check_error(ctx, "stimulator", "%s", why);
        return RTB_ERROR;
    }
    rtb_result r = RTB_PASSED;
    if (!rsp_stim_hello(ctx, &x->stim, line_name, other, x->reply, sizeof x->reply)) {
        r = RTB_ERROR;
    } else {
        if (!rsp_clock_check(ctx, &x->stim, x->reply, sizeof x->reply))
            r = RTB_FAILED;
        const int64_t *scen;
        int ns = rtb_param_list(ctx, "scenario", &scen);
        int64_t g[2] = {rtb_param(ctx, "gap_min_us") * 1000, rtb_param(ctx, "gap_max_us") * 1000};
        if (g[1] < g[0])
            g[1] = g[0];
        rtb_time timeout = rtb_param(ctx, "timeout_ms") * 1000000;
        size_t count = (size_t)rtb_param(ctx, "count");
        for (int i = 0; i < ns && r != RTB_ERROR && !atomic_load(&ctx->stop); i++) {
            x->scenario = (int)scen[i];
            x->left--;
            if (has_task(x->scenario) && ctx->port->one_task_per_priority) {
                /* b and c: the task shares the loop's priority (uC/OS-II). */
                char name[32];
                snprintf(name, sizeof name, "%s_%s_edges", scen_name[x->scenario], line_name);
                rtb_emit_check_skip(ctx, name, "%s: %s", scen_what[x->scenario],
                                    ctx->port->one_task_detail);
                continue;
            }
            r = worse(r, scenario(x, line_name, count, g, timeout, 0x2545F4914F6CDD1Du + (uint64_t)i));
        }
        rtb_stim_send(&x->stim, "quit");
    }
    if (rtb_stim_stop(&x->stim, rtb_clock_now() + 2000000000) != RTB_OK)
        rtb_warn(ctx, "stimulator", "rtb-stim did not exit cleanly");
    rtb_line_close(&x->line);
    return r;
}

static const rtb_param_def params[] = {
    {.name = "line", .help = "lines, a list: 0 eventfd, 1 pipe, 2 pseudo-terminal, 3 GPIO, 4 "
                             "a board's timer (emulated edges)",
     .def = {RTB_LINE_DEFAULT}, .ndef = 1, .min = 0, .max = 4, .list = true},
    {.name = "scenario", .help = "scenarios, a list: 0 a (loop), 1 b (loop + task), 2 c (loop "
                                 "+ task + handler), 3 d (loop + handler), 4 e (handler)",
     .def = {0, 1, 2, 3, 4}, .ndef = 5, .min = 0, .max = 4, .list = true},
    {.name = "count", .help = "edges per scenario (rising and falling alternate)",
     .def = {1000}, .ndef = 1, .min = 2, .max = 10000000},
    {.name = "gap_min_us", .help = "shortest random interval from an answer to the next edge",
     .def = {200}, .ndef = 1, .min = 10, .max = 10000000},
    {.name = "gap_max_us", .help = "longest random interval", .def = {1000}, .ndef = 1,
     .min = 10, .max = 10000000},
    {.name = "timeout_ms", .help = "an edge not answered by then is lost", .def = {1000},
     .ndef = 1, .min = 1, .max = 60000},
    {.name = "task_us", .help = "b, c: the other task's work between yields", .def = {50},
     .ndef = 1, .min = 1, .max = 100000},
    {.name = "gpio_chip", .help = "GPIO: /dev/gpiochipN", .def = {0}, .ndef = 1, .min = 0,
     .max = 255},
    {.name = "gpio_in", .help = "GPIO: the agent's input offset", .def = {0}, .ndef = 1,
     .min = 0, .max = 511},
    {.name = "gpio_out", .help = "GPIO: the agent's output offset", .def = {1}, .ndef = 1,
     .min = 0, .max = 511},
    {.name = "gpio_drive", .help = "GPIO: the stimulator's output, wired to gpio_in",
     .def = {2}, .ndef = 1, .min = 0, .max = 511},
    {.name = "gpio_sense", .help = "GPIO: the stimulator's input, wired to gpio_out",
     .def = {3}, .ndef = 1, .min = 0, .max = 511},
};

static rtb_time expected(const rtb_ctx *ctx)
{
    const int64_t *v;
    int lines = rtb_param_list(ctx, "line", &v), scen = rtb_param_list(ctx, "scenario", &v);
    rtb_time per_edge = (rtb_param(ctx, "gap_min_us") + rtb_param(ctx, "gap_max_us")) * 500 +
                        100000;
    /* Plus one timeout per line: its last edge may be lost. */
    return (rtb_time)lines * (1000000000 + rtb_param(ctx, "timeout_ms") * 1000000 +
                              scen * rtb_param(ctx, "count") * per_edge);
}

static rtb_result run(rtb_ctx *ctx)
{
    rsp *x = rtb_mem_calloc(1, sizeof *x);
    if (!x) {
        rtb_emit_check_error(ctx, "buffer", "no memory");
        return RTB_ERROR;
    }
    x->ctx = ctx;
    x->task_ns = rtb_param(ctx, "task_us") * 1000;
    rtb_sem_create(&x->ready, 0);
    /* Above the responders on their CPU while they are created; blocked
     * (waiting for the stimulator) while they run. */
    rtb_thread_self_set(RTB_PRIO_MAX - 1, -1);
    const int64_t *lines;
    int nl = rtb_param_list(ctx, "line", &lines);
    const int64_t *scen;
    x->left = nl * rtb_param_list(ctx, "scenario", &scen) + 1;
    rtb_result r = RTB_SKIPPED;
    for (int i = 0; i < nl; i++) {
        rtb_result one = one_line(x, (int)lines[i]);
        r = r == RTB_SKIPPED ? one : one == RTB_SKIPPED ? r : worse(r, one);
    }
    rtb_sem_delete(&x->ready);
    rtb_mem_free(x);
    return r;
}

const rtb_case rtb_case_rsp_io = {
    .id = "RSP-IO",
    .title = "Input edge to output edge",
    .params = params,
    .nparams = sizeof params / sizeof params[0],
    .run = run,
    .expected_ns = expected,
};
