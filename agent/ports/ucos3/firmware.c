/* SPDX-License-Identifier: Apache-2.0 */
/* The uC/OS-III firmware's entry: the board starts, the kernel is
 * initialised, one task (rtb-main) starts the tick and runs the agent
 * (boards/common/agent_main.c); the runner's status ends the program.
 * Also what the shared bare-metal files ask of the kernel
 * (boards/common/firmware.h). */
#include <stdio.h>

#include "ucos3_port.h"

void rtb_os_lock(void)
{
    OS_ERR err;
    if (OSRunning == OS_STATE_OS_RUNNING && !in_isr())
        OSSchedLock(&err);
}

void rtb_os_unlock(void)
{
    OS_ERR err;
    if (OSRunning == OS_STATE_OS_RUNNING && !in_isr())
        OSSchedUnlock(&err);
}

/* An interrupt that may post: the kernel counts the nesting and switches
 * to a task it readied when the outermost one ends (OSIntExit). */
void rtb_os_isr_enter(void)
{
    CPU_SR_ALLOC();
    CPU_CRITICAL_ENTER();
    OSIntEnter();
    CPU_CRITICAL_EXIT();
}

void rtb_os_isr_exit(void) { OSIntExit(); }

/* Every tick: the 32-bit timestamp counter's wraps are seen. */
static void tick_hook(void) { (void)board_ts_ticks(); }

static OS_TCB main_tcb;
static CPU_STK main_stack[RTB_UCOS3_MAIN_STACK / sizeof(CPU_STK)];

static void agent_task(void *arg)
{
    (void)arg;
    /* The tick starts from the first task (v3.08.02 has no BSP tick). */
    OS_CPU_SysTickInitFreq(BOARD_CPU_HZ);
    int status = firmware_run_agent();
    CPU_STK_SIZE free_words = 0, used_words = 0;
    OS_ERR err;
    OSTaskStkChk(NULL, &free_words, &used_words, &err);
    if (err == OS_ERR_NONE)
        firmware_stack_note("rtb-main", sizeof main_stack, free_words * sizeof(CPU_STK));
    /* The interrupts' stack, which OSInit cleared: words still zero from its
     * bottom were never used (the kernel's own statistic task counts so). */
    CPU_STK_SIZE isr_free = 0;
    while (isr_free < OSCfg_ISRStkSize && OSCfg_ISRStkBasePtr[isr_free] == 0u)
        isr_free++;
    firmware_stack_note("kernel-isr", OSCfg_ISRStkSizeRAM, isr_free * sizeof(CPU_STK));
    firmware_stack_report();
    fflush(stdout);
    board_exit(status);
}

void ucos3_fatal(const char *what, int code);
void ucos3_fatal(const char *what, int code)
{
    CPU_IntDis();
    char buf[120];
    int n = snprintf(buf, sizeof buf, "\nrtbench-firmware: uC/OS-III %s (error %d)\n", what, code);
    board_write(buf, (size_t)n);
    board_exit(4);
}

int main(void)
{
    OS_ERR err;
    board_init();
    /* Unbuffered: every record leaves the UART as it is written. */
    setvbuf(stdout, NULL, _IONBF, 0);
    setvbuf(stderr, NULL, _IONBF, 0);
    CPU_Init();
    OSInit(&err);
    if (err != OS_ERR_NONE)
        ucos3_fatal("OSInit", err);
    OS_AppTimeTickHookPtr = tick_hook;
    /* Round robin on, for the threads created with it (a thread created
     * without gets a slice no run reaches: port.c). */
    OSSchedRoundRobinCfg(DEF_ENABLED, 1, &err);
    OSTaskCreate(&main_tcb, "rtb-main", agent_task, NULL, ucos_prio(RTB_PRIO_MAX - 1), main_stack,
                 sizeof main_stack / sizeof main_stack[0] / 10, sizeof main_stack / sizeof main_stack[0],
                 0, 0xFFFFFFFFu, NULL, OS_OPT_TASK_STK_CHK | OS_OPT_TASK_STK_CLR, &err);
    if (err != OS_ERR_NONE)
        ucos3_fatal("OSTaskCreate rtb-main", err);
    OSStart(&err);
    return 5; /* the scheduler did not start */
}
