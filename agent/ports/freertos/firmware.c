/* SPDX-License-Identifier: Apache-2.0 */
/* The firmware's entry: the board starts, one task runs the agent with the
 * run's arguments and the scheduler takes over. The arguments come from
 * the host (semihosting: QEMU's -semihosting-config arg=...); a board
 * without a host to ask runs the plan built in (RTB_FIRMWARE_ARGS). The
 * stream goes out of the console UART; the agent's exit status ends the
 * program (QEMU's exit code). */
#include <stdio.h>
#include <string.h>

#include "FreeRTOS.h"
#include "task.h"

#include "../../core/rtb.h"
#include "freertos_port.h"

#ifndef RTB_FIRMWARE_ARGS
#define RTB_FIRMWARE_ARGS "--no-samples SEM-SHF"
#endif
#define MAX_ARGS 96

int rtb_agent_main(int argc, char **argv); /* core/main.c's main */

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
    int status = rtb_agent_main(argc, args);
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
