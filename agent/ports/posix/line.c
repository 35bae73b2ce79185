/* SPDX-License-Identifier: Apache-2.0 */
/* The POSIX port's lines (rtb/line.h): software lines between the agent
 * and the stimulator process (eventfd, pipe, pseudo-terminal), and real GPIO
 * through the kernel's GPIO character device, uAPI v2 (GPIO_V2_GET_LINE_IOCTL
 * with edge events). libgpiod v2 wraps the same ioctls; Debian 12 ships only
 * libgpiod 1.6 (the v1 API), so the uAPI is used directly.
 *
 * The stimulator is a separate program, rtb-stim (agent/tools/rtb-stim.c),
 * started with posix_spawn beside the agent: it shares no code with the
 * measured path, only the far ends of the lines and two control pipes. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <linux/gpio.h>
#include <sys/eventfd.h>
#endif

#include "rtb/line.h"

extern char **environ;

typedef struct {
    int kind;
    int in_fd, out_fd;        /* the agent's ends (GPIO: line request fds) */
    int edge_fd, answer_fd;   /* the stimulator's ends (software lines) */
    atomic_int level;         /* the input's last known level */
    char chip[48];            /* GPIO: the chip's path */
    unsigned drive, sense;    /* GPIO: the stimulator's offsets */
    unsigned in_off, out_off; /* GPIO: the agent's offsets */
} posix_line;

typedef struct {
    pid_t pid;
    int cmd_fd, reply_fd;
    size_t len;
    char buf[640];
} posix_stim;

_Static_assert(sizeof(posix_line) <= RTB_LINE_STORAGE, "rtb_line too small");
_Static_assert(sizeof(posix_stim) <= RTB_STIM_STORAGE, "rtb_stim too small");

static const char *const kind_names[RTB_LINE_KINDS] = {"eventfd", "pipe", "pty", "gpio"};

const char *rtb_line_kind_name(int kind)
{
    return kind >= 0 && kind < RTB_LINE_KINDS ? kind_names[kind] : "?";
}

static int status_of(int e)
{
    switch (e) {
    case ENOMEM: case EMFILE: case ENFILE: return RTB_ENOMEM;
    case EPERM: case EACCES: return RTB_EPERM;
    case EINVAL: return RTB_EINVAL;
    case ENOENT: case ENODEV: case ENOSYS: case ENOTTY: return RTB_ENOTSUP;
    default: return RTB_EFAIL;
    }
}

/* Writes the message and ": the OS's reason" (errno) into why; returns rc. */
__attribute__((format(printf, 4, 5))) static int say(char *why, size_t cap, int rc,
                                                     const char *fmt, ...)
{
    int e = errno;
    if (why && cap) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(why, cap, fmt, ap);
        va_end(ap);
        if (n >= 0 && (size_t)n < cap)
            snprintf(why + n, cap - (size_t)n, ": %s", strerror(e));
    }
    return rc;
}

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

#ifdef __linux__
static int gpio_request(const char *chip, unsigned offset, uint64_t flags, int value, int *fd)
{
    int cfd = open(chip, O_RDWR | O_CLOEXEC);
    if (cfd < 0)
        return -1;
    struct gpio_v2_line_request req;
    memset(&req, 0, sizeof req);
    req.offsets[0] = offset;
    req.num_lines = 1;
    snprintf(req.consumer, sizeof req.consumer, "rtbench");
    req.config.flags = flags;
    if (flags & GPIO_V2_LINE_FLAG_OUTPUT) {
        req.config.num_attrs = 1;
        req.config.attrs[0].attr.id = GPIO_V2_LINE_ATTR_ID_OUTPUT_VALUES;
        req.config.attrs[0].attr.values = (uint64_t)(value & 1);
        req.config.attrs[0].mask = 1;
    }
    int rc = ioctl(cfd, GPIO_V2_GET_LINE_IOCTL, &req);
    int e = errno;
    close(cfd);
    errno = e;
    if (rc < 0)
        return -1;
    *fd = req.fd;
    fcntl(*fd, F_SETFD, FD_CLOEXEC);
    return fcntl(*fd, F_SETFL, O_NONBLOCK);
}

static int open_gpio(posix_line *p, const char *where, char *why, size_t cap)
{
    unsigned in, out;
    char chip[sizeof p->chip];
    if (!where || sscanf(where, "%47[^:]:%u:%u:%u:%u", chip, &in, &out, &p->drive, &p->sense) != 5) {
        if (why)
            snprintf(why, cap, "gpio needs CHIP:IN:OUT:DRIVE:SENSE (agent's input and output "
                               "offsets, the stimulator's drive and sense offsets), got '%s'",
                     where ? where : "");
        return RTB_EINVAL;
    }
    snprintf(p->chip, sizeof p->chip, "%s", chip);
    p->in_off = in;
    p->out_off = out;
    if (access(chip, F_OK) != 0)
        return say(why, cap, RTB_ENOTSUP, "no GPIO chip at %s", chip);
    if (gpio_request(chip, in, GPIO_V2_LINE_FLAG_INPUT | GPIO_V2_LINE_FLAG_EDGE_RISING |
                     GPIO_V2_LINE_FLAG_EDGE_FALLING, 0, &p->in_fd) < 0)
        return say(why, cap, status_of(errno), "GPIO input line request on %s", chip);
    if (gpio_request(chip, out, GPIO_V2_LINE_FLAG_OUTPUT, 0, &p->out_fd) < 0) {
        int rc = say(why, cap, status_of(errno), "GPIO output line request on %s", chip);
        close_fd(&p->in_fd);
        return rc;
    }
    return RTB_OK;
}
#endif

/* Both ends of every software line are non-blocking: the polling loop and
 * the stimulator spin on them, the edge waiter polls first. */
static int open_soft(posix_line *p, char *why, size_t cap)
{
    int a[2], b[2];
    switch (p->kind) {
#ifdef __linux__
    case RTB_LINE_EVENTFD:
        p->in_fd = p->edge_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        p->out_fd = p->answer_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (p->in_fd < 0 || p->out_fd < 0)
            return say(why, cap, status_of(errno), "eventfd");
        return RTB_OK;
#endif
    case RTB_LINE_PIPE:
        if (pipe2(a, O_CLOEXEC | O_NONBLOCK) != 0)
            return say(why, cap, status_of(errno), "pipe");
        p->in_fd = a[0];
        p->edge_fd = a[1];
        if (pipe2(b, O_CLOEXEC | O_NONBLOCK) != 0)
            return say(why, cap, status_of(errno), "pipe");
        p->answer_fd = b[0];
        p->out_fd = b[1];
        return RTB_OK;
    case RTB_LINE_PTY: {
        int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
        if (m < 0)
            return say(why, cap, status_of(errno), "posix_openpt");
        p->edge_fd = p->answer_fd = m;
        char name[64];
        if (grantpt(m) != 0 || unlockpt(m) != 0 || ptsname_r(m, name, sizeof name) != 0)
            return say(why, cap, status_of(errno), "pseudo-terminal");
        int s = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
        if (s < 0)
            return say(why, cap, status_of(errno), "open %s", name);
        p->in_fd = p->out_fd = s;
        struct termios t;
        /* Raw: no echo, no line buffering, no output processing. */
        if (tcgetattr(s, &t) != 0)
            return say(why, cap, status_of(errno), "tcgetattr");
        cfmakeraw(&t);
        if (tcsetattr(s, TCSANOW, &t) != 0)
            return say(why, cap, status_of(errno), "tcsetattr");
        return RTB_OK;
    }
    default:
        if (why)
            snprintf(why, cap, "no %s line on this system", rtb_line_kind_name(p->kind));
        return RTB_ENOTSUP;
    }
}

int rtb_line_open(rtb_line *l, int kind, const char *where, char *why, size_t whycap)
{
    posix_line *p = (posix_line *)l->opaque;
    memset(p, 0, sizeof *p);
    p->kind = kind;
    p->in_fd = p->out_fd = p->edge_fd = p->answer_fd = -1;
    atomic_init(&p->level, 0);
    if (kind < 0 || kind >= RTB_LINE_KINDS)
        return RTB_EINVAL;
    int rc;
#ifdef __linux__
    if (kind == RTB_LINE_GPIO)
        rc = open_gpio(p, where, why, whycap);
    else
#endif
        rc = open_soft(p, why, whycap);
    if (rc != RTB_OK)
        rtb_line_close(l);
    return rc;
}

int rtb_line_close(rtb_line *l)
{
    posix_line *p = (posix_line *)l->opaque;
    if (p->edge_fd == p->answer_fd)
        p->answer_fd = -1; /* one pty master, one eventfd each way */
    if (p->edge_fd == p->in_fd)
        p->edge_fd = -1;
    if (p->answer_fd == p->out_fd)
        p->answer_fd = -1;
    if (p->out_fd == p->in_fd)
        p->out_fd = -1;
    close_fd(&p->in_fd);
    close_fd(&p->out_fd);
    close_fd(&p->edge_fd);
    close_fd(&p->answer_fd);
    return RTB_OK;
}

/* Takes what the input holds; false when nothing was there. */
static bool take(posix_line *p, int *level)
{
#ifdef __linux__
    if (p->kind == RTB_LINE_EVENTFD) {
        uint64_t v;
        if (read(p->in_fd, &v, sizeof v) != (ssize_t)sizeof v)
            return false;
        *level = v == 2 ? 1 : 0; /* the stimulator writes level + 1 */
        return true;
    }
    if (p->kind == RTB_LINE_GPIO) {
        struct gpio_v2_line_event ev;
        if (read(p->in_fd, &ev, sizeof ev) != (ssize_t)sizeof ev)
            return false;
        *level = ev.id == GPIO_V2_LINE_EVENT_RISING_EDGE;
        return true;
    }
#endif
    char b[16];
    ssize_t n = read(p->in_fd, b, sizeof b);
    if (n <= 0)
        return false;
    *level = b[n - 1] == '1'; /* the last byte is the line's level now */
    return true;
}

int rtb_line_get(rtb_line *l, int *level)
{
    posix_line *p = (posix_line *)l->opaque;
#ifdef __linux__
    if (p->kind == RTB_LINE_GPIO) {
        struct gpio_v2_line_values v = {.bits = 0, .mask = 1};
        if (ioctl(p->in_fd, GPIO_V2_LINE_GET_VALUES_IOCTL, &v) != 0)
            return status_of(errno);
        *level = (int)(v.bits & 1);
        return RTB_OK;
    }
#endif
    int v;
    if (take(p, &v))
        atomic_store_explicit(&p->level, v, memory_order_release);
    *level = atomic_load_explicit(&p->level, memory_order_acquire);
    return RTB_OK;
}

int rtb_line_wait(rtb_line *l, rtb_time deadline, int *level)
{
    posix_line *p = (posix_line *)l->opaque;
    struct pollfd pf = {.fd = p->in_fd, .events = POLLIN};
    for (;;) {
        struct timespec now, left;
        clock_gettime(CLOCK_MONOTONIC, &now);
        rtb_time rem = deadline - ((rtb_time)now.tv_sec * 1000000000 + now.tv_nsec);
        if (rem <= 0)
            return RTB_ETIMEDOUT;
        left.tv_sec = rem / 1000000000;
        left.tv_nsec = rem % 1000000000;
        int n = ppoll(&pf, 1, &left, NULL);
        if (n < 0 && errno != EINTR)
            return status_of(errno);
        int v;
        /* Another reader (the polling loop) may have taken it first. */
        if (n > 0 && take(p, &v)) {
            atomic_store_explicit(&p->level, v, memory_order_release);
            *level = v;
            return RTB_OK;
        }
    }
}

int rtb_line_set(rtb_line *l, int level)
{
    posix_line *p = (posix_line *)l->opaque;
    ssize_t n;
    switch (p->kind) {
#ifdef __linux__
    case RTB_LINE_GPIO: {
        struct gpio_v2_line_values v = {.bits = (uint64_t)(level & 1), .mask = 1};
        return ioctl(p->out_fd, GPIO_V2_LINE_SET_VALUES_IOCTL, &v) == 0 ? RTB_OK
                                                                        : status_of(errno);
    }
    case RTB_LINE_EVENTFD: {
        uint64_t v = (uint64_t)(level & 1) + 1;
        n = write(p->out_fd, &v, sizeof v);
        return n == (ssize_t)sizeof v ? RTB_OK : n < 0 ? status_of(errno) : RTB_EFAIL;
    }
#endif
    default: {
        char c = level ? '1' : '0';
        n = write(p->out_fd, &c, 1);
        return n == 1 ? RTB_OK : n < 0 && errno == EAGAIN ? RTB_EAGAIN
                                 : n < 0                   ? status_of(errno)
                                                           : RTB_EFAIL;
    }
    }
}

/* ---- the stimulator process ------------------------------------------ */

/* rtb-stim beside the agent's executable, or $RTB_STIM. */
static int stim_path(char *path, size_t cap, char *why, size_t whycap)
{
    const char *env = getenv("RTB_STIM");
    if (env && *env) {
        snprintf(path, cap, "%s", env);
    } else {
        char self[PATH_MAX - 16];
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n <= 0)
            return say(why, whycap, RTB_ENOTSUP, "cannot find the agent's own path");
        self[n] = '\0';
        char *slash = strrchr(self, '/');
        if (slash)
            *slash = '\0';
        snprintf(path, cap, "%s/rtb-stim", self);
    }
    if (access(path, X_OK) != 0)
        return say(why, whycap, RTB_ENOTSUP, "no stimulator program at %s (rtb-stim is built "
                                             "beside the agent; or set RTB_STIM)",
                   path);
    return RTB_OK;
}

/* An fd kept above the ones the child's dup2s write to. */
static int high(int fd) { return fd < 0 ? -1 : fcntl(fd, F_DUPFD_CLOEXEC, 10); }

int rtb_stim_start(rtb_stim *s, rtb_line *l, int cpu, const char *extra, char *why,
                   size_t whycap)
{
    posix_stim *st = (posix_stim *)s->opaque;
    posix_line *p = (posix_line *)l->opaque;
    memset(st, 0, sizeof *st);
    st->pid = -1;
    st->cmd_fd = st->reply_fd = -1;
    char path[PATH_MAX];
    int rc = stim_path(path, sizeof path, why, whycap);
    if (rc != RTB_OK)
        return rc;
    int cmd[2], reply[2];
    if (pipe2(cmd, O_CLOEXEC) != 0)
        return say(why, whycap, status_of(errno), "pipe");
    if (pipe2(reply, O_CLOEXEC) != 0) {
        close(cmd[0]);
        close(cmd[1]);
        return say(why, whycap, status_of(errno), "pipe");
    }
    char cpus[16], sense[16], drive[16], extra_buf[128];
    snprintf(cpus, sizeof cpus, "%d", cpu);
    const char *argv[24];
    int n = 0;
    argv[n++] = path;
    argv[n++] = "--line";
    argv[n++] = rtb_line_kind_name(p->kind);
    argv[n++] = "--cpu";
    argv[n++] = cpus;
    /* No CPU of its own: spinning at the top priority would starve the
     * answer it waits for. */
    argv[n++] = "--block";
    argv[n++] = cpu < 0 ? "1" : "0";
    int e_fd = high(p->edge_fd), a_fd = high(p->answer_fd);
    if (p->kind == RTB_LINE_GPIO) {
        snprintf(drive, sizeof drive, "%u", p->drive);
        snprintf(sense, sizeof sense, "%u", p->sense);
        argv[n++] = "--chip";
        argv[n++] = p->chip;
        argv[n++] = "--drive";
        argv[n++] = drive;
        argv[n++] = "--sense";
        argv[n++] = sense;
        /* The same lines on both sides: a gpio-sim chip (no wires). */
        argv[n++] = "--sim";
        argv[n++] = p->drive == p->in_off && p->sense == p->out_off ? "1" : "0";
    } else {
        argv[n++] = "--edge-fd";
        argv[n++] = "3";
        argv[n++] = "--answer-fd";
        argv[n++] = "4";
    }
    snprintf(extra_buf, sizeof extra_buf, "%s", extra ? extra : "");
    for (char *save = NULL, *tok = strtok_r(extra_buf, " ", &save); tok && n < 22;
         tok = strtok_r(NULL, " ", &save))
        argv[n++] = tok;
    argv[n] = NULL;

    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, cmd[0], 0);
    posix_spawn_file_actions_adddup2(&fa, reply[1], 1);
    if (e_fd >= 0)
        posix_spawn_file_actions_adddup2(&fa, e_fd, 3);
    if (a_fd >= 0)
        posix_spawn_file_actions_adddup2(&fa, a_fd, 4);
    pid_t pid;
    int err = posix_spawn(&pid, path, &fa, NULL, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(cmd[0]);
    close(reply[1]);
    if (e_fd >= 0)
        close(e_fd);
    if (a_fd >= 0)
        close(a_fd);
    if (err != 0) {
        close(cmd[1]);
        close(reply[0]);
        errno = err;
        return say(why, whycap, status_of(err), "cannot start %s", path);
    }
    st->pid = pid;
    st->cmd_fd = cmd[1];
    st->reply_fd = reply[0];
    return RTB_OK;
}

int rtb_stim_send(rtb_stim *s, const char *line)
{
    posix_stim *st = (posix_stim *)s->opaque;
    size_t len = strlen(line), off = 0;
    while (off < len) {
        ssize_t n = write(st->cmd_fd, line + off, len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return RTB_EFAIL;
        off += (size_t)n;
    }
    return write(st->cmd_fd, "\n", 1) == 1 ? RTB_OK : RTB_EFAIL;
}

int rtb_stim_recv(rtb_stim *s, char *buf, size_t cap, rtb_time deadline)
{
    posix_stim *st = (posix_stim *)s->opaque;
    for (;;) {
        char *nl = memchr(st->buf, '\n', st->len);
        if (nl) {
            size_t k = (size_t)(nl - st->buf);
            size_t c = k < cap - 1 ? k : cap - 1;
            memcpy(buf, st->buf, c);
            buf[c] = '\0';
            memmove(st->buf, nl + 1, st->len - k - 1);
            st->len -= k + 1;
            return RTB_OK;
        }
        if (st->len == sizeof st->buf)
            st->len = 0; /* a line longer than the buffer: not the protocol */
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        rtb_time rem = deadline - ((rtb_time)now.tv_sec * 1000000000 + now.tv_nsec);
        if (rem <= 0)
            return RTB_ETIMEDOUT;
        struct timespec left = {.tv_sec = rem / 1000000000, .tv_nsec = rem % 1000000000};
        struct pollfd pf = {.fd = st->reply_fd, .events = POLLIN};
        int r = ppoll(&pf, 1, &left, NULL);
        if (r < 0 && errno != EINTR)
            return RTB_EFAIL;
        if (r <= 0)
            continue;
        ssize_t n = read(st->reply_fd, st->buf + st->len, sizeof st->buf - st->len);
        if (n == 0)
            return RTB_EFAIL; /* the stimulator is gone */
        if (n > 0)
            st->len += (size_t)n;
        else if (errno != EINTR && errno != EAGAIN)
            return RTB_EFAIL;
    }
}

int rtb_stim_stop(rtb_stim *s, rtb_time deadline)
{
    posix_stim *st = (posix_stim *)s->opaque;
    close_fd(&st->cmd_fd); /* end of its commands: it exits */
    int rc = RTB_OK, status = 0;
    if (st->pid > 0) {
        for (;;) {
            pid_t w = waitpid(st->pid, &status, WNOHANG);
            if (w == st->pid)
                break;
            if (w < 0 && errno != EINTR) {
                rc = RTB_EFAIL;
                break;
            }
            struct timespec now, nap = {0, 5000000};
            clock_gettime(CLOCK_MONOTONIC, &now);
            if ((rtb_time)now.tv_sec * 1000000000 + now.tv_nsec > deadline) {
                kill(st->pid, SIGKILL);
                waitpid(st->pid, &status, 0);
                rc = RTB_ETIMEDOUT;
                break;
            }
            nanosleep(&nap, NULL);
        }
        if (rc == RTB_OK && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
            rc = RTB_EFAIL;
    }
    st->pid = -1;
    close_fd(&st->reply_fd);
    return rc;
}
