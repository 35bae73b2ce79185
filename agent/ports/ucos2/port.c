/* SPDX-License-Identifier: Apache-2.0 */
/* The uC/OS-II port: the system and threads (semaphores, mutexes and
 * queues: sync.c; the clock, events and timestamps: boards/common/).
 * uC/OS-II runs one task per priority and has no round robin: a thread
 * asked for at a priority another one holds is refused (RTB_ENOTSUP), and
 * the cases that need equal priorities say so (rtb_port_info
 * .one_task_per_priority). Nothing is emulated. */
#include <stdio.h>
#include <string.h>

#include "ucos2_port.h"
#include "slots.h"

/* uC/OS-II's TCBs are a static table (OS_MAX_TASKS in os_cfg.h, 52 bytes
 * each, with one done-semaphore each in OS_MAX_EVENTS), paid whether used
 * or not: 104 slots (one per priority) cost 7 KiB of RAM that no suite
 * uses (issue 22: a case in 64 KiB). The most any default case runs at
 * once is 33 (SEM-ARC W=32 and its creator); 40 leave a margin. A case
 * asking for more gets RTB_ENOMEM and says so (SEM-ARC: "only N waiters
 * could be created"). */
#define RTB_UCOS2_THREADS 40
#define RTB_UCOS2_STACK_ARENA (RTB_UCOS2_THREADS * RTB_THREAD_STACK)

typedef struct thread_slot {
    OS_EVENT *done;
    INT8U prio;
    OS_STK *stack;
    size_t stack_words;
    size_t run_stack_words;
    rtb_thread_fn fn;
    void *arg;
    bool used;
    char name[16];
    size_t unused_bytes;
} thread_slot;

RTB_BULK static thread_slot threads[RTB_UCOS2_THREADS];
static int threads_touched;
RTB_BULK static OS_STK stack_arena[RTB_UCOS2_STACK_ARENA / sizeof(OS_STK)];
static size_t stack_arena_used;

size_t rtb_os_stacks_reserved(void) { return stack_arena_used * sizeof(OS_STK); }
size_t rtb_os_thread_slots_used(void) { return (size_t)threads_touched * sizeof(thread_slot); }

typedef struct {
    thread_slot *slot;
} thread_obj;
_Static_assert(sizeof(thread_obj) <= RTB_THREAD_STORAGE, "rtb_thread too small");

int rtb_port_init(rtb_port_info *info)
{
    memset(threads, 0, sizeof threads);
    memset(info, 0, sizeof *info);
    info->port = "ucos2";
    snprintf(info->sysname, sizeof info->sysname, "uC/OS-II");
    unsigned v = (unsigned)OS_VERSION; /* 29301 for v2.93.01 */
    snprintf(info->release, sizeof info->release, "v%u.%02u.%02u", v / 10000, v / 100 % 100,
             v % 100);
    snprintf(info->version, sizeof info->version,
             "uC/OS-II %s, tick %u Hz, one task per priority, no round robin, "
             "ceiling mutexes, SysTick at NVIC 0x80 (events at 0xC0)",
             info->release, (unsigned)OS_TICKS_PER_SEC);
    snprintf(info->machine, sizeof info->machine, "%s", BOARD_NAME);
    snprintf(info->cpu_model, sizeof info->cpu_model, "%s", BOARD_CPU);
    info->cpu_count = 1;
    snprintf(info->preempt, sizeof info->preempt, "preemptive");
    snprintf(info->clocksource, sizeof info->clocksource, "%s", BOARD_TS_SOURCE);
    info->realtime = true;
    snprintf(info->policy, sizeof info->policy, "uC/OS-II fixed priority");
    info->memory_locked = true;
    snprintf(info->event_timer, sizeof info->event_timer,
             "hardware timer interrupt (CMSDK TIMER0, IRQ %d)", BOARD_EVENT_IRQ_TIMER);
    snprintf(info->event_raise, sizeof info->event_raise,
             "software-pended interrupt (NVIC STIR, IRQ %d)", BOARD_EVENT_IRQ_SOFT);
    info->sched_lock = true;
    snprintf(info->sched_lock_detail, sizeof info->sched_lock_detail,
             "OSSchedLock / OSSchedUnlock");
    info->one_task_per_priority = true;
    snprintf(info->one_task_detail, sizeof info->one_task_detail,
             "uC/OS-II runs one task per priority and has no round robin: threads cannot "
             "share a priority, and a yield has no equal to switch to");
    snprintf(info->mutex_protocol, sizeof info->mutex_protocol,
             "priority ceiling: uC/OS-II raises the owner to the mutex's ceiling while "
             "another task waits");
    return RTB_OK;
}

static void trampoline(void *p)
{
    thread_slot *s = p;
    s->fn(s->arg);
    OS_STK_DATA d;
    s->unused_bytes = OSTaskStkChk(OS_PRIO_SELF, &d) == OS_ERR_NONE ? d.OSFree * sizeof(OS_STK) : 0;
    OSSemPost(s->done);
    /* Not a return: the joiner deletes the task (and may reuse its slot). */
    OSTaskSuspend(OS_PRIO_SELF);
}

FIRMWARE_SLOT_PICKER(slot_pick, thread_slot, threads, RTB_UCOS2_THREADS, stack, stack_words, stack_arena,
                     stack_arena_used, 1)

static void slot_free(thread_slot *s)
{
    rtb_os_lock();
    s->used = false;
    rtb_os_unlock();
}

int rtb_thread_create(rtb_thread *t, const rtb_thread_attr *attr, rtb_thread_fn fn, void *arg)
{
    if (!attr->normal && (attr->priority < 1 || attr->priority > RTB_PRIO_MAX))
        return RTB_EINVAL;
    if (attr->cpu > 0)
        return RTB_EINVAL;
    INT8U prio = attr->normal ? UCOS2_NORMAL_PRIO : ucos2_prio(attr->priority);
    if (OSTCBPrioTbl[prio] != (OS_TCB *)0)
        return RTB_ENOTSUP; /* one task per priority */
    bool own = attr->stack != NULL && attr->stack_size >= 256;
    size_t bytes = attr->stack_size ? attr->stack_size : RTB_THREAD_STACK;
    if (!own && bytes > RTB_THREAD_STACK)
        bytes = RTB_THREAD_STACK;
    size_t words = (bytes + sizeof(OS_STK) - 1) / sizeof(OS_STK);
    rtb_os_lock();
    thread_slot *s = slot_pick(own ? 0 : words);
    if (s && s - threads >= threads_touched)
        threads_touched = (int)(s - threads) + 1;
    rtb_os_unlock();
    if (!s)
        return RTB_ENOMEM;
    OS_STK *stack = own ? (OS_STK *)attr->stack : s->stack;
    size_t stack_words = own ? bytes / sizeof(OS_STK) : s->stack_words;
    /* Test builds: a deliberately small stack, the overflow check's known
     * answer. The kernel is given the top of the slot's stack only, so an
     * overflow lands in the slot's own memory, never a neighbour's. */
    size_t small = (size_t)RTB_INJECT_VALUE(RTB_INJ_THREAD_STACK) / sizeof(OS_STK);
    if (!own && small && small < stack_words) {
        stack += stack_words - small;
        stack_words = small;
    }
    s->run_stack_words = stack_words;
    s->fn = fn;
    s->arg = arg;
    s->prio = prio;
    s->unused_bytes = 0;
    snprintf(s->name, sizeof s->name, "%s", attr->name ? attr->name : "rtb");
    s->done = OSSemCreate(0);
    if (!s->done) {
        slot_free(s);
        return RTB_ENOMEM;
    }
    ((thread_obj *)(void *)t)->slot = s;
    INT8U err = OSTaskCreateExt(trampoline, s, &stack[stack_words - 1], prio, prio, stack,
                                (INT32U)stack_words, s, OS_TASK_OPT_STK_CHK | OS_TASK_OPT_STK_CLR);
    if (err != OS_ERR_NONE) {
        INT8U e2;
        OSSemDel(s->done, OS_DEL_ALWAYS, &e2);
        slot_free(s);
        ((thread_obj *)(void *)t)->slot = NULL;
        if (err == OS_ERR_TASK_NO_MORE_TCB)
            return RTB_ENOMEM; /* OS_MAX_TASKS: the table is full */
        return err == OS_ERR_PRIO_EXIST ? RTB_ENOTSUP : RTB_EFAIL;
    }
    return RTB_OK;
}

static void slot_release(thread_slot *s)
{
    INT8U err;
    OSTaskDel(s->prio);
    OSSemDel(s->done, OS_DEL_ALWAYS, &err);
    slot_free(s);
}

int rtb_thread_join(rtb_thread *t, rtb_time deadline)
{
    thread_slot *s = ((thread_obj *)(void *)t)->slot;
    if (!s)
        return RTB_EINVAL;
    int rc = RTB_ETIMEDOUT;
    if (deadline == 0) {
        rc = OSSemAccept(s->done) > 0 ? RTB_OK : RTB_ETIMEDOUT;
    } else {
        for (;;) {
            bool passed;
            INT32U ticks = ticks_until(deadline, &passed);
            INT8U err = OS_ERR_TIMEOUT;
            if (passed) {
                if (OSSemAccept(s->done) > 0)
                    err = OS_ERR_NONE;
            } else {
                OSSemPend(s->done, ticks, &err);
            }
            if (err == OS_ERR_NONE) {
                rc = RTB_OK;
                break;
            }
            if (passed || rtb_clock_now() >= deadline)
                break;
        }
    }
    if (rc != RTB_OK)
        return rc;
    firmware_stack_note(s->name, s->run_stack_words * sizeof(OS_STK), s->unused_bytes);
    slot_release(s);
    ((thread_obj *)(void *)t)->slot = NULL;
    return RTB_OK;
}

int rtb_thread_delete(rtb_thread *t)
{
    thread_slot *s = ((thread_obj *)(void *)t)->slot;
    if (!s)
        return RTB_EINVAL;
    if (OSTCBCur->OSTCBExtPtr == s)
        return RTB_EINVAL;
    slot_release(s);
    ((thread_obj *)(void *)t)->slot = NULL;
    return RTB_OK;
}

/* No other thread ever shares the caller's priority: nothing to yield to. */
void rtb_thread_yield(void) {}

int rtb_sched_lock(void)
{
    OSSchedLock();
    return RTB_OK;
}

int rtb_sched_unlock(void)
{
    OSSchedUnlock(); /* switches to a thread readied meanwhile */
    return RTB_OK;
}

int rtb_thread_self_set(int priority, int cpu)
{
    if (priority < 1 || priority > RTB_PRIO_MAX || cpu > 0)
        return RTB_EINVAL;
    INT8U cur = OSTCBCur->OSTCBPrio, want = ucos2_prio(priority);
    if (cur == want)
        return RTB_OK; /* OSTaskChangePrio refuses the same priority */
    INT8U err = OSTaskChangePrio(cur, want);
    if (err == OS_ERR_NONE) {
        thread_slot *s = OSTCBCur->OSTCBExtPtr;
        if (s)
            s->prio = want;
        return RTB_OK;
    }
    return err == OS_ERR_PRIO_EXIST ? RTB_ENOTSUP : RTB_EFAIL;
}

int rtb_thread_self_priority(void) { return rtb_prio_of(OSTCBCur->OSTCBPrio); }

int rtb_sleep_until(rtb_time when)
{
    for (;;) {
        rtb_time left = when - rtb_clock_now();
        if (left <= 0)
            return RTB_OK;
        OSTimeDly((INT32U)((left + TICK_NS - 1) / TICK_NS));
    }
}

/* A delay ends at a tick interrupt: the lattice is the tick (SysTick). */
rtb_time rtb_release_grain(rtb_time *phase) { return firmware_systick_grain(phase, TICK_NS); }
