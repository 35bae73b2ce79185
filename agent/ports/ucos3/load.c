/* SPDX-License-Identifier: Apache-2.0 */
/* The uC/OS-III port's kernel load (boards/common/load.c runs the
 * threads): a storm of uC/OS-III calls that enter its critical sections,
 * as the FreeRTOS port's: queue post and pend, semaphore post and pend,
 * scheduler lock and unlock, and yield. */
#include "../../core/rtb.h"
#include "firmware.h"
#include "ucos3_port.h"

typedef struct {
    OS_Q q;
    OS_SEM s;
} storm_objects;
_Static_assert(sizeof(storm_objects) <= FIRMWARE_LOAD_OBJECTS, "FIRMWARE_LOAD_OBJECTS too small");

void rtb_os_kernel_storm(void *objects, const atomic_bool *stop, _Atomic uint32_t *ops)
{
    storm_objects *w = objects;
    OS_ERR err;
    OS_MSG_SIZE n;
    OSQCreate(&w->q, "load", 1, &err);
    OSSemCreate(&w->s, "load", 0, &err);
    static uint32_t v;
    while (!atomic_load(stop)) {
        OSQPost(&w->q, &v, sizeof v, OS_OPT_POST_FIFO, &err);
        (void)OSQPend(&w->q, 0, OS_OPT_PEND_NON_BLOCKING, &n, NULL, &err);
        OSSemPost(&w->s, OS_OPT_POST_1, &err);
        OSSemPend(&w->s, 0, OS_OPT_PEND_NON_BLOCKING, NULL, &err);
        OSSchedLock(&err);
        v++;
        OSSchedUnlock(&err);
        OSSchedRoundRobinYield(&err);
        atomic_fetch_add(ops, 1);
    }
    OSQDel(&w->q, OS_OPT_DEL_ALWAYS, &err);
    OSSemDel(&w->s, OS_OPT_DEL_ALWAYS, &err);
}
