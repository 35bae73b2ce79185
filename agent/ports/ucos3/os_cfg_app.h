/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Derived from Cfg/Template/os_cfg_app.h of uC/OS-III v3.08.02
 * (github.com/weston-embedded/uC-OS3), Copyright 2009-2022 Silicon
 * Laboratories Inc., licensed under the Apache License, Version 2.0.
 * Modified by rtbench: written anew with the values of the rtbench port
 * (the template's comments are not repeated; the values that differ
 * from the template say why).
 */
#ifndef OS_CFG_APP_H
#define OS_CFG_APP_H

/* Interrupts run the cases' handlers (a stamp, a semaphore post; nothing
 * prints there): 180 bytes used at most in the quick suite (IRQ-SUS's
 * nested timer and tick; firmware.c notes it as kernel-isr, and the run
 * ends within 16 bytes of its end). 512 bytes, not 2 KiB nor 1 (issue 22:
 * static RAM is in every case's 64 KiB). */
#define OS_CFG_ISR_STK_SIZE 128u
/* Messages of every queue at once (12 bytes each in .bss): a case's live
 * queues hold 10 at most (MQ-SEND's; TM-MSG's 4); rtb_queue_create
 * refuses a queue past the pool (sync.c). 64, not 256: 2.3 KiB of a
 * board's RAM (issue 22). */
#define OS_CFG_MSG_POOL_SIZE 64u
#define OS_CFG_TASK_STK_LIMIT_PCT_EMPTY 10u
#define OS_CFG_IDLE_TASK_STK_SIZE 128u
#define OS_CFG_STAT_TASK_PRIO ((OS_PRIO)(OS_CFG_PRIO_MAX - 2u))
#define OS_CFG_STAT_TASK_RATE_HZ 10u
#define OS_CFG_STAT_TASK_STK_SIZE 100u
#define OS_CFG_TICK_RATE_HZ 1000u /* as the FreeRTOS port: the kernels compare */
#define OS_CFG_TMR_TASK_PRIO ((OS_PRIO)(OS_CFG_PRIO_MAX - 3u))
#define OS_CFG_TMR_TASK_STK_SIZE 128u
#define OS_CFG_TMR_TASK_RATE_HZ 10u

#endif
