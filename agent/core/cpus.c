/* SPDX-License-Identifier: Apache-2.0 */
/* The CPUs a case may use: those the port says the process may run on
 * (rtb_port_info.cpus_allowed: taskset, cpusets), not every CPU the
 * machine has. A case that needs more than there are is skipped, with
 * the reason, rather than pinned where it was kept off. */
#include <stdio.h>

#include "rtb.h"

int rtb_cpus_allowed(const rtb_port_info *pi)
{
    if (pi->ncpus_allowed > 0)
        return pi->ncpus_allowed;
    return pi->cpu_count > 0 ? pi->cpu_count : 1;
}

int rtb_cpu_allowed_at(const rtb_port_info *pi, int i)
{
    if (pi->ncpus_allowed <= 0 || i < 0 || i >= pi->ncpus_allowed || i >= RTB_MAX_CPUS)
        return i;
    return pi->cpus_allowed[i];
}

bool rtb_cpu_is_allowed(const rtb_port_info *pi, int cpu)
{
    for (int i = 0; i < rtb_cpus_allowed(pi); i++)
        if (rtb_cpu_allowed_at(pi, i) == cpu)
            return true;
    return false;
}

int rtb_cpu_other(const rtb_port_info *pi, int cpu)
{
    int n = rtb_cpus_allowed(pi);
    if (n < 2)
        return -1;
    for (int i = 0; i < n; i++)
        if (rtb_cpu_allowed_at(pi, i) > cpu)
            return rtb_cpu_allowed_at(pi, i);
    int first = rtb_cpu_allowed_at(pi, 0);
    return first != cpu ? first : rtb_cpu_allowed_at(pi, 1);
}

int rtb_cpus_text(const rtb_port_info *pi, char *out, size_t cap)
{
    size_t len = 0;
    out[0] = '\0';
    int n = rtb_cpus_allowed(pi);
    for (int i = 0; i < n && len < cap; i++) {
        int lo = rtb_cpu_allowed_at(pi, i), hi = lo;
        while (i + 1 < n && rtb_cpu_allowed_at(pi, i + 1) == hi + 1)
            hi = rtb_cpu_allowed_at(pi, ++i);
        int w = hi > lo ? snprintf(out + len, cap - len, "%s%d-%d", len ? "," : "", lo, hi)
                        : snprintf(out + len, cap - len, "%s%d", len ? "," : "", lo);
        if (w < 0)
            break;
        len += (size_t)w;
    }
    return n;
}

bool rtb_need_cpus(rtb_ctx *ctx, const char *check, int n)
{
    if (rtb_cpus_allowed(ctx->port) >= n)
        return true;
    char list[64];
    int have = rtb_cpus_text(ctx->port, list, sizeof list);
    rtb_emit_check_skip(ctx, check, "needs %d CPUs; this process may run on %d (CPU %s)", n,
                        have, list);
    return false;
}
