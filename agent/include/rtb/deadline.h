/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Optional: deadline scheduling for JIT-DL (an EDF scheduler with a
 * constant-bandwidth server: Linux SCHED_DEADLINE). A port without it gets
 * core/deadline_none.c, whose answer is RTB_ENOTSUP with the reason (the
 * case is then unsupported there). Same rules as port.h.
 */
#ifndef RTB_DEADLINE_H
#define RTB_DEADLINE_H

#include <stddef.h>

#include "rtb/port.h"

/* Makes the calling thread a deadline task: at most `runtime` ns of CPU in
 * every `period`, each job due `deadline` ns after its release. It may run
 * on any CPU afterwards (Linux admits deadline tasks only over a whole
 * root domain). On failure `why` says what the OS answered. */
int rtb_thread_self_deadline(rtb_time runtime, rtb_time deadline, rtb_time period, char *why,
                             size_t whycap);

/* Why this port has no deadline scheduler, or NULL where it has one (which
 * may still refuse a task: rtb_thread_self_deadline says why). JIT-DL asks
 * before it sets anything up, so a board keeps no buffers for it. */
const char *rtb_deadline_missing(void);

#endif
