/* SPDX-License-Identifier: Apache-2.0 */
/* The FreeRTOS port's kernel load (boards/common/load.c runs the threads):
 * a storm of FreeRTOS calls that enter its critical sections: queue send
 * and receive, semaphore give and take, scheduler suspend and resume, and
 * yield. */
#include "FreeRTOS.h"
#include "queue.h"
#include "semphr.h"
#include "task.h"

#include "../../core/rtb.h"
#include "firmware.h"

typedef struct {
    StaticQueue_t qbuf;
    uint32_t qstore[4];
    StaticSemaphore_t sbuf;
} storm_objects;
_Static_assert(sizeof(storm_objects) <= FIRMWARE_LOAD_OBJECTS, "FIRMWARE_LOAD_OBJECTS too small");

void rtb_os_kernel_storm(void *objects, const atomic_bool *stop, _Atomic uint32_t *ops)
{
    storm_objects *o = objects;
    QueueHandle_t q = xQueueCreateStatic(4, sizeof(uint32_t), (uint8_t *)o->qstore, &o->qbuf);
    SemaphoreHandle_t s = xSemaphoreCreateBinaryStatic(&o->sbuf);
    uint32_t v = 0;
    while (!atomic_load(stop)) {
        xQueueSend(q, &v, 0);
        xQueueReceive(q, &v, 0);
        xSemaphoreGive(s);
        xSemaphoreTake(s, 0);
        vTaskSuspendAll();
        v++;
        (void)xTaskResumeAll();
        taskYIELD();
        atomic_fetch_add(ops, 1);
    }
    vQueueDelete(q);
    vSemaphoreDelete(s);
}
