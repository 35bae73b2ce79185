/* SPDX-License-Identifier: Apache-2.0 */
/* RSP-IO (rsp_io.c) and its dialogue with the stimulator (rsp_stim.c). */
#ifndef RTB_CASES_RSP_H
#define RTB_CASES_RSP_H

#include "../core/rtb.h"
#include "rtb/line.h"

/* The stimulator's hello (its placement, priority and stamp cost): the
 * `stimulator` check, and warnings when it could not get a CPU of its own
 * or real-time priority. False (an error check written) when it said none. */
bool rsp_stim_hello(rtb_ctx *ctx, rtb_stim *stim, const char *line_name, int other, char *reply,
                    size_t cap);
/* The `same_clock` check: the agent's rtb_clock_now() stamp of each ping
 * must lie between the stimulator's stamps around it. */
bool rsp_clock_check(rtb_ctx *ctx, rtb_stim *stim, char *reply, size_t cap);

#endif
