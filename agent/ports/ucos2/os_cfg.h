/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Derived from Cfg/Template/os_cfg.h of uC/OS-II v2.93.01
 * (github.com/weston-embedded/uC-OS2), Copyright 1992-2021 Silicon
 * Laboratories Inc., licensed under the Apache License, Version 2.0.
 * Modified by rtbench: written anew with the values of the rtbench port
 * (the template's comments are not repeated; the values that differ from
 * the template say why).
 */
#ifndef OS_CFG_H
#define OS_CFG_H

#define OS_APP_HOOKS_EN 1u /* the tick hook keeps the timestamp's wraps seen (firmware.c) */
#define OS_ARG_CHK_EN 1u
#define OS_CPU_HOOKS_EN 1u
/* The interrupts' stack once the kernel runs (os_cpu.h's default is 256
 * words): 104 bytes used at most in the quick suite (IRQ-SUS; noted as
 * `kernel-isr`, the firmware's guard ends the run near its end), so 384,
 * not 1 KiB (issue 22: static RAM is in every case's 64 KiB). */
#define OS_CPU_EXCEPT_STK_SIZE 96u
#define OS_DEBUG_EN 0u
#define OS_EVENT_MULTI_EN 0u
#define OS_EVENT_NAME_EN 0u

/* One task per priority: 16 mutex ceilings above rtbench's 99 priorities,
 * a "normal" one below them, idle (ports/ucos2/ucos2_port.h). */
#define OS_LOWEST_PRIO 122u

/* Static tables, sized to the agent (28 bytes an event, 52 a task): each
 * of the port's 40 thread slots (RTB_UCOS2_THREADS, port.c) holds a
 * done-semaphore, each of the 8 queues two events, 40 left for the
 * cases' mutexes and semaphores (160 before: the same sum for 104 slots,
 * one per priority, when no case runs more than 33). A full table makes
 * OSSemCreate/OSMutexCreate/OSQCreate return NULL and OSTaskCreateExt
 * OS_ERR_TASK_NO_MORE_TCB: the port returns RTB_ENOMEM for both. */
#define OS_MAX_EVENTS 96u
#define OS_MAX_FLAGS 1u
#define OS_MAX_MEM_PART 1u
#define OS_MAX_QS 8u
#define OS_MAX_TASKS 41u /* the 40 thread slots and the agent's main task */

#define OS_SCHED_LOCK_EN 1u
#define OS_TICK_STEP_EN 0u
#define OS_TICKS_PER_SEC 1000u /* as the other RTOS ports: the kernels compare */
#define OS_TLS_TBL_SIZE 0u

#define OS_TASK_TMR_STK_SIZE 128u
#define OS_TASK_STAT_STK_SIZE 128u
#define OS_TASK_IDLE_STK_SIZE 128u

#define OS_TASK_CHANGE_PRIO_EN 1u
#define OS_TASK_CREATE_EN 0u
#define OS_TASK_CREATE_EXT_EN 1u
#define OS_TASK_DEL_EN 1u
#define OS_TASK_NAME_EN 0u
#define OS_TASK_PROFILE_EN 0u
#define OS_TASK_QUERY_EN 0u
#define OS_TASK_REG_TBL_SIZE 0u
#define OS_TASK_STAT_EN 0u /* no statistics task among the cases' */
#define OS_TASK_STAT_STK_CHK_EN 1u /* OSTaskStkChk: the threads' high-water marks */
#define OS_TASK_SUSPEND_EN 1u
#define OS_TASK_SW_HOOK_EN 1u

#define OS_FLAG_EN 0u
#define OS_FLAG_ACCEPT_EN 0u
#define OS_FLAG_DEL_EN 0u
#define OS_FLAG_NAME_EN 0u
#define OS_FLAG_QUERY_EN 0u
#define OS_FLAG_WAIT_CLR_EN 0u
#define OS_FLAGS_NBITS 16u

#define OS_MBOX_EN 0u
#define OS_MBOX_ACCEPT_EN 0u
#define OS_MBOX_DEL_EN 0u
#define OS_MBOX_PEND_ABORT_EN 0u
#define OS_MBOX_POST_EN 0u
#define OS_MBOX_POST_OPT_EN 0u
#define OS_MBOX_QUERY_EN 0u

#define OS_MEM_EN 0u
#define OS_MEM_NAME_EN 0u
#define OS_MEM_QUERY_EN 0u

#define OS_MUTEX_EN 1u
#define OS_MUTEX_ACCEPT_EN 0u
#define OS_MUTEX_DEL_EN 1u
#define OS_MUTEX_QUERY_EN 0u

#define OS_Q_EN 1u
#define OS_Q_ACCEPT_EN 1u
#define OS_Q_DEL_EN 1u
#define OS_Q_FLUSH_EN 0u
#define OS_Q_PEND_ABORT_EN 0u
#define OS_Q_POST_EN 1u
#define OS_Q_POST_FRONT_EN 0u
#define OS_Q_POST_OPT_EN 0u
#define OS_Q_QUERY_EN 0u

#define OS_SEM_EN 1u
#define OS_SEM_ACCEPT_EN 1u
#define OS_SEM_DEL_EN 1u
#define OS_SEM_PEND_ABORT_EN 0u
#define OS_SEM_QUERY_EN 0u
#define OS_SEM_SET_EN 0u

#define OS_TIME_DLY_HMSM_EN 0u
#define OS_TIME_DLY_RESUME_EN 0u
#define OS_TIME_GET_SET_EN 0u
#define OS_TIME_TICK_HOOK_EN 1u

#define OS_TMR_EN 0u
#define OS_TMR_CFG_MAX 16u
#define OS_TMR_CFG_NAME_EN 0u
#define OS_TMR_CFG_WHEEL_SIZE 7u
#define OS_TMR_CFG_TICKS_PER_SEC 10u

#define OS_TRACE_EN 0u
#define OS_TRACE_API_ENTER_EN 0u
#define OS_TRACE_API_EXIT_EN 0u

#endif
