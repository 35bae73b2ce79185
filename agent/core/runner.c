/* SPDX-License-Identifier: Apache-2.0 */
/* The portable runner: the hello record, every planned case under the
 * watchdog and its background load, the bye record. A port's entry point
 * (POSIX: main() in ports/posix/main.c) builds the plan and calls rtb_run. */
#include <string.h>

#include "rtb.h"
#include "rtb/load.h"

/* Set by the build (agent/CMakeLists.txt); a bare compile has neither. */
#ifndef RTB_BUILD_FLAGS
#define RTB_BUILD_FLAGS ""
#endif
#ifndef RTB_BUILD_TYPE
#define RTB_BUILD_TYPE "unknown"
#endif

/* The watchdog: a top-priority thread that ends the run when a case passes
 * its hard deadline, having written why. The deadline sits under a mutex:
 * a 64-bit atomic needs libatomic on 32-bit targets, which RTOSes lack. */
typedef struct watchdog {
    rtb_thread thread;
    rtb_sem wake;
    rtb_mutex lock;
    rtb_time deadline; /* 0: disarmed; under lock */
    atomic_bool quit;
    rtb_ctx *ctx;
} watchdog;

static void watchdog_fire(watchdog *w)
{
    rtb_ctx *ctx = w->ctx;
    rtb_json *j = rtb_rec_begin_urgent(ctx->stream, "warn");
    rtb_json_str(j, "code", "deadline");
    rtb_json_str(j, "case", ctx->cur ? ctx->cur->id : "");
    rtb_json_str(j, "detail", "the case passed its hard deadline and was stopped");
    rtb_rec_end(ctx->stream);
    j = rtb_rec_begin_urgent(ctx->stream, "end");
    rtb_json_str(j, "case", ctx->cur ? ctx->cur->id : "");
    rtb_json_str(j, "result", "error");
    rtb_json_i64(j, "duration_ns", rtb_clock_now() - ctx->started);
    rtb_json_str(j, "reason", "hard deadline passed: a thread of the case did not stop");
    rtb_rec_end(ctx->stream);
    j = rtb_rec_begin_urgent(ctx->stream, "bye");
    rtb_json_str(j, "result", "error");
    rtb_json_u64(j, "records", ctx->stream->seq + 1);
    rtb_rec_end(ctx->stream);
    rtb_port_abort(3);
}

static rtb_time watchdog_deadline(watchdog *w)
{
    rtb_mutex_lock(&w->lock);
    rtb_time d = w->deadline;
    rtb_mutex_unlock(&w->lock);
    return d;
}

static void watchdog_main(void *arg)
{
    watchdog *w = arg;
    while (!atomic_load(&w->quit)) {
        rtb_time d = watchdog_deadline(w);
        int rc = rtb_sem_take(&w->wake, d ? d : RTB_FOREVER);
        d = watchdog_deadline(w);
        if (rc == RTB_ETIMEDOUT && d && rtb_clock_now() >= d)
            watchdog_fire(w);
    }
}

static void watchdog_set(watchdog *w, rtb_time deadline)
{
    rtb_mutex_lock(&w->lock);
    w->deadline = deadline;
    rtb_mutex_unlock(&w->lock);
    rtb_sem_give(&w->wake);
}

/* Generous: the watchdog is for runaways, not for slow machines. */
static rtb_time case_budget(const rtb_ctx *ctx, int64_t slack_ms)
{
    const rtb_case *c = ctx->cur;
    rtb_time expected = 0;
    if (c->expected_ns) {
        expected = c->expected_ns(ctx);
    } else {
        int64_t points = 1;
        for (int i = 0; i < c->nparams; i++) {
            if (strcmp(c->params[i].name, "duration_ms") == 0)
                expected = ctx->pv->v[i][0] * 1000000;
            if (c->params[i].list)
                points *= ctx->pv->n[i];
        }
        expected = expected > INT64_MAX / 4 / points ? INT64_MAX / 4 : expected * points;
    }
    if (expected < 0 || expected > INT64_MAX / 4)
        expected = INT64_MAX / 4; /* saturate: 3x below must not overflow */
    return expected * 3 + slack_ms * 1000000;
}

static void hello(rtb_stream *s, const rtb_options *o, const rtb_port_info *pi,
                  const rtb_timing_info *ti, const rtb_plan *plan, bool tracing)
{
    const rtb_load_plan *lp = plan->load;
    rtb_json *j = rtb_rec_begin(s, "hello");
    rtb_json_i64(j, "format", RTB_STREAM_FORMAT);
    rtb_json_str(j, "agent", "rtbench-agent");
    rtb_json_str(j, "version", RTB_AGENT_VERSION);
    rtb_json_str(j, "port", pi->port);
    if (o->run_id)
        rtb_json_str(j, "run", o->run_id);
    rtb_json_obj(j, "os");
    rtb_json_str(j, "sysname", pi->sysname);
    rtb_json_str(j, "release", pi->release);
    rtb_json_str(j, "version", pi->version);
    rtb_json_str(j, "machine", pi->machine);
    rtb_json_str(j, "preempt", pi->preempt);
    rtb_json_str(j, "preempt_mode", pi->preempt_mode);
    rtb_json_str(j, "cmdline", pi->cmdline);
    rtb_json_str(j, "clocksource", pi->clocksource);
    rtb_json_str(j, "isolated_cpus", pi->isolated_cpus);
    rtb_json_obj_end(j);
    rtb_json_obj(j, "cpu");
    rtb_json_str(j, "model", pi->cpu_model);
    rtb_json_i64(j, "count", pi->cpu_count);
    char allowed[256];
    rtb_cpus_text(pi, allowed, sizeof allowed);
    rtb_json_str(j, "allowed", allowed); /* where this process may run */
    rtb_json_obj_end(j);
    rtb_json_obj(j, "clock");
    rtb_json_str(j, "source", ti->clock_source);
    rtb_json_i64(j, "resolution_ns", ti->clock_resolution_ns);
    rtb_json_i64(j, "read_overhead_ns", ti->clock_read_overhead_ns);
    rtb_json_obj(j, "cycles");
    rtb_json_bool(j, "available", ti->cycles_available);
    if (ti->cycles_available) {
        rtb_json_str(j, "source", ti->cycles_source);
        rtb_json_u64(j, "hz", ti->cycles_hz);
        rtb_json_i64(j, "read_overhead_ns", ti->cycles_read_overhead_ns);
    }
    rtb_json_obj_end(j);
    /* What stamps the measured windows, and why (rtb_stamp_now). */
    rtb_json_obj(j, "stamp");
    rtb_json_str(j, "source", rtb_stamp_use_cycles ? ti->cycles_source : ti->clock_source);
    rtb_json_u64(j, "hz", rtb_stamp_hz());
    rtb_json_str(j, "reason", ti->stamp_reason);
    rtb_json_obj_end(j);
    rtb_json_obj_end(j);
    rtb_json_obj(j, "build");
#ifdef __VERSION__
    rtb_json_str(j, "compiler", __VERSION__);
#endif
    rtb_json_str(j, "flags", RTB_BUILD_FLAGS);
    rtb_json_str(j, "type", RTB_BUILD_TYPE);
#ifdef RTB_TEST_HOOKS
    rtb_json_bool(j, "test_hooks", true);
#else
    rtb_json_bool(j, "test_hooks", false);
#endif
    rtb_json_obj_end(j);
    /* What the port can do (rtb_port_info): event mechanisms, optional parts. */
    rtb_json_obj(j, "port_info");
    rtb_json_str(j, "event_timer", pi->event_timer);
    rtb_json_str(j, "event_raise", pi->event_raise);
    rtb_json_bool(j, "sched_lock", pi->sched_lock);
    rtb_json_bool(j, "loads", pi->loads);
    if (pi->power) {
        rtb_json_obj(j, "cstates");
        rtb_json_bool(j, "held", pi->power_held);
        rtb_json_str(j, "detail", pi->power);
        rtb_json_obj_end(j);
    }
    rtb_json_obj_end(j);
    rtb_json_obj(j, "realtime");
    rtb_json_bool(j, "ok", pi->realtime);
    rtb_json_str(j, "policy", pi->policy);
    rtb_json_str(j, "detail", pi->rt_detail);
    rtb_json_obj_end(j);
    rtb_json_obj(j, "params");
    rtb_json_i64(j, "cpu", o->cpu);
    rtb_json_i64(j, "priority", o->priority);
    rtb_json_bool(j, "samples", o->samples);
    rtb_json_u64(j, "max_samples", o->max_samples);
    rtb_json_bool(j, "trace_marker", tracing);
    rtb_json_bool(j, "pinned", o->pinned);
    rtb_json_str(j, "load", lp ? lp->text : "none");
    if (o->ncpus) {
        rtb_json_arr(j, "cpus");
        for (int i = 0; i < o->ncpus; i++)
            rtb_json_i64(j, NULL, o->cpus[i]);
        rtb_json_arr_end(j);
    }
    if (o->break_ns)
        rtb_json_i64(j, "break_ns", o->break_ns);
    if (o->progress_ms)
        rtb_json_i64(j, "progress_ms", o->progress_ms);
    rtb_json_str(j, "load_cpus", lp ? lp->cpus_text : "");
    rtb_json_i64(j, "load_threads", !lp ? 0 : lp->threads ? lp->threads : lp->ncpus);
    rtb_json_arr(j, "cases");
    for (int i = 0; i < plan->n; i++)
        rtb_json_str(j, NULL, plan->cases[i].c->id);
    rtb_json_arr_end(j);
    rtb_json_obj_end(j);
    rtb_rec_end(s);
}

/* Loads start before a case's measured section and stop after it on every
 * path; each kind then says in a check whether it really ran. */
#define LOAD_LATE_NS 1000000000LL

static int start_loads(rtb_ctx *ctx, const rtb_load_plan *lp, rtb_time budget, rtb_load **loads)
{
    rtb_load_place place = {.cpus = lp->cpus, .ncpus = lp->ncpus, .threads = lp->threads,
                            .max_ms = budget / 1000000};
    for (int i = 0; i < lp->n; i++) {
        char err[512];
        int rc = rtb_load_begin(&loads[i], &lp->specs[i], &place, err, sizeof err);
        if (rc == RTB_ENOTSUP) {
            rtb_unsupported(ctx, "%s", err);
            return rc;
        }
        if (rc != RTB_OK) {
            rtb_emit_check_error(ctx, "load", "%s", err);
            /* The end record's reason names the load and the cause (a busy
             * machine's late threads read otherwise as rtbench's fault); the
             * check holds the whole message. */
            snprintf(ctx->skip_reason, sizeof ctx->skip_reason,
                     "the background load could not start: %.210s", err);
            return rc;
        }
        rtb_time late = rtb_load_start_ns(loads[i]);
        if (late > LOAD_LATE_NS) /* a busy machine: a finding about it, not an error */
            rtb_warn(ctx, "load_late", "load %s: its threads took %.1f s to start running",
                     rtb_load_kind_name(&lp->specs[i]), (double)late / 1e9);
    }
    return RTB_OK;
}

static void stop_loads(rtb_ctx *ctx, const rtb_load_plan *lp, rtb_load **loads, rtb_time budget,
                       rtb_result *r)
{
    for (int i = 0; lp && i < lp->n; i++) {
        if (!loads[i])
            continue; /* threads=0, or never started */
        char what[256], name[32];
        rtb_load_describe(loads[i], what, sizeof what);
        snprintf(name, sizeof name, "load_%s", rtb_load_kind_name(&lp->specs[i]));
        rtb_load_stats st;
        /* A busy machine may take long to end an fsync or a pass over memory:
         * the case's budget, not a fixed time, says when it is stuck. */
        if (rtb_load_stop(loads[i], rtb_clock_now() + budget, &st) != RTB_OK) {
            rtb_emit_check_error(ctx, name, "%s: a load thread did not stop", what);
            *r = RTB_ERROR;
        } else {
            /* Its threads ran (they started): a short case on a busy machine
             * may end before they finish a unit of work. Less load than
             * asked is a warning about the figures, not an error. */
            char least[64] = "";
            if (st.threads > 1)
                snprintf(least, sizeof least, ", the least busy thread %llu",
                         (unsigned long long)st.ops_min);
            rtb_emit_check(ctx, name, true, "%s: %llu %s%s", what,
                           (unsigned long long)st.ops_total, st.unit, least);
            if (st.stopped_late_ns > 0)
                rtb_warn(ctx, "load_stop_late",
                         "%s: a thread ended %.1f s past the case's budget, held up in the "
                         "kernel (I/O the machine was slow to complete)",
                         what, (double)st.stopped_late_ns / 1e9);
            if (st.ops_min == 0)
                rtb_warn(ctx, "load_idle",
                         "%s: %s completed no %s during the case (its CPU was held at a "
                         "higher priority, or the machine was busy): the figures were taken "
                         "under less load than asked",
                         what, st.ops_total ? "a thread" : "the load", st.unit);
        }
        loads[i] = NULL;
    }
}

/* A tick-based kernel (rtb_release_grain > 0) starts every case on its
 * release lattice: what was printed before (the hello's run identity, a
 * record's checksum) takes a data-dependent number of instructions, and
 * under an emulator's instruction-count time (QEMU -icount) it would shift
 * every later case against the tick, so two runs of one firmware with two
 * run identities gave other maxima (MUT-ARC acquire 17.52 vs 18.80 us on
 * uC/OS-III). On POSIX (grain 0) nothing waits. */
static void align_to_release_lattice(void)
{
    rtb_time phase;
    rtb_time grain = rtb_release_grain(&phase);
    if (grain <= 0)
        return;
    rtb_time now = rtb_clock_now();
    rtb_sleep_until(phase + ((now - phase) / grain + 1) * grain);
}

static rtb_result run_case(rtb_ctx *ctx, watchdog *wd, const rtb_planned *p,
                           const rtb_load_plan *lp)
{
    align_to_release_lattice();
    ctx->cur = p->c;
    ctx->pv = &p->pv;
    atomic_store(&ctx->stop, false);
    ctx->checks_applied = ctx->checks_skipped = 0;
    ctx->skip_reason[0] = '\0';
    rtb_mem_reset(); /* the last case's buffers are gone with it */
    rtb_time budget = case_budget(ctx, ctx->opt->deadline_slack_ms);
    rtb_json *j = rtb_rec_begin(ctx->stream, "begin");
    rtb_json_str(j, "case", p->c->id);
    rtb_json_str(j, "title", p->c->title);
    rtb_json_obj(j, "params");
    rtb_params_write(j, p->c, &p->pv);
    rtb_json_i64(j, "cpu", ctx->opt->cpu);
    if (p->c->per_cpu && ctx->opt->ncpus) {
        rtb_json_arr(j, "cpus");
        for (int i = 0; i < ctx->opt->ncpus; i++)
            rtb_json_i64(j, NULL, ctx->opt->cpus[i]);
        rtb_json_arr_end(j);
    }
    rtb_json_i64(j, "priority", ctx->opt->priority);
    rtb_json_str(j, "load", lp ? lp->text : "none");
    rtb_json_obj_end(j);
    rtb_json_i64(j, "deadline_ms", budget / 1000000);
    rtb_rec_end(ctx->stream);

    char mark[96];
    snprintf(mark, sizeof mark, "rtbench begin %s seq=%llu\n", p->c->id,
             (unsigned long long)ctx->stream->seq);
    rtb_result r = RTB_UNSUPPORTED;
    rtb_load *loads[RTB_LOAD_MAX_KINDS] = {0};
    const char *unsupported = rtb_case_unsupported(p->c);
    int lrc = unsupported || !lp ? RTB_OK : start_loads(ctx, lp, budget, loads);
    rtb_trace_mark(mark);
    rtb_time t0 = ctx->started = rtb_clock_now();
    if (lrc == RTB_ENOTSUP) {
        r = RTB_UNSUPPORTED;
    } else if (lrc != RTB_OK) {
        r = RTB_ERROR;
    } else if (!unsupported) {
        if (!ctx->port->realtime)
            rtb_warn(ctx, "not_realtime", "%s: figures measured without real-time priority",
                     ctx->port->rt_detail);
        if (!p->c->per_cpu && (ctx->opt->ncpus || ctx->opt->break_ns))
            rtb_warn(ctx, "per_cpu", "measured on CPU %d only: --cpus and --break apply to "
                     "per-CPU cases (JIT-PER)", ctx->opt->cpu);
        ctx->deadline = t0 + budget;
        watchdog_set(wd, ctx->deadline);
        RTB_INJECT_ARM(true);
        r = p->c->run(ctx);
        RTB_INJECT_ARM(false);
        watchdog_set(wd, 0);
        /* Restore the main thread so the next case starts alike. */
        rtb_thread_self_set(RTB_PRIO_MAX - 1, ctx->opt->cpu);
    }
    snprintf(mark, sizeof mark, "rtbench end %s\n", p->c->id);
    rtb_trace_mark(mark);
    /* Before the loads' own checks: a case none of whose checks applies
     * here is skipped, not passed, whatever the load did. */
    if (r == RTB_PASSED && ctx->checks_skipped && !ctx->checks_applied)
        r = RTB_SKIPPED;
    stop_loads(ctx, lp, loads, budget, &r);
    static const char *const names[] = {"passed", "failed", "error", "unsupported", "skipped"};
    j = rtb_rec_begin(ctx->stream, "end");
    rtb_json_str(j, "case", p->c->id);
    rtb_json_str(j, "result", names[r]);
    rtb_json_i64(j, "duration_ns", rtb_clock_now() - t0);
    rtb_json_str(j, "reason", unsupported ? unsupported
                              : lrc != RTB_OK && lrc != RTB_ENOTSUP ? ctx->skip_reason
                              : r == RTB_SKIPPED || r == RTB_UNSUPPORTED ? ctx->skip_reason
                                                                         : "");
    rtb_rec_end(ctx->stream);
    ctx->cur = NULL;
    return r;
}

int rtb_run(const rtb_plan *plan, const rtb_options *opt, rtb_stream *stream)
{
    static rtb_timing_info ti;
    const rtb_port_info *pi = rtb_port();
    rtb_timing_init(&ti);
    rtb_stamp_init(&ti);
    bool tracing = plan->trace_marker && rtb_trace_open(plan->trace_marker) == RTB_OK;
    hello(stream, opt, pi, &ti, plan, tracing);

    static rtb_ctx ctx;
    ctx.stream = stream;
    ctx.opt = opt;
    ctx.port = pi;
    ctx.timing = &ti;
    if (!pi->realtime)
        rtb_warn(&ctx, "not_realtime", "%s", pi->rt_detail);
    if (!pi->memory_locked)
        rtb_warn(&ctx, "mlock", "%s", pi->mlock_detail);
    if (plan->trace_marker && !tracing)
        rtb_warn(&ctx, "trace", "cannot open the trace marker %s: no kernel-trace alignment",
                 plan->trace_marker);

    static watchdog wd;
    wd.ctx = &ctx;
    rtb_sem_create(&wd.wake, 0);
    rtb_mutex_create(&wd.lock, 0);
    rtb_thread_attr wattr = {.name = "rtb-watchdog", .priority = RTB_PRIO_MAX, .cpu = -1};
    rtb_thread_create(&wd.thread, &wattr, watchdog_main, &wd);
    rtb_thread_self_set(RTB_PRIO_MAX - 1, opt->cpu);

    rtb_result worst = RTB_PASSED;
    for (int i = 0; i < plan->n; i++) {
        rtb_result r = run_case(&ctx, &wd, &plan->cases[i], plan->load);
        if (r == RTB_ERROR || (r == RTB_FAILED && worst == RTB_PASSED))
            worst = r;
    }
    atomic_store(&wd.quit, true);
    rtb_sem_give(&wd.wake);
    rtb_thread_join(&wd.thread, RTB_FOREVER);

    rtb_json *j = rtb_rec_begin(stream, "bye");
    rtb_json_str(j, "result", worst == RTB_PASSED   ? "passed"
                              : worst == RTB_FAILED ? "failed"
                                                    : "error");
    rtb_json_u64(j, "records", stream->seq + 1);
    rtb_rec_end(stream);
    return worst == RTB_PASSED ? 0 : worst == RTB_FAILED ? 1 : 3;
}
