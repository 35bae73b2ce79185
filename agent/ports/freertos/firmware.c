/* SPDX-License-Identifier: Apache-2.0 */
/* The firmware's entry: the board starts, one task builds the plan and
 * hands it to the portable runner (rtb_run), and the scheduler takes over.
 * The plan comes from the host as a command line (semihosting's
 * SYS_GET_CMDLINE: QEMU's -semihosting-config arg=...), in the POSIX
 * agent's syntax; a board without a host to ask runs the plan built in
 * (RTB_FIRMWARE_ARGS). The stream goes out of the console UART and the
 * runner's exit status ends the program (QEMU's exit code). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "FreeRTOS.h"
#include "task.h"

#include "../../core/rtb.h"
#include "freertos_port.h"

#ifndef RTB_FIRMWARE_ARGS
#define RTB_FIRMWARE_ARGS "--no-samples SEM-SHF"
#endif
#define MAX_ARGS (RTB_MAX_RUN + 16)

static char cmdline[4096];
static char *args[MAX_ARGS + 1];

static int split(char *line, char **argv, int cap)
{
    int n = 0;
    for (char *p = strtok(line, " \t\r\n"); p && n < cap; p = strtok(NULL, " \t\r\n"))
        argv[n++] = p;
    argv[n] = NULL;
    return n;
}

static int usage(void)
{
    fprintf(stderr, "usage: rtbench-agent [--priority P] [--no-samples] [--max-samples N]\n"
                    "       [--deadline-slack MS] [--dry-run] [--inject SITE=NS] CASE[:k=v...]...\n"
                    "       rtbench-agent --list\n");
    return 2;
}

/* The POSIX agent's options that mean something on one CPU without a
 * file system; the others are refused by name. */
static int agent_main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"list", no_argument, NULL, 'l'},           {"cpu", required_argument, NULL, 'c'},
        {"priority", required_argument, NULL, 'p'}, {"no-samples", no_argument, NULL, 'S'},
        {"max-samples", required_argument, NULL, 'm'},
        {"inject", required_argument, NULL, 'i'},
        {"deadline-slack", required_argument, NULL, 'd'},
        {"load", required_argument, NULL, 'L'},     {"no-pin", no_argument, NULL, 'P'},
        {"dry-run", no_argument, NULL, 'n'},        {"break", required_argument, NULL, 'B'},
        {"progress", required_argument, NULL, 'G'}, {NULL, 0, NULL, 0}};
    rtb_options opt = RTB_OPTIONS_DEFAULT;
    rtb_plan plan = {0};
    static char err[768];
    bool dry_run = false;
    int ch;
    optind = 0; /* newlib: 0 starts a fresh scan (1 skips its initialisation) */
    while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (ch) {
        case 'l': rtb_list_cases(stdout); return 0;
        case 'c': opt.cpu = atoi(optarg); break;
        case 'p': opt.priority = atoi(optarg); break;
        case 'S': opt.samples = false; break;
        case 'm': opt.max_samples = (size_t)strtoul(optarg, NULL, 10); break;
        case 'd': opt.deadline_slack_ms = strtoll(optarg, NULL, 10); break;
        case 'P': opt.pinned = false; break;
        case 'n': dry_run = true; break;
        case 'B': opt.break_ns = strtoll(optarg, NULL, 10); break;
        case 'G': opt.progress_ms = strtoll(optarg, NULL, 10); break;
        case 'L':
            if (strcmp(optarg, "none") != 0) {
                fprintf(stderr, "rtbench-agent: --load %s: this port runs cases under no "
                                "background load (--load none)\n", optarg);
                return 2;
            }
            break;
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
        default: return usage();
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
    if (argc - optind > RTB_MAX_RUN) {
        fprintf(stderr, "rtbench-agent: at most %d cases a run\n", RTB_MAX_RUN);
        return 2;
    }
    /* As many planned cases as asked (one is 1.6 KiB): from the heap, once,
     * before anything is measured, rather than RTB_MAX_RUN of them in RAM. */
    rtb_planned *run = calloc((size_t)(argc - optind) + 1, sizeof *run);
    if (!run) {
        fprintf(stderr, "rtbench-agent: no memory for %d planned cases\n", argc - optind);
        return 2;
    }
    plan.cases = run;
    for (int i = optind; i < argc; i++) {
        if (rtb_plan_case(argv[i], &run[plan.n++], err, sizeof err) != RTB_OK) {
            fprintf(stderr, "rtbench-agent: %s\n", err);
            return 2;
        }
    }
    if (plan.n == 0)
        return usage();
    if (rtb_options_resolve(&opt, err, sizeof err) != RTB_OK) {
        fprintf(stderr, "rtbench-agent: --%s\n", err);
        return 2;
    }
    if (dry_run)
        return 0;
    static rtb_stream stream;
    rtb_stream_init(&stream, stdout);
    return rtb_run(&plan, &opt, &stream);
}

static void agent_task(void *arg)
{
    (void)arg;
    size_t len = board_cmdline(cmdline, sizeof cmdline);
    int argc = len ? split(cmdline, args, MAX_ARGS) : 0;
    if (argc < 2) {
        /* No arguments besides a program name: the built-in plan. */
        snprintf(cmdline, sizeof cmdline, "rtbench-agent %s", RTB_FIRMWARE_ARGS);
        argc = split(cmdline, args, MAX_ARGS);
    }
    int status = agent_main(argc, args);
    freertos_stack_note("rtb-main", RTB_FREERTOS_MAIN_STACK,
                        uxTaskGetStackHighWaterMark(NULL) * sizeof(StackType_t));
    freertos_stack_report();
    fflush(stdout);
    board_exit(status);
}

int main(void)
{
    static StaticTask_t tcb;
    static StackType_t stack[RTB_FREERTOS_MAIN_STACK / sizeof(StackType_t)];
    board_init();
    /* Unbuffered: every record leaves the UART as it is written. */
    setvbuf(stdout, NULL, _IONBF, 0);
    setvbuf(stderr, NULL, _IONBF, 0);
    xTaskCreateStatic(agent_task, "rtb-main", sizeof stack / sizeof stack[0], NULL,
                      RTB_PRIO_MAX - 1, stack, &tcb);
    vTaskStartScheduler();
    return 5; /* the scheduler did not start */
}
