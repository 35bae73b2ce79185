/* SPDX-License-Identifier: Apache-2.0 */
/* The loads of a port that has none (RTB_PORT_HAS_LOADS 0): every start
 * answers RTB_ENOTSUP with the reason, so a case that needs a load says
 * "unsupported" instead of measuring without it. */
#include <stdio.h>

#include "rtb/load.h"

#define NO_LOADS "unsupported: this port has no loads"

int rtb_load_begin(rtb_load **out, const rtb_load_spec *spec, const rtb_load_place *place,
                   char *err, size_t errcap)
{
    (void)spec, (void)place;
    *out = NULL;
    snprintf(err, errcap, NO_LOADS);
    return RTB_ENOTSUP;
}

int rtb_load_stop(rtb_load *l, rtb_time deadline, rtb_load_stats *st)
{
    (void)l, (void)deadline;
    if (st)
        *st = (rtb_load_stats){.unit = ""};
    return RTB_OK;
}

rtb_time rtb_load_start_ns(const rtb_load *l)
{
    (void)l;
    return 0;
}

void rtb_load_describe(const rtb_load *l, char *buf, size_t cap)
{
    (void)l;
    snprintf(buf, cap, "no load");
}

const char *rtb_load_kind_name(const rtb_load_spec *spec)
{
    (void)spec;
    return "none";
}

int rtb_load_check(const char *kind, int n, char *err, size_t errcap)
{
    if (n == 0) /* no load asked: nothing to refuse */
        return RTB_OK;
    snprintf(err, errcap, NO_LOADS " (the case asks for %d '%s' load threads)", n, kind);
    return RTB_ENOTSUP;
}

int rtb_load_start(rtb_load **out, const char *kind, int n, int cpu, int priority, char *err,
                   size_t errcap)
{
    (void)cpu, (void)priority;
    *out = NULL;
    return rtb_load_check(kind, n, err, errcap);
}
