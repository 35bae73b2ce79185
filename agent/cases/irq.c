/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers shared by the IRQ cases (irq.h). */
#include <string.h>

#include "irq.h"

const char *irq_source_name(int source)
{
    return source == IRQ_TIMER ? "timer" : "raised";
}

/* The port says how (rtb_port_info): the cases never name an OS. */
const char *irq_mechanism(const rtb_ctx *ctx, int source)
{
    const char *m = source == IRQ_TIMER ? ctx->port->event_timer : ctx->port->event_raise;
    if (m[0])
        return m;
    return source == IRQ_TIMER ? "port timer event + handler"
                               : "port software-raised event + handler";
}

int irq_cpu(const rtb_ctx *ctx)
{
    if (ctx->opt->cpu >= 0)
        return ctx->opt->cpu;
    return rtb_cpu_allowed_at(ctx->port, rtb_cpus_allowed(ctx->port) - 1);
}

int irq_other_cpu(const rtb_ctx *ctx) { return rtb_cpu_other(ctx->port, irq_cpu(ctx)); }

rtb_thread_attr irq_attr(const rtb_ctx *ctx, const char *name, int prio_offset, int cpu)
{
    rtb_thread_attr a = rtb_attr(ctx, name, prio_offset);
    a.cpu = cpu;
    a.stack_size = 64 * 1024;
    return a;
}

rtb_time irq_wait_deadline(const rtb_ctx *ctx, rtb_time span)
{
    rtb_time d = rtb_clock_now() + span + span / 2 + 2000000000;
    rtb_time last = ctx->deadline - 1000000000;
    return d < last ? d : last;
}

size_t irq_fit_count(rtb_ctx *ctx, size_t count, rtb_time period)
{
    rtb_time left = ctx->deadline - rtb_clock_now();
    left -= left / 4 > 2000000000 ? left / 4 : 2000000000; /* a margin for a noisy machine */
    if (period <= 0 || left <= 0 || (rtb_time)count <= left / period)
        return count;
    size_t fit = (size_t)(left / period);
    rtb_warn(ctx, "budget",
             "%llu events of %lld ns do not fit the case's time budget: running %llu (raise "
             "--deadline-slack to run them all)",
             (unsigned long long)count, (long long)period, (unsigned long long)fit);
    return fit ? fit : 1;
}

static rtb_time gcd(rtb_time a, rtb_time b)
{
    while (b) {
        rtb_time r = a % b;
        a = b;
        b = r;
    }
    return a;
}

/* The first event, at or after `t`, at a fixed phase against a tick-based
 * kernel's tick (rtb_release_grain): mid-way between the tick and the
 * nearest of the phases the event grid takes (a grid of `period` meets the
 * tick every gcd(period, grain)). Left to where the case's setup happened
 * to end, the phase was a coin toss: under -icount a tick landing inside
 * the handler-to-thread window of every other event (the 500 us grid on a
 * 1 ms tick) added the tick's handler to half the samples (uC/OS-II's
 * IRQ-TLT mean 11.76 -> 16.00 us when 32-bit histogram counters shortened
 * the series' setup; IRQ-LAT's timer_latency on uC/OS-II 6.04 us flat,
 * then 12.76-16.36 when the board's stacks shrank). On POSIX (grain 0):
 * `t`. */
rtb_time irq_first_event(rtb_time t, rtb_time period)
{
    rtb_time phase, grain = rtb_release_grain(&phase);
    if (grain <= 0 || period <= 0)
        return t;
    rtb_time half = gcd(period % grain ? period % grain : grain, grain) / 2;
    return rtb_on_grain(t - half, grain, phase) + half;
}

uint32_t irq_rand(uint32_t *state)
{
    uint32_t x = *state ? *state : 0x9e3779b9u;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return *state = x;
}
