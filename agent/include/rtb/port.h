/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The rtbench porting layer: everything a case may ask of the OS.
 *
 * A port is one .c file implementing these functions (plus timing.h). They
 * are real functions, never macros, so a port can be checked against this
 * header alone. Every call that can fail returns an int status: RTB_OK or a
 * negative RTB_E* code. The porting rules are in docs/porting.md.
 */
#ifndef RTB_PORT_H
#define RTB_PORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rtb/types.h"

/* The port's configuration (agent/ports/NAME/rtb_port_config.h, found
 * through the port's include directory): storage sizes, memory budget,
 * optional parts. rtb/config.h checks it and fills in the defaults. */
#include "rtb/config.h"

/* Opaque storage: cases keep port objects by value (no heap in the measured
 * path); a port asserts at compile time that its object fits. */
typedef struct { _Alignas(RTB_STORAGE_ALIGN) unsigned char opaque[RTB_THREAD_STORAGE]; } rtb_thread;
typedef struct { _Alignas(RTB_STORAGE_ALIGN) unsigned char opaque[RTB_SEM_STORAGE]; } rtb_sem;
typedef struct { _Alignas(RTB_STORAGE_ALIGN) unsigned char opaque[RTB_MUTEX_STORAGE]; } rtb_mutex;
typedef struct { _Alignas(RTB_STORAGE_ALIGN) unsigned char opaque[RTB_QUEUE_STORAGE]; } rtb_queue;
typedef struct { _Alignas(RTB_STORAGE_ALIGN) unsigned char opaque[RTB_EVENT_STORAGE]; } rtb_event;

typedef void (*rtb_thread_fn)(void *arg);
/* Runs in interrupt context (POSIX: a signal handler): it may call only the
 * functions listed under "interrupt context" below. */
typedef void (*rtb_event_fn)(void *arg);

typedef struct rtb_thread_attr {
    const char *name;  /* for debuggers and traces; may be NULL */
    int priority;      /* 1 (lowest) .. RTB_PRIO_MAX (highest), real-time */
    int cpu;           /* CPU to pin to, or -1 for any */
    size_t stack_size; /* 0: the port's default (RTB_THREAD_STACK) */
    bool round_robin;  /* time-sliced among equal priorities (SCHED_RR) */
    /* Normal (not real-time) scheduling, below every real-time priority:
     * `priority` is ignored (POSIX: SCHED_OTHER; an RTOS: its idle+1). */
    bool normal;
    /* A stack the caller owns (stack_size bytes, alive until the thread is
     * joined or deleted), or NULL: the port finds one (POSIX: the heap;
     * an RTOS with static tasks: its pool of RTB_THREAD_STACK stacks). */
    void *stack;
} rtb_thread_attr;

#define RTB_PRIO_MAX 99
#define RTB_FOREVER INT64_MAX /* a deadline that never comes */
#define RTB_MUTEX_PI 1u       /* rtb_mutex_create flag: priority inheritance */

/* ---- system ---------------------------------------------------------- */

/* Once, before anything else: lock memory, probe real-time privilege and
 * fill `info`: identity, CPU, whether real-time scheduling is available, the
 * mechanisms of the event sources, whether the scheduler can be locked.
 * (The core sets info->loads itself, from RTB_PORT_HAS_LOADS.) */
int rtb_port_init(rtb_port_info *info);
/* The scheduling clock that deadlines and rtb_sleep_until use, in ns. */
rtb_time rtb_clock_now(void);
/* Leave at once with `status`, without running anything more: the last
 * resort of the watchdog when a case does not stop. */
void rtb_port_abort(int status);

/* Kernel-trace alignment: opens the OS's trace marker (Linux: tracefs
 * trace_marker); rtb_trace_mark then writes a line into the kernel's own
 * timeline, so host tools can line up kernel events with the agent's
 * records. Outside measured sections only. No-ops when not opened. */
int rtb_trace_open(const char *path);
void rtb_trace_mark(const char *text);
/* Stops kernel tracing (Linux: the marker's instance's tracing_on = 0), so
 * that what led to a break stays in the trace buffer, as cyclictest -b
 * does. Right after a break only; a no-op when not opened. */
void rtb_trace_stop(void);

/* ---- threads --------------------------------------------------------- */

/* Creates and starts a thread. If the port cannot grant real-time priority
 * it still creates the thread (at normal priority) and returns RTB_OK;
 * rtb_port_info.realtime already said so. */
int rtb_thread_create(rtb_thread *t, const rtb_thread_attr *attr, rtb_thread_fn fn, void *arg);
/* Waits until the thread returned, or until `deadline` (RTB_ETIMEDOUT). */
int rtb_thread_join(rtb_thread *t, rtb_time deadline);
/* Deletes a thread that has not returned (it may never have run, or be
 * blocked) and reclaims it; the RTOS "task delete". */
int rtb_thread_delete(rtb_thread *t);
/* Locks the scheduler: no other thread runs on this CPU until the unlock,
 * interrupts still do (an RTOS task lock: vTaskSuspendAll, k_sched_lock).
 * RTB_ENOTSUP where the OS has none (rtb_port_info.sched_lock false). */
int rtb_sched_lock(void);
int rtb_sched_unlock(void);
/* Gives the CPU to the next ready thread of the same priority, if any. */
void rtb_thread_yield(void);
/* Sets the calling thread's priority (1..RTB_PRIO_MAX) and CPU (-1: keep). */
int rtb_thread_self_set(int priority, int cpu);
/* The calling thread's priority (1..RTB_PRIO_MAX; 0 when not real-time). */
int rtb_thread_self_priority(void);
/* Blocks the caller until rtb_clock_now() >= `when`. */
int rtb_sleep_until(rtb_time when);
/* When rtb_sleep_until can end: on the lattice `*phase + k * grain` (the
 * rtb_clock_now clock), at its first instant at or after `when`. A kernel
 * whose timed waits end on its tick interrupt returns the tick period and
 * the time of a past tick; 0 = any instant (a high-resolution timer),
 * `*phase` then 0. A case planning absolute releases puts them on this
 * lattice and measures a wake-up's latency from its lattice instant, the
 * earliest the kernel could release: not from a phase the tick never has. */
rtb_time rtb_release_grain(rtb_time *phase);

/* ---- counting semaphores --------------------------------------------- */

int rtb_sem_create(rtb_sem *s, unsigned initial);
int rtb_sem_delete(rtb_sem *s);
/* Increments; wakes the highest-priority waiter (who may preempt). */
int rtb_sem_give(rtb_sem *s);
/* Decrements, blocking while the count is 0 until `deadline`
 * (RTB_ETIMEDOUT); deadline 0 = do not block (RTB_EAGAIN). */
int rtb_sem_take(rtb_sem *s, rtb_time deadline);

/* ---- mutexes --------------------------------------------------------- */

int rtb_mutex_create(rtb_mutex *m, unsigned flags);
int rtb_mutex_delete(rtb_mutex *m);
int rtb_mutex_lock(rtb_mutex *m);
int rtb_mutex_unlock(rtb_mutex *m);

/* ---- message queues -------------------------------------------------- */

int rtb_queue_create(rtb_queue *q, size_t msg_size, unsigned depth);
int rtb_queue_delete(rtb_queue *q);
/* Deadline 0 = do not block: a full queue gives RTB_EAGAIN. */
int rtb_queue_send(rtb_queue *q, const void *msg, size_t len, rtb_time deadline);
/* Returns the message length (>= 0) or an RTB_E* code. */
int rtb_queue_receive(rtb_queue *q, void *buf, size_t cap, rtb_time deadline);

/* ---- interrupt-like events ------------------------------------------- */

/* An event source whose handler runs in interrupt context on `target`
 * (a thread the caller created, or NULL: the calling thread). POSIX: a
 * real-time signal delivered to that thread; RTOS: a hardware timer or a
 * software-triggered interrupt. */
int rtb_event_create(rtb_event *e, rtb_event_fn handler, void *arg, rtb_thread *target);
int rtb_event_delete(rtb_event *e);
/* Fires the handler at absolute time `when` (rtb_clock_now() clock), and
 * then every `period` ns if period > 0; when = 0 disarms (cancels). */
int rtb_event_arm(rtb_event *e, rtb_time when, rtb_time period);
/* Fires the handler now, from the calling thread (software trigger). */
int rtb_event_raise(rtb_event *e);
/* Events that fired while the previous one was still pending (lost). */
int64_t rtb_event_overruns(rtb_event *e);

/* ---- interrupt context ------------------------------------------------- */

/* An event handler (rtb_event_fn) may call these and nothing else of the
 * port or the core, besides reading and writing memory and atomics:
 *
 *   rtb_ts_now()               timing.h: reads a counter
 *   rtb_event_overruns(e)      reads a counter the port keeps
 *   rtb_clock_now_isr()        the scheduling clock, from interrupt context
 *   rtb_sem_give_isr(s)        FreeRTOS: xSemaphoreGiveFromISR + yield
 *   rtb_event_disarm_isr(e)    stops a periodic event from its own handler
 *
 * On POSIX (a signal handler) each is its thread-context twin, all of them
 * async-signal-safe; an RTOS implements them with its FromISR calls and
 * switches to a thread the give readied when the interrupt returns.
 * rtb_clock_now_isr must also work from a thread (the fault layer's busy
 * waits use it in both contexts). */
rtb_time rtb_clock_now_isr(void);
int rtb_sem_give_isr(rtb_sem *s);
int rtb_event_disarm_isr(rtb_event *e);

#endif
