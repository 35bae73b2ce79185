/* SPDX-License-Identifier: Apache-2.0 */
/* Stamps of measured windows: the port's raw counter, converted to ns after
 * the window. A process-wide choice, made once before any case runs: the
 * counter is a property of the machine, not of a case. */
#include "rtb.h"

bool rtb_stamp_use_cycles;
static uint64_t stamp_hz = 1000000000u;

void rtb_stamp_init(const rtb_timing_info *ti)
{
    rtb_stamp_use_cycles = ti->cycles_available && ti->cycles_stamp && ti->cycles_hz > 0;
    stamp_hz = rtb_stamp_use_cycles ? ti->cycles_hz : 1000000000u;
}

uint64_t rtb_stamp_hz(void) { return stamp_hz; }

size_t rtb_stamp_block(size_t rounds)
{
    /* The test build's stamp_block=N runs a port that holds every round
     * (POSIX) block by block, as a board does: the known answer that the
     * blocks give the same series the whole run does. */
    int64_t inj = RTB_INJECT_VALUE(RTB_INJ_STAMP_BLOCK);
    size_t block = inj > 0 ? (size_t)inj : (size_t)RTB_STAMP_BLOCK;
    return block && rounds > block ? block : rounds;
}

/* a * m / d without a 128-bit type (32-bit targets have none): exact while
 * (a % d) * m fits 64 bits, i.e. for m, d below 18 * 10^9. */
static uint64_t mul_div(uint64_t a, uint64_t m, uint64_t d)
{
    return a / d * m + a % d * m / d;
}

rtb_time rtb_stamp_ns(rtb_stamp ticks)
{
    if (ticks < 0)
        return -(rtb_time)mul_div((uint64_t)0 - (uint64_t)ticks, 1000000000u, stamp_hz);
    return (rtb_time)mul_div((uint64_t)ticks, 1000000000u, stamp_hz);
}

rtb_stamp rtb_stamp_ticks(rtb_time ns)
{
    if (ns < 0)
        return -(rtb_stamp)mul_div((uint64_t)0 - (uint64_t)ns, stamp_hz, 1000000000u);
    return (rtb_stamp)mul_div((uint64_t)ns, stamp_hz, 1000000000u);
}
