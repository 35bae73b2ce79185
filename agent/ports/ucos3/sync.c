/* SPDX-License-Identifier: Apache-2.0 */
/* Counting semaphores, mutexes and message queues of the uC/OS-III port.
 * A semaphore holds its OS_SEM, a mutex its OS_MUTEX (a plain lock: an
 * OS_SEM of one, as on FreeRTOS: uC/OS-III's mutex always inherits);
 * queues live in a pool, their messages in an arena. */
#include <string.h>

#include "ucos3_port.h"
#include "slots.h"

typedef struct {
    OS_SEM sem;
} sem_obj;
_Static_assert(sizeof(sem_obj) <= RTB_SEM_STORAGE, "rtb_sem too small");

typedef struct {
    bool pi;
    union {
        OS_MUTEX mutex;
        OS_SEM sem;
    } u;
} mutex_obj;
_Static_assert(sizeof(mutex_obj) <= RTB_MUTEX_STORAGE, "rtb_mutex too small");

static int status_of(OS_ERR err)
{
    switch (err) {
    case OS_ERR_NONE:
        return RTB_OK;
    case OS_ERR_TIMEOUT:
        return RTB_ETIMEDOUT;
    case OS_ERR_PEND_WOULD_BLOCK:
        return RTB_EAGAIN;
    default:
        return RTB_EFAIL;
    }
}

/* A timed pend around `pend(timeout_ticks, opt)`: RTB_EAGAIN for deadline
 * 0, RTB_ETIMEDOUT once the deadline passed (uC/OS-III's timeout 0 means
 * "forever", so a passed deadline is a non-blocking try). */
#define TIMED_PEND(pend, deadline)                                                          \
    do {                                                                                    \
        OS_ERR err_;                                                                        \
        if ((deadline) == 0) {                                                              \
            pend(0, OS_OPT_PEND_NON_BLOCKING, &err_);                                       \
            return status_of(err_);                                                         \
        }                                                                                   \
        for (;;) {                                                                          \
            bool passed_;                                                                   \
            OS_TICK ticks_ = ticks_until((deadline), &passed_);                             \
            pend(ticks_, passed_ ? OS_OPT_PEND_NON_BLOCKING : OS_OPT_PEND_BLOCKING, &err_); \
            if (err_ == OS_ERR_NONE)                                                        \
                return RTB_OK;                                                              \
            if (err_ != OS_ERR_TIMEOUT && err_ != OS_ERR_PEND_WOULD_BLOCK)                  \
                return RTB_EFAIL;                                                           \
            if (passed_ || rtb_clock_now() >= (deadline))                                   \
                return RTB_ETIMEDOUT;                                                       \
        }                                                                                   \
    } while (0)

/* ---- counting semaphores ------------------------------------------------ */

int rtb_sem_create(rtb_sem *s, unsigned initial)
{
    OS_ERR err;
    OSSemCreate(&((sem_obj *)(void *)s)->sem, "rtb", (OS_SEM_CTR)initial, &err);
    return status_of(err);
}

int rtb_sem_delete(rtb_sem *s)
{
    OS_ERR err;
    OSSemDel(&((sem_obj *)(void *)s)->sem, OS_OPT_DEL_ALWAYS, &err);
    return status_of(err);
}

/* Also from an interrupt: the handler runs between OSIntEnter and
 * OSIntExit (boards/common/event.c), which switches at its end. */
int rtb_sem_give(rtb_sem *s)
{
    OS_ERR err;
    OSSemPost(&((sem_obj *)(void *)s)->sem, OS_OPT_POST_1, &err);
    return status_of(err);
}

int rtb_sem_give_isr(rtb_sem *s) { return rtb_sem_give(s); }

int rtb_sem_take(rtb_sem *s, rtb_time deadline)
{
    OS_SEM *sem = &((sem_obj *)(void *)s)->sem;
#define SEM_PEND(ticks, opt, errp) OSSemPend(sem, (ticks), (opt), NULL, (errp))
    TIMED_PEND(SEM_PEND, deadline);
#undef SEM_PEND
}

/* ---- mutexes ------------------------------------------------------------ */

int rtb_mutex_create(rtb_mutex *m, unsigned flags)
{
    mutex_obj *o = (mutex_obj *)(void *)m;
    OS_ERR err;
    o->pi = (flags & RTB_MUTEX_PI) != 0;
    if (o->pi)
        OSMutexCreate(&o->u.mutex, "rtb", &err); /* inherits: uC/OS-III's only mutex */
    else
        OSSemCreate(&o->u.sem, "rtb-lock", 1, &err);
    return status_of(err);
}

int rtb_mutex_delete(rtb_mutex *m)
{
    mutex_obj *o = (mutex_obj *)(void *)m;
    OS_ERR err;
    if (o->pi)
        OSMutexDel(&o->u.mutex, OS_OPT_DEL_ALWAYS, &err);
    else
        OSSemDel(&o->u.sem, OS_OPT_DEL_ALWAYS, &err);
    return status_of(err);
}

int rtb_mutex_lock(rtb_mutex *m)
{
    mutex_obj *o = (mutex_obj *)(void *)m;
    OS_ERR err;
    if (o->pi)
        OSMutexPend(&o->u.mutex, 0, OS_OPT_PEND_BLOCKING, NULL, &err);
    else
        OSSemPend(&o->u.sem, 0, OS_OPT_PEND_BLOCKING, NULL, &err);
    return status_of(err);
}

int rtb_mutex_unlock(rtb_mutex *m)
{
    mutex_obj *o = (mutex_obj *)(void *)m;
    OS_ERR err;
    if (o->pi) {
        OSMutexPost(&o->u.mutex, OS_OPT_POST_NONE, &err);
        return err == OS_ERR_MUTEX_NOT_OWNER ? RTB_EPERM : status_of(err);
    }
    if (o->u.sem.Ctr > 0)
        return RTB_EPERM; /* not locked: a lock's count stays 0 or 1 */
    OSSemPost(&o->u.sem, OS_OPT_POST_1, &err);
    return status_of(err);
}

/* ---- message queues -----------------------------------------------------
 * uC/OS-III's queues pass a pointer and a size and never block a sender.
 * An rtbench queue copies messages and blocks a sender while it is full:
 * its messages live in slots of the queue's storage, a free list hands
 * them out, and a semaphore counts the free ones (the sender pends on it,
 * the receiver posts it after copying the message out). */

typedef struct msg_slot {
    struct msg_slot *next; /* while free */
} msg_slot;

typedef struct queue_slot {
    OS_Q q;
    OS_SEM space;
    uint8_t *storage;
    size_t cap;
    msg_slot *free;
    unsigned depth; /* messages of the kernel's pool it may hold */
    bool used;
} queue_slot;

static queue_slot queues[RTB_UCOS3_QUEUES];
RTB_BULK static uint8_t queue_arena[RTB_UCOS3_QUEUE_ARENA];
static size_t queue_arena_used;

/* The kernel's message pool (OS_CFG_MSG_POOL_SIZE, 12 bytes a message in
 * .bss) serves every queue at once: a queue is made only while the depths
 * of the live ones fit it, so a post never finds the pool empty (a send
 * would fail while its queue has room). 16 messages stay for the kernel
 * load's workers (ports/ucos3/load.c: one in flight each). */
#define QUEUE_MSGS (OS_CFG_MSG_POOL_SIZE - 16u)
static unsigned queue_msgs_reserved;

size_t rtb_os_queues_reserved(void) { return queue_arena_used; }

typedef struct {
    queue_slot *slot;
    size_t msg_size;
} queue_obj;
_Static_assert(sizeof(queue_obj) <= RTB_QUEUE_STORAGE, "rtb_queue too small");

#define ITEM_HEADER 8u /* the free-list link; the payload stays 8-aligned */

FIRMWARE_SLOT_PICKER(queue_take, queue_slot, queues, RTB_UCOS3_QUEUES, storage, cap, queue_arena,
                     queue_arena_used, 8)

int rtb_queue_create(rtb_queue *q, size_t msg_size, unsigned depth)
{
    queue_obj *o = (queue_obj *)(void *)q;
    if (msg_size == 0 || depth == 0 || depth > QUEUE_MSGS || msg_size > RTB_UCOS3_QUEUE_ARENA)
        return RTB_EINVAL;
    size_t item = ITEM_HEADER + ((msg_size + 7) & ~(size_t)7);
    rtb_os_lock();
    queue_slot *s = depth <= QUEUE_MSGS - queue_msgs_reserved ? queue_take(item * depth) : NULL;
    if (s) {
        s->depth = depth;
        queue_msgs_reserved += depth;
    }
    rtb_os_unlock();
    if (!s)
        return RTB_ENOMEM;
    s->free = NULL;
    for (unsigned i = depth; i-- > 0;) {
        msg_slot *m = (msg_slot *)(void *)(s->storage + i * item);
        m->next = s->free;
        s->free = m;
    }
    OS_ERR err;
    OSQCreate(&s->q, "rtb", (OS_MSG_QTY)depth, &err);
    if (err == OS_ERR_NONE)
        OSSemCreate(&s->space, "rtb-space", (OS_SEM_CTR)depth, &err);
    if (err != OS_ERR_NONE) {
        rtb_os_lock();
        s->used = false;
        queue_msgs_reserved -= depth;
        rtb_os_unlock();
        return RTB_EFAIL;
    }
    o->slot = s;
    o->msg_size = msg_size;
    return RTB_OK;
}

int rtb_queue_delete(rtb_queue *q)
{
    queue_obj *o = (queue_obj *)(void *)q;
    OS_ERR err;
    OSQDel(&o->slot->q, OS_OPT_DEL_ALWAYS, &err);
    OSSemDel(&o->slot->space, OS_OPT_DEL_ALWAYS, &err);
    rtb_os_lock();
    o->slot->used = false;
    queue_msgs_reserved -= o->slot->depth;
    rtb_os_unlock();
    return RTB_OK;
}

static int space_take(queue_slot *s, rtb_time deadline)
{
#define SPACE_PEND(ticks, opt, errp) OSSemPend(&s->space, (ticks), (opt), NULL, (errp))
    TIMED_PEND(SPACE_PEND, deadline);
#undef SPACE_PEND
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
    CPU_SR_ALLOC();
    CPU_CRITICAL_ENTER();
    msg_slot *m = s->free;
    s->free = m->next;
    CPU_CRITICAL_EXIT();
    uint8_t *payload = (uint8_t *)m + ITEM_HEADER;
    memcpy(payload, msg, len);
    OS_ERR err;
    OSQPost(&s->q, payload, (OS_MSG_SIZE)len, OS_OPT_POST_FIFO, &err);
    return status_of(err);
}

static int received(queue_slot *s, uint8_t *payload, OS_MSG_SIZE n, void *buf, size_t cap)
{
    int rc = n > cap ? RTB_EINVAL : (int)n;
    if (n <= cap)
        memcpy(buf, payload, n);
    msg_slot *m = (msg_slot *)(void *)(payload - ITEM_HEADER);
    CPU_SR_ALLOC();
    CPU_CRITICAL_ENTER();
    m->next = s->free;
    s->free = m;
    CPU_CRITICAL_EXIT();
    OS_ERR err;
    OSSemPost(&s->space, OS_OPT_POST_1, &err);
    return rc;
}

int rtb_queue_receive(rtb_queue *q, void *buf, size_t cap, rtb_time deadline)
{
    queue_slot *s = ((queue_obj *)(void *)q)->slot;
    OS_MSG_SIZE n = 0;
    OS_ERR err;
    if (deadline == 0) {
        void *p = OSQPend(&s->q, 0, OS_OPT_PEND_NON_BLOCKING, &n, NULL, &err);
        return err == OS_ERR_NONE ? received(s, p, n, buf, cap) : status_of(err);
    }
    for (;;) {
        bool passed;
        OS_TICK ticks = ticks_until(deadline, &passed);
        void *p = OSQPend(&s->q, ticks, passed ? OS_OPT_PEND_NON_BLOCKING : OS_OPT_PEND_BLOCKING,
                          &n, NULL, &err);
        if (err == OS_ERR_NONE)
            return received(s, p, n, buf, cap);
        if (err != OS_ERR_TIMEOUT && err != OS_ERR_PEND_WOULD_BLOCK)
            return RTB_EFAIL;
        if (passed || rtb_clock_now() >= deadline)
            return RTB_ETIMEDOUT;
    }
}
