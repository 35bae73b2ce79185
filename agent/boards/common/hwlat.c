/* SPDX-License-Identifier: Apache-2.0 */
/* NOISE-HW on an ARMv7-M board: the agent masks interrupts itself (PRIMASK)
 * and NOISE-HW runs its own sampling loop; there is no OS detector. */
#include <stdio.h>

#include "rtb/hwlat.h"

int rtb_irq_off(uint32_t *state, char *why, size_t whycap)
{
    (void)why, (void)whycap;
    uint32_t primask;
    __asm__ volatile("mrs %0, primask\n cpsid i" : "=r"(primask)::"memory");
    *state = primask;
    return RTB_OK;
}

void rtb_irq_restore(uint32_t state)
{
    __asm__ volatile("msr primask, %0" ::"r"(state) : "memory");
}

int rtb_hwlat_os(const rtb_hwlat_req *req, rtb_hwlat_gap_fn fn, void *arg, rtb_hwlat_out *out,
                 char *why, size_t whycap)
{
    (void)req, (void)fn, (void)arg, (void)out;
    if (why && whycap)
        snprintf(why, whycap, "the kernel has no detector: the agent masks interrupts itself");
    return RTB_ENOTSUP;
}
