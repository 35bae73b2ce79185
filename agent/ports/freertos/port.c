/* SPDX-License-Identifier: Apache-2.0 */
/* The FreeRTOS port: the system, the clock and threads on FreeRTOS's
 * statically allocated tasks (semaphores, mutexes and queues: sync.c).
 * rtbench priorities are FreeRTOS priorities as they are
 * (configMAX_PRIORITIES 100, the idle task at 0). Deadlines are
 * rtb_clock_now() ns, turned into ticks rounded up, and re-checked after a
 * wake-up so a timeout never returns early (wait.h). */
#include <stdio.h>
#include <string.h>

#include "FreeRTOS.h"
#include "queue.h"
#include "semphr.h"
#include "task.h"

#include "../../core/rtb.h"
#include "freertos_port.h"
#include "slots.h"
#include "wait.h"

/* ---- object pools ------------------------------------------------------
 * rtb_thread (64 bytes) holds no StaticTask_t; the task, its stack and its
 * done-semaphore live in a slot of this pool, and the rtbench object points
 * to it. Stacks come from one arena and stay with their slot: a slot is
 * reused by the next thread that fits. */

typedef struct thread_slot {
    StaticTask_t tcb;
    StaticSemaphore_t done_buf;
    SemaphoreHandle_t done;
    TaskHandle_t task;
    StackType_t *stack; /* the pool's, kept by the slot (NULL: none yet) */
    size_t stack_words;
    size_t run_stack_words; /* the stack the current task runs on */
    rtb_thread_fn fn;
    void *arg;
    bool used;
    bool round_robin;
    char name[configMAX_TASK_NAME_LEN];
    UBaseType_t high_water; /* words never used, at the end of its last run */
} thread_slot;

/* In bulk memory (not cleared at reset: rtb_port_init clears it). A run
 * touches the first slots only, as many as it has threads at once. */
RTB_BULK static thread_slot threads[RTB_FREERTOS_THREADS];
static int threads_touched; /* slots ever used: their RAM is what a run needs */
RTB_BULK static StackType_t stack_arena[RTB_FREERTOS_STACK_ARENA / sizeof(StackType_t)];
static size_t stack_arena_used; /* words */

size_t rtb_os_stacks_reserved(void) { return stack_arena_used * sizeof(StackType_t); }
size_t rtb_os_thread_slots_used(void) { return (size_t)threads_touched * sizeof(thread_slot); }

typedef struct {
    thread_slot *slot;
} thread_obj;
_Static_assert(sizeof(thread_obj) <= RTB_THREAD_STORAGE, "rtb_thread too small");


/* ---- system ------------------------------------------------------------ */

int rtb_port_init(rtb_port_info *info)
{
    memset(threads, 0, sizeof threads);
    memset(info, 0, sizeof *info);
    info->port = "freertos";
    snprintf(info->sysname, sizeof info->sysname, "FreeRTOS");
    snprintf(info->release, sizeof info->release, "%s", tskKERNEL_VERSION_NUMBER);
    snprintf(info->version, sizeof info->version,
             "FreeRTOS-Kernel %s, tick %d Hz, %d priorities, static allocation",
             tskKERNEL_VERSION_NUMBER, configTICK_RATE_HZ, configMAX_PRIORITIES);
    snprintf(info->machine, sizeof info->machine, "%s", BOARD_NAME);
    snprintf(info->cpu_model, sizeof info->cpu_model, "%s", BOARD_CPU);
    info->cpu_count = 1;
    snprintf(info->preempt, sizeof info->preempt, "preemptive");
    snprintf(info->clocksource, sizeof info->clocksource, "%s", BOARD_TS_SOURCE);
    info->realtime = true;
    snprintf(info->policy, sizeof info->policy, "FreeRTOS fixed priority");
    info->memory_locked = true; /* no paging on a microcontroller */
    snprintf(info->event_timer, sizeof info->event_timer,
             "hardware timer interrupt (CMSDK TIMER0, IRQ %d)", BOARD_EVENT_IRQ_TIMER);
    snprintf(info->event_raise, sizeof info->event_raise,
             "software-pended interrupt (NVIC STIR, IRQ %d)", BOARD_EVENT_IRQ_SOFT);
    info->sched_lock = true; /* vTaskSuspendAll */
    return RTB_OK;
}

/* ---- threads ----------------------------------------------------------- */

static void trampoline(void *p)
{
    thread_slot *s = p;
    s->fn(s->arg);
    s->high_water = uxTaskGetStackHighWaterMark(NULL);
    xSemaphoreGive(s->done);
    /* Not vTaskDelete(NULL): the idle task would reclaim the TCB later, and
     * the slot could be reused before that. The joiner deletes it. */
    vTaskSuspend(NULL);
}

FIRMWARE_SLOT_PICKER(slot_pick, thread_slot, threads, RTB_FREERTOS_THREADS, stack, stack_words, stack_arena,
                     stack_arena_used, 1)

static thread_slot *slot_take(size_t words)
{
    thread_slot *s = slot_pick(words);
    if (s && s - threads >= threads_touched)
        threads_touched = (int)(s - threads) + 1;
    return s;
}

int rtb_thread_create(rtb_thread *t, const rtb_thread_attr *attr, rtb_thread_fn fn, void *arg)
{
    if (!attr->normal && (attr->priority < 1 || attr->priority > RTB_PRIO_MAX))
        return RTB_EINVAL;
    if (attr->cpu > 0)
        return RTB_EINVAL;
    bool own = attr->stack != NULL && attr->stack_size >= 256;
    size_t bytes = attr->stack_size ? attr->stack_size : RTB_FREERTOS_DEFAULT_STACK;
    if (!own && bytes > RTB_FREERTOS_MAX_STACK)
        bytes = RTB_FREERTOS_MAX_STACK;
    size_t words = (bytes + sizeof(StackType_t) - 1) / sizeof(StackType_t);
    pool_lock();
    /* A caller's stack: a slot for the task alone (its pool stack unused). */
    thread_slot *s = slot_take(own ? 0 : words);
    pool_unlock();
    if (!s)
        return RTB_ENOMEM;
    StackType_t *stack = own ? (StackType_t *)attr->stack : s->stack;
    size_t stack_words = own ? bytes / sizeof(StackType_t) : s->stack_words;
    /* Test builds: a deliberately small stack, the overflow check's known
     * answer. The kernel is given the top of the slot's stack only, so an
     * overflow lands in the slot's own memory, never a neighbour's. */
    size_t small = (size_t)RTB_INJECT_VALUE(RTB_INJ_THREAD_STACK) / sizeof(StackType_t);
    if (!own && small && small < stack_words) {
        stack += stack_words - small;
        stack_words = small;
    }
    s->run_stack_words = stack_words;
    /* Normal scheduling: above idle, below every real-time priority. */
    UBaseType_t prio = attr->normal ? 1 : (UBaseType_t)attr->priority;
    s->fn = fn;
    s->arg = arg;
    s->round_robin = attr->round_robin;
    s->high_water = 0;
    snprintf(s->name, sizeof s->name, "%s", attr->name ? attr->name : "rtb");
    s->done = xSemaphoreCreateBinaryStatic(&s->done_buf);
    ((thread_obj *)(void *)t)->slot = s;
    /* Whole stack of the slot: a reused slot may have more than asked. */
    /* Created suspended-free but under the scheduler lock: the slot pointer
     * is in place before the task can run (or be sliced). */
    vTaskSuspendAll();
    s->task = xTaskCreateStatic(trampoline, s->name, stack_words, s, prio, stack, &s->tcb);
    vTaskSetThreadLocalStoragePointer(s->task, 0, s);
    (void)xTaskResumeAll();
    return RTB_OK;
}

static void slot_release(thread_slot *s)
{
    vTaskDelete(s->task);
    vSemaphoreDelete(s->done);
    pool_lock();
    s->used = false;
    pool_unlock();
}

int rtb_thread_join(rtb_thread *t, rtb_time deadline)
{
    thread_slot *s = ((thread_obj *)(void *)t)->slot;
    if (!s)
        return RTB_EINVAL;
    int rc;
    if (deadline == 0) {
        rc = xSemaphoreTake(s->done, 0) == pdTRUE ? RTB_OK : RTB_ETIMEDOUT;
    } else {
        rc = RTB_ETIMEDOUT;
        for (;;) {
            TickType_t ticks = ticks_until(deadline);
            if (xSemaphoreTake(s->done, ticks) == pdTRUE) {
                rc = RTB_OK;
                break;
            }
            if (ticks == 0 || rtb_clock_now() >= deadline)
                break;
        }
    }
    if (rc != RTB_OK)
        return rc;
    firmware_stack_note(s->name, s->run_stack_words * sizeof(StackType_t),
                        s->high_water * sizeof(StackType_t));
    slot_release(s);
    ((thread_obj *)(void *)t)->slot = NULL;
    return RTB_OK;
}

int rtb_thread_delete(rtb_thread *t)
{
    thread_slot *s = ((thread_obj *)(void *)t)->slot;
    if (!s)
        return RTB_EINVAL;
    if (s->task == xTaskGetCurrentTaskHandle())
        return RTB_EINVAL;
    slot_release(s);
    ((thread_obj *)(void *)t)->slot = NULL;
    return RTB_OK;
}

void rtb_thread_yield(void) { taskYIELD(); }

int rtb_sched_lock(void)
{
    vTaskSuspendAll();
    return RTB_OK;
}

int rtb_sched_unlock(void)
{
    xTaskResumeAll(); /* switches to a thread readied meanwhile */
    return RTB_OK;
}

int rtb_thread_self_set(int priority, int cpu)
{
    if (priority < 1 || priority > RTB_PRIO_MAX || cpu > 0)
        return RTB_EINVAL;
    vTaskPrioritySet(NULL, (UBaseType_t)priority);
    return RTB_OK;
}

int rtb_thread_self_priority(void) { return (int)uxTaskPriorityGet(NULL); }

int rtb_sleep_until(rtb_time when)
{
    for (;;) {
        rtb_time left = when - rtb_clock_now();
        if (left <= 0)
            return RTB_OK;
        /* The tick is the only wake-up FreeRTOS has: a wait ends on the
         * first tick at or after `when`. */
        vTaskDelay((TickType_t)((left + TICK_NS - 1) / TICK_NS));
    }
}

/* A delay ends at a tick interrupt: the lattice is the tick (SysTick). */
rtb_time rtb_release_grain(rtb_time *phase) { return firmware_systick_grain(phase, TICK_NS); }

/* ---- FreeRTOS hooks ------------------------------------------------------ */

void vApplicationTickHook(void)
{
    (void)board_ts_ticks();
    /* Round robin for the threads created with it: at each tick the
     * running one goes behind the ready threads of its priority (the
     * scheduler picks the next entry of that priority's list). */
    thread_slot *s = pvTaskGetThreadLocalStoragePointer(NULL, 0);
    if (s && s->round_robin)
        portYIELD_FROM_ISR(pdTRUE);
}

void vApplicationStackOverflowHook(TaskHandle_t task, char *name)
{
    (void)task;
    fprintf(stdout, "\nrtbench-firmware: stack overflow in task %s\n", name);
    fflush(stdout);
    board_exit(4);
}

void rtb_freertos_assert(const char *file, int line)
{
    taskDISABLE_INTERRUPTS();
    char buf[160];
    int n = snprintf(buf, sizeof buf, "\nrtbench-firmware: FreeRTOS assert %s:%d\n", file, line);
    board_write(buf, (size_t)n);
    board_exit(4);
}
