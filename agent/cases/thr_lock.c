/* SPDX-License-Identifier: Apache-2.0 */
/* THR-LOCK: the cost of locking and unlocking the scheduler (an RTOS task
 * lock, e.g. a preemption-disable around a critical section). POSIX gives
 * user space nothing of the kind, so this port declares the case
 * unsupported rather than time a stand-in that means something else. */
#include "../core/rtb.h"

const rtb_case rtb_case_thr_lock = {
    .id = "THR-LOCK",
    .title = "Scheduler lock / unlock",
    .unsupported = "POSIX offers user space no way to disable preemption (no scheduler or task "
                   "lock); a stand-in such as the top SCHED_FIFO priority still lets interrupts "
                   "and the kernel's own threads run, so it would time something else",
};
