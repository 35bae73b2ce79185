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

uint32_t irq_rand(uint32_t *state)
{
    uint32_t x = *state ? *state : 0x9e3779b9u;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return *state = x;
}
