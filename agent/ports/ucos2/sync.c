/* SPDX-License-Identifier: Apache-2.0 */
/* Counting semaphores, mutexes and message queues of the uC/OS-II port, on
 * event control blocks from the kernel's pool (OS_MAX_EVENTS). A mutex
 * created with RTB_MUTEX_PI is uC/OS-II's mutex with a priority ceiling
 * (the kernel has no inheritance): each takes one of the ceiling
 * priorities above every thread; a plain lock is the same mutex without a
 * ceiling (OS_PRIO_MUTEX_CEIL_DIS). */
#include <string.h>

#include "ucos2_port.h"
#include "slots.h"

typedef struct {
    OS_EVENT *ev;
} sem_obj;
_Static_assert(sizeof(sem_obj) <= RTB_SEM_STORAGE, "rtb_sem too small");

typedef struct {
    OS_EVENT *ev;
    INT8U ceiling; /* OS_PRIO_MUTEX_CEIL_DIS: none */
} mutex_obj;
_Static_assert(sizeof(mutex_obj) <= RTB_MUTEX_STORAGE, "rtb_mutex too small");

static bool ceiling_used[UCOS2_CEILINGS];

static int status_of(INT8U err)
{
    switch (err) {
    case OS_ERR_NONE:
        return RTB_OK;
    case OS_ERR_TIMEOUT:
        return RTB_ETIMEDOUT;
    default:
        return RTB_EFAIL;
    }
}

/* ---- counting semaphores ------------------------------------------------ */

int rtb_sem_create(rtb_sem *s, unsigned initial)
{
    if (initial > 0xFFFFu)
        return RTB_EINVAL; /* a 16-bit count */
    OS_EVENT *ev = OSSemCreate((INT16U)initial);
    ((sem_obj *)(void *)s)->ev = ev;
    return ev ? RTB_OK : RTB_ENOMEM;
}

int rtb_sem_delete(rtb_sem *s)
{
    INT8U err;
    OSSemDel(((sem_obj *)(void *)s)->ev, OS_DEL_ALWAYS, &err);
    return status_of(err);
}

/* Also from an interrupt: the handler runs between OSIntEnter and
 * OSIntExit (boards/common/event.c), which switches at its end. */
int rtb_sem_give(rtb_sem *s) { return status_of(OSSemPost(((sem_obj *)(void *)s)->ev)); }

int rtb_sem_give_isr(rtb_sem *s) { return rtb_sem_give(s); }

int rtb_sem_take(rtb_sem *s, rtb_time deadline)
{
    OS_EVENT *ev = ((sem_obj *)(void *)s)->ev;
    if (deadline == 0)
        return OSSemAccept(ev) > 0 ? RTB_OK : RTB_EAGAIN;
    for (;;) {
        bool passed;
        INT32U ticks = ticks_until(deadline, &passed);
        if (passed)
            return OSSemAccept(ev) > 0 ? RTB_OK : RTB_ETIMEDOUT;
        INT8U err;
        OSSemPend(ev, ticks, &err);
        if (err == OS_ERR_NONE)
            return RTB_OK;
        if (err != OS_ERR_TIMEOUT)
            return RTB_EFAIL;
        if (rtb_clock_now() >= deadline)
            return RTB_ETIMEDOUT;
    }
}

/* ---- mutexes ------------------------------------------------------------ */

int rtb_mutex_create(rtb_mutex *m, unsigned flags)
{
    mutex_obj *o = (mutex_obj *)(void *)m;
    o->ceiling = OS_PRIO_MUTEX_CEIL_DIS;
    if (flags & RTB_MUTEX_PI) {
        rtb_os_lock();
        for (INT8U i = 0; i < UCOS2_CEILINGS; i++)
            if (!ceiling_used[i]) {
                ceiling_used[i] = true;
                o->ceiling = (INT8U)(UCOS2_CEILING_BASE + i);
                break;
            }
        rtb_os_unlock();
        if (o->ceiling == OS_PRIO_MUTEX_CEIL_DIS)
            return RTB_ENOMEM; /* every ceiling priority is taken */
    }
    INT8U err;
    o->ev = OSMutexCreate(o->ceiling, &err);
    if (!o->ev && o->ceiling != OS_PRIO_MUTEX_CEIL_DIS) {
        rtb_os_lock();
        ceiling_used[o->ceiling - UCOS2_CEILING_BASE] = false;
        rtb_os_unlock();
    }
    return o->ev ? RTB_OK : RTB_ENOMEM;
}

int rtb_mutex_delete(rtb_mutex *m)
{
    mutex_obj *o = (mutex_obj *)(void *)m;
    INT8U err;
    OSMutexDel(o->ev, OS_DEL_ALWAYS, &err);
    if (o->ceiling != OS_PRIO_MUTEX_CEIL_DIS) {
        rtb_os_lock();
        ceiling_used[o->ceiling - UCOS2_CEILING_BASE] = false;
        rtb_os_unlock();
    }
    return status_of(err);
}

int rtb_mutex_lock(rtb_mutex *m)
{
    INT8U err;
    OSMutexPend(((mutex_obj *)(void *)m)->ev, 0, &err);
    return status_of(err);
}

int rtb_mutex_unlock(rtb_mutex *m)
{
    INT8U err = OSMutexPost(((mutex_obj *)(void *)m)->ev);
    return err == OS_ERR_NOT_MUTEX_OWNER ? RTB_EPERM : status_of(err);
}

/* ---- message queues -----------------------------------------------------
 * uC/OS-II's queues pass a pointer and never block a sender: an rtbench
 * queue copies each message into a slot of its storage (a free list) and
 * counts the free slots with a semaphore the sender pends on, as the
 * uC/OS-III port does. A slot starts with its message's length. */

typedef struct msg_slot {
    struct msg_slot *next; /* while free */
    uint32_t len;
} msg_slot;

typedef struct queue_slot {
    OS_EVENT *q;
    OS_EVENT *space;
    void **ring; /* uC/OS-II's own array of pointers */
    uint8_t *storage;
    size_t cap;
    msg_slot *free;
    bool used;
} queue_slot;

static queue_slot queues[RTB_UCOS2_QUEUES];
RTB_BULK static uint8_t queue_arena[RTB_UCOS2_QUEUE_ARENA];
static size_t queue_arena_used;

size_t rtb_os_queues_reserved(void) { return queue_arena_used; }

typedef struct {
    queue_slot *slot;
    size_t msg_size;
} queue_obj;
_Static_assert(sizeof(queue_obj) <= RTB_QUEUE_STORAGE, "rtb_queue too small");

#define ITEM_HEADER 8u

FIRMWARE_SLOT_PICKER(queue_take, queue_slot, queues, RTB_UCOS2_QUEUES, storage, cap, queue_arena,
                     queue_arena_used, 8)

int rtb_queue_create(rtb_queue *q, size_t msg_size, unsigned depth)
{
    queue_obj *o = (queue_obj *)(void *)q;
    if (msg_size == 0 || depth == 0 || depth > 0xFFFFu || msg_size > RTB_UCOS2_QUEUE_ARENA)
        return RTB_EINVAL;
    size_t item = ITEM_HEADER + ((msg_size + 7) & ~(size_t)7);
    rtb_os_lock();
    queue_slot *s = queue_take(item * depth + sizeof(void *) * depth);
    rtb_os_unlock();
    if (!s)
        return RTB_ENOMEM;
    s->ring = (void **)(void *)s->storage;
    uint8_t *items = s->storage + ((sizeof(void *) * depth + 7) & ~(size_t)7);
    if (items + item * depth > s->storage + s->cap) {
        rtb_os_lock();
        s->used = false;
        rtb_os_unlock();
        return RTB_ENOMEM;
    }
    s->free = NULL;
    for (unsigned i = depth; i-- > 0;) {
        msg_slot *m = (msg_slot *)(void *)(items + i * item);
        m->next = s->free;
        s->free = m;
    }
    s->q = OSQCreate(s->ring, (INT16U)depth);
    s->space = s->q ? OSSemCreate((INT16U)depth) : NULL;
    if (!s->q || !s->space) {
        INT8U err;
        if (s->q)
            OSQDel(s->q, OS_DEL_ALWAYS, &err);
        rtb_os_lock();
        s->used = false;
        rtb_os_unlock();
        return RTB_ENOMEM;
    }
    o->slot = s;
    o->msg_size = msg_size;
    return RTB_OK;
}

int rtb_queue_delete(rtb_queue *q)
{
    queue_obj *o = (queue_obj *)(void *)q;
    INT8U err;
    OSQDel(o->slot->q, OS_DEL_ALWAYS, &err);
    OSSemDel(o->slot->space, OS_DEL_ALWAYS, &err);
    rtb_os_lock();
    o->slot->used = false;
    rtb_os_unlock();
    return RTB_OK;
}

static int space_take(queue_slot *s, rtb_time deadline)
{
    if (deadline == 0)
        return OSSemAccept(s->space) > 0 ? RTB_OK : RTB_EAGAIN;
    for (;;) {
        bool passed;
        INT32U ticks = ticks_until(deadline, &passed);
        if (passed)
            return OSSemAccept(s->space) > 0 ? RTB_OK : RTB_ETIMEDOUT;
        INT8U err;
        OSSemPend(s->space, ticks, &err);
        if (err == OS_ERR_NONE)
            return RTB_OK;
        if (err != OS_ERR_TIMEOUT)
            return RTB_EFAIL;
        if (rtb_clock_now() >= deadline)
            return RTB_ETIMEDOUT;
    }
}

int rtb_queue_send(rtb_queue *q, const void *msg, size_t len, rtb_time deadline)
{
    queue_obj *o = (queue_obj *)(void *)q;
    queue_slot *s = o->slot;
    if (len > o->msg_size)
        return RTB_EINVAL;
    int rc = space_take(s, deadline);
    if (rc != RTB_OK)
        return rc;
    OS_CPU_SR cpu_sr;
    OS_ENTER_CRITICAL();
    msg_slot *m = s->free;
    s->free = m->next;
    OS_EXIT_CRITICAL();
    m->len = (uint32_t)len;
    memcpy((uint8_t *)m + ITEM_HEADER, msg, len);
    return status_of(OSQPost(s->q, m));
}

static int received(queue_slot *s, msg_slot *m, void *buf, size_t cap)
{
    int rc = m->len > cap ? RTB_EINVAL : (int)m->len;
    if (m->len <= cap)
        memcpy(buf, (uint8_t *)m + ITEM_HEADER, m->len);
    OS_CPU_SR cpu_sr;
    OS_ENTER_CRITICAL();
    m->next = s->free;
    s->free = m;
    OS_EXIT_CRITICAL();
    OSSemPost(s->space);
    return rc;
}

int rtb_queue_receive(rtb_queue *q, void *buf, size_t cap, rtb_time deadline)
{
    queue_slot *s = ((queue_obj *)(void *)q)->slot;
    INT8U err;
    if (deadline == 0) {
        msg_slot *m = OSQAccept(s->q, &err);
        return m ? received(s, m, buf, cap) : RTB_EAGAIN;
    }
    for (;;) {
        bool passed;
        INT32U ticks = ticks_until(deadline, &passed);
        if (passed) {
            msg_slot *m = OSQAccept(s->q, &err);
            return m ? received(s, m, buf, cap) : RTB_ETIMEDOUT;
        }
        msg_slot *m = OSQPend(s->q, ticks, &err);
        if (err == OS_ERR_NONE && m)
            return received(s, m, buf, cap);
        if (err != OS_ERR_TIMEOUT)
            return RTB_EFAIL;
        if (rtb_clock_now() >= deadline)
            return RTB_ETIMEDOUT;
    }
}
