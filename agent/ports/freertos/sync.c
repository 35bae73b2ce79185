/* SPDX-License-Identifier: Apache-2.0 */
/* Counting semaphores, mutexes and message queues of the FreeRTOS port, on
 * statically allocated FreeRTOS objects. A semaphore holds its
 * StaticSemaphore_t; mutexes and queues live in pools (queue storage in an
 * arena), and the rtbench object points into them. */
#include <string.h>

#include "FreeRTOS.h"
#include "queue.h"
#include "semphr.h"
#include "task.h"

#include "../../core/rtb.h"
#include "freertos_port.h"
#include "slots.h"
#include "wait.h"

typedef struct {
    StaticSemaphore_t buf;
    SemaphoreHandle_t h;
} sem_obj;
_Static_assert(sizeof(sem_obj) <= RTB_SEM_STORAGE, "rtb_sem too small");

typedef struct mutex_slot {
    StaticSemaphore_t buf;
    bool used;
} mutex_slot;
static mutex_slot mutexes[RTB_FREERTOS_MUTEXES];

typedef struct {
    mutex_slot *slot;
    SemaphoreHandle_t h;
} mutex_obj;
_Static_assert(sizeof(mutex_obj) <= RTB_MUTEX_STORAGE, "rtb_mutex too small");

typedef struct queue_slot {
    StaticQueue_t buf;
    uint8_t *storage;
    size_t cap;
    bool used;
} queue_slot;
static queue_slot queues[RTB_FREERTOS_QUEUES];
RTB_BULK static uint8_t queue_arena[RTB_FREERTOS_QUEUE_ARENA];
static size_t queue_arena_used;

size_t rtb_os_queues_reserved(void) { return queue_arena_used; }

typedef struct {
    queue_slot *slot;
    QueueHandle_t h;
    size_t msg_size;
    uint8_t *send_item, *recv_item; /* after the queue's own storage */
} queue_obj;
_Static_assert(sizeof(queue_obj) <= RTB_QUEUE_STORAGE, "rtb_queue too small");

/* ---- counting semaphores ------------------------------------------------ */

int rtb_sem_create(rtb_sem *s, unsigned initial)
{
    sem_obj *o = (sem_obj *)(void *)s;
    o->h = xSemaphoreCreateCountingStatic(0x7fffffff, initial, &o->buf);
    return o->h ? RTB_OK : RTB_ENOMEM;
}

int rtb_sem_delete(rtb_sem *s)
{
    vSemaphoreDelete(((sem_obj *)(void *)s)->h);
    return RTB_OK;
}

int rtb_sem_give(rtb_sem *s)
{
    SemaphoreHandle_t h = ((sem_obj *)(void *)s)->h;
    if (in_isr()) {
        BaseType_t woken = pdFALSE;
        if (xSemaphoreGiveFromISR(h, &woken) != pdTRUE)
            return RTB_EFAIL;
        portYIELD_FROM_ISR(woken);
        return RTB_OK;
    }
    return xSemaphoreGive(h) == pdTRUE ? RTB_OK : RTB_EFAIL;
}

/* rtb_sem_give already takes the FromISR path inside a handler. */
int rtb_sem_give_isr(rtb_sem *s) { return rtb_sem_give(s); }

int rtb_sem_take(rtb_sem *s, rtb_time deadline)
{
    SemaphoreHandle_t h = ((sem_obj *)(void *)s)->h;
#define SEM_TAKE(ticks) xSemaphoreTake(h, (ticks))
    TIMED_WAIT(SEM_TAKE, deadline);
#undef SEM_TAKE
}

/* ---- mutexes ------------------------------------------------------------ */

int rtb_mutex_create(rtb_mutex *m, unsigned flags)
{
    mutex_obj *o = (mutex_obj *)(void *)m;
    mutex_slot *s = NULL;
    pool_lock();
    for (int i = 0; i < RTB_FREERTOS_MUTEXES && !s; i++)
        if (!mutexes[i].used) {
            s = &mutexes[i];
            s->used = true;
        }
    pool_unlock();
    if (!s)
        return RTB_ENOMEM;
    o->slot = s;
    /* FreeRTOS mutexes always inherit priority; a lock without it is a
     * binary semaphore given once (what a FreeRTOS user would write). */
    if (flags & RTB_MUTEX_PI) {
        o->h = xSemaphoreCreateMutexStatic(&s->buf);
    } else {
        o->h = xSemaphoreCreateBinaryStatic(&s->buf);
        if (o->h)
            xSemaphoreGive(o->h);
    }
    return o->h ? RTB_OK : RTB_ENOMEM;
}

int rtb_mutex_delete(rtb_mutex *m)
{
    mutex_obj *o = (mutex_obj *)(void *)m;
    vSemaphoreDelete(o->h);
    pool_lock();
    o->slot->used = false;
    pool_unlock();
    return RTB_OK;
}

int rtb_mutex_lock(rtb_mutex *m)
{
    return xSemaphoreTake(((mutex_obj *)(void *)m)->h, portMAX_DELAY) == pdTRUE ? RTB_OK
                                                                                 : RTB_EFAIL;
}

int rtb_mutex_unlock(rtb_mutex *m)
{
    return xSemaphoreGive(((mutex_obj *)(void *)m)->h) == pdTRUE ? RTB_OK : RTB_EPERM;
}

/* ---- message queues -----------------------------------------------------
 * FreeRTOS queues carry fixed-size items; an rtbench message has a length:
 * each item is the length followed by up to msg_size bytes. */

#define ITEM_HEADER sizeof(uint32_t)

FIRMWARE_SLOT_PICKER(queue_take, queue_slot, queues, RTB_FREERTOS_QUEUES, storage, cap, queue_arena,
                     queue_arena_used, 8)

int rtb_queue_create(rtb_queue *q, size_t msg_size, unsigned depth)
{
    queue_obj *o = (queue_obj *)(void *)q;
    if (msg_size == 0 || depth == 0 || msg_size > RTB_FREERTOS_QUEUE_ARENA)
        return RTB_EINVAL;
    size_t item = ITEM_HEADER + ((msg_size + 3) & ~(size_t)3);
    pool_lock();
    /* Two more items: the sender's and the receiver's copy (FreeRTOS
     * copies whole items; one thread per side in every case). */
    queue_slot *s = queue_take(item * (depth + 2));
    pool_unlock();
    if (!s)
        return RTB_ENOMEM;
    o->slot = s;
    o->msg_size = msg_size;
    o->send_item = s->storage + item * depth;
    o->recv_item = o->send_item + item;
    o->h = xQueueCreateStatic(depth, item, s->storage, &s->buf);
    return o->h ? RTB_OK : RTB_ENOMEM;
}

int rtb_queue_delete(rtb_queue *q)
{
    queue_obj *o = (queue_obj *)(void *)q;
    vQueueDelete(o->h);
    pool_lock();
    o->slot->used = false;
    pool_unlock();
    return RTB_OK;
}

int rtb_queue_send(rtb_queue *q, const void *msg, size_t len, rtb_time deadline)
{
    queue_obj *o = (queue_obj *)(void *)q;
    if (len > o->msg_size)
        return RTB_EINVAL;
    uint8_t *item = o->send_item;
    uint32_t n = (uint32_t)len;
    memcpy(item, &n, sizeof n);
    memcpy(item + ITEM_HEADER, msg, len);
    QueueHandle_t h = o->h;
#define Q_SEND(ticks) xQueueSend(h, item, (ticks))
    TIMED_WAIT(Q_SEND, deadline);
#undef Q_SEND
}

static int receive_into(uint8_t *item, void *buf, size_t cap)
{
    uint32_t n;
    memcpy(&n, item, sizeof n);
    if (n > cap)
        return RTB_EINVAL;
    memcpy(buf, item + ITEM_HEADER, n);
    return (int)n;
}

int rtb_queue_receive(rtb_queue *q, void *buf, size_t cap, rtb_time deadline)
{
    queue_obj *o = (queue_obj *)(void *)q;
    uint8_t *item = o->recv_item;
    QueueHandle_t h = o->h;
    if (deadline == 0)
        return xQueueReceive(h, item, 0) == pdTRUE ? receive_into(item, buf, cap) : RTB_EAGAIN;
    for (;;) {
        TickType_t ticks = ticks_until(deadline);
        if (xQueueReceive(h, item, ticks) == pdTRUE)
            return receive_into(item, buf, cap);
        if (ticks == 0 || rtb_clock_now() >= deadline)
            return RTB_ETIMEDOUT;
    }
}
