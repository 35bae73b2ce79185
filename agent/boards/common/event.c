/* SPDX-License-Identifier: Apache-2.0 */
/* Events of the RTOS ports: rtb_event_arm runs the handler from the
 * board's timer interrupt (mps2-an385: CMSDK TIMER0, IRQ 8), rtb_event_raise
 * from a software-pended interrupt (a write to the NVIC's STIR, IRQ 31).
 * One timer: one armed event at a time (RTB_ENOMEM for a second). The
 * handlers run between the kernel's interrupt brackets (rtb_os_isr_enter,
 * rtb_os_isr_exit), so a semaphore they give switches at their end. */
#include <stdatomic.h>
#include <string.h>

#include "../../core/rtb.h"
#include "firmware.h"

typedef struct event_obj {
    rtb_event_fn handler;
    void *arg;
    uint64_t next;   /* board ticks of the next expiry */
    uint64_t period; /* board ticks; 0: one shot */
    _Atomic int64_t overruns;
} event_obj;
_Static_assert(sizeof(event_obj) <= RTB_EVENT_STORAGE, "rtb_event too small");

static event_obj *_Atomic armed;  /* the event TIMER0 serves */
static event_obj *_Atomic raised; /* the event the soft IRQ serves */

int rtb_event_create(rtb_event *e, rtb_event_fn handler, void *arg, rtb_thread *target)
{
    (void)target; /* one CPU: an interrupt preempts whichever thread runs */
    event_obj *o = (event_obj *)(void *)e;
    memset(o, 0, sizeof *o);
    o->handler = handler;
    o->arg = arg;
    return RTB_OK;
}

int rtb_event_delete(rtb_event *e)
{
    event_obj *o = (event_obj *)(void *)e;
    if (atomic_load(&armed) == o) {
        board_timer_stop();
        atomic_store(&armed, NULL);
    }
    /* A raise still pending: wait until its handler ran (it runs at once
     * unless interrupts are masked). */
    event_obj *mine = o;
    atomic_compare_exchange_strong(&raised, &mine, NULL);
    return RTB_OK;
}

/* Rounded up: an event never fires before the time it was armed for. */
static uint32_t ticks_of(rtb_time ns)
{
    rtb_time t = (ns + BOARD_TS_NS - 1) / BOARD_TS_NS;
    return t < 1 ? 1 : t > 0xFFFFFFF0 ? 0xFFFFFFF0u : (uint32_t)t;
}

int rtb_event_arm(rtb_event *e, rtb_time when, rtb_time period)
{
    event_obj *o = (event_obj *)(void *)e;
    if (when == 0) {
        if (atomic_load(&armed) == o) {
            board_timer_stop();
            atomic_store(&armed, NULL);
        }
        return RTB_OK;
    }
    if (period < 0)
        return RTB_EINVAL;
    event_obj *cur = atomic_load(&armed);
    if (cur && cur != o)
        return RTB_ENOMEM;
    board_timer_stop();
    uint64_t now = board_ts_ticks();
    uint32_t first = ticks_of(when - rtb_clock_now());
    o->period = period ? ticks_of(period) : 0;
    o->next = now + first;
    atomic_store(&armed, o);
    board_timer_start(first, (uint32_t)o->period);
    return RTB_OK;
}

static void timer_event(void)
{
    event_obj *o = atomic_load(&armed);
    if (!o) {
        board_timer_stop();
        return;
    }
    if (o->period) {
        /* Expiries merged while this interrupt was pending are lost. */
        uint64_t now = board_ts_ticks();
        if (now >= o->next + o->period) {
            uint64_t lost = (now - o->next) / o->period;
            atomic_fetch_add(&o->overruns, (int64_t)lost);
            o->next += lost * o->period;
        }
        o->next += o->period;
    } else {
        board_timer_stop();
        atomic_store(&armed, NULL);
    }
    o->handler(o->arg);
}

void board_timer_isr(void)
{
    rtb_os_isr_enter();
    timer_event();
    rtb_os_isr_exit();
}

int rtb_event_raise(rtb_event *e)
{
    event_obj *o = (event_obj *)(void *)e;
    event_obj *expected = NULL;
    if (!atomic_compare_exchange_strong(&raised, &expected, o)) {
        /* The previous raise has not been served yet: it is lost. */
        atomic_fetch_add(&o->overruns, 1);
        return RTB_OK;
    }
    board_soft_irq_pend();
    return RTB_OK;
}

void board_soft_isr(void)
{
    rtb_os_isr_enter();
    event_obj *o = atomic_exchange(&raised, NULL);
    if (o)
        o->handler(o->arg);
    rtb_os_isr_exit();
}

/* A disarm stops the timer and forgets the event: no kernel call. */
int rtb_event_disarm_isr(rtb_event *e) { return rtb_event_arm(e, 0, 0); }

int64_t rtb_event_overruns(rtb_event *e)
{
    return atomic_load(&((event_obj *)(void *)e)->overruns);
}
