/* SPDX-License-Identifier: Apache-2.0 */
/* The uC/OS-III port: the system and threads on statically allocated
 * OS_TCBs (semaphores, mutexes and queues: sync.c; the clock, events and
 * timestamps: boards/common/). rtbench priority p is uC/OS-III priority
 * 100 - p (0 is the most urgent there). Deadlines become ticks rounded up
 * and are re-checked after a wake-up, so a timeout never returns early. */
#include <stdio.h>
#include <string.h>

#include "ucos3_port.h"
#include "slots.h"

/* ---- the thread pool -----------------------------------------------------
 * rtb_thread holds a pointer to a slot: its OS_TCB, its done-semaphore and
 * a stack from one arena that stays with the slot (reused by the next
 * thread that fits), as in the FreeRTOS port. */

typedef struct thread_slot {
    OS_TCB tcb;
    OS_SEM done;
    CPU_STK *stack; /* the pool's, kept by the slot (NULL: none yet) */
    size_t stack_words;
    size_t run_stack_words;
    rtb_thread_fn fn;
    void *arg;
    bool used;
    char name[16];
    size_t unused_words; /* at the end of its last run */
} thread_slot;

RTB_BULK static thread_slot threads[RTB_UCOS3_THREADS];
static int threads_touched;
RTB_BULK static CPU_STK stack_arena[RTB_UCOS3_STACK_ARENA / sizeof(CPU_STK)];
static size_t stack_arena_used; /* words */

size_t rtb_os_stacks_reserved(void) { return stack_arena_used * sizeof(CPU_STK); }
size_t rtb_os_thread_slots_used(void) { return (size_t)threads_touched * sizeof(thread_slot); }

typedef struct {
    thread_slot *slot;
} thread_obj;
_Static_assert(sizeof(thread_obj) <= RTB_THREAD_STORAGE, "rtb_thread too small");

/* A slice no run reaches (49 days of ticks): a thread created without
 * round robin is never sliced among its equals (SCHED_FIFO's rule), one
 * created with it every tick, as on the FreeRTOS port. */
#define NO_SLICE 0xFFFFFFFFu
#define RR_SLICE 1u

/* ---- system ------------------------------------------------------------ */

int rtb_port_init(rtb_port_info *info)
{
    memset(threads, 0, sizeof threads);
    memset(info, 0, sizeof *info);
    info->port = "ucos3";
    snprintf(info->sysname, sizeof info->sysname, "uC/OS-III");
    unsigned v = (unsigned)OS_VERSION; /* 30802 for v3.08.02 */
    snprintf(info->release, sizeof info->release, "v%u.%02u.%02u", v / 10000, v / 100 % 100,
             v % 100);
    snprintf(info->version, sizeof info->version,
             "uC/OS-III %s, tick %u Hz, %u priorities, static objects, SysTick at NVIC "
             "priority 0x80 (above the event interrupts' 0xC0)",
             info->release, (unsigned)OS_CFG_TICK_RATE_HZ, (unsigned)OS_CFG_PRIO_MAX);
    snprintf(info->machine, sizeof info->machine, "%s", BOARD_NAME);
    snprintf(info->cpu_model, sizeof info->cpu_model, "%s", BOARD_CPU);
    info->cpu_count = 1;
    snprintf(info->preempt, sizeof info->preempt, "preemptive");
    snprintf(info->clocksource, sizeof info->clocksource, "%s", BOARD_TS_SOURCE);
    info->realtime = true;
    snprintf(info->policy, sizeof info->policy, "uC/OS-III fixed priority");
    info->memory_locked = true; /* no paging on a microcontroller */
    snprintf(info->event_timer, sizeof info->event_timer,
             "hardware timer interrupt (CMSDK TIMER0, IRQ %d)", BOARD_EVENT_IRQ_TIMER);
    snprintf(info->event_raise, sizeof info->event_raise,
             "software-pended interrupt (NVIC STIR, IRQ %d)", BOARD_EVENT_IRQ_SOFT);
    info->sched_lock = true; /* OSSchedLock */
    snprintf(info->sched_lock_detail, sizeof info->sched_lock_detail,
             "OSSchedLock / OSSchedUnlock");
    return RTB_OK;
}

/* ---- threads ----------------------------------------------------------- */

static void trampoline(void *p)
{
    thread_slot *s = p;
    s->fn(s->arg);
    OS_ERR err;
    CPU_STK_SIZE free_words = 0, used_words = 0;
    OSTaskStkChk(NULL, &free_words, &used_words, &err);
    s->unused_words = err == OS_ERR_NONE ? free_words : 0;
    OSSemPost(&s->done, OS_OPT_POST_1, &err);
    /* Not a return (uC/OS-III would delete the task itself, while its
     * joiner may already reuse the slot): the joiner deletes it. */
    OSTaskSuspend(NULL, &err);
}

FIRMWARE_SLOT_PICKER(slot_pick, thread_slot, threads, RTB_UCOS3_THREADS, stack, stack_words, stack_arena,
                     stack_arena_used, 1)

int rtb_thread_create(rtb_thread *t, const rtb_thread_attr *attr, rtb_thread_fn fn, void *arg)
{
    if (!attr->normal && (attr->priority < 1 || attr->priority > RTB_PRIO_MAX))
        return RTB_EINVAL;
    if (attr->cpu > 0)
        return RTB_EINVAL;
    bool own = attr->stack != NULL && attr->stack_size >= 256;
    size_t bytes = attr->stack_size ? attr->stack_size : RTB_THREAD_STACK;
    if (!own && bytes > RTB_THREAD_STACK)
        bytes = RTB_THREAD_STACK; /* case threads use under 256 bytes */
    size_t words = (bytes + sizeof(CPU_STK) - 1) / sizeof(CPU_STK);
    rtb_os_lock();
    thread_slot *s = slot_pick(own ? 0 : words);
    if (s && s - threads >= threads_touched)
        threads_touched = (int)(s - threads) + 1;
    rtb_os_unlock();
    if (!s)
        return RTB_ENOMEM;
    CPU_STK *stack = own ? (CPU_STK *)attr->stack : s->stack;
    size_t stack_words = own ? bytes / sizeof(CPU_STK) : s->stack_words;
    /* Test builds: a deliberately small stack, the overflow check's known
     * answer. The kernel is given the top of the slot's stack only, so an
     * overflow lands in the slot's own memory, never a neighbour's. */
    size_t small = (size_t)RTB_INJECT_VALUE(RTB_INJ_THREAD_STACK) / sizeof(CPU_STK);
    if (!own && small && small < stack_words) {
        stack += stack_words - small;
        stack_words = small;
    }
    s->run_stack_words = stack_words;
    s->fn = fn;
    s->arg = arg;
    s->unused_words = 0;
    snprintf(s->name, sizeof s->name, "%s", attr->name ? attr->name : "rtb");
    OS_ERR err;
    OSSemCreate(&s->done, "done", 0, &err);
    if (err != OS_ERR_NONE) {
        s->used = false;
        return RTB_EFAIL;
    }
    ((thread_obj *)(void *)t)->slot = s;
    OS_PRIO prio = attr->normal ? UCOS_NORMAL_PRIO : ucos_prio(attr->priority);
    OSTaskCreate(&s->tcb, s->name, trampoline, s, prio, stack, (CPU_STK_SIZE)(stack_words / 10),
                 (CPU_STK_SIZE)stack_words, 0, attr->round_robin ? RR_SLICE : NO_SLICE, s,
                 OS_OPT_TASK_STK_CHK | OS_OPT_TASK_STK_CLR, &err);
    if (err != OS_ERR_NONE) {
        OSSemDel(&s->done, OS_OPT_DEL_ALWAYS, &err);
        rtb_os_lock();
        s->used = false;
        rtb_os_unlock();
        ((thread_obj *)(void *)t)->slot = NULL;
        return RTB_EFAIL;
    }
    return RTB_OK;
}

static void slot_release(thread_slot *s)
{
    OS_ERR err;
    OSTaskDel(&s->tcb, &err);
    OSSemDel(&s->done, OS_OPT_DEL_ALWAYS, &err);
    rtb_os_lock();
    s->used = false;
    rtb_os_unlock();
}

int rtb_thread_join(rtb_thread *t, rtb_time deadline)
{
    thread_slot *s = ((thread_obj *)(void *)t)->slot;
    if (!s)
        return RTB_EINVAL;
    OS_ERR err;
    int rc = RTB_ETIMEDOUT;
    if (deadline == 0) {
        OSSemPend(&s->done, 0, OS_OPT_PEND_NON_BLOCKING, NULL, &err);
        rc = err == OS_ERR_NONE ? RTB_OK : RTB_ETIMEDOUT;
    } else {
        for (;;) {
            bool passed;
            OS_TICK ticks = ticks_until(deadline, &passed);
            OSSemPend(&s->done, ticks, passed ? OS_OPT_PEND_NON_BLOCKING : OS_OPT_PEND_BLOCKING,
                      NULL, &err);
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
    firmware_stack_note(s->name, s->run_stack_words * sizeof(CPU_STK),
                        s->unused_words * sizeof(CPU_STK));
    slot_release(s);
    ((thread_obj *)(void *)t)->slot = NULL;
    return RTB_OK;
}

int rtb_thread_delete(rtb_thread *t)
{
    thread_slot *s = ((thread_obj *)(void *)t)->slot;
    if (!s)
        return RTB_EINVAL;
    if (&s->tcb == OSTCBCurPtr)
        return RTB_EINVAL;
    slot_release(s);
    ((thread_obj *)(void *)t)->slot = NULL;
    return RTB_OK;
}

/* Round robin is on globally (firmware.c): the caller goes behind the
 * ready threads of its priority. */
void rtb_thread_yield(void)
{
    OS_ERR err;
    OSSchedRoundRobinYield(&err);
}

int rtb_sched_lock(void)
{
    OS_ERR err;
    OSSchedLock(&err);
    return err == OS_ERR_NONE ? RTB_OK : RTB_EFAIL;
}

int rtb_sched_unlock(void)
{
    OS_ERR err;
    OSSchedUnlock(&err); /* switches to a thread readied meanwhile */
    return err == OS_ERR_NONE || err == OS_ERR_SCHED_LOCKED ? RTB_OK : RTB_EFAIL;
}

int rtb_thread_self_set(int priority, int cpu)
{
    if (priority < 1 || priority > RTB_PRIO_MAX || cpu > 0)
        return RTB_EINVAL;
    OS_ERR err;
    OSTaskChangePrio(NULL, ucos_prio(priority), &err);
    return err == OS_ERR_NONE ? RTB_OK : RTB_EFAIL;
}

int rtb_thread_self_priority(void) { return rtb_prio_of(OSTCBCurPtr->Prio); }

int rtb_sleep_until(rtb_time when)
{
    for (;;) {
        rtb_time left = when - rtb_clock_now();
        if (left <= 0)
            return RTB_OK;
        /* The tick is the only wake-up the kernel has: a wait ends on the
         * first tick at or after `when`. */
        OS_ERR err;
        OSTimeDly((OS_TICK)((left + TICK_NS - 1) / TICK_NS), OS_OPT_TIME_DLY, &err);
    }
}

/* A delay ends at a tick interrupt: the lattice is the tick (SysTick). */
rtb_time rtb_release_grain(rtb_time *phase) { return firmware_systick_grain(phase, TICK_NS); }
