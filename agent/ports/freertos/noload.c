/* SPDX-License-Identifier: Apache-2.0 */
/* The FreeRTOS port has no background loads (yet): `--load none` is the
 * only plan it accepts, and a case that starts a load of its own is told
 * RTB_ENOTSUP. */
#include <stdio.h>
#include <string.h>

#include "../../core/rtb.h"
#include "../../loads/load.h"

int rtb_load_parse(const char *text, rtb_load_spec *specs, int cap, int *n, char *err,
                   size_t errcap)
{
    (void)specs;
    (void)cap;
    *n = 0;
    if (strcmp(text, "none") == 0)
        return RTB_OK;
    snprintf(err, errcap, "the freertos port has no background loads: use none");
    return RTB_EINVAL;
}

const char *rtb_load_kind_name(const rtb_load_spec *spec)
{
    (void)spec;
    return "none";
}

void rtb_load_help(FILE *f) { fprintf(f, "loads: none on this port\n"); }

int rtb_load_begin(rtb_load **out, const rtb_load_spec *spec, const rtb_load_place *place,
                   char *err, size_t errcap)
{
    (void)spec;
    (void)place;
    *out = NULL;
    snprintf(err, errcap, "the freertos port has no background loads");
    return RTB_ENOTSUP;
}

int rtb_load_stop(rtb_load *l, rtb_time deadline, rtb_load_stats *st)
{
    (void)l;
    (void)deadline;
    if (st)
        memset(st, 0, sizeof *st);
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
    snprintf(buf, cap, "none");
}

int rtb_load_start(rtb_load **out, const char *kind, int n, int cpu, int priority, char *err,
                   size_t errcap)
{
    (void)kind;
    (void)cpu;
    (void)priority;
    *out = NULL;
    if (n == 0)
        return RTB_OK;
    snprintf(err, errcap, "the freertos port has no background loads");
    return RTB_ENOTSUP;
}

int rtb_load_guard(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return 2;
}
