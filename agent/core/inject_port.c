/* SPDX-License-Identifier: Apache-2.0 */
/* The portable fault layer (test builds only): the port's primitives made
 * deliberately wrong or slow, so that every port gets the same negative
 * controls for its known-answer tests. The test build links the agent with
 * `--wrap=rtb_sem_give` and so on (agent/CMakeLists.txt): every call from
 * the core and the cases reaches __wrap_rtb_X here, which injects what
 * --inject asked and calls the port's own rtb_X as __real_rtb_X. The port
 * itself knows nothing of it; a release build has no wrapper at all.
 *
 * Injections act only while a case runs (rtb_inject_arm), and a broken
 * object is broken from its creation: the watchdog and the stream, created
 * before, keep working primitives. */
#include <string.h>

#include "rtb.h"
#include "rtb/alloc.h"

#ifdef RTB_TEST_HOOKS

#define WRAPPED(ret, name, params) \
    ret __real_##name params;      \
    ret __wrap_##name params

/* The port's own functions, which the FIFO semaphore is built from. */
int __real_rtb_mutex_create(rtb_mutex *m, unsigned flags);
int __real_rtb_mutex_lock(rtb_mutex *m);
int __real_rtb_mutex_unlock(rtb_mutex *m);
int __real_rtb_sem_create(rtb_sem *s, unsigned initial);
int __real_rtb_sem_delete(rtb_sem *s);
int __real_rtb_sem_give(rtb_sem *s);
int __real_rtb_sem_take(rtb_sem *s, rtb_time deadline);

/* ---- threads --------------------------------------------------------- */

WRAPPED(int, rtb_thread_create,
        (rtb_thread * t, const rtb_thread_attr *attr, rtb_thread_fn fn, void *arg))
{
    RTB_INJECT_DELAY(RTB_INJ_OP_DELAY);
    rtb_thread_attr a = *attr;
    if (RTB_INJECTED(RTB_INJ_NEW_PRIO) && !a.normal) { /* the deliberately wrong create */
        int64_t p = a.priority + RTB_INJECT_VALUE(RTB_INJ_NEW_PRIO);
        a.priority = p < 1 ? 1 : p > RTB_PRIO_MAX ? RTB_PRIO_MAX : (int)p;
    }
    return __real_rtb_thread_create(t, &a, fn, arg);
}

WRAPPED(int, rtb_thread_delete, (rtb_thread * t))
{
    RTB_INJECT_DELAY(RTB_INJ_OP_DELAY);
    return __real_rtb_thread_delete(t);
}

WRAPPED(void, rtb_thread_yield, (void))
{
    RTB_INJECT_DELAY(RTB_INJ_YIELD_DELAY);
    __real_rtb_thread_yield();
}

WRAPPED(int, rtb_thread_self_set, (int priority, int cpu))
{
    RTB_INJECT_DELAY(RTB_INJ_OP_DELAY);
    return __real_rtb_thread_self_set(priority, cpu);
}

WRAPPED(int, rtb_thread_self_priority, (void))
{
    RTB_INJECT_DELAY(RTB_INJ_OP_DELAY);
    return __real_rtb_thread_self_priority();
}

/* ---- the scheduler lock: one that locks nothing (THR-LOCK's control) ---- */

static atomic_bool nolocked; /* this lock was the broken one: so is its unlock */

WRAPPED(int, rtb_sched_lock, (void))
{
    if (RTB_INJECTED(RTB_INJ_SCHED_NOLOCK)) {
        atomic_store(&nolocked, true);
        return RTB_OK;
    }
    return __real_rtb_sched_lock();
}

WRAPPED(int, rtb_sched_unlock, (void))
{
    if (atomic_exchange(&nolocked, false))
        return RTB_OK;
    return __real_rtb_sched_unlock();
}

/* ---- semaphores: slow, never blocking, or FIFO -------------------------- */

/* A FIFO semaphore (the negative control of SEM-B-REL: wakes waiters in
 * arrival order, whatever their priority), built from the port's own
 * primitives: a mutex over a count and a queue of waiters, each blocked on
 * a private semaphore that a give hands the unit to. Its state lives here,
 * found by the address of the rtb_sem, so that RTB_SEM_STORAGE stays what
 * the OS object needs. */
#define FIFO_SEMS 8
#define FIFO_WAITERS 64

typedef struct fifo_waiter {
    rtb_sem wake;
} fifo_waiter;

typedef struct fifo_sem {
    rtb_sem *key; /* NULL: free */
    rtb_mutex m;
    unsigned count;
    fifo_waiter *queue[FIFO_WAITERS];
    int head, n;
} fifo_sem;

static fifo_sem fifos[FIFO_SEMS];
static rtb_mutex fifo_table; /* guards the keys */
static atomic_bool fifo_table_ready;

/* Broken semaphores: take never blocks (sem_noblock). */
#define NOBLOCK_SEMS 32
static rtb_sem *_Atomic noblock[NOBLOCK_SEMS];

static fifo_sem *fifo_find(const rtb_sem *s)
{
    if (!atomic_load_explicit(&fifo_table_ready, memory_order_acquire))
        return NULL;
    for (int i = 0; i < FIFO_SEMS; i++)
        if (fifos[i].key == s)
            return &fifos[i];
    return NULL;
}

static bool is_noblock(const rtb_sem *s)
{
    for (int i = 0; i < NOBLOCK_SEMS; i++)
        if (atomic_load_explicit(&noblock[i], memory_order_relaxed) == s)
            return true;
    return false;
}

static void forget(rtb_sem *s)
{
    for (int i = 0; i < NOBLOCK_SEMS; i++) {
        rtb_sem *want = s;
        atomic_compare_exchange_strong(&noblock[i], &want, NULL);
    }
    fifo_sem *f = fifo_find(s);
    if (f) {
        rtb_mutex_delete(&f->m);
        __real_rtb_mutex_lock(&fifo_table);
        f->key = NULL;
        __real_rtb_mutex_unlock(&fifo_table);
    }
}

static int fifo_create(rtb_sem *s, unsigned initial)
{
    if (!atomic_load(&fifo_table_ready)) {
        /* The first one comes from a case: no other thread creates one yet. */
        if (__real_rtb_mutex_create(&fifo_table, 0) != RTB_OK)
            return RTB_ENOMEM;
        atomic_store_explicit(&fifo_table_ready, true, memory_order_release);
    }
    int rc = RTB_ENOMEM;
    __real_rtb_mutex_lock(&fifo_table);
    for (int i = 0; i < FIFO_SEMS; i++) {
        fifo_sem *f = &fifos[i];
        if (f->key)
            continue;
        memset(f, 0, sizeof *f);
        rc = __real_rtb_mutex_create(&f->m, 0);
        if (rc == RTB_OK) {
            f->count = initial;
            f->key = s;
        }
        break;
    }
    __real_rtb_mutex_unlock(&fifo_table);
    return rc;
}

WRAPPED(int, rtb_sem_create, (rtb_sem * s, unsigned initial))
{
    RTB_INJECT_DELAY(RTB_INJ_OP_DELAY);
    forget(s); /* storage reused without a delete */
    if (RTB_INJECTED(RTB_INJ_SEM_FIFO))
        return fifo_create(s, initial);
    int rc = __real_rtb_sem_create(s, initial);
    if (rc == RTB_OK && RTB_INJECTED(RTB_INJ_SEM_NOBLOCK)) {
        for (int i = 0; i < NOBLOCK_SEMS; i++) {
            rtb_sem *none = NULL;
            if (atomic_compare_exchange_strong(&noblock[i], &none, s))
                break;
        }
    }
    return rc;
}

WRAPPED(int, rtb_sem_delete, (rtb_sem * s))
{
    RTB_INJECT_DELAY(RTB_INJ_OP_DELAY);
    bool fifo = fifo_find(s) != NULL;
    forget(s);
    return fifo ? RTB_OK : __real_rtb_sem_delete(s);
}

static int fifo_give(fifo_sem *f)
{
    __real_rtb_mutex_lock(&f->m);
    if (f->n) { /* the unit goes to the first to arrive */
        fifo_waiter *w = f->queue[f->head];
        f->head = (f->head + 1) % FIFO_WAITERS;
        f->n--;
        __real_rtb_mutex_unlock(&f->m);
        return __real_rtb_sem_give(&w->wake);
    }
    f->count++;
    __real_rtb_mutex_unlock(&f->m);
    return RTB_OK;
}

static int fifo_take(fifo_sem *f, rtb_time deadline)
{
    __real_rtb_mutex_lock(&f->m);
    if (f->count && !f->n) {
        f->count--;
        __real_rtb_mutex_unlock(&f->m);
        return RTB_OK;
    }
    if (deadline == 0 || f->n == FIFO_WAITERS) {
        __real_rtb_mutex_unlock(&f->m);
        return RTB_EAGAIN;
    }
    fifo_waiter w;
    if (__real_rtb_sem_create(&w.wake, 0) != RTB_OK) {
        __real_rtb_mutex_unlock(&f->m);
        return RTB_ENOMEM;
    }
    f->queue[(f->head + f->n++) % FIFO_WAITERS] = &w;
    __real_rtb_mutex_unlock(&f->m);
    int rc = __real_rtb_sem_take(&w.wake, deadline);
    if (rc != RTB_OK) {
        /* Gave up: out of the queue, unless a give handed it the unit
         * meanwhile (then the unit is ours after all). */
        __real_rtb_mutex_lock(&f->m);
        bool queued = false;
        for (int i = 0; i < f->n; i++) {
            int at = (f->head + i) % FIFO_WAITERS;
            if (f->queue[at] == &w) {
                queued = true;
                for (int k = i; k + 1 < f->n; k++)
                    f->queue[(f->head + k) % FIFO_WAITERS] =
                        f->queue[(f->head + k + 1) % FIFO_WAITERS];
                f->n--;
                break;
            }
        }
        __real_rtb_mutex_unlock(&f->m);
        if (!queued)
            rc = __real_rtb_sem_take(&w.wake, RTB_FOREVER);
    }
    __real_rtb_sem_delete(&w.wake);
    return rc;
}

WRAPPED(int, rtb_sem_give, (rtb_sem * s))
{
    RTB_INJECT_DELAY(RTB_INJ_GIVE_DELAY);
    RTB_INJECT_DELAY(RTB_INJ_OP_DELAY);
    fifo_sem *f = fifo_find(s);
    return f ? fifo_give(f) : __real_rtb_sem_give(s);
}

/* A FIFO double takes a mutex: fine in a POSIX signal handler that never
 * interrupts its holder (the cases' handlers run on their own thread), not
 * in an RTOS interrupt. No known-answer test combines them. */
WRAPPED(int, rtb_sem_give_isr, (rtb_sem * s))
{
    RTB_INJECT_DELAY(RTB_INJ_GIVE_DELAY); /* IRQ-TLT's control: a slow give in the handler */
    RTB_INJECT_DELAY(RTB_INJ_OP_DELAY);
    fifo_sem *f = fifo_find(s);
    return f ? fifo_give(f) : __real_rtb_sem_give_isr(s);
}

WRAPPED(int, rtb_sem_take, (rtb_sem * s, rtb_time deadline))
{
    RTB_INJECT_DELAY(RTB_INJ_OP_DELAY);
    if (is_noblock(s))
        return RTB_OK; /* take never blocks */
    fifo_sem *f = fifo_find(s);
    return f ? fifo_take(f, deadline) : __real_rtb_sem_take(s, deadline);
}

/* ---- mutexes: slow, or without priority inheritance ------------------- */

WRAPPED(int, rtb_mutex_create, (rtb_mutex * m, unsigned flags))
{
    RTB_INJECT_DELAY(RTB_INJ_OP_DELAY);
    if (RTB_INJECTED(RTB_INJ_MUTEX_NOPI)) /* a broken mutex: no inheritance */
        flags &= ~RTB_MUTEX_PI;
    return __real_rtb_mutex_create(m, flags);
}

WRAPPED(int, rtb_mutex_lock, (rtb_mutex * m))
{
    RTB_INJECT_DELAY(RTB_INJ_OP_DELAY);
    return __real_rtb_mutex_lock(m);
}

WRAPPED(int, rtb_mutex_unlock, (rtb_mutex * m))
{
    RTB_INJECT_DELAY(RTB_INJ_OP_DELAY);
    return __real_rtb_mutex_unlock(m);
}

/* ---- queues and events: slow ------------------------------------------ */

/* ---- allocators (rtb/alloc.h): MEM-HEAP's and MEM-POOL's known answer ---- */

WRAPPED(int, rtb_heap_alloc, (size_t size, void **out))
{
    RTB_INJECT_DELAY(RTB_INJ_OP_DELAY);
    return __real_rtb_heap_alloc(size, out);
}

WRAPPED(int, rtb_heap_free, (void *p))
{
    RTB_INJECT_DELAY(RTB_INJ_OP_DELAY);
    return __real_rtb_heap_free(p);
}

WRAPPED(int, rtb_pool_get, (rtb_pool * pool, void **out))
{
    RTB_INJECT_DELAY(RTB_INJ_OP_DELAY);
    return __real_rtb_pool_get(pool, out);
}

WRAPPED(int, rtb_pool_put, (rtb_pool * pool, void *p))
{
    RTB_INJECT_DELAY(RTB_INJ_OP_DELAY);
    return __real_rtb_pool_put(pool, p);
}

WRAPPED(int, rtb_queue_send, (rtb_queue * q, const void *msg, size_t len, rtb_time deadline))
{
    RTB_INJECT_DELAY(RTB_INJ_OP_DELAY);
    return __real_rtb_queue_send(q, msg, len, deadline);
}

WRAPPED(int, rtb_queue_receive, (rtb_queue * q, void *buf, size_t cap, rtb_time deadline))
{
    RTB_INJECT_DELAY(RTB_INJ_OP_DELAY);
    return __real_rtb_queue_receive(q, buf, cap, deadline);
}

WRAPPED(int, rtb_event_arm, (rtb_event * e, rtb_time when, rtb_time period))
{
    RTB_INJECT_DELAY(RTB_INJ_OP_DELAY);
    return __real_rtb_event_arm(e, when, period);
}

/* ---- a late wake-up (JIT-PER's known answer beside the kernel's timerlat:
 * the task wakes on time and then spins, so only the user-space figure moves) */

WRAPPED(int, rtb_sleep_until, (rtb_time when))
{
    int rc = __real_rtb_sleep_until(when);
    RTB_INJECT_DELAY(RTB_INJ_WAKE_DELAY);
    /* Late and asleep: the timer fired late while other threads had the CPU
     * (TM's monitor: its workers count on through the lateness). */
    int64_t late = RTB_INJECT_VALUE(RTB_INJ_WAKE_LATE);
    if (late > 0 && rc == RTB_OK)
        rc = __real_rtb_sleep_until(rtb_clock_now() + late);
    return rc;
}

/* ---- the measurement clock: stepping back, or skewed across CPUs ------ */

WRAPPED(rtb_time, rtb_ts_now, (void))
{
    return rtb_inject_clock(__real_rtb_ts_now());
}

/* The stamps of measured windows: the same faults, counted in ticks. */
WRAPPED(uint64_t, rtb_cycles_now, (void))
{
    return (uint64_t)rtb_inject_clock((rtb_time)__real_rtb_cycles_now());
}

#endif
