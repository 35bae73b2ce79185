/* SPDX-License-Identifier: Apache-2.0 */
/* NOISE-HW on a port with neither an interrupt mask the agent may use nor a
 * detector of the OS's (no ports/NAME/hwlat.c, no board's). */
#include <stdio.h>

#include "rtb/hwlat.h"

int rtb_irq_off(uint32_t *state, char *why, size_t whycap)
{
    (void)state;
    if (why && whycap)
        snprintf(why, whycap, "this port cannot turn interrupts off (rtb/hwlat.h)");
    return RTB_ENOTSUP;
}

void rtb_irq_restore(uint32_t state) { (void)state; }

int rtb_hwlat_os(const rtb_hwlat_req *req, rtb_hwlat_gap_fn fn, void *arg, rtb_hwlat_out *out,
                 char *why, size_t whycap)
{
    (void)req, (void)fn, (void)arg, (void)out;
    if (why && whycap)
        snprintf(why, whycap, "this port has no hardware-latency detector (rtb/hwlat.h)");
    return RTB_ENOTSUP;
}
