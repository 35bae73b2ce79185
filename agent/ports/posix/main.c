/* SPDX-License-Identifier: Apache-2.0 */
/* rtbench-agent, the POSIX port's entry point: builds the plan from argv
 * and hands it to the portable runner (core/runner.c).
 *
 *   rtbench-agent [options] CASE[:name=value[:name=value...]] ...
 *   rtbench-agent --list
 *
 * The common options are parsed in core/options.c; this file adds the
 * POSIX ones (loads, load CPUs, per-CPU cases, trace marker). Exit status:
 * 0 passed, 1 a check failed, 2 usage, 3 a case errored or the watchdog
 * ended the run. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"
#include "power.h"
#include "rtb.h"
#if RTB_PORT_HAS_LOADS
#include "../../loads/load.h"
#else
/* Built without its loads (-DRTB_POSIX_LOADS=OFF): the no-loads path every
 * port without them takes, testable here. Only "none" parses. */
#include "rtb/load.h"
static void rtb_load_help(FILE *f) { fprintf(f, "loads: none (built without loads)\n"); }
static int rtb_load_parse(const char *text, rtb_load_spec *specs, int cap, int *n, char *err,
                          size_t errcap)
{
    (void)specs, (void)cap;
    *n = 0;
    if (strcmp(text, "none") == 0)
        return RTB_OK;
    snprintf(err, errcap, "'%s': this port has no loads (built without them)", text);
    return RTB_ENOTSUP;
}
#endif

#ifdef RTB_TEST_HOOKS
/* ASan's sigaltstack interception reports a false stack-buffer-overflow
 * when a thread is cancelled (google/sanitizers#1399); thread delete is
 * pthread_cancel on POSIX. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "use_sigaltstack=0"; }
#endif

/* The POSIX port's own options (the common ones: core/options.c). */
enum {
    OPT_TRACE = RTB_CLI_PORT_CODE,
    OPT_LOAD,
    OPT_LOAD_CPUS,
    OPT_LOAD_THREADS,
    OPT_CPUS,
    OPT_CSTATES
};

typedef struct posix_cli {
    rtb_load_plan load;
    const char *load_cpus, *measure_cpus;
    rtb_load_plan measure; /* --cpus, in --load-cpus' syntax */
    const char *cstates;   /* "hold" (default) or "leave" */
} posix_cli;

static void usage(FILE *f)
{
    fprintf(f,
            "  --trace-marker PATH  write case begin/end marks there (tracefs trace_marker)\n"
            "  --cpus LIST|all    per-CPU cases (JIT-PER): measure on each of these CPUs at\n"
            "                     once, one series per CPU\n"
            "  --load SPEC        background load during every case (default none);\n"
            "                     SPEC = KIND[:name=value...][,KIND...], see below\n"
            "  --load-cpus LIST   CPUs for the load threads, e.g. 0-2,5 (default: all)\n"
            "  --load-threads N   threads per load kind (default: one per load CPU)\n"
            "  --cstates hold|leave  hold C-states off through /dev/cpu_dma_latency while\n"
            "                     the agent runs, as cyclictest does (default hold)\n");
    rtb_load_help(f);
}

/* "0-2,5" -> lp->cpus; NULL: every CPU. */
static bool parse_cpus(const char *text, int count, rtb_load_plan *lp)
{
    lp->ncpus = 0;
    if (!text) { /* every CPU this process may run on (taskset, cpusets) */
        const rtb_port_info *pi = rtb_port();
        for (int i = 0; i < rtb_cpus_allowed(pi) && i < RTB_MAX_CPUS; i++)
            lp->cpus[lp->ncpus++] = rtb_cpu_allowed_at(pi, i);
        rtb_cpus_text(pi, lp->cpus_text, sizeof lp->cpus_text);
        return true;
    }
    snprintf(lp->cpus_text, sizeof lp->cpus_text, "%s", text);
    static bool seen[RTB_MAX_CPUS];
    memset(seen, 0, sizeof seen);
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
        if (lo < 0 || hi < lo || hi >= count || hi >= RTB_MAX_CPUS)
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

static int option(void *ctx, int code, const char *arg, rtb_plan *plan)
{
    posix_cli *c = ctx;
    switch (code) {
    case OPT_TRACE: plan->trace_marker = arg; break;
    case OPT_LOAD: c->load.text = arg; break;
    case OPT_LOAD_CPUS: c->load_cpus = arg; break;
    case OPT_LOAD_THREADS: c->load.threads = atoi(arg); break;
    case OPT_CPUS: c->measure_cpus = arg; break;
    case OPT_CSTATES: c->cstates = arg; break;
    default: return 2;
    }
    return 0;
}

static int finish(void *ctx, rtb_options *opt, rtb_plan *plan)
{
    posix_cli *c = ctx;
    rtb_load_plan *lp = &c->load;
    static char err[768];
    if (lp->threads < 0 || lp->threads > 64) {
        fprintf(stderr, "rtbench-agent: --load-threads must be 0..64 (0: one per load CPU)\n");
        return 2;
    }
    if (rtb_load_parse(lp->text, lp->specs, RTB_LOAD_MAX_KINDS, &lp->n, err, sizeof err) !=
        RTB_OK) {
        fprintf(stderr, "rtbench-agent: --load: %s\n", err);
        return 2;
    }
    int cpus = rtb_port()->cpu_count;
    if (!parse_cpus(c->load_cpus, cpus, lp)) {
        fprintf(stderr, "rtbench-agent: --load-cpus '%s': write CPUs 0..%d as a list like "
                "0-2,5\n", c->load_cpus, cpus - 1);
        return 2;
    }
    plan->load = lp;
    if (strcmp(c->cstates, "hold") != 0 && strcmp(c->cstates, "leave") != 0) {
        fprintf(stderr, "rtbench-agent: --cstates '%s': write hold or leave\n", c->cstates);
        return 2;
    }
    posix_cstates(strcmp(c->cstates, "hold") == 0);
    /* The same list syntax as --load-cpus; "all": every CPU. */
    if (c->measure_cpus) {
        bool all = strcmp(c->measure_cpus, "all") == 0;
        if (!parse_cpus(all ? NULL : c->measure_cpus, cpus, &c->measure)) {
            fprintf(stderr, "rtbench-agent: --cpus '%s': write 'all' or CPUs 0..%d as a list "
                    "like 0-2,5\n", c->measure_cpus, cpus - 1);
            return 2;
        }
        opt->cpus = c->measure.cpus;
        opt->ncpus = c->measure.ncpus;
    }
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"trace-marker", required_argument, NULL, OPT_TRACE},
        {"load", required_argument, NULL, OPT_LOAD},
        {"load-cpus", required_argument, NULL, OPT_LOAD_CPUS},
        {"load-threads", required_argument, NULL, OPT_LOAD_THREADS},
        {"cpus", required_argument, NULL, OPT_CPUS},
        {"cstates", required_argument, NULL, OPT_CSTATES},
        {NULL, 0, NULL, 0}};
    /* Not for users: the stress load starts its guardian this way. */
#if RTB_PORT_HAS_LOADS
    if (argc > 1 && strcmp(argv[1], "--load-guard") == 0)
        return rtb_load_guard(argc - 2, argv + 2);
#endif
    static posix_cli cli = {.load = {.text = "none"}, .cstates = "hold"};
    const rtb_cli_port port = {longopts, option, finish, usage, &cli};
    rtb_options opt = RTB_OPTIONS_DEFAULT;
    rtb_plan plan = {0};
    int rc = rtb_parse_options(argc, argv, &port, &opt, &plan);
    if (rc != RTB_CLI_RUN)
        return rc;
    static rtb_stream stream;
    rtb_stream_init(&stream, stdout);
    return rtb_run(&plan, &opt, &stream);
}
