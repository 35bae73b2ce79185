/* SPDX-License-Identifier: Apache-2.0 */
/* The FreeRTOS firmware's entry: the board starts, one task runs the
 * agent (boards/common/agent_main.c), and the scheduler takes over; the
 * runner's exit status ends the program (QEMU's exit code). Also what the
 * shared bare-metal files ask of the kernel (boards/common/firmware.h). */
#include <stdio.h>

#include "FreeRTOS.h"
#include "task.h"

#include "../../core/rtb.h"
#include "freertos_port.h"

void rtb_os_lock(void)
{
    if (xTaskGetSchedulerState() != taskSCHEDULER_NOT_STARTED)
        vTaskSuspendAll();
}

void rtb_os_unlock(void)
{
    if (xTaskGetSchedulerState() != taskSCHEDULER_NOT_STARTED)
        (void)xTaskResumeAll();
}

/* FreeRTOS's FromISR calls yield themselves (portYIELD_FROM_ISR). */
void rtb_os_isr_enter(void) {}
void rtb_os_isr_exit(void) {}

static void agent_task(void *arg)
{
    (void)arg;
    int status = firmware_run_agent();
    firmware_stack_note("rtb-main", RTB_FREERTOS_MAIN_STACK,
                        uxTaskGetStackHighWaterMark(NULL) * sizeof(StackType_t));
    /* The kernel's idle task (its stack is configMINIMAL_STACK_SIZE): what
     * it used, and the run ends if it came within the guard of its end. */
    firmware_stack_note("kernel-idle", configMINIMAL_STACK_SIZE * sizeof(StackType_t),
                        uxTaskGetStackHighWaterMark(xTaskGetIdleTaskHandle()) *
                            sizeof(StackType_t));
    firmware_stack_report();
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
