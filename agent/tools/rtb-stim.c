/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rtb-stim: the stimulator of RSP-IO, the oscilloscope of the method.
 *
 * A separate program that shares no code with the agent: it drives the
 * agent's input line with edges at random intervals, waits for the
 * answering edge on the agent's output line, and timestamps both on
 * CLOCK_MONOTONIC (the clock of the agent's rtb_clock_now, checked by the
 * `clock` command). It runs at the top SCHED_FIFO priority on a CPU other
 * than the measured one when it may, and says in its hello when it may not.
 *
 * Lines: --line eventfd|pipe|pty with --edge-fd (written) and --answer-fd
 * (read), inherited from the agent; or --line gpio with --chip, --drive
 * (an output offset wired to the agent's input) and --sense (an input
 * offset wired to the agent's output), through the GPIO character device
 * uAPI v2; the sense edge's time is the kernel's event timestamp
 * (CLOCK_MONOTONIC). With --sim 1 the chip is a gpio-sim chip, which has no
 * wires between lines: --drive and --sense are then the agent's own input
 * and output, driven through the input's simulated pull and read back from
 * the output's value (sysfs), the agent's side staying the full uAPI path.
 *
 * Commands on stdin, one per line; replies on stdout:
 *   clock K        K pings: "p" out, "a NS" (the agent's clock) back; then
 *                  K lines "clock S0 A S1" and "end"
 *   run N GMIN GMAX TIMEOUT SEED [UNTIL]
 *                  N edges (rising first), each GMIN..GMAX ns after the
 *                  previous answer, none sent after UNTIL (CLOCK_MONOTONIC
 *                  ns; 0: no limit); per edge "e LEVEL NS" or "l LEVEL"
 *                  (lost: no answer within TIMEOUT ns), then
 *                  "done SENT LOST STALE"
 *   quit           (or end of input) exit 0
 * --block 1 (the agent sets it on one CPU, where the stimulator shares the
 * measured CPU): wait for answers blocked instead of spinning.
 * Test builds of the agent may pass --skew NS: every stamp is NS ahead (the
 * negative control of the clock check).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <linux/gpio.h>
#include <sys/prctl.h>
#include <signal.h>
#endif

enum { EVENTFD, PIPE, PTY, GPIO };

typedef struct stim {
    int kind;
    int edge_fd, answer_fd;
    int64_t skew;
    int level;      /* the level last driven */
    int sim;        /* gpio-sim: drive by the input's pull, sense its output's value */
    int sensed;     /* gpio-sim: the output's last value read */
    int block;      /* wait for answers blocked, not spinning (one CPU) */
} stim;

static int64_t now(const stim *s)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec + s->skew;
}

static int cmp64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The cost of one stamp: median and min of back-to-back reads. */
static void stamp_cost(const stim *s, int64_t *median, int64_t *min)
{
    static int64_t d[1001];
    int n = 1001;
    for (int i = 0; i < n; i++) {
        int64_t a = now(s), b = now(s);
        d[i] = b - a;
    }
    qsort(d, (size_t)n, sizeof d[0], cmp64);
    *median = d[n / 2];
    *min = d[0];
}

static int drive(stim *s, int level)
{
    if (s->kind == EVENTFD) {
        uint64_t v = (uint64_t)level + 1;
        return write(s->edge_fd, &v, sizeof v) == (ssize_t)sizeof v ? 0 : -1;
    }
    if (s->sim) {
        const char *pull = level ? "pull-up" : "pull-down";
        return pwrite(s->edge_fd, pull, strlen(pull), 0) > 0 ? 0 : -1;
    }
#ifdef __linux__
    if (s->kind == GPIO) {
        struct gpio_v2_line_values v = {.bits = (uint64_t)level, .mask = 1};
        return ioctl(s->edge_fd, GPIO_V2_LINE_SET_VALUES_IOCTL, &v);
    }
#endif
    char c = level ? '1' : '0';
    return write(s->edge_fd, &c, 1) == 1 ? 0 : -1;
}

/* Reads one answer without blocking: 1 with its level (and, for GPIO, the
 * kernel's time of the edge in *when), 0 when none is there. */
static int answer(stim *s, int *level, int64_t *when)
{
    *when = 0;
    if (s->sim) {
        char c;
        if (pread(s->answer_fd, &c, 1, 0) != 1 || (c != '0' && c != '1') || c - '0' == s->sensed)
            return 0;
        s->sensed = c - '0';
        *level = s->sensed;
        return 1;
    }
    if (s->kind == EVENTFD) {
        uint64_t v;
        if (read(s->answer_fd, &v, sizeof v) != (ssize_t)sizeof v)
            return 0;
        *level = v == 1 ? 0 : v == 2 ? 1 : -1; /* merged answers: neither */
        return 1;
    }
#ifdef __linux__
    if (s->kind == GPIO) {
        struct gpio_v2_line_event ev;
        if (read(s->answer_fd, &ev, sizeof ev) != (ssize_t)sizeof ev)
            return 0;
        *level = ev.id == GPIO_V2_LINE_EVENT_RISING_EDGE;
        *when = (int64_t)ev.timestamp_ns + s->skew;
        return 1;
    }
#endif
    char b[16];
    ssize_t n = read(s->answer_fd, b, sizeof b);
    if (n <= 0)
        return 0;
    *level = n == 1 ? b[0] == '1' : -1; /* several bytes: stale answers */
    return 1;
}

/* Sharing the measured CPU at the top priority, a spinning stimulator
 * would never let the agent answer: it sleeps until the answer line is
 * readable (gpio-sim's sysfs value cannot be polled: short naps). */
static void wait_answer(const stim *s, int64_t left)
{
    if (s->sim) {
        struct timespec nap = {0, 20000};
        nanosleep(&nap, NULL);
        return;
    }
    struct pollfd pf = {.fd = s->answer_fd, .events = POLLIN};
    struct timespec ts = {.tv_sec = left / 1000000000, .tv_nsec = left % 1000000000};
    ppoll(&pf, 1, &ts, NULL);
}

static uint64_t next_rand(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static void sleep_until(int64_t t, const stim *s)
{
    t -= s->skew;
    struct timespec ts = {.tv_sec = t / 1000000000, .tv_nsec = t % 1000000000};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

static void run(stim *s, long n, int64_t gmin, int64_t gmax, int64_t timeout, uint64_t seed,
                int64_t until)
{
    int64_t *lat = calloc((size_t)(n > 0 ? n : 1), sizeof *lat);
    signed char *lvl = calloc((size_t)(n > 0 ? n : 1), 1);
    if (!lat || !lvl) {
        printf("error no memory for %ld edges\n", n);
        fflush(stdout);
        free(lat);
        free(lvl);
        return;
    }
    memset(lat, 0, (size_t)n * sizeof *lat); /* fault the pages in now */
    long lost = 0, stale = 0, sent = 0;
    uint64_t rnd = seed ? seed : 0x9E3779B97F4A7C15u;
    int64_t last = now(s);
    for (long i = 0; i < n; i++) {
        int64_t gap = gmin + (gmax > gmin ? (int64_t)(next_rand(&rnd) % (uint64_t)(gmax - gmin)) : 0);
        if (until && last + gap > until)
            break; /* the agent's time budget: the rest is not sent */
        sleep_until(last + gap, s);
        int l;
        int64_t when;
        while (answer(s, &l, &when)) /* a late answer to a lost edge */
            stale++;
        s->level ^= 1;
        lvl[i] = (signed char)s->level;
        int64_t t0 = now(s), t1 = 0;
        if (drive(s, s->level) != 0) {
            printf("error cannot drive the line: %s\n", strerror(errno));
            break;
        }
        sent++;
        int64_t limit = t0 + timeout;
        for (;;) {
            if (answer(s, &l, &when)) {
                int64_t t = when ? when : now(s);
                if (l == s->level) {
                    t1 = t;
                    break;
                }
                stale++;
            }
            int64_t t = now(s);
            if (t > limit)
                break;
            if (s->block)
                wait_answer(s, limit - t);
        }
        if (t1 > t0)
            lat[i] = t1 - t0;
        else
            lat[i] = -1, lost++; /* no answer (or one stamped before its edge) */
        last = now(s);
    }
    for (long i = 0; i < sent; i++) {
        if (lat[i] > 0)
            printf("e %d %lld\n", lvl[i], (long long)lat[i]);
        else
            printf("l %d\n", lvl[i]);
    }
    printf("done %ld %ld %ld\n", sent, lost, stale);
    fflush(stdout);
    free(lat);
    free(lvl);
}

static void clock_check(stim *s, int k)
{
    static int64_t s0[64], a[64], s1[64];
    if (k > 64)
        k = 64;
    char line[128];
    int got = 0;
    for (int i = 0; i < k; i++) {
        s0[i] = now(s);
        fputs("p\n", stdout);
        fflush(stdout);
        long long v;
        if (!fgets(line, sizeof line, stdin) || sscanf(line, "a %lld", &v) != 1)
            break;
        s1[i] = now(s);
        a[i] = v;
        got++;
    }
    for (int i = 0; i < got; i++)
        printf("clock %lld %lld %lld\n", (long long)s0[i], (long long)a[i], (long long)s1[i]);
    puts("end");
    fflush(stdout);
}

#ifdef __linux__
static int gpio_line(const char *chip, unsigned off, uint64_t flags)
{
    int c = open(chip, O_RDWR | O_CLOEXEC);
    if (c < 0)
        return -1;
    struct gpio_v2_line_request r;
    memset(&r, 0, sizeof r);
    r.offsets[0] = off;
    r.num_lines = 1;
    snprintf(r.consumer, sizeof r.consumer, "rtb-stim");
    r.config.flags = flags;
    if (flags & GPIO_V2_LINE_FLAG_OUTPUT) {
        r.config.num_attrs = 1;
        r.config.attrs[0].attr.id = GPIO_V2_LINE_ATTR_ID_OUTPUT_VALUES;
        r.config.attrs[0].attr.values = 0;
        r.config.attrs[0].mask = 1;
    }
    int rc = ioctl(c, GPIO_V2_GET_LINE_IOCTL, &r);
    close(c);
    if (rc < 0)
        return -1;
    fcntl(r.fd, F_SETFL, O_NONBLOCK);
    return r.fd;
}
#endif

int main(int argc, char **argv)
{
    stim s = {.kind = -1, .edge_fd = -1, .answer_fd = -1};
    int cpu = -1;
    const char *chip = NULL;
    unsigned drive_off = 0, sense_off = 0;
    static const char *const kinds[] = {"eventfd", "pipe", "pty", "gpio"};
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (!strcmp(k, "--line")) {
            for (int j = 0; j < 4; j++)
                if (!strcmp(v, kinds[j]))
                    s.kind = j;
        } else if (!strcmp(k, "--cpu")) {
            cpu = atoi(v);
        } else if (!strcmp(k, "--edge-fd")) {
            s.edge_fd = atoi(v);
        } else if (!strcmp(k, "--answer-fd")) {
            s.answer_fd = atoi(v);
        } else if (!strcmp(k, "--chip")) {
            chip = v;
        } else if (!strcmp(k, "--drive")) {
            drive_off = (unsigned)atoi(v);
        } else if (!strcmp(k, "--sense")) {
            sense_off = (unsigned)atoi(v);
        } else if (!strcmp(k, "--block")) {
            s.block = atoi(v);
        } else if (!strcmp(k, "--sim")) {
            s.sim = atoi(v);
        } else if (!strcmp(k, "--skew")) {
            s.skew = atoll(v);
        } else {
            fprintf(stderr, "rtb-stim: unknown option %s\n", k);
            return 2;
        }
    }
#ifdef __linux__
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the agent */
#endif
    if (s.kind == GPIO && s.sim) {
        /* gpio-sim has no wires between lines: the agent's own input is
         * driven through its simulated pull, its output read back. */
        const char *dev = chip ? strrchr(chip, '/') : NULL;
        char path[160];
        snprintf(path, sizeof path, "/sys/bus/gpio/devices/%s/sim_gpio%u/pull",
                 dev ? dev + 1 : "?", drive_off);
        s.edge_fd = open(path, O_WRONLY | O_CLOEXEC);
        if (s.edge_fd >= 0)
            drive(&s, 0);
        snprintf(path, sizeof path, "/sys/bus/gpio/devices/%s/sim_gpio%u/value",
                 dev ? dev + 1 : "?", sense_off);
        s.answer_fd = open(path, O_RDONLY | O_CLOEXEC);
        if (s.edge_fd < 0 || s.answer_fd < 0) {
            printf("error gpio-sim lines %u and %u of %s: %s\n", drive_off, sense_off,
                   chip ? chip : "(no --chip)", strerror(errno));
            return 1;
        }
    } else if (s.kind == GPIO) {
#ifdef __linux__
        if (!chip || (s.edge_fd = gpio_line(chip, drive_off, GPIO_V2_LINE_FLAG_OUTPUT)) < 0 ||
            (s.answer_fd = gpio_line(chip, sense_off, GPIO_V2_LINE_FLAG_INPUT |
                                     GPIO_V2_LINE_FLAG_EDGE_RISING |
                                     GPIO_V2_LINE_FLAG_EDGE_FALLING)) < 0) {
            printf("error GPIO lines %u and %u of %s: %s\n", drive_off, sense_off,
                   chip ? chip : "(no --chip)", strerror(errno));
            return 1;
        }
#endif
    } else if (s.kind < 0 || s.edge_fd < 0 || s.answer_fd < 0) {
        printf("error usage: rtb-stim --line eventfd|pipe|pty --edge-fd N --answer-fd N "
               "| --line gpio --chip PATH --drive N --sense N [--cpu N]\n");
        return 2;
    }
    char detail[256];
    size_t len = 0;
    detail[0] = '\0';
    if (mlockall(MCL_CURRENT | MCL_FUTURE) != 0)
        len += (size_t)snprintf(detail + len, sizeof detail - len, "memory not locked (%s); ",
                                strerror(errno));
    int pinned = 0;
    if (cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        pinned = sched_setaffinity(0, sizeof set, &set) == 0;
        if (!pinned)
            len += (size_t)snprintf(detail + len, sizeof detail - len,
                                    "not pinned to CPU %d (%s); ", cpu, strerror(errno));
    }
    struct sched_param sp = {.sched_priority = sched_get_priority_max(SCHED_FIFO)};
    int rt = sched_setscheduler(0, SCHED_FIFO, &sp) == 0;
    if (!rt)
        snprintf(detail + len, sizeof detail - len, "no SCHED_FIFO (%s)", strerror(errno));
    int64_t cost, cost_min;
    stamp_cost(&s, &cost, &cost_min);
    printf("hello rt=%d prio=%d cpu=%d pinned=%d cost_ns=%lld cost_min_ns=%lld %s\n", rt,
           rt ? sp.sched_priority : 0, cpu, pinned, (long long)cost, (long long)cost_min,
           detail);
    fflush(stdout);

    char line[256];
    while (fgets(line, sizeof line, stdin)) {
        long n;
        long long gmin, gmax, timeout, until = 0;
        unsigned long long seed;
        int k;
        if (sscanf(line, "clock %d", &k) == 1) {
            clock_check(&s, k);
        } else if (sscanf(line, "run %ld %lld %lld %lld %llu %lld", &n, &gmin, &gmax, &timeout,
                          &seed, &until) >= 5) {
            run(&s, n, gmin, gmax, timeout, seed, until);
        } else if (!strncmp(line, "quit", 4)) {
            break;
        } else {
            printf("error unknown command: %s", line);
            fflush(stdout);
        }
    }
    return 0;
}
