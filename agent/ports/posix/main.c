/* SPDX-License-Identifier: Apache-2.0 */
/* rtbench-agent, the POSIX port's entry point: builds the plan from argv
 * and hands it to the portable runner (core/runner.c).
 *
 *   rtbench-agent [options] CASE[:name=value[:name=value...]] ...
 *   rtbench-agent --list
 *
 * Everything is validated before the first case runs, so a typo costs no
 * measurement time. Exit status: 0 passed, 1 a check failed, 2 usage, 3 a
 * case errored or the watchdog ended the run. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

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
            "  --cpus LIST|all    per-CPU cases (JIT-PER): measure on each of these CPUs at\n"
            "                     once, one series per CPU\n"
            "  --break NS         per-CPU cases: stop at the first latency above NS (a\n"
            "                     `break` record names it; stops the kernel trace)\n"
            "  --progress MS      per-CPU cases: a `progress` record every MS (live figures)\n"
            "  --load SPEC        background load during every case (default none);\n"
            "                     SPEC = KIND[:name=value...][,KIND...], see below\n"
            "  --load-cpus LIST   CPUs for the load threads, e.g. 0-2,5 (default: all)\n"
            "  --load-threads N   threads per load kind (default: one per load CPU)\n"
            "  --dry-run          check the options and cases, run nothing (exit 0 or 2)\n"
#ifdef RTB_TEST_HOOKS
            "  --inject SITE=NS   test builds: inject a fault (yield_delay, give_delay,\n"
            "                     sem_noblock, ref_delay, ignore_stop,\n"
            "                     clock_back, clock_skew, sem_fifo, new_prio, op_delay,\n"
            "                     mutex_nopi, event_delay, line_delay, line_mute,\n"
            "                     stim_skew, sched_nolock)\n"
#endif
    );
    rtb_load_help(f);
}

/* "0-2,5" -> lp->cpus; NULL: every CPU. */
static bool parse_cpus(const char *text, int count, rtb_load_plan *lp)
{
    lp->ncpus = 0;
    if (!text) {
        for (int c = 0; c < count && c < RTB_MAX_CPUS; c++)
            lp->cpus[lp->ncpus++] = c;
        snprintf(lp->cpus_text, sizeof lp->cpus_text, "0-%d", count - 1);
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
        {"cpus", required_argument, NULL, 'A'}, {"break", required_argument, NULL, 'B'},
        {"progress", required_argument, NULL, 'G'},
        {"help", no_argument, NULL, 'h'},       {NULL, 0, NULL, 0}};
    /* Not for users: the stress load starts its guardian this way. */
#if RTB_PORT_HAS_LOADS
    if (argc > 1 && strcmp(argv[1], "--load-guard") == 0)
        return rtb_load_guard(argc - 2, argv + 2);
#endif
    rtb_options opt = RTB_OPTIONS_DEFAULT;
    const char *load_cpus = NULL, *measure_cpus = NULL;
    bool dry_run = false;
    static rtb_load_plan lp = {.text = "none"};
    static rtb_planned run[RTB_MAX_RUN];
    rtb_plan plan = {.cases = run, .load = &lp};
    char err[768];
    int ch;
    while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (ch) {
        case 'l': rtb_list_cases(stdout); return 0;
        case 'c': opt.cpu = atoi(optarg); break;
        case 'p': opt.priority = atoi(optarg); break;
        case 'S': opt.samples = false; break;
        case 'm': opt.max_samples = (size_t)strtoull(optarg, NULL, 10); break;
        case 'd': opt.deadline_slack_ms = strtoll(optarg, NULL, 10); break;
        case 't': plan.trace_marker = optarg; break;
        case 'L': lp.text = optarg; break;
        case 'C': load_cpus = optarg; break;
        case 'T': lp.threads = atoi(optarg); break;
        case 'P': opt.pinned = false; break;
        case 'n': dry_run = true; break;
        case 'A': measure_cpus = optarg; break;
        case 'B': opt.break_ns = strtoll(optarg, NULL, 10); break;
        case 'G': opt.progress_ms = strtoll(optarg, NULL, 10); break;
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
    if (opt.max_samples < 1 || opt.max_samples > RTB_MAX_SAMPLES_LIMIT) {
        fprintf(stderr, "rtbench-agent: --max-samples must be 1..%d\n", RTB_MAX_SAMPLES_LIMIT);
        return 2;
    }
    if (opt.deadline_slack_ms < 100 || opt.deadline_slack_ms > 86400000) {
        fprintf(stderr, "rtbench-agent: --deadline-slack must be 100..86400000 ms\n");
        return 2;
    }
    if (opt.break_ns < 0 || opt.progress_ms < 0 || opt.progress_ms > 86400000) {
        fprintf(stderr, "rtbench-agent: --break must be >= 0 ns, --progress 0..86400000 ms\n");
        return 2;
    }
    if (lp.threads < 0 || lp.threads > 64) {
        fprintf(stderr, "rtbench-agent: --load-threads must be 0..64 (0: one per load CPU)\n");
        return 2;
    }
    if (rtb_load_parse(lp.text, lp.specs, RTB_LOAD_MAX_KINDS, &lp.n, err, sizeof err) != RTB_OK) {
        fprintf(stderr, "rtbench-agent: --load: %s\n", err);
        return 2;
    }
    for (int i = optind; i < argc; i++) {
        if (plan.n == RTB_MAX_RUN) {
            fprintf(stderr, "rtbench-agent: at most %d cases a run\n", RTB_MAX_RUN);
            return 2;
        }
        if (rtb_plan_case(argv[i], &run[plan.n++], err, sizeof err) != RTB_OK) {
            fprintf(stderr, "rtbench-agent: %s\n", err);
            return 2;
        }
    }
    if (plan.n == 0) {
        usage(stderr);
        return 2;
    }
    int cpus = rtb_port()->cpu_count;
    if (rtb_options_resolve(&opt, err, sizeof err) != RTB_OK) {
        fprintf(stderr, "rtbench-agent: --%s\n", err);
        return 2;
    }
    if (!parse_cpus(load_cpus, cpus, &lp)) {
        fprintf(stderr, "rtbench-agent: --load-cpus '%s': write CPUs 0..%d as a list like "
                "0-2,5\n", load_cpus, cpus - 1);
        return 2;
    }
    /* The same list syntax as --load-cpus; "all": every CPU. */
    static rtb_load_plan mp;
    if (measure_cpus) {
        bool all = strcmp(measure_cpus, "all") == 0;
        if (!parse_cpus(all ? NULL : measure_cpus, cpus, &mp)) {
            fprintf(stderr, "rtbench-agent: --cpus '%s': write 'all' or CPUs 0..%d as a list "
                    "like 0-2,5\n", measure_cpus, cpus - 1);
            return 2;
        }
        opt.cpus = mp.cpus;
        opt.ncpus = mp.ncpus;
    }
    if (dry_run)
        return 0;
    static rtb_stream stream;
    rtb_stream_init(&stream, stdout);
    return rtb_run(&plan, &opt, &stream);
}
