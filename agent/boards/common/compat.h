/* SPDX-License-Identifier: Apache-2.0 */
/* Included before every file of the firmware (boards/common/firmware.cmake): what Debian's
 * newlib leaves out that portable code expects. */
#ifndef RTB_FIRMWARE_COMPAT_H
#define RTB_FIRMWARE_COMPAT_H

/* <inttypes.h> defines PRId64 and friends only after <sys/types.h>. */
#include <sys/types.h>

/* The fault layer's clock skew asks which CPU reads (syscalls.c: 0). */
int sched_getcpu(void);

#endif
