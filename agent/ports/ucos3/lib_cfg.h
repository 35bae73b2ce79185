/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Derived from Cfg/Template/lib_cfg.h of uC/LIB v1.39.01
 * (github.com/weston-embedded/uC-LIB), Copyright 2004-2021 Silicon
 * Laboratories Inc., licensed under the Apache License, Version 2.0.
 * Modified by rtbench: written anew; uC/OS-III uses the headers only (no
 * uC/LIB heap, no floating-point strings).
 */
#ifndef LIB_CFG_MODULE_PRESENT
#define LIB_CFG_MODULE_PRESENT

#define LIB_MEM_CFG_ARG_CHK_EXT_EN DEF_DISABLED
#define LIB_MEM_CFG_OPTIMIZE_ASM_EN DEF_DISABLED
#define LIB_MEM_CFG_DBG_INFO_EN DEF_DISABLED
#define LIB_MEM_CFG_HEAP_SIZE 0u
#define LIB_MEM_CFG_HEAP_PADDING_ALIGN LIB_MEM_PADDING_ALIGN_NONE
#define LIB_STR_CFG_FP_EN DEF_DISABLED
#define LIB_STR_CFG_FP_MAX_NBR_DIG_SIG LIB_STR_FP_MAX_NBR_DIG_SIG_DFLT

#endif
