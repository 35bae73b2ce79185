/* SPDX-License-Identifier: Apache-2.0 */
/* RSP-IO's line and its instrument on a bare-metal board (rtb/line.h), for
 * every kernel: a signal generator and a scope on the board's own clock.
 *
 * The generator is a hardware timer (board_gen_*): it fires at a
 * pseudo-random time whose moment is known on the timestamp counter, and
 * its raw interrupt status is the input line's edge: the level the polling
 * loop reads is the level after the edge once it fired, the one before
 * until then. The handler scenarios take its interrupt (the board's handler
 * masks it and leaves the raw status, so a polling loop beside the handler
 * still sees the edge). The scope is in rtb_line_set: the output register
 * written, then the counter read, with interrupts masked between; the
 * sample is that stamp minus the edge's moment. These are emulated edges
 * (BOARD_LINE_WHAT says which timer and register), not a wire.
 *
 * The instrument answers the same commands as the POSIX stimulator (the
 * case is the same file): `clock K` measures the generator against the
 * counter (K edges polled with stamps around each read: the moment the
 * generator claims must lie between the last stamp before the edge was
 * seen and the first after), `run ...` sends edges. Its bookkeeping runs
 * in the thread that reads the replies (the case's top-priority thread),
 * woken by each answer, never in the measured path after the stamp.
 * One line at a time. */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "../../core/rtb.h"
#include "firmware.h"
#include "rtb/line.h"

#define RING 32       /* answers and lost edges not read back yet */
#define CLOCK_MAX 32  /* `clock K`: at most this many edges */
#define LINE_KIND RTB_LINE_TIMER

typedef struct {
    int8_t level; /* -1 .. : the edge of this level was lost */
    int64_t ns;
} reply_t;

typedef struct {
    /* The input, as the generator leaves it (read with interrupts masked). */
    volatile int prev, armed; /* the level before the edge, after it */
    volatile bool pending;    /* an edge armed or fired, not answered nor lost */
    volatile bool taken;      /* the handler's interrupt took it */
    volatile int waiters;     /* threads in rtb_line_wait */
    uint64_t edge;            /* the edge's moment (counter ticks) */
    int64_t skew;             /* test builds: the claimed moments are this many ns late */
    volatile long stale;      /* answers with no edge of their level pending */
    /* Answers, from the responders to the instrument's thread. */
    reply_t ring[RING];
    volatile unsigned head, tail;
    rtb_sem answered, edge_sem;
    /* The instrument's state. */
    bool open, hello, clock_end, running, done;
    int nclock, clock_next;
    int64_t clock[CLOCK_MAX][3];
    long count, sent, lost;
    int64_t gmin, gmax, timeout, until, last;
    uint64_t rnd;
} board_line;

static board_line L;

typedef struct {
    board_line *l;
} line_ref;
_Static_assert(sizeof(line_ref) <= RTB_LINE_STORAGE, "rtb_line too small");
_Static_assert(sizeof(line_ref) <= RTB_STIM_STORAGE, "rtb_stim too small");

static uint32_t irq_off(void)
{
    uint32_t primask;
    __asm__ volatile("mrs %0, primask\n cpsid i" : "=r"(primask)::"memory");
    return primask;
}

static void irq_restore(uint32_t primask)
{
    __asm__ volatile("msr primask, %0" ::"r"(primask) : "memory");
}

const char *rtb_line_kind_name(int kind)
{
    static const char *const names[RTB_LINE_KINDS] = {"eventfd", "pipe", "pty", "gpio",
                                                       "timer"};
    return kind >= 0 && kind < RTB_LINE_KINDS ? names[kind] : "?";
}

int rtb_line_open(rtb_line *l, int kind, const char *where, char *why, size_t whycap)
{
    (void)where;
    if (kind != LINE_KIND) {
        if (why && whycap)
            snprintf(why, whycap, "a %s line does not exist on %s: its line is 'timer' "
                     "(line=%d, emulated edges of a board timer)", rtb_line_kind_name(kind),
                     BOARD_NAME, LINE_KIND);
        return RTB_ENOTSUP;
    }
    if (L.open) {
        if (why && whycap)
            snprintf(why, whycap, "the board's line is open already");
        return RTB_EFAIL;
    }
    board_gen_stop();
    board_out_write(0);
    memset(&L, 0, sizeof L);
    if (rtb_sem_create(&L.answered, 0) != RTB_OK)
        return RTB_ENOMEM;
    if (rtb_sem_create(&L.edge_sem, 0) != RTB_OK) {
        rtb_sem_delete(&L.answered);
        return RTB_ENOMEM;
    }
    L.open = true;
    ((line_ref *)(void *)l)->l = &L;
    return RTB_OK;
}

int rtb_line_close(rtb_line *l)
{
    (void)l;
    if (!L.open)
        return RTB_OK;
    board_gen_stop();
    L.open = false;
    rtb_sem_delete(&L.edge_sem);
    rtb_sem_delete(&L.answered);
    return RTB_OK;
}

/* The level now: after the edge once the generator fired. */
static int level_now(void) { return board_gen_fired() ? L.armed : L.prev; }

int rtb_line_get(rtb_line *l, int *level)
{
    (void)l;
    uint32_t m = irq_off(); /* the raw status and the levels read together */
    *level = level_now();
    irq_restore(m);
    return RTB_OK;
}

int rtb_line_wait(rtb_line *l, rtb_time deadline, int *level)
{
    (void)l;
    uint32_t m = irq_off();
    L.waiters++;
    /* The edge was armed before anyone waited: its interrupt on now. */
    if (L.pending && !L.taken)
        board_gen_irq_on();
    irq_restore(m);
    int rc = rtb_sem_take(&L.edge_sem, deadline);
    m = irq_off();
    L.waiters--;
    *level = level_now();
    irq_restore(m);
    return rc;
}

void board_gen_isr(void)
{
    rtb_os_isr_enter();
    L.taken = true;
    rtb_sem_give_isr(&L.edge_sem);
    rtb_os_isr_exit();
}

/* The scope: the output written, then stamped. */
int rtb_line_set(rtb_line *l, int level)
{
    (void)l;
    bool answer = false;
    uint32_t m = irq_off();
    board_out_write(level);
    uint64_t t = board_ts_ticks();
    if (L.pending && board_gen_fired() && level == L.armed) {
        L.pending = false;
        unsigned h = L.head;
        if (h - L.tail < RING) {
            int64_t ns = (int64_t)(t - L.edge) * BOARD_TS_NS - L.skew;
            /* One stamped at or before its edge is no answer (as rtb-stim). */
            L.lost += ns <= 0;
            L.ring[h % RING] = (reply_t){.level = (int8_t)(ns > 0 ? level : -1 - level), .ns = ns};
            L.head = h + 1;
        }
        L.last = (int64_t)t * BOARD_TS_NS;
        answer = true;
    } else {
        L.stale++;
    }
    irq_restore(m);
    if (answer)
        rtb_sem_give(&L.answered);
    return RTB_OK;
}

/* ---- the instrument ------------------------------------------------------ */

int rtb_stim_start(rtb_stim *s, rtb_line *l, int cpu, const char *extra, char *why,
                   size_t whycap)
{
    (void)cpu;
    if (((line_ref *)(void *)l)->l != &L || !L.open) {
        if (why && whycap)
            snprintf(why, whycap, "the board's line is not open");
        return RTB_EINVAL;
    }
    long long skew = 0;
    if (extra && sscanf(extra, "--skew %lld", &skew) == 1)
        L.skew = skew;
    L.hello = true;
    ((line_ref *)(void *)s)->l = &L;
    return RTB_OK;
}

static uint64_t next_rand(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static uint32_t ticks_until(int64_t when_ns)
{
    int64_t d = (when_ns - rtb_clock_now()) / BOARD_TS_NS;
    return d < 1 ? 1u : d > 0x7FFFFFFF ? 0x7FFFFFFFu : (uint32_t)d;
}

/* One edge `ticks` from now: the level flips when it fires. */
static void arm(uint32_t ticks)
{
    uint32_t m = irq_off();
    if (board_gen_fired())
        L.prev = L.armed;
    board_gen_stop();
    L.armed = !L.prev;
    L.taken = false;
    L.pending = true;
    L.edge = board_gen_arm(ticks, L.waiters > 0) + ticks;
    irq_restore(m);
}

static void stop_generator(void)
{
    uint32_t m = irq_off();
    if (board_gen_fired())
        L.prev = L.armed;
    board_gen_stop();
    L.armed = L.prev;
    L.pending = false;
    irq_restore(m);
}

/* `clock K`: each edge polled, a stamp before and after each read of the
 * raw status; the moment the generator claims must lie between the last
 * stamp before the edge was seen and the first after it. */
static void clock_check(int k)
{
    L.nclock = k < 1 ? 1 : k > CLOCK_MAX ? CLOCK_MAX : k;
    uint64_t rnd = 0x9E3779B97F4A7C15u;
    for (int i = 0; i < L.nclock; i++) {
        uint32_t ticks = 25 + (uint32_t)(next_rand(&rnd) % 1000);
        uint32_t m = irq_off();
        uint64_t edge = board_gen_arm(ticks, 0) + ticks, before = edge, after;
        for (;;) {
            uint64_t a = board_ts_ticks();
            int fired = board_gen_fired();
            uint64_t b = board_ts_ticks();
            if (fired) {
                after = b;
                break;
            }
            before = a;
        }
        board_gen_stop();
        irq_restore(m);
        L.clock[i][0] = (int64_t)before * BOARD_TS_NS;
        L.clock[i][1] = (int64_t)edge * BOARD_TS_NS + L.skew;
        L.clock[i][2] = (int64_t)after * BOARD_TS_NS;
    }
    L.clock_next = 0;
    L.clock_end = true;
}

int rtb_stim_send(rtb_stim *s, const char *line)
{
    (void)s;
    unsigned long long count, seed;
    long long gmin, gmax, timeout, until = 0;
    int k;
    if (sscanf(line, "clock %d", &k) == 1) {
        clock_check(k);
        return RTB_OK;
    }
    if (sscanf(line, "run %llu %lld %lld %lld %llu %lld", &count, &gmin, &gmax, &timeout, &seed,
               &until) >= 5) {
        stop_generator();
        while (rtb_sem_take(&L.answered, 0) == RTB_OK) /* from the last run */
            ;
        while (rtb_sem_take(&L.edge_sem, 0) == RTB_OK)
            ;
        L.head = L.tail = 0;
        L.count = (long)count;
        L.sent = L.lost = L.stale = 0;
        L.gmin = gmin;
        L.gmax = gmax > gmin ? gmax : gmin;
        L.timeout = timeout;
        L.until = until;
        L.rnd = seed ? seed : 0x9E3779B97F4A7C15u;
        L.last = rtb_clock_now();
        L.running = true;
        L.done = false;
        return RTB_OK;
    }
    if (strcmp(line, "quit") == 0) {
        stop_generator();
        L.running = false;
        return RTB_OK;
    }
    return RTB_EINVAL;
}

/* After an answer or a lost edge: the next edge, or the end. */
static void next_edge(void)
{
    int64_t gap = L.gmin + (L.gmax > L.gmin
                                ? (int64_t)(next_rand(&L.rnd) % (uint64_t)(L.gmax - L.gmin))
                                : 0);
    if (L.sent >= L.count || (L.until && L.last + gap > L.until)) {
        stop_generator();
        L.running = false;
        L.done = true;
        return;
    }
    L.sent++;
    arm(ticks_until(L.last + gap));
}

int rtb_stim_recv(rtb_stim *s, char *buf, size_t cap, rtb_time deadline)
{
    (void)s;
    for (;;) {
        if (L.hello) {
            L.hello = false;
            snprintf(buf, cap, "hello instrument %s", BOARD_LINE_WHAT);
            return RTB_OK;
        }
        if (L.clock_end) {
            if (L.clock_next < L.nclock) {
                int64_t *c = L.clock[L.clock_next++];
                snprintf(buf, cap, "clock %lld %lld %lld", (long long)c[0], (long long)c[1],
                         (long long)c[2]);
            } else {
                L.clock_end = false;
                snprintf(buf, cap, "end %d edges of the generator polled on the timestamp "
                         "counter: the moment it claims for each must lie between the stamps "
                         "around the read that first saw it", L.nclock);
            }
            return RTB_OK;
        }
        if (L.tail != L.head) {
            reply_t r = L.ring[L.tail % RING];
            L.tail++;
            if (r.level >= 0)
                snprintf(buf, cap, "e %d %lld", r.level, (long long)r.ns);
            else
                snprintf(buf, cap, "l %d", -1 - r.level);
            return RTB_OK;
        }
        if (L.done) {
            L.done = false;
            snprintf(buf, cap, "done %ld %ld %ld", L.sent, L.lost, L.stale);
            return RTB_OK;
        }
        if (!L.running) /* nothing asked: nothing will come */
            return RTB_ETIMEDOUT;
        if (!L.pending) {
            next_edge();
            continue;
        }
        int64_t lost_at = (int64_t)L.edge * BOARD_TS_NS + L.timeout;
        if (rtb_sem_take(&L.answered, lost_at < deadline ? lost_at : deadline) == RTB_OK)
            continue;
        if (rtb_clock_now() >= lost_at) {
            uint32_t m = irq_off();
            if (L.pending) {
                L.pending = false;
                L.lost++;
                unsigned h = L.head;
                if (h - L.tail < RING) {
                    L.ring[h % RING] = (reply_t){.level = (int8_t)(-1 - L.armed)};
                    L.head = h + 1;
                }
                L.last = rtb_clock_now();
            }
            irq_restore(m);
            continue;
        }
        if (rtb_clock_now() >= deadline)
            return RTB_ETIMEDOUT;
    }
}

int rtb_stim_stop(rtb_stim *s, rtb_time deadline)
{
    (void)s, (void)deadline;
    stop_generator();
    L.running = false;
    return RTB_OK;
}
