/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Derived from Cfg/Template/os_cfg.h of uC/OS-III v3.08.02
 * (github.com/weston-embedded/uC-OS3), Copyright 2009-2022 Silicon
 * Laboratories Inc., licensed under the Apache License, Version 2.0.
 * Modified by rtbench: written anew with the values of the rtbench port
 * (the template's comments are not repeated; the values that differ
 * from the template say why).
 */
#ifndef OS_CFG_H
#define OS_CFG_H

#define OS_CFG_APP_HOOKS_EN 1u /* the tick hook keeps the timestamp's wraps seen */
#define OS_CFG_ARG_CHK_EN 1u
#define OS_CFG_CALLED_FROM_ISR_CHK_EN 1u
#define OS_CFG_DBG_EN 0u
#define OS_CFG_TICK_EN 1u
#define OS_CFG_DYN_TICK_EN 0u
#define OS_CFG_INVALID_OS_CALLS_CHK_EN 1u
#define OS_CFG_OBJ_TYPE_CHK_EN 1u
#define OS_CFG_OBJ_CREATED_CHK_EN 1u
#define OS_CFG_TS_EN 0u /* no CPU_TS timer: rtbench stamps with the board's */

/* rtbench's 99 priorities, a "normal" one below them and idle: 102. */
#define OS_CFG_PRIO_MAX 102u

#define OS_CFG_SCHED_LOCK_TIME_MEAS_EN 0u
#define OS_CFG_SCHED_ROUND_ROBIN_EN 1u /* yield (OSSchedRoundRobinYield) needs it */
#define OS_CFG_STK_SIZE_MIN 64u

#define OS_CFG_FLAG_EN 0u
#define OS_CFG_FLAG_DEL_EN 0u
#define OS_CFG_FLAG_MODE_CLR_EN 0u
#define OS_CFG_FLAG_PEND_ABORT_EN 0u

#define OS_CFG_MEM_EN 1u

#define OS_CFG_MUTEX_EN 1u
#define OS_CFG_MUTEX_DEL_EN 1u
#define OS_CFG_MUTEX_PEND_ABORT_EN 0u

#define OS_CFG_Q_EN 1u
#define OS_CFG_Q_DEL_EN 1u
#define OS_CFG_Q_FLUSH_EN 1u
#define OS_CFG_Q_PEND_ABORT_EN 0u

#define OS_CFG_SEM_EN 1u
#define OS_CFG_SEM_DEL_EN 1u
#define OS_CFG_SEM_PEND_ABORT_EN 0u
#define OS_CFG_SEM_SET_EN 0u

/* No statistics task (it would run at its own priority among the cases'),
 * but its stack check: OSTaskStkChk gives each thread's high-water mark. */
#define OS_CFG_STAT_TASK_EN 0u
#define OS_CFG_STAT_TASK_STK_CHK_EN 1u

#define OS_CFG_TASK_CHANGE_PRIO_EN 1u
#define OS_CFG_TASK_DEL_EN 1u
#define OS_CFG_TASK_IDLE_EN 1u
#define OS_CFG_TASK_PROFILE_EN 0u
#define OS_CFG_TASK_Q_EN 0u
#define OS_CFG_TASK_Q_PEND_ABORT_EN 0u
#define OS_CFG_TASK_REG_TBL_SIZE 1u
#define OS_CFG_TASK_STK_REDZONE_EN 0u
#define OS_CFG_TASK_STK_REDZONE_DEPTH 8u
#define OS_CFG_TASK_SEM_PEND_ABORT_EN 0u
#define OS_CFG_TASK_SUSPEND_EN 1u

#define OS_CFG_TLS_TBL_SIZE 0u

#define OS_CFG_TIME_DLY_HMSM_EN 0u
#define OS_CFG_TIME_DLY_RESUME_EN 0u

#define OS_CFG_TMR_EN 0u
#define OS_CFG_TMR_DEL_EN 0u

#define OS_CFG_TRACE_EN 0u
#define OS_CFG_TRACE_API_ENTER_EN 0u
#define OS_CFG_TRACE_API_EXIT_EN 0u

#endif
