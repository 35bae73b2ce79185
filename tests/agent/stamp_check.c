/* SPDX-License-Identifier: Apache-2.0 */
/* The stamps' conversion, driven by tests/agent/test_stamp.py: argv is HZ
 * then tick counts; prints each count in ns, then that ns back in ticks,
 * one "ticks ns back" line each, through the core's own rtb_stamp_ns. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "rtb.h"

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    rtb_timing_info ti = {.cycles_available = true, .cycles_stamp = true};
    ti.cycles_hz = strtoull(argv[1], NULL, 10);
    rtb_stamp_init(&ti);
    if (!rtb_stamp_use_cycles || rtb_stamp_hz() != ti.cycles_hz)
        return 3;
    for (int i = 2; i < argc; i++) {
        rtb_stamp t = strtoll(argv[i], NULL, 10);
        rtb_time ns = rtb_stamp_ns(t);
        printf("%" PRId64 " %" PRId64 " %" PRId64 "\n", t, ns, rtb_stamp_ticks(ns));
    }
    return 0;
}
