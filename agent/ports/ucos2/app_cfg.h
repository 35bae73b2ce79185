/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Derived from Cfg/Template/app_cfg.h of uC/OS-II v2.93.01
 * (github.com/weston-embedded/uC-OS2), Copyright 1992-2021 Silicon
 * Laboratories Inc., licensed under the Apache License, Version 2.0.
 * Modified by rtbench: written anew; no start-up task or trace of the
 * template; the interrupt boundary of the mps2-an385 board, which the
 * Cortex-M port reads here (no uC/CPU with uC/OS-II).
 */
#ifndef APP_CFG_H
#define APP_CFG_H

#define OS_TASK_TMR_PRIO (OS_LOWEST_PRIO - 2u)
/* Kernel-aware interrupts: NVIC priority 4 << 5 = 0x80 and less urgent.
 * BASEPRI masks them in the kernel's critical sections; SysTick runs at
 * 0x80, the board's event interrupts at 0xC0. */
#define CPU_CFG_KA_IPL_BOUNDARY 4u
#define CPU_CFG_NVIC_PRIO_BITS 3u /* mps2-an385 (the build fails without) */

#endif
