/* SPDX-License-Identifier: Apache-2.0 */
/* The FreeRTOS port's own sizes and internal functions. */
#ifndef RTB_FREERTOS_PORT_H
#define RTB_FREERTOS_PORT_H

#include <stddef.h>

#include "firmware.h"
#include "rtb_port_config.h"

/* Object pools (static: the kernel has no heap). */
#define RTB_FREERTOS_THREADS 1040 /* THR-SW: 1000 threads in turn */
#define RTB_FREERTOS_MUTEXES 16
#define RTB_FREERTOS_QUEUES 8
#define RTB_FREERTOS_EVENTS 4
/* Stacks of case threads, from one arena. Cases ask for up to 64 KiB (a
 * POSIX thread's stack costs nothing until touched) but their threads use
 * under 256 bytes (measured: bench/bench_freertos.py); a thread here gets
 * at most RTB_FREERTOS_MAX_STACK, and FreeRTOS's overflow check (method 2)
 * ends the run with a message if that was too little. */
#define RTB_FREERTOS_MAX_STACK RTB_THREAD_STACK
#define RTB_FREERTOS_DEFAULT_STACK RTB_THREAD_STACK
#define RTB_FREERTOS_STACK_ARENA (RTB_FREERTOS_THREADS * RTB_FREERTOS_MAX_STACK)
#define RTB_FREERTOS_QUEUE_ARENA (64 * 1024)
/* Bulk memory (mps2-an385: PSRAM), not cleared at start. */
#define RTB_BULK __attribute__((section(".psram")))
/* The task that runs the agent's plan: the runner's and the cases' own
 * frames, at most 4,816 bytes in the quick suite (JIT-PER, CLK-DUR,
 * THR-NEW; a check's detail is formatted into the record's body, IRQ-SUS's
 * search kept in its case memory); bench/bench_rtos.py prints each case's
 * high-water mark. 6.5 KiB: over a third more, as the case threads' stacks
 * have; the run ends loudly when it comes within 16 bytes of the end. */
#define RTB_FREERTOS_MAIN_STACK (6656)

#endif
