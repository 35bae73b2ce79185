/* SPDX-License-Identifier: Apache-2.0 */
/* The firmware's agent, whatever the kernel: the plan comes from the host
 * as a command line (semihosting's SYS_GET_CMDLINE: QEMU's
 * -semihosting-config arg=...), in the POSIX agent's syntax; a board
 * without a host to ask runs the plan built in (RTB_FIRMWARE_ARGS). The
 * stream goes out of the console UART; the port's first task calls this
 * and ends the program with the status it returns. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/options.h"
#include "../../core/rtb.h"
#include "firmware.h"

#ifndef RTB_FIRMWARE_ARGS
#define RTB_FIRMWARE_ARGS "--no-samples SEM-SHF"
#endif
#define MAX_ARGS (RTB_MAX_RUN + 16)

/* The line holds the run's plan (the quick suite in one boot: 1.1 KB); a
 * longer one ends the run with an error, never the built-in plan. */
#define CMDLINE_CAP 2048
static char cmdline[CMDLINE_CAP];
static char *args[MAX_ARGS + 1];

static int split(char *line, char **argv, int cap)
{
    int n = 0;
    for (char *p = strtok(line, " \t\r\n"); p && n < cap; p = strtok(NULL, " \t\r\n"))
        argv[n++] = p;
    argv[n] = NULL;
    return n;
}

/* The ports' own option: a run-wide load is "none" only (a port's kernel
 * load serves the cases that start one; no counterpart of the POSIX kinds). */
enum { OPT_LOAD = RTB_CLI_PORT_CODE };

static int option(void *ctx, int code, const char *arg, rtb_plan *plan)
{
    (void)ctx, (void)plan;
    if (code == OPT_LOAD && strcmp(arg, "none") == 0)
        return 0;
    fprintf(stderr, "rtbench-agent: --load %s: this port runs cases under no "
                    "background load (--load none)\n", arg);
    return 2;
}

static void usage(FILE *f) { fprintf(f, "  --load none        the only run-wide load here\n"); }

static int agent_main(int argc, char **argv)
{
    static const struct option longopts[] = {{"load", required_argument, NULL, OPT_LOAD},
                                             {NULL, 0, NULL, 0}};
    const rtb_cli_port port = {longopts, option, NULL, usage, NULL};
    rtb_options opt = RTB_OPTIONS_DEFAULT;
    rtb_plan plan = {0};
    int rc = rtb_parse_options(argc, argv, &port, &opt, &plan);
    if (rc != RTB_CLI_RUN)
        return rc;
    static rtb_stream stream;
    rtb_stream_init(&stream, stdout);
    return rtb_run(&plan, &opt, &stream);
}

int firmware_run_agent(void)
{
    size_t len = board_cmdline(cmdline, sizeof cmdline);
    if (len == SIZE_MAX) {
        fprintf(stderr, "rtbench-agent: the host's command line did not fit this firmware's "
                        "%d bytes (SYS_GET_CMDLINE refused it): plan fewer cases a boot\n",
                CMDLINE_CAP);
        return 2;
    }
    int argc = len ? split(cmdline, args, MAX_ARGS) : 0;
    if (argc < 2) {
        /* No arguments besides a program name: the built-in plan. */
        snprintf(cmdline, sizeof cmdline, "rtbench-agent %s", RTB_FIRMWARE_ARGS);
        argc = split(cmdline, args, MAX_ARGS);
    }
    return agent_main(argc, args);
}
