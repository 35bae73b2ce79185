/* SPDX-License-Identifier: Apache-2.0 */
/* RSP-IO's dialogue with its stimulator (outside measured sections): the
 * hello that says where and how it runs, and the clock check. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "rsp.h"

#define PINGS 16

/* The clock check: the agent's rtb_clock_now() stamp of each ping must lie
 * between the stimulator's stamps around it. */
bool rsp_clock_check(rtb_ctx *ctx, rtb_stim *stim, char *reply, size_t cap)
{
    char cmd[32];
    snprintf(cmd, sizeof cmd, "clock %d", PINGS);
    rtb_time limit = rtb_clock_now() + 5000000000;
    if (rtb_stim_send(stim, cmd) != RTB_OK) {
        rtb_emit_check_error(ctx, "same_clock", "the stimulator took no command");
        return false;
    }
    int pings = 0, outside = 0;
    int64_t widest = 0, worst = 0;
    for (;;) {
        if (rtb_stim_recv(stim, reply, cap, limit) != RTB_OK) {
            rtb_emit_check_error(ctx, "same_clock", "the stimulator stopped answering pings");
            return false;
        }
        if (strcmp(reply, "p") == 0) {
            snprintf(cmd, sizeof cmd, "a %lld", (long long)rtb_clock_now());
            rtb_stim_send(stim, cmd);
            continue;
        }
        long long s0, a, s1;
        if (sscanf(reply, "clock %lld %lld %lld", &s0, &a, &s1) == 3) {
            pings++;
            if (s1 - s0 > widest)
                widest = s1 - s0;
            int64_t off = a < s0 ? s0 - a : a > s1 ? a - s1 : 0;
            outside += off > 0;
            if (off > worst)
                worst = off;
            continue;
        }
        if (strncmp(reply, "end", 3) == 0 && (reply[3] == '\0' || reply[3] == ' '))
            break;
    }
    /* An instrument on the board says what it compared ("end TEXT"). */
    char what[200];
    if (reply[3] == ' ')
        snprintf(what, sizeof what, "%s", reply + 4);
    else
        snprintf(what, sizeof what, "%d pings: the agent's CLOCK_MONOTONIC stamp of each must "
                 "lie between the stimulator's stamps around it", PINGS);
    bool ok = pings == PINGS && outside == 0;
    rtb_emit_check(ctx, "same_clock", ok,
                   "%s; %d of %d outside (by up to %lld ns), widest bracket %lld ns", what,
                   outside, pings, (long long)worst, (long long)widest);
    return ok;
}

/* The stimulator's hello: where and how it runs, and its stamp cost. */
bool rsp_stim_hello(rtb_ctx *ctx, rtb_stim *stim, const char *line_name, int other, char *reply,
                    size_t cap)
{
    if (rtb_stim_recv(stim, reply, cap, rtb_clock_now() + 5000000000) !=
        RTB_OK) {
        rtb_emit_check_error(ctx, "stimulator", "%s line: rtb-stim did not start", line_name);
        return false;
    }
    if (strncmp(reply, "hello instrument ", 17) == 0) {
        /* The board's own generator and scope: no process, nothing shared
         * with the measured CPU but the bus; it says what it is. */
        rtb_emit_check(ctx, "stimulator", true, "%s line: %s", line_name, reply + 17);
        return true;
    }
    int rt = 0, prio = 0, cpu = -1, pinned = 0, n = 0;
    long long cost = 0, cost_min = 0;
    if (sscanf(reply, "hello rt=%d prio=%d cpu=%d pinned=%d cost_ns=%lld cost_min_ns=%lld %n",
               &rt, &prio, &cpu, &pinned, &cost, &cost_min, &n) < 6) {
        rtb_emit_check_error(ctx, "stimulator", "%s line: rtb-stim said '%s'", line_name,
                             reply);
        return false;
    }
    char fifo[24];
    snprintf(fifo, sizeof fifo, "SCHED_FIFO %d", prio);
    rtb_emit_check(ctx, "stimulator", true,
                   "rtb-stim over a %s line: %s on %s; its timestamp (CLOCK_MONOTONIC) costs "
                   "%lld ns (median; min %lld ns), included in every sample%s%s",
                   line_name, rt ? fifo : "normal scheduling",
                   other < 0 ? "the measured CPU (one CPU)" : pinned ? "another CPU" : "any CPU",
                   cost, cost_min, reply[n] ? "; " : "", reply + n);
    if (!rt || (other >= 0 && !pinned))
        rtb_warn(ctx, "stimulator", "the stimulator runs %s%s: its own delays add to the "
                 "figures (%s)", rt ? "" : "without real-time priority",
                 other >= 0 && !pinned ? " unpinned" : "", reply + n);
    if (other < 0)
        rtb_warn(ctx, "stimulator", "one CPU: the stimulator shares the measured CPU");
    (void)cpu;
    return true;
}
