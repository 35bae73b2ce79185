/* SPDX-License-Identifier: Apache-2.0 */
/* rtbench-agent: runs cases and writes the record stream to stdout.
 *
 *   rtbench-agent [options] CASE[:name=value[:name=value...]] ...
 *   rtbench-agent --list
 *
 * Everything is validated before the first case runs, so a typo costs no
 * measurement time. Exit status: 0 passed, 1 a check failed, 2 usage, 3 a
 * case errored or the watchdog ended the run. */
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "rtb.h"
#include "../loads/load.h"

#define MAX_RUN 64
#define MAX_CPUS 1024

/* The background load every case runs under (--load), as validated. */
typedef struct load_plan {
    const char *text; /* as given: "mixed", "cpu:prio=90,io" */
    rtb_load_spec specs[RTB_LOAD_MAX_KINDS];
    int n;
    int cpus[MAX_CPUS], ncpus; /* --load-cpus */
    char cpus_text[256];
    int threads; /* --load-threads; 0: one per load CPU */
    bool pinned; /* case threads on --cpu (false: --no-pin) */
} load_plan;

typedef struct planned {
    const rtb_case *c;
    rtb_param_values pv;
} planned;

/* The watchdog: a top-priority thread that ends the run when a case passes
 * its hard deadline, having written why. */
typedef struct watchdog {
    rtb_thread thread;
    rtb_sem wake;
    _Atomic rtb_time deadline; /* 0: disarmed */
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

static void watchdog_main(void *arg)
{
    watchdog *w = arg;
    while (!atomic_load(&w->quit)) {
        rtb_time d = atomic_load(&w->deadline);
        int rc = rtb_sem_take(&w->wake, d ? d : RTB_FOREVER);
        d = atomic_load(&w->deadline);
        if (rc == RTB_ETIMEDOUT && d && rtb_clock_now() >= d)
            watchdog_fire(w);
    }
}

static void watchdog_set(watchdog *w, rtb_time deadline)
{
    atomic_store(&w->deadline, deadline);
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

#ifdef RTB_TEST_HOOKS
/* ASan's sigaltstack interception reports a false stack-buffer-overflow
 * when a thread is cancelled (google/sanitizers#1399); thread delete is
 * pthread_cancel on POSIX. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "use_sigaltstack=0"; }
#endif

static void usage(FILE *f)
{
    fprintf(f,
            "usage: rtbench-agent [options] CASE[:name=value[,value...][:name=value...]] ...\n"
            "       rtbench-agent --list\n"
            "options:\n"
            "  --cpu N            measurement CPU (default: the last one)\n"
            "  --priority P       base real-time priority of case threads (default 80)\n"
            "  --no-samples       histograms and summaries only, no raw samples\n"
            "  --max-samples N    samples buffered per series (default 1000000)\n"
            "  --deadline-slack MS  added to each case's hard deadline (default 20000)\n"
            "  --trace-marker PATH  write case begin/end marks there (tracefs trace_marker)\n"
            "  --no-pin           do not pin case threads to the measurement CPU\n"
            "  --load SPEC        background load during every case (default none);\n"
            "                     SPEC = KIND[:name=value...][,KIND...], see below\n"
            "  --load-cpus LIST   CPUs for the load threads, e.g. 0-2,5 (default: all)\n"
            "  --load-threads N   threads per load kind (default: one per load CPU)\n"
            "  --dry-run          check the options and cases, run nothing (exit 0 or 2)\n"
#ifdef RTB_TEST_HOOKS
            "  --inject SITE=NS   test builds: inject a fault (yield_delay, give_delay,\n"
            "                     sem_noblock, ref_delay, ignore_stop,\n"
            "                     clock_back, clock_skew, sem_fifo, new_prio, op_delay,\n"
            "                     mutex_nopi, event_delay)\n"
#endif
    );
    rtb_load_help(f);
}

static void list_cases(void)
{
    char buf[8192];
    rtb_json j;
    for (int i = 0; i < rtb_ncases; i++) {
        const rtb_case *c = rtb_cases[i];
        rtb_json_init(&j, buf, sizeof buf);
        rtb_json_obj(&j, NULL);
        rtb_json_str(&j, "id", c->id);
        rtb_json_str(&j, "title", c->title);
        rtb_json_bool(&j, "supported", c->unsupported == NULL);
        if (c->unsupported)
            rtb_json_str(&j, "reason", c->unsupported);
        rtb_json_arr(&j, "params");
        for (int k = 0; k < c->nparams; k++) {
            const rtb_param_def *d = &c->params[k];
            rtb_json_obj(&j, NULL);
            rtb_json_str(&j, "name", d->name);
            rtb_json_str(&j, "help", d->help);
            rtb_json_arr(&j, "default");
            for (int v = 0; v < d->ndef; v++)
                rtb_json_i64(&j, NULL, d->def[v]);
            rtb_json_arr_end(&j);
            rtb_json_i64(&j, "min", d->min);
            rtb_json_i64(&j, "max", d->max);
            rtb_json_bool(&j, "list", d->list);
            rtb_json_obj_end(&j);
        }
        rtb_json_arr_end(&j);
        rtb_json_obj_end(&j);
        puts(buf);
    }
}

/* "THR-SW:n=2,5:duration_ms=100" -> a planned case; false with a message. */
static bool plan(const char *arg, planned *p)
{
    char id[64];
    size_t idlen = strcspn(arg, ":");
    snprintf(id, sizeof id, "%.*s", (int)idlen, arg);
    p->c = rtb_case_find(id);
    if (!p->c) {
        fprintf(stderr, "rtbench-agent: unknown case '%s'; cases:", id);
        for (int i = 0; i < rtb_ncases; i++)
            fprintf(stderr, " %s", rtb_cases[i]->id);
        fprintf(stderr, "\n");
        return false;
    }
    rtb_params_defaults(p->c, &p->pv);
    const char *rest = arg + idlen;
    while (*rest == ':') {
        char assignment[256], err[768];
        rest++;
        size_t n = strcspn(rest, ":");
        snprintf(assignment, sizeof assignment, "%.*s", (int)n, rest);
        if (rtb_params_set(p->c, &p->pv, assignment, err, sizeof err) != RTB_OK) {
            fprintf(stderr, "rtbench-agent: %s\n", err);
            return false;
        }
        rest += n;
    }
    return true;
}

static void hello(rtb_stream *s, const rtb_options *o, const rtb_port_info *pi,
                  const rtb_timing_info *ti, const planned *run, int nrun, bool tracing,
                  const load_plan *lp)
{
    rtb_json *j = rtb_rec_begin(s, "hello");
    rtb_json_i64(j, "format", RTB_STREAM_FORMAT);
    rtb_json_str(j, "agent", "rtbench-agent");
    rtb_json_str(j, "version", RTB_AGENT_VERSION);
    rtb_json_str(j, "port", pi->port);
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
    rtb_json_bool(j, "pinned", lp->pinned);
    rtb_json_str(j, "load", lp->text);
    rtb_json_str(j, "load_cpus", lp->cpus_text);
    rtb_json_i64(j, "load_threads", lp->threads ? lp->threads : lp->ncpus);
    rtb_json_arr(j, "cases");
    for (int i = 0; i < nrun; i++)
        rtb_json_str(j, NULL, run[i].c->id);
    rtb_json_arr_end(j);
    rtb_json_obj_end(j);
    rtb_rec_end(s);
}

/* Loads start before a case's measured section and stop after it on every
 * path; each kind then says in a check whether it really ran. */
#define LOAD_LATE_NS 1000000000LL

static bool start_loads(rtb_ctx *ctx, const load_plan *lp, rtb_time budget, rtb_load **loads)
{
    rtb_load_place place = {.cpus = lp->cpus, .ncpus = lp->ncpus, .threads = lp->threads,
                            .max_ms = budget / 1000000};
    for (int i = 0; i < lp->n; i++) {
        char err[512];
        if (rtb_load_begin(&loads[i], &lp->specs[i], &place, err, sizeof err) != RTB_OK) {
            rtb_emit_check_error(ctx, "load", "%s", err);
            return false;
        }
        rtb_time late = rtb_load_start_ns(loads[i]);
        if (late > LOAD_LATE_NS) /* a busy machine: a finding about it, not an error */
            rtb_warn(ctx, "load_late", "load %s: its threads took %.1f s to start running",
                     rtb_load_kind_name(&lp->specs[i]), (double)late / 1e9);
    }
    return true;
}

static void stop_loads(rtb_ctx *ctx, const load_plan *lp, rtb_load **loads, rtb_time budget,
                       rtb_result *r)
{
    for (int i = 0; i < lp->n; i++) {
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

static rtb_result run_case(rtb_ctx *ctx, watchdog *wd, const planned *p, const load_plan *lp)
{
    ctx->cur = p->c;
    ctx->pv = &p->pv;
    atomic_store(&ctx->stop, false);
    ctx->checks_applied = ctx->checks_skipped = 0;
    ctx->skip_reason[0] = '\0';
    rtb_time budget = case_budget(ctx, ctx->opt->deadline_slack_ms);
    rtb_json *j = rtb_rec_begin(ctx->stream, "begin");
    rtb_json_str(j, "case", p->c->id);
    rtb_json_str(j, "title", p->c->title);
    rtb_json_obj(j, "params");
    rtb_params_write(j, p->c, &p->pv);
    rtb_json_i64(j, "cpu", ctx->opt->cpu);
    rtb_json_i64(j, "priority", ctx->opt->priority);
    rtb_json_str(j, "load", lp->text);
    rtb_json_obj_end(j);
    rtb_json_i64(j, "deadline_ms", budget / 1000000);
    rtb_rec_end(ctx->stream);

    char mark[96];
    snprintf(mark, sizeof mark, "rtbench begin %s seq=%llu\n", p->c->id,
             (unsigned long long)ctx->stream->seq);
    rtb_result r = RTB_UNSUPPORTED;
    rtb_load *loads[RTB_LOAD_MAX_KINDS] = {0};
    bool loaded = p->c->unsupported || start_loads(ctx, lp, budget, loads);
    rtb_trace_mark(mark);
    rtb_time t0 = ctx->started = rtb_clock_now();
    if (!loaded) {
        r = RTB_ERROR;
    } else if (!p->c->unsupported) {
        if (!ctx->port->realtime)
            rtb_warn(ctx, "not_realtime", "%s: figures measured without real-time priority",
                     ctx->port->rt_detail);
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
    rtb_json_str(j, "reason", p->c->unsupported ? p->c->unsupported
                              : !loaded           ? "the background load could not start"
                              : r == RTB_SKIPPED  ? ctx->skip_reason
                                                  : "");
    rtb_rec_end(ctx->stream);
    ctx->cur = NULL;
    return r;
}

/* "0-2,5" -> lp->cpus; NULL: every CPU. */
static bool parse_cpus(const char *text, int count, load_plan *lp)
{
    lp->ncpus = 0;
    if (!text) {
        for (int c = 0; c < count && c < MAX_CPUS; c++)
            lp->cpus[lp->ncpus++] = c;
        snprintf(lp->cpus_text, sizeof lp->cpus_text, "0-%d", count - 1);
        return true;
    }
    snprintf(lp->cpus_text, sizeof lp->cpus_text, "%s", text);
    bool seen[MAX_CPUS] = {false};
    const char *p = text;
    while (*p) {
        char *end;
        long lo = strtol(p, &end, 10), hi = lo;
        if (end == p)
            return false;
        if (*end == '-') {
            p = end + 1;
            hi = strtol(p, &end, 10);
            if (end == p)
                return false;
        }
        if (lo < 0 || hi < lo || hi >= count || hi >= MAX_CPUS)
            return false;
        for (long c = lo; c <= hi; c++)
            if (!seen[c]) {
                seen[c] = true;
                lp->cpus[lp->ncpus++] = (int)c;
            }
        p = end;
        if (*p == ',' && *++p == '\0')
            return false;
        if (*p && !(*p >= '0' && *p <= '9'))
            return false;
    }
    return lp->ncpus > 0;
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"list", no_argument, NULL, 'l'},       {"cpu", required_argument, NULL, 'c'},
        {"priority", required_argument, NULL, 'p'}, {"no-samples", no_argument, NULL, 'S'},
        {"max-samples", required_argument, NULL, 'm'}, {"inject", required_argument, NULL, 'i'},
        {"deadline-slack", required_argument, NULL, 'd'},
        {"trace-marker", required_argument, NULL, 't'},
        {"load", required_argument, NULL, 'L'}, {"load-cpus", required_argument, NULL, 'C'},
        {"load-threads", required_argument, NULL, 'T'}, {"no-pin", no_argument, NULL, 'P'},
        {"dry-run", no_argument, NULL, 'n'},
        {"help", no_argument, NULL, 'h'},       {NULL, 0, NULL, 0}};
    /* Not for users: the stress load starts its guardian this way. */
    if (argc > 1 && strcmp(argv[1], "--load-guard") == 0)
        return rtb_load_guard(argc - 2, argv + 2);
    rtb_options opt = {.cpu = -1, .priority = 80, .samples = true, .max_samples = 1000000,
                       .deadline_slack_ms = 20000};
    const char *trace_marker = NULL, *load_cpus = NULL;
    bool dry_run = false;
    static load_plan lp = {.text = "none", .pinned = true};
    int ch;
    while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (ch) {
        case 'l': list_cases(); return 0;
        case 'c': opt.cpu = atoi(optarg); break;
        case 'p': opt.priority = atoi(optarg); break;
        case 'S': opt.samples = false; break;
        case 'm': opt.max_samples = (size_t)strtoull(optarg, NULL, 10); break;
        case 'd': opt.deadline_slack_ms = strtoll(optarg, NULL, 10); break;
        case 't': trace_marker = optarg; break;
        case 'L': lp.text = optarg; break;
        case 'C': load_cpus = optarg; break;
        case 'T': lp.threads = atoi(optarg); break;
        case 'P': lp.pinned = false; break;
        case 'n': dry_run = true; break;
        case 'i':
#ifdef RTB_TEST_HOOKS
            if (rtb_inject_set(optarg) != RTB_OK) {
                fprintf(stderr, "rtbench-agent: bad --inject '%s'\n", optarg);
                return 2;
            }
            break;
#else
            fprintf(stderr, "rtbench-agent: --inject needs a test build (RTB_TEST_HOOKS)\n");
            return 2;
#endif
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (opt.priority < 1 || opt.priority > RTB_PRIO_MAX - 2) {
        fprintf(stderr, "rtbench-agent: --priority must be 1..%d\n", RTB_PRIO_MAX - 2);
        return 2;
    }
    if (opt.max_samples < 1 || opt.max_samples > 100000000) {
        fprintf(stderr, "rtbench-agent: --max-samples must be 1..100000000\n");
        return 2;
    }
    if (opt.deadline_slack_ms < 100 || opt.deadline_slack_ms > 86400000) {
        fprintf(stderr, "rtbench-agent: --deadline-slack must be 100..86400000 ms\n");
        return 2;
    }
    if (lp.threads < 0 || lp.threads > 64) {
        fprintf(stderr, "rtbench-agent: --load-threads must be 0..64 (0: one per load CPU)\n");
        return 2;
    }
    char lerr[768];
    if (rtb_load_parse(lp.text, lp.specs, RTB_LOAD_MAX_KINDS, &lp.n, lerr, sizeof lerr) !=
        RTB_OK) {
        fprintf(stderr, "rtbench-agent: --load: %s\n", lerr);
        return 2;
    }
    static planned run[MAX_RUN];
    int nrun = 0;
    for (int i = optind; i < argc; i++) {
        if (nrun == MAX_RUN) {
            fprintf(stderr, "rtbench-agent: at most %d cases a run\n", MAX_RUN);
            return 2;
        }
        if (!plan(argv[i], &run[nrun++]))
            return 2;
    }
    if (nrun == 0) {
        usage(stderr);
        return 2;
    }

    static rtb_port_info pi;
    static rtb_timing_info ti;
    rtb_port_init(&pi);
    if (opt.cpu < 0)
        opt.cpu = pi.cpu_count - 1;
    if (opt.cpu >= pi.cpu_count) {
        fprintf(stderr, "rtbench-agent: --cpu %d: this machine has CPUs 0..%d\n", opt.cpu,
                pi.cpu_count - 1);
        return 2;
    }
    if (!parse_cpus(load_cpus, pi.cpu_count, &lp)) {
        fprintf(stderr, "rtbench-agent: --load-cpus '%s': write CPUs 0..%d as a list like "
                "0-2,5\n", load_cpus, pi.cpu_count - 1);
        return 2;
    }
    /* Unpinned case threads go wherever the scheduler puts them: cases
     * pin to ctx->opt->cpu, and -1 means "any" to the port. */
    if (!lp.pinned)
        opt.cpu = -1;
    if (dry_run)
        return 0;
    rtb_timing_init(&ti);
    bool tracing = trace_marker && rtb_trace_open(trace_marker) == RTB_OK;
    static rtb_stream stream;
    rtb_stream_init(&stream, stdout);
    hello(&stream, &opt, &pi, &ti, run, nrun, tracing, &lp);

    static rtb_ctx ctx;
    ctx.stream = &stream;
    ctx.opt = &opt;
    ctx.port = &pi;
    ctx.timing = &ti;
    if (!pi.realtime)
        rtb_warn(&ctx, "not_realtime", "%s", pi.rt_detail);
    if (!pi.memory_locked)
        rtb_warn(&ctx, "mlock", "%s", pi.mlock_detail);
    if (trace_marker && !tracing)
        rtb_warn(&ctx, "trace", "cannot open the trace marker %s: no kernel-trace alignment",
                 trace_marker);

    static watchdog wd;
    wd.ctx = &ctx;
    rtb_sem_create(&wd.wake, 0);
    rtb_thread_attr wattr = {.name = "rtb-watchdog", .priority = RTB_PRIO_MAX, .cpu = -1};
    rtb_thread_create(&wd.thread, &wattr, watchdog_main, &wd);
    rtb_thread_self_set(RTB_PRIO_MAX - 1, opt.cpu);

    rtb_result worst = RTB_PASSED;
    for (int i = 0; i < nrun; i++) {
        rtb_result r = run_case(&ctx, &wd, &run[i], &lp);
        if (r == RTB_ERROR || (r == RTB_FAILED && worst == RTB_PASSED))
            worst = r;
    }
    atomic_store(&wd.quit, true);
    rtb_sem_give(&wd.wake);
    rtb_thread_join(&wd.thread, RTB_FOREVER);

    rtb_json *j = rtb_rec_begin(&stream, "bye");
    rtb_json_str(j, "result", worst == RTB_PASSED ? "passed" : worst == RTB_FAILED ? "failed" : "error");
    rtb_json_u64(j, "records", stream.seq + 1);
    rtb_rec_end(&stream);
    return worst == RTB_PASSED ? 0 : worst == RTB_FAILED ? 1 : 3;
}
