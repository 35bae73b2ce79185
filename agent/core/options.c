/* SPDX-License-Identifier: Apache-2.0 */
/* The options every port's agent takes (options.h). Everything is validated
 * before the first case runs, so a typo costs no measurement time. */
#include <stdlib.h>
#include <string.h>

#include "options.h"

static const struct option common[] = {
    {"list", no_argument, NULL, 'l'},           {"cpu", required_argument, NULL, 'c'},
    {"priority", required_argument, NULL, 'p'}, {"no-samples", no_argument, NULL, 'S'},
    {"max-samples", required_argument, NULL, 'm'},
    {"inject", required_argument, NULL, 'i'},
    {"deadline-slack", required_argument, NULL, 'd'},
    {"no-pin", no_argument, NULL, 'P'},         {"dry-run", no_argument, NULL, 'n'},
    {"break", required_argument, NULL, 'B'},    {"progress", required_argument, NULL, 'G'},
    {"run-id", required_argument, NULL, 'R'},   {"help", no_argument, NULL, 'h'}};
#define NCOMMON ((int)(sizeof common / sizeof common[0]))

static void usage(FILE *f, const rtb_cli_port *port)
{
    fprintf(f,
            "usage: rtbench-agent [options] CASE[:name=value[,value...][:name=value...]] ...\n"
            "       rtbench-agent --list\n"
            "options:\n"
            "  --cpu N            measurement CPU (default: the last one the process may\n"
            "                     run on: taskset, cpusets)\n"
            "  --priority P       base real-time priority of case threads (default 80)\n"
            "  --no-samples       histograms and summaries only, no raw samples\n"
            "  --max-samples N    samples buffered per series (default %lu)\n"
            "  --deadline-slack MS  added to each case's hard deadline (default 20000)\n"
            "  --no-pin           do not pin case threads to the measurement CPU\n"
            "  --break NS         per-CPU cases: stop at the first latency above NS (a\n"
            "                     `break` record names it; stops the kernel trace)\n"
            "  --progress MS      per-CPU cases: a `progress` record every MS (live figures)\n"
            "  --dry-run          check the options and cases, run nothing (exit 0 or 2)\n"
            "  --run-id ID        the run's identity, echoed in the hello record (the host\n"
            "                     makes one: a UUID)\n"
#ifdef RTB_TEST_HOOKS
            "  --inject SITE=NS   test builds: inject a fault (yield_delay, give_delay,\n"
            "                     sem_noblock, ref_delay, ignore_stop,\n"
            "                     clock_back, clock_skew, sem_fifo, new_prio, op_delay,\n"
            "                     mutex_nopi, event_delay, line_delay, line_mute,\n"
            "                     stim_skew, sched_nolock, stall, wake_delay,\n"
            "                     hw_stall, thread_stack, series_buffer,\n"
            "                     stamp_block, wake_late, io_hold, load_hold)\n"
#endif
            ,
            (unsigned long)RTB_MAX_SAMPLES_DEFAULT);
    if (port && port->usage)
        port->usage(f);
}

static int bad(const char *msg)
{
    fprintf(stderr, "rtbench-agent: %s\n", msg);
    return 2;
}

/* The identity goes into the hello record as it is: nothing that would need
 * escaping, and short (a UUID is 36 characters). */
static bool run_id_ok(const char *id)
{
    size_t n = strlen(id);
    if (n < 1 || n > 64)
        return false;
    for (const char *p = id; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
              *p == '-'))
            return false;
    return true;
}

static int check(const rtb_options *opt)
{
    static char msg[128];
    if (opt->priority < 1 || opt->priority > RTB_PRIO_MAX - 2) {
        snprintf(msg, sizeof msg, "--priority must be 1..%d", RTB_PRIO_MAX - 2);
        return bad(msg);
    }
    if (opt->max_samples < 1 || opt->max_samples > RTB_MAX_SAMPLES_LIMIT) {
        snprintf(msg, sizeof msg, "--max-samples must be 1..%lu",
                 (unsigned long)RTB_MAX_SAMPLES_LIMIT);
        return bad(msg);
    }
    if (opt->deadline_slack_ms < 100 || opt->deadline_slack_ms > 86400000)
        return bad("--deadline-slack must be 100..86400000 ms");
    if (opt->break_ns < 0 || opt->progress_ms < 0 || opt->progress_ms > 86400000)
        return bad("--break must be >= 0 ns, --progress 0..86400000 ms");
    return 0;
}

int rtb_parse_options(int argc, char **argv, const rtb_cli_port *port, rtb_options *opt,
                      rtb_plan *plan)
{
    /* The common options and the port's in one table (static: no stack). */
    static struct option all[NCOMMON + RTB_CLI_MAX_PORT_OPTS + 1];
    static char err[768];
    int n = 0;
    for (; n < NCOMMON; n++)
        all[n] = common[n];
    for (const struct option *o = port ? port->longopts : NULL; o && o->name; o++) {
        if (n == NCOMMON + RTB_CLI_MAX_PORT_OPTS)
            return bad("too many port options (RTB_CLI_MAX_PORT_OPTS)");
        all[n++] = *o;
    }
    all[n] = (struct option){0};

    bool dry_run = false;
    int ch;
    optind = 0; /* a fresh scan (glibc and newlib): the parser may run more than once */
    while ((ch = getopt_long(argc, argv, "h", all, NULL)) != -1) {
        switch (ch) {
        case 'l': rtb_list_cases(stdout); return 0;
        case 'c': opt->cpu = atoi(optarg); break;
        case 'p': opt->priority = atoi(optarg); break;
        case 'S': opt->samples = false; break;
        case 'm': opt->max_samples = (size_t)strtoull(optarg, NULL, 10); break;
        case 'd': opt->deadline_slack_ms = strtoll(optarg, NULL, 10); break;
        case 'P': opt->pinned = false; break;
        case 'n': dry_run = true; break;
        case 'B': opt->break_ns = strtoll(optarg, NULL, 10); break;
        case 'G': opt->progress_ms = strtoll(optarg, NULL, 10); break;
        case 'R':
            if (!run_id_ok(optarg))
                return bad("--run-id must be 1..64 letters, digits and '-' (a UUID)");
            opt->run_id = optarg;
            break;
        case 'i':
#ifdef RTB_TEST_HOOKS
            if (rtb_inject_set(optarg) != RTB_OK) {
                fprintf(stderr, "rtbench-agent: bad --inject '%s'\n", optarg);
                return 2;
            }
            break;
#else
            return bad("--inject needs a test build (RTB_TEST_HOOKS)");
#endif
        case 'h': usage(stdout, port); return 0;
        default:
            if (ch >= RTB_CLI_PORT_CODE && port && port->option) {
                int rc = port->option(port->ctx, ch, optarg, plan);
                if (rc)
                    return rc;
                break;
            }
            usage(stderr, port);
            return 2;
        }
    }
    int rc = check(opt);
    if (rc)
        return rc;
    int ncases = argc - optind;
    if (ncases > RTB_MAX_RUN) {
        snprintf(err, sizeof err, "at most %d cases a run", RTB_MAX_RUN);
        return bad(err);
    }
    if (ncases == 0) {
        usage(stderr, port);
        return 2;
    }
    /* As many planned cases as asked (one is over a KiB): rather than
     * RTB_MAX_RUN of them in RAM for the whole run. */
    static rtb_planned *run; /* reachable until exit: the run uses it to the end */
    free(run);
    run = calloc((size_t)ncases, sizeof *run);
    if (!run) {
        snprintf(err, sizeof err, "no memory for %d planned cases", ncases);
        return bad(err);
    }
    plan->cases = run;
    plan->n = 0;
    for (int i = optind; i < argc; i++)
        if (rtb_plan_case(argv[i], &run[plan->n++], err, sizeof err) != RTB_OK)
            return bad(err);
    if (rtb_options_resolve(opt, err, sizeof err) != RTB_OK) {
        fprintf(stderr, "rtbench-agent: --%s\n", err);
        return 2;
    }
    if (port && port->finish && (rc = port->finish(port->ctx, opt, plan)) != 0)
        return rc;
    return dry_run ? 0 : RTB_CLI_RUN;
}
