/* SPDX-License-Identifier: Apache-2.0 */
/* FreeRTOS configuration of the rtbench agent: static allocation only (no
 * heap in the kernel), preemptive fixed priorities, one FreeRTOS priority
 * per rtbench priority (0 is the idle task, 1..99 are rtbench's own, so the
 * mapping is the identity and strictly monotonic). */
#ifndef FREERTOS_CONFIG_H
#define FREERTOS_CONFIG_H

#define configCPU_CLOCK_HZ 25000000UL /* SysTick runs at the 25 MHz system clock */
#define configTICK_RATE_HZ 1000
#define configUSE_PREEMPTION 1
/* Off: a thread created round-robin is sliced by the port's tick hook,
 * the others run until they block or yield (SCHED_FIFO's rule). */
#define configUSE_TIME_SLICING 0
#define configUSE_PORT_OPTIMISED_TASK_SELECTION 0 /* 100 priorities: above its 32 */
#define configMAX_PRIORITIES 100
/* The idle task's stack, and nothing else's (no timer task; the port
 * sizes its own): 256 bytes, not 1 KiB. It uses 80 (a context and an
 * exception frame: it calls nothing else) in every quick-suite case
 * (bench/bench_rtos.py's kernel_idle_stack_used); the kernel's overflow
 * check and the firmware's stack note end the run if it ever comes near. */
#define configMINIMAL_STACK_SIZE 64 /* words */
#define configMAX_TASK_NAME_LEN 16
#define configTICK_TYPE_WIDTH_IN_BITS TICK_TYPE_WIDTH_32_BITS
#define configIDLE_SHOULD_YIELD 1
#define configUSE_TASK_NOTIFICATIONS 1
#define configUSE_MUTEXES 1
#define configUSE_RECURSIVE_MUTEXES 0
#define configUSE_COUNTING_SEMAPHORES 1
#define configQUEUE_REGISTRY_SIZE 0
#define configUSE_QUEUE_SETS 0
#define configUSE_NEWLIB_REENTRANT 0
#define configENABLE_BACKWARD_COMPATIBILITY 0
#define configNUM_THREAD_LOCAL_STORAGE_POINTERS 1 /* the port's thread slot */

#define configSUPPORT_STATIC_ALLOCATION 1
#define configSUPPORT_DYNAMIC_ALLOCATION 0
#define configKERNEL_PROVIDED_STATIC_MEMORY 1

#define configUSE_IDLE_HOOK 0
#define configUSE_TICK_HOOK 1 /* keeps the 32-bit timestamp counter's wraps seen */
#define configCHECK_FOR_STACK_OVERFLOW 2
#define configUSE_MALLOC_FAILED_HOOK 0
#define configUSE_TRACE_FACILITY 1
#define configUSE_STATS_FORMATTING_FUNCTIONS 0
#define configGENERATE_RUN_TIME_STATS 0
#define configUSE_CO_ROUTINES 0
#define configUSE_TIMERS 0
#define configUSE_EVENT_GROUPS 0
#define configUSE_STREAM_BUFFERS 0

/* Cortex-M3 in QEMU: 3 priority bits (as on ARM's MPS2 FPGA images). */
#define configPRIO_BITS 3
#define configKERNEL_INTERRUPT_PRIORITY (7 << (8 - configPRIO_BITS))
/* Handlers at this level or below (numerically higher) may call FromISR. */
#define configMAX_SYSCALL_INTERRUPT_PRIORITY (5 << (8 - configPRIO_BITS))

#define INCLUDE_vTaskPrioritySet 1
#define INCLUDE_uxTaskPriorityGet 1
#define INCLUDE_vTaskDelete 1
#define INCLUDE_vTaskSuspend 1
#define INCLUDE_xTaskDelayUntil 1
#define INCLUDE_vTaskDelay 1
#define INCLUDE_xTaskGetSchedulerState 1
#define INCLUDE_xTaskGetCurrentTaskHandle 1
#define INCLUDE_uxTaskGetStackHighWaterMark 1
#define INCLUDE_xTaskGetIdleTaskHandle 1 /* its stack noted at the end (firmware.c) */
#define INCLUDE_eTaskGetState 1
#define INCLUDE_xTaskAbortDelay 1

/* The board's vector table names the kernel's handlers as CMSIS does. */
#define vPortSVCHandler SVC_Handler
#define xPortPendSVHandler PendSV_Handler
#define xPortSysTickHandler SysTick_Handler

void rtb_freertos_assert(const char *file, int line);
#define configASSERT(x)                                                                    \
    do {                                                                                   \
        if (!(x))                                                                          \
            rtb_freertos_assert(__FILE__, __LINE__);                                       \
    } while (0)

#endif
