/* SPDX-License-Identifier: Apache-2.0 */
/* The firmware's entry: the board starts, one task builds the plan and
 * hands it to the portable runner (rtb_run), and the scheduler takes over.
 * The plan comes from the host as a command line (semihosting's
 * SYS_GET_CMDLINE: QEMU's -semihosting-config arg=...), in the POSIX
 * agent's syntax; a board without a host to ask runs the plan built in
 * (RTB_FIRMWARE_ARGS). The stream goes out of the console UART and the
 * runner's exit status ends the program (QEMU's exit code). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "FreeRTOS.h"
#include "task.h"

#include "../../core/options.h"
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

/* The port's own option: a run-wide load is "none" only (ports/freertos/load.c
 * has the cases' kernel load, no counterpart of the POSIX kinds). */
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
