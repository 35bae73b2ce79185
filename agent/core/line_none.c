/* SPDX-License-Identifier: Apache-2.0 */
/* The lines of a port that has none (no ports/NAME/line.c): every open
 * answers RTB_ENOTSUP with the reason, so RSP-IO is skipped there. */
#include <stdio.h>

#include "rtb/line.h"

#define NO_LINES "this port has no input/output lines (rtb/line.h)"

const char *rtb_line_kind_name(int kind)
{
    static const char *const names[RTB_LINE_KINDS] = {"eventfd", "pipe", "pty", "gpio",
                                                       "timer"};
    return kind >= 0 && kind < RTB_LINE_KINDS ? names[kind] : "?";
}

int rtb_line_open(rtb_line *l, int kind, const char *where, char *why, size_t whycap)
{
    (void)l, (void)kind, (void)where;
    if (why && whycap)
        snprintf(why, whycap, NO_LINES);
    return RTB_ENOTSUP;
}

int rtb_line_close(rtb_line *l) { (void)l; return RTB_OK; }
int rtb_line_get(rtb_line *l, int *level) { (void)l, (void)level; return RTB_ENOTSUP; }

int rtb_line_wait(rtb_line *l, rtb_time deadline, int *level)
{
    (void)l, (void)deadline, (void)level;
    return RTB_ENOTSUP;
}

int rtb_line_set(rtb_line *l, int level) { (void)l, (void)level; return RTB_ENOTSUP; }

int rtb_stim_start(rtb_stim *s, rtb_line *l, int cpu, const char *extra, char *why,
                   size_t whycap)
{
    (void)s, (void)l, (void)cpu, (void)extra;
    if (why && whycap)
        snprintf(why, whycap, NO_LINES);
    return RTB_ENOTSUP;
}

int rtb_stim_send(rtb_stim *s, const char *line) { (void)s, (void)line; return RTB_ENOTSUP; }

int rtb_stim_recv(rtb_stim *s, char *buf, size_t cap, rtb_time deadline)
{
    (void)s, (void)buf, (void)cap, (void)deadline;
    return RTB_ENOTSUP;
}

int rtb_stim_stop(rtb_stim *s, rtb_time deadline) { (void)s, (void)deadline; return RTB_OK; }
