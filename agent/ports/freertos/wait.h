/* SPDX-License-Identifier: Apache-2.0 */
/* What the FreeRTOS port's files share: deadlines as ticks, the timed-wait
 * loop, interrupt context, and the lock of the object pools. */
#ifndef RTB_FREERTOS_WAIT_H
#define RTB_FREERTOS_WAIT_H

#include <stdbool.h>

#include "FreeRTOS.h"
#include "task.h"

#include "../../core/rtb.h"

/* Pools are touched outside measured sections only (create, delete). */
static inline void pool_lock(void) { vTaskSuspendAll(); }
static inline void pool_unlock(void) { (void)xTaskResumeAll(); }

#define TICK_NS (1000000000LL / configTICK_RATE_HZ)


static inline bool in_isr(void) { return xPortIsInsideInterrupt() == pdTRUE; }

/* Ticks to block for `deadline`: rounded up, so FreeRTOS never wakes the
 * caller before it (callers re-check the clock anyway). */
static inline TickType_t ticks_until(rtb_time deadline)
{
    if (deadline == RTB_FOREVER)
        return portMAX_DELAY;
    rtb_time left = deadline - rtb_clock_now();
    if (left <= 0)
        return 0;
    rtb_time t = (left + TICK_NS - 1) / TICK_NS + 1; /* +1: the current tick is partly gone */
    return t >= (rtb_time)portMAX_DELAY ? portMAX_DELAY - 1 : (TickType_t)t;
}

/* A timed wait around `op` (xSemaphoreTake, xQueueSend...): RTB_EAGAIN for
 * deadline 0, RTB_ETIMEDOUT once the deadline passed. */
#define TIMED_WAIT(op_with_ticks, deadline)                                                 \
    do {                                                                                    \
        if ((deadline) == 0)                                                                \
            return (op_with_ticks(0)) == pdTRUE ? RTB_OK : RTB_EAGAIN;                      \
        for (;;) {                                                                          \
            TickType_t ticks_ = ticks_until(deadline);                                      \
            if ((op_with_ticks(ticks_)) == pdTRUE)                                          \
                return RTB_OK;                                                              \
            if (ticks_ == 0 || rtb_clock_now() >= (deadline))                               \
                return RTB_ETIMEDOUT;                                                       \
        }                                                                                   \
    } while (0)

#endif
