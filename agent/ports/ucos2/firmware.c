/* SPDX-License-Identifier: Apache-2.0 */
/* The uC/OS-II firmware's entry: the board starts, the kernel is
 * initialised, one task (rtb-main) starts the tick and runs the agent
 * (boards/common/agent_main.c); the runner's status ends the program.
 * Also what the shared bare-metal files ask of the kernel
 * (boards/common/firmware.h) and the application hooks the kernel calls
 * (OS_APP_HOOKS_EN). */
#include <stdio.h>

#include "ucos2_port.h"

void rtb_os_lock(void)
{
    if (OSRunning == OS_TRUE && !in_isr())
        OSSchedLock();
}

void rtb_os_unlock(void)
{
    if (OSRunning == OS_TRUE && !in_isr())
        OSSchedUnlock();
}

/* An interrupt that may post: the kernel counts the nesting and switches
 * to a task it readied when the outermost one ends (OSIntExit). */
void rtb_os_isr_enter(void)
{
    OS_CPU_SR cpu_sr;
    OS_ENTER_CRITICAL();
    OSIntEnter();
    OS_EXIT_CRITICAL();
}

void rtb_os_isr_exit(void) { OSIntExit(); }

/* ---- the kernel's application hooks -------------------------------------- */

void App_TaskCreateHook(OS_TCB *ptcb) { (void)ptcb; }
void App_TaskDelHook(OS_TCB *ptcb) { (void)ptcb; }
/* Idle spins here for good, interrupts open. uC/OS-II's idle loop counts
 * inside a critical section (OSIdleCtr, read only by the statistics task,
 * which this build leaves out), so looping through it held every interrupt
 * back a few instructions at a phase set by all the work before: under
 * QEMU's -icount the tick that ends the runner's alignment came a
 * data-dependent number of instructions late (the hello's run identity
 * moved SEM-SHF's samples by a timestamp step, and a tick across them).
 * A one-instruction loop takes an interrupt when it comes. Not WFI: under
 * -icount sleep=off a board timer's interrupt then came half a period late
 * (IRQ-LAT at 500 us: 508.72 us, half its samples lost). */
void App_TaskIdleHook(void)
{
    for (;;)
        __asm__ volatile("" ::: "memory");
}
void App_TaskReturnHook(OS_TCB *ptcb) { (void)ptcb; }
void App_TaskStatHook(void) {}
void App_TaskSwHook(void) {}
void App_TCBInitHook(OS_TCB *ptcb) { (void)ptcb; }
/* Every tick: the 32-bit timestamp counter's wraps are seen. */
void App_TimeTickHook(void) { (void)board_ts_ticks(); }

static OS_STK main_stack[RTB_UCOS2_MAIN_STACK / sizeof(OS_STK)];
#define MAIN_WORDS (sizeof main_stack / sizeof main_stack[0])

static void agent_task(void *arg)
{
    (void)arg;
    /* The tick starts from the first task, as the port's template says. */
    OS_CPU_SysTickInitFreq(BOARD_CPU_HZ);
    int status = firmware_run_agent();
    OS_STK_DATA d;
    if (OSTaskStkChk(OS_PRIO_SELF, &d) == OS_ERR_NONE)
        firmware_stack_note("rtb-main", sizeof main_stack, d.OSFree * sizeof(OS_STK));
    /* The interrupts' stack (OS_CPU_ExceptStk), which OSInitHookBegin
     * cleared: words still zero from its bottom were never used. */
    size_t isr_free = 0;
    while (isr_free < OS_CPU_EXCEPT_STK_SIZE && OS_CPU_ExceptStk[isr_free] == 0u)
        isr_free++;
    firmware_stack_note("kernel-isr", sizeof OS_CPU_ExceptStk, isr_free * sizeof(OS_STK));
    firmware_stack_report();
    fflush(stdout);
    board_exit(status);
}

static void fatal(const char *what, int code)
{
    char buf[120];
    int n = snprintf(buf, sizeof buf, "\nrtbench-firmware: uC/OS-II %s (error %d)\n", what, code);
    board_write(buf, (size_t)n);
    board_exit(4);
}

int main(void)
{
    board_init();
    setvbuf(stdout, NULL, _IONBF, 0);
    setvbuf(stderr, NULL, _IONBF, 0);
    OSInit();
    INT8U prio = ucos2_prio(RTB_PRIO_MAX - 1);
    INT8U err = OSTaskCreateExt(agent_task, NULL, &main_stack[MAIN_WORDS - 1], prio, prio,
                                main_stack, MAIN_WORDS, NULL,
                                OS_TASK_OPT_STK_CHK | OS_TASK_OPT_STK_CLR);
    if (err != OS_ERR_NONE)
        fatal("OSTaskCreateExt rtb-main", err);
    OSStart();
    return 5; /* the scheduler did not start */
}
