/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Derived from Cfg/Template/cpu_cfg.h of uC/CPU v1.32.01
 * (github.com/weston-embedded/uC-CPU), Copyright 2004-2021 Silicon
 * Laboratories Inc., licensed under the Apache License, Version 2.0.
 * Modified by rtbench: written anew with the values of the mps2-an385
 * board (little-endian Cortex-M3, 3 NVIC priority bits), no CPU
 * timestamps and no interrupt-off measurement.
 */
#ifndef CPU_CFG_MODULE_PRESENT
#define CPU_CFG_MODULE_PRESENT

#define CPU_CFG_NAME_EN DEF_DISABLED
#define CPU_CFG_NAME_SIZE 16
#define CPU_CFG_TS_32_EN DEF_DISABLED
#define CPU_CFG_TS_64_EN DEF_DISABLED
#define CPU_CFG_TS_TMR_SIZE CPU_WORD_SIZE_32
/* CPU_CFG_INT_DIS_MEAS_EN left undefined: no measurement of masked time
 * (it would add to every critical section of the kernel). */
#define CPU_CFG_LEAD_ZEROS_ASM_PRESENT
#define CPU_CFG_TRAIL_ZEROS_ASM_PRESENT
#define CPU_CFG_ENDIAN_TYPE CPU_ENDIAN_TYPE_LITTLE /* the template's is big */
#define CPU_CFG_CACHE_MGMT_EN DEF_DISABLED
/* Kernel-aware interrupts: NVIC priority 4 << 5 = 0x80 and less urgent.
 * BASEPRI masks them in the kernel's critical sections; SysTick runs at
 * 0x80 (OS_CPU_SysTickInit), the board's event interrupts at 0xC0. */
#define CPU_CFG_KA_IPL_BOUNDARY 4u
#define CPU_CFG_NVIC_PRIO_BITS 3u /* mps2-an385 (the build fails without) */

#endif
