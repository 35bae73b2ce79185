/* SPDX-License-Identifier: Apache-2.0 */
/* The uC/OS-II port's kernel load (boards/common/load.c runs the threads,
 * one at the most: one task per priority): a storm of uC/OS-II calls that
 * enter its critical sections, as the other ports': queue post and accept,
 * semaphore post and accept, scheduler lock and unlock (no yield: no equal
 * to yield to). */
#include "../../core/rtb.h"
#include "firmware.h"
#include "ucos2_port.h"

typedef struct {
    void *ring[1];
} storm_objects;
_Static_assert(sizeof(storm_objects) <= FIRMWARE_LOAD_OBJECTS, "FIRMWARE_LOAD_OBJECTS too small");

void rtb_os_kernel_storm(void *objects, const atomic_bool *stop, _Atomic uint32_t *ops)
{
    storm_objects *w = objects;
    INT8U err;
    OS_EVENT *q = OSQCreate(w->ring, 1);
    OS_EVENT *s = OSSemCreate(0);
    static uint32_t v;
    while (q && s && !atomic_load(stop)) {
        OSQPost(q, &v);
        (void)OSQAccept(q, &err);
        OSSemPost(s);
        (void)OSSemAccept(s);
        OSSchedLock();
        v++;
        OSSchedUnlock();
        atomic_fetch_add(ops, 1); /* no yield: no equal to yield to */
    }
    if (q)
        OSQDel(q, OS_DEL_ALWAYS, &err);
    if (s)
        OSSemDel(s, OS_DEL_ALWAYS, &err);
}
