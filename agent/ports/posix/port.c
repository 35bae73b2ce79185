/* SPDX-License-Identifier: Apache-2.0 */
/* The POSIX port (Linux first): pthreads with SCHED_FIFO and affinity,
 * locked memory, sem_t, PI mutexes, POSIX message queues, and POSIX timers
 * with real-time signals as the interrupt-like event source. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <mqueue.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "power.h"
#include "rtb.h"

#define PREFAULT_STACK (16 * 1024)

/* Set once by rtb_port_init, before any thread exists; read-only after. */
static bool port_realtime;

typedef struct {
    pthread_t th;
    rtb_thread_fn fn;
    void *arg;
    _Atomic pid_t tid; /* the kernel thread id, for signals aimed at it */
    bool started;
} posix_thread;

typedef struct {
    sem_t sem;
} posix_sem;

typedef struct {
    pthread_mutex_t m;
} posix_mutex;

typedef struct {
    mqd_t q;
    size_t msg_size;
} posix_queue;

typedef struct {
    timer_t timer;
    bool has_timer;
    int slot;
    pid_t tid;
} posix_event;

_Static_assert(sizeof(posix_thread) <= RTB_THREAD_STORAGE, "rtb_thread too small");
_Static_assert(sizeof(posix_sem) <= RTB_SEM_STORAGE, "rtb_sem too small");
_Static_assert(sizeof(posix_mutex) <= RTB_MUTEX_STORAGE, "rtb_mutex too small");
_Static_assert(sizeof(posix_queue) <= RTB_QUEUE_STORAGE, "rtb_queue too small");
_Static_assert(sizeof(posix_event) <= RTB_EVENT_STORAGE, "rtb_event too small");

static int from_errno(int e)
{
    switch (e) {
    case 0: return RTB_OK;
    case EINVAL: return RTB_EINVAL;
    case ENOMEM: case ENOSPC: case EMFILE: case ENFILE: return RTB_ENOMEM;
    case EPERM: case EACCES: return RTB_EPERM;
    case ETIMEDOUT: return RTB_ETIMEDOUT;
    case EAGAIN: return RTB_EAGAIN;
    case ENOSYS: case ENOTSUP: return RTB_ENOTSUP;
    default: return RTB_EFAIL;
    }
}

static struct timespec ts_of(rtb_time t)
{
    return (struct timespec){.tv_sec = t / 1000000000, .tv_nsec = t % 1000000000};
}

rtb_time rtb_clock_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (rtb_time)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* clock_gettime is async-signal-safe. */
rtb_time rtb_clock_now_isr(void) { return rtb_clock_now(); }

/* ---- system ---------------------------------------------------------- */

static void read_cpu_model(char *out, size_t cap)
{
    snprintf(out, cap, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        /* x86 says "model name", many ARM kernels only "Hardware"/"CPU part". */
        if (strncmp(line, "model name", 10) == 0 || strncmp(line, "Hardware", 8) == 0) {
            char *colon = strchr(line, ':');
            if (colon) {
                colon += 1 + (colon[1] == ' ');
                colon[strcspn(colon, "\n")] = '\0';
                snprintf(out, cap, "%s", colon);
                break;
            }
        }
    }
    fclose(f);
}

/* The first line of a small system file, without its newline; "" if absent. */
static void read_line(const char *path, char *out, size_t cap)
{
    out[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    if (!fgets(out, (int)cap, f))
        out[0] = '\0';
    out[strcspn(out, "\n")] = '\0';
    fclose(f);
}

static bool has_word(const char *text, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = strstr(text, word); p; p = strstr(p + 1, word))
        if ((p == text || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
            return true;
    return false;
}

/* The uname version string carries the kernel's one preemption flag (the
 * last of PREEMPT, PREEMPT_DYNAMIC, PREEMPT_RT configured; none for
 * NONE/VOLUNTARY); debugfs, when mounted and readable, names the dynamic
 * mode in effect as "none voluntary (full)". The host interprets both. */
static void read_preemption(rtb_port_info *info)
{
    char rt[8];
    read_line("/sys/kernel/realtime", rt, sizeof rt);
    const char *v = info->version;
    if (has_word(v, "PREEMPT_RT") || strstr(v, "PREEMPT RT") || strcmp(rt, "1") == 0)
        snprintf(info->preempt, sizeof info->preempt, "PREEMPT_RT");
    else if (has_word(v, "PREEMPT_DYNAMIC"))
        snprintf(info->preempt, sizeof info->preempt, "PREEMPT_DYNAMIC");
    else if (has_word(v, "PREEMPT"))
        snprintf(info->preempt, sizeof info->preempt, "PREEMPT");
    char modes[128];
    read_line("/sys/kernel/debug/sched/preempt", modes, sizeof modes);
    char *open = strchr(modes, '('), *close = open ? strchr(open, ')') : NULL;
    if (open && close) {
        *close = '\0';
        snprintf(info->preempt_mode, sizeof info->preempt_mode, "%s", open + 1);
    }
}

static void read_kernel_view(rtb_port_info *info)
{
    read_preemption(info);
    read_line("/proc/cmdline", info->cmdline, sizeof info->cmdline);
    read_line("/sys/devices/system/clocksource/clocksource0/current_clocksource",
              info->clocksource, sizeof info->clocksource);
    read_line("/sys/devices/system/cpu/isolated", info->isolated_cpus,
              sizeof info->isolated_cpus);
}

static void probe_realtime(rtb_port_info *info)
{
    struct sched_param old, p = {.sched_priority = 1};
    int old_policy;
    pthread_getschedparam(pthread_self(), &old_policy, &old);
    int rc = pthread_setschedparam(pthread_self(), SCHED_FIFO, &p);
    if (rc == 0) {
        pthread_setschedparam(pthread_self(), old_policy, &old);
        info->realtime = true;
        snprintf(info->policy, sizeof info->policy, "SCHED_FIFO");
        return;
    }
    struct rlimit rl = {0, 0};
    getrlimit(RLIMIT_RTPRIO, &rl);
    info->realtime = false;
    snprintf(info->policy, sizeof info->policy, "SCHED_OTHER");
    snprintf(info->rt_detail, sizeof info->rt_detail,
             "SCHED_FIFO refused (%s; euid %d, RLIMIT_RTPRIO %llu): running SCHED_OTHER",
             strerror(rc), (int)geteuid(), (unsigned long long)rl.rlim_cur);
}

int rtb_port_init(rtb_port_info *info)
{
    memset(info, 0, sizeof *info);
    info->port = "posix";
    posix_power_attach(info);
    struct utsname u;
    if (uname(&u) == 0) {
        snprintf(info->sysname, sizeof info->sysname, "%s", u.sysname);
        snprintf(info->release, sizeof info->release, "%s", u.release);
        snprintf(info->version, sizeof info->version, "%s", u.version);
        snprintf(info->machine, sizeof info->machine, "%s", u.machine);
    }
    read_cpu_model(info->cpu_model, sizeof info->cpu_model);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    info->cpu_count = n > 0 ? (int)n : 1;
    /* taskset or a cpuset narrow where the process may run: the agent
     * measures there, not on a CPU it was kept off. */
    static cpu_set_t allowed; /* once: not on a stack */
    if (sched_getaffinity(0, sizeof allowed, &allowed) == 0)
        for (int c = 0; c < CPU_SETSIZE && c < RTB_MAX_CPUS; c++)
            if (CPU_ISSET(c, &allowed))
                info->cpus_allowed[info->ncpus_allowed++] = c;
    read_kernel_view(info);
    probe_realtime(info);
    snprintf(info->event_timer, sizeof info->event_timer,
             "POSIX timer (CLOCK_MONOTONIC, SIGEV_THREAD_ID) + SIGRTMIN signal handler");
    snprintf(info->event_raise, sizeof info->event_raise,
             "tgkill from another thread + SIGRTMIN signal handler");
    info->sched_lock = false;
    snprintf(info->sched_lock_detail, sizeof info->sched_lock_detail,
             "POSIX offers user space no way to disable preemption (no scheduler or task "
             "lock); a stand-in such as the top SCHED_FIFO priority still lets interrupts "
             "and the kernel's own threads run, so it would time something else");
    port_realtime = info->realtime;
    /* MCL_FUTURE under a finite RLIMIT_MEMLOCK makes every allocation past
     * the limit fail: lock only what exists then, and say so. */
    struct rlimit ml = {0, 0};
    getrlimit(RLIMIT_MEMLOCK, &ml);
    bool unlimited = ml.rlim_cur == RLIM_INFINITY || geteuid() == 0;
    if (unlimited && mlockall(MCL_CURRENT | MCL_FUTURE) == 0) {
        info->memory_locked = true;
    } else if (!unlimited) {
        mlockall(MCL_CURRENT);
        snprintf(info->mlock_detail, sizeof info->mlock_detail,
                 "RLIMIT_MEMLOCK is %llu bytes: buffers are prefaulted but not locked, so "
                 "paging may show in the figures",
                 (unsigned long long)ml.rlim_cur);
    } else {
        snprintf(info->mlock_detail, sizeof info->mlock_detail,
                 "mlockall failed (%s): page faults may show in the figures", strerror(errno));
    }
#ifdef __linux__
    /* If the host dies, so do we: no real-time thread outlives its run. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    /* No RLIMIT_RTTIME safety net: on this kernel it sent SIGXCPU to
     * threads that had spun for well under the limit. The watchdog, RT
     * throttling and the host's idle timeout bound a runaway instead. */
#endif
    return RTB_OK;
}

void rtb_port_abort(int status)
{
    fflush(NULL);
    _exit(status);
}

static int trace_fd = -1; /* process-wide like the kernel's marker itself */
static int trace_on_fd = -1; /* the same instance's tracing_on */

int rtb_trace_open(const char *path)
{
    trace_fd = open(path, O_WRONLY | O_CLOEXEC);
    if (trace_fd < 0)
        return from_errno(errno);
    /* Opened now, not at the break: the break must stop tracing at once. */
    static char on[4096];
    const char *slash = strrchr(path, '/');
    int dir = slash ? (int)(slash - path) : 0;
    if (snprintf(on, sizeof on, "%.*s%stracing_on", dir, path, slash ? "/" : "") <
        (int)sizeof on)
        trace_on_fd = open(on, O_WRONLY | O_CLOEXEC);
    return RTB_OK;
}

void rtb_trace_stop(void)
{
    if (trace_on_fd >= 0 && write(trace_on_fd, "0", 1) < 0)
        trace_on_fd = -1;
}

void rtb_trace_mark(const char *text)
{
    if (trace_fd >= 0 && write(trace_fd, text, strlen(text)) < 0)
        trace_fd = -1; /* tracing went away: stop trying */
}

/* ---- threads --------------------------------------------------------- */

static void *trampoline(void *arg)
{
    posix_thread *t = arg;
    atomic_store(&t->tid, (pid_t)syscall(SYS_gettid));
    /* rtb_thread_delete may have come before the thread ever ran. */
    pthread_testcancel();
    /* Fault the stack in now, not in the middle of a measurement. */
    volatile char touch[PREFAULT_STACK];
    memset((char *)touch, 0, sizeof touch);
    t->fn(t->arg);
    return NULL;
}

static int apply_cpu(pthread_attr_t *attr, pthread_t self, int cpu, bool is_attr)
{
    if (cpu < 0)
        return 0;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return is_attr ? pthread_attr_setaffinity_np(attr, sizeof set, &set)
                   : pthread_setaffinity_np(self, sizeof set, &set);
}

int rtb_thread_create(rtb_thread *th, const rtb_thread_attr *a, rtb_thread_fn fn, void *arg)
{
    posix_thread *t = (posix_thread *)th->opaque;
    memset(t, 0, sizeof *t);
    t->fn = fn;
    t->arg = arg;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    size_t stack = a->stack_size ? a->stack_size : RTB_THREAD_STACK;
    /* A size below the C library's minimum fails pthread_create (EINVAL):
     * on arm64 that minimum is 128 KiB (64 KiB pages), so the 64 KiB the
     * switch cases ask for created no thread there. A stack the port finds
     * is raised to it; a caller's own stack is the caller's to size. */
    if (!a->stack && stack < (size_t)PTHREAD_STACK_MIN)
        stack = (size_t)PTHREAD_STACK_MIN;
    int rc = a->stack ? pthread_attr_setstack(&attr, a->stack, stack)
                      : pthread_attr_setstacksize(&attr, stack);
    if (rc == 0)
        rc = apply_cpu(&attr, 0, a->cpu, true);
    if (rc == 0 && port_realtime && a->normal) {
        struct sched_param p = {.sched_priority = 0};
        pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
        pthread_attr_setschedpolicy(&attr, SCHED_OTHER);
        pthread_attr_setschedparam(&attr, &p);
    } else if (rc == 0 && port_realtime) {
        int prio = a->priority;
        struct sched_param p = {.sched_priority = prio < 1 ? 1 : prio > 99 ? 99 : prio};
        pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
        pthread_attr_setschedpolicy(&attr, a->round_robin ? SCHED_RR : SCHED_FIFO);
        pthread_attr_setschedparam(&attr, &p);
    }
    if (rc == 0)
        rc = pthread_create(&t->th, &attr, trampoline, t);
    pthread_attr_destroy(&attr);
    if (rc != 0)
        return from_errno(rc);
    t->started = true;
    if (a->name)
        pthread_setname_np(t->th, a->name);
    return RTB_OK;
}

int rtb_thread_join(rtb_thread *th, rtb_time deadline)
{
    posix_thread *t = (posix_thread *)th->opaque;
    if (!t->started)
        return RTB_EINVAL;
    int rc;
    if (deadline == RTB_FOREVER) {
        rc = pthread_join(t->th, NULL);
    } else {
        struct timespec ts = ts_of(deadline);
        rc = pthread_clockjoin_np(t->th, NULL, CLOCK_MONOTONIC, &ts);
    }
    if (rc == 0)
        t->started = false;
    return from_errno(rc);
}

int rtb_thread_delete(rtb_thread *th)
{
    posix_thread *t = (posix_thread *)th->opaque;
    if (!t->started)
        return RTB_EINVAL;
    /* Deferred cancellation acts at the thread's next blocking call (or at
     * once if it never ran): the POSIX form of deleting a task. */
    int rc = pthread_cancel(t->th);
    if (rc == 0 || rc == ESRCH)
        rc = pthread_join(t->th, NULL);
    if (rc == 0)
        t->started = false;
    return from_errno(rc);
}

int rtb_thread_self_priority(void)
{
    int policy;
    struct sched_param p;
    if (pthread_getschedparam(pthread_self(), &policy, &p) != 0)
        return 0;
    return policy == SCHED_FIFO || policy == SCHED_RR ? p.sched_priority : 0;
}

int rtb_sched_lock(void) { return RTB_ENOTSUP; }

int rtb_sched_unlock(void) { return RTB_ENOTSUP; }

void rtb_thread_yield(void)
{
    sched_yield();
}

int rtb_thread_self_set(int priority, int cpu)
{
    int rc = apply_cpu(NULL, pthread_self(), cpu, false);
    if (rc == 0 && port_realtime) {
        struct sched_param p = {.sched_priority = priority};
        rc = pthread_setschedparam(pthread_self(), SCHED_FIFO, &p);
    }
    return from_errno(rc);
}

int rtb_sleep_until(rtb_time when)
{
    struct timespec ts = ts_of(when);
    int rc;
    while ((rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL)) == EINTR)
        ;
    return from_errno(rc);
}

/* clock_nanosleep on high-resolution timers ends at any instant (a kernel
 * without them rounds to its tick, and its latency shows that). */
rtb_time rtb_release_grain(rtb_time *phase)
{
    *phase = 0;
    return 0;
}

/* ---- semaphores ------------------------------------------------------ */

int rtb_sem_create(rtb_sem *s, unsigned initial)
{
    posix_sem *p = (posix_sem *)s->opaque;
    return sem_init(&p->sem, 0, initial) == 0 ? RTB_OK : from_errno(errno);
}

int rtb_sem_delete(rtb_sem *s)
{
    posix_sem *p = (posix_sem *)s->opaque;
    return sem_destroy(&p->sem) == 0 ? RTB_OK : from_errno(errno);
}

int rtb_sem_give(rtb_sem *s)
{
    posix_sem *p = (posix_sem *)s->opaque;
    return sem_post(&p->sem) == 0 ? RTB_OK : from_errno(errno);
}

int rtb_sem_take(rtb_sem *s, rtb_time deadline)
{
    posix_sem *p = (posix_sem *)s->opaque;
    int rc;
    if (deadline == 0) {
        rc = sem_trywait(&p->sem);
    } else if (deadline == RTB_FOREVER) {
        while ((rc = sem_wait(&p->sem)) != 0 && errno == EINTR)
            ;
    } else {
        struct timespec ts = ts_of(deadline);
        while ((rc = sem_clockwait(&p->sem, CLOCK_MONOTONIC, &ts)) != 0 && errno == EINTR)
            ;
    }
    return rc == 0 ? RTB_OK : from_errno(errno);
}

/* ---- mutexes --------------------------------------------------------- */

int rtb_mutex_create(rtb_mutex *m, unsigned flags)
{
    posix_mutex *p = (posix_mutex *)m->opaque;
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    int rc = 0;
    if (flags & RTB_MUTEX_PI)
        rc = pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT);
    if (rc == 0)
        rc = pthread_mutex_init(&p->m, &a);
    pthread_mutexattr_destroy(&a);
    return from_errno(rc);
}

int rtb_mutex_delete(rtb_mutex *m)
{
    return from_errno(pthread_mutex_destroy(&((posix_mutex *)m->opaque)->m));
}

int rtb_mutex_lock(rtb_mutex *m)
{
    return from_errno(pthread_mutex_lock(&((posix_mutex *)m->opaque)->m));
}

int rtb_mutex_unlock(rtb_mutex *m)
{
    return from_errno(pthread_mutex_unlock(&((posix_mutex *)m->opaque)->m));
}

/* ---- message queues -------------------------------------------------- */

/* mq_timed* take CLOCK_REALTIME: convert our monotonic deadline. */
static struct timespec realtime_of(rtb_time deadline)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    rtb_time left = deadline - rtb_clock_now();
    if (left < 0)
        left = 0;
    return ts_of((rtb_time)now.tv_sec * 1000000000 + now.tv_nsec + left);
}

int rtb_queue_create(rtb_queue *q, size_t msg_size, unsigned depth)
{
    static atomic_uint counter;
    posix_queue *p = (posix_queue *)q->opaque;
    char name[64];
    snprintf(name, sizeof name, "/rtbench-%d-%u", (int)getpid(), atomic_fetch_add(&counter, 1));
    struct mq_attr attr = {.mq_maxmsg = (long)depth, .mq_msgsize = (long)msg_size};
    p->q = mq_open(name, O_CREAT | O_EXCL | O_RDWR, 0600, &attr);
    if (p->q == (mqd_t)-1)
        return from_errno(errno);
    mq_unlink(name); /* nothing is left behind, whatever happens next */
    p->msg_size = msg_size;
    return RTB_OK;
}

int rtb_queue_delete(rtb_queue *q)
{
    return mq_close(((posix_queue *)q->opaque)->q) == 0 ? RTB_OK : from_errno(errno);
}

int rtb_queue_send(rtb_queue *q, const void *msg, size_t len, rtb_time deadline)
{
    posix_queue *p = (posix_queue *)q->opaque;
    int rc;
    if (deadline == RTB_FOREVER) {
        rc = mq_send(p->q, msg, len, 0);
    } else {
        struct timespec ts = realtime_of(deadline);
        rc = mq_timedsend(p->q, msg, len, 0, &ts);
        if (rc != 0 && errno == ETIMEDOUT && deadline == 0)
            errno = EAGAIN;
    }
    return rc == 0 ? RTB_OK : from_errno(errno);
}

int rtb_queue_receive(rtb_queue *q, void *buf, size_t cap, rtb_time deadline)
{
    posix_queue *p = (posix_queue *)q->opaque;
    ssize_t n;
    if (cap < p->msg_size)
        return RTB_EINVAL;
    if (deadline == RTB_FOREVER) {
        n = mq_receive(p->q, buf, cap, NULL);
    } else {
        struct timespec ts = realtime_of(deadline);
        n = mq_timedreceive(p->q, buf, cap, NULL, &ts);
        if (n < 0 && errno == ETIMEDOUT && deadline == 0)
            errno = EAGAIN;
    }
    return n >= 0 ? (int)n : from_errno(errno);
}

/* ---- events: real-time signals --------------------------------------- */

#define EVENT_SLOTS 8

/* A signal handler finds its event only through process-wide state: one
 * slot per real-time signal number. */
static struct {
    _Atomic(rtb_event_fn) fn;
    void *_Atomic arg;
    _Atomic int64_t overruns;
    timer_t _Atomic timer;
} slots[EVENT_SLOTS];

static void on_signal(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    int slot = sig - SIGRTMIN;
    if (slot < 0 || slot >= EVENT_SLOTS)
        return;
    rtb_event_fn fn = atomic_load(&slots[slot].fn);
    if (si->si_code == SI_TIMER) {
        int o = timer_getoverrun(atomic_load(&slots[slot].timer));
        if (o > 0)
            atomic_fetch_add(&slots[slot].overruns, o);
    }
    if (fn)
        fn(atomic_load(&slots[slot].arg));
}

int rtb_event_create(rtb_event *e, rtb_event_fn handler, void *arg, rtb_thread *target)
{
    posix_event *p = (posix_event *)e->opaque;
    memset(p, 0, sizeof *p);
    p->slot = -1;
    for (int i = 0; i < EVENT_SLOTS; i++) {
        rtb_event_fn none = NULL;
        if (atomic_compare_exchange_strong(&slots[i].fn, &none, handler)) {
            p->slot = i;
            break;
        }
    }
    if (p->slot < 0 || SIGRTMIN + p->slot > SIGRTMAX)
        return RTB_ENOMEM;
    atomic_store(&slots[p->slot].arg, arg);
    atomic_store(&slots[p->slot].overruns, 0);
    if (target) {
        posix_thread *t = (posix_thread *)target->opaque;
        while (!(p->tid = atomic_load(&t->tid))) /* it may not have started yet */
            sched_yield();
    } else {
        p->tid = (pid_t)syscall(SYS_gettid);
    }
    struct sigaction sa = {.sa_sigaction = on_signal, .sa_flags = SA_SIGINFO | SA_RESTART};
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGRTMIN + p->slot, &sa, NULL) != 0) {
        atomic_store(&slots[p->slot].fn, NULL);
        return from_errno(errno);
    }
    return RTB_OK;
}

int rtb_event_delete(rtb_event *e)
{
    posix_event *p = (posix_event *)e->opaque;
    if (p->slot < 0)
        return RTB_EINVAL;
    if (p->has_timer)
        timer_delete(p->timer);
    signal(SIGRTMIN + p->slot, SIG_IGN);
    atomic_store(&slots[p->slot].fn, NULL);
    p->slot = -1;
    return RTB_OK;
}

int rtb_event_arm(rtb_event *e, rtb_time when, rtb_time period)
{
    posix_event *p = (posix_event *)e->opaque;
    if (p->slot < 0)
        return RTB_EINVAL;
    if (!p->has_timer) {
        struct sigevent sev = {0};
        sev.sigev_notify = SIGEV_THREAD_ID;
        sev.sigev_signo = SIGRTMIN + p->slot;
        sev._sigev_un._tid = p->tid;
        if (timer_create(CLOCK_MONOTONIC, &sev, &p->timer) != 0)
            return from_errno(errno);
        p->has_timer = true;
        atomic_store(&slots[p->slot].timer, p->timer);
    }
    struct itimerspec its = {.it_value = ts_of(when), .it_interval = ts_of(period)};
    return timer_settime(p->timer, TIMER_ABSTIME, &its, NULL) == 0 ? RTB_OK : from_errno(errno);
}

int rtb_event_raise(rtb_event *e)
{
    posix_event *p = (posix_event *)e->opaque;
    if (p->slot < 0) /* deleted: slot -1 would be glibc's own signal */
        return RTB_EINVAL;
    return syscall(SYS_tgkill, getpid(), p->tid, SIGRTMIN + p->slot) == 0 ? RTB_OK
                                                                           : from_errno(errno);
}

/* sem_post and timer_settime are async-signal-safe. */
int rtb_sem_give_isr(rtb_sem *s) { return rtb_sem_give(s); }

int rtb_event_disarm_isr(rtb_event *e) { return rtb_event_arm(e, 0, 0); }

int64_t rtb_event_overruns(rtb_event *e)
{
    posix_event *p = (posix_event *)e->opaque;
    return p->slot < 0 ? 0 : atomic_load(&slots[p->slot].overruns);
}
