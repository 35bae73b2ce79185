/* SPDX-License-Identifier: Apache-2.0 */
/* Deadline scheduling on a port that has none (no ports/NAME/deadline.c). */
#include <stdio.h>

#include "rtb/deadline.h"

const char *rtb_deadline_missing(void)
{
    return "this port has no deadline scheduler (rtb/deadline.h)";
}

int rtb_thread_self_deadline(rtb_time runtime, rtb_time deadline, rtb_time period, char *why,
                             size_t whycap)
{
    (void)runtime, (void)deadline, (void)period;
    if (why && whycap)
        snprintf(why, whycap, "%s", rtb_deadline_missing());
    return RTB_ENOTSUP;
}
