/* SPDX-License-Identifier: Apache-2.0 */
/* The POSIX port's lines (rtb/line.h): software lines between the agent
 * and the stimulator process (eventfd, pipe, pseudo-terminal), and real GPIO
 * through the kernel's GPIO character device, uAPI v2 (GPIO_V2_GET_LINE_IOCTL
 * with edge events). libgpiod v2 wraps the same ioctls; Debian 12 ships only
 * libgpiod 1.6 (the v1 API), so the uAPI is used directly.
 * The stimulator process is in stim.c. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h> /* posix_openpt, grantpt, unlockpt, ptsname_r */
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <linux/gpio.h>
#include <sys/eventfd.h>
#endif

#include "line_impl.h"

static const char *const kind_names[RTB_LINE_KINDS] = {"eventfd", "pipe", "pty", "gpio",
                                                            "timer"};

const char *rtb_line_kind_name(int kind)
{
    return kind >= 0 && kind < RTB_LINE_KINDS ? kind_names[kind] : "?";
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
        return posix_line_say(why, cap, RTB_ENOTSUP, "no GPIO chip at %s", chip);
    if (gpio_request(chip, in, GPIO_V2_LINE_FLAG_INPUT | GPIO_V2_LINE_FLAG_EDGE_RISING |
                     GPIO_V2_LINE_FLAG_EDGE_FALLING, 0, &p->in_fd) < 0)
        return posix_line_say(why, cap, posix_line_status(errno), "GPIO input line request on %s", chip);
    if (gpio_request(chip, out, GPIO_V2_LINE_FLAG_OUTPUT, 0, &p->out_fd) < 0) {
        int rc = posix_line_say(why, cap, posix_line_status(errno), "GPIO output line request on %s", chip);
        posix_line_close_fd(&p->in_fd);
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
            return posix_line_say(why, cap, posix_line_status(errno), "eventfd");
        return RTB_OK;
#endif
    case RTB_LINE_PIPE:
        if (pipe2(a, O_CLOEXEC | O_NONBLOCK) != 0)
            return posix_line_say(why, cap, posix_line_status(errno), "pipe");
        p->in_fd = a[0];
        p->edge_fd = a[1];
        if (pipe2(b, O_CLOEXEC | O_NONBLOCK) != 0)
            return posix_line_say(why, cap, posix_line_status(errno), "pipe");
        p->answer_fd = b[0];
        p->out_fd = b[1];
        return RTB_OK;
    case RTB_LINE_PTY: {
        int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
        if (m < 0)
            return posix_line_say(why, cap, posix_line_status(errno), "posix_openpt");
        p->edge_fd = p->answer_fd = m;
        char name[64];
        if (grantpt(m) != 0 || unlockpt(m) != 0 || ptsname_r(m, name, sizeof name) != 0)
            return posix_line_say(why, cap, posix_line_status(errno), "pseudo-terminal");
        int s = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
        if (s < 0)
            return posix_line_say(why, cap, posix_line_status(errno), "open %s", name);
        p->in_fd = p->out_fd = s;
        struct termios t;
        /* Raw: no echo, no line buffering, no output processing. */
        if (tcgetattr(s, &t) != 0)
            return posix_line_say(why, cap, posix_line_status(errno), "tcgetattr");
        cfmakeraw(&t);
        if (tcsetattr(s, TCSANOW, &t) != 0)
            return posix_line_say(why, cap, posix_line_status(errno), "tcsetattr");
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
    posix_line_close_fd(&p->in_fd);
    posix_line_close_fd(&p->out_fd);
    posix_line_close_fd(&p->edge_fd);
    posix_line_close_fd(&p->answer_fd);
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
            return posix_line_status(errno);
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
        struct timespec left;
        rtb_time rem = deadline - rtb_clock_now();
        if (rem <= 0)
            return RTB_ETIMEDOUT;
        left.tv_sec = rem / 1000000000;
        left.tv_nsec = rem % 1000000000;
        int n = ppoll(&pf, 1, &left, NULL);
        if (n < 0 && errno != EINTR)
            return posix_line_status(errno);
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
                                                                        : posix_line_status(errno);
    }
    case RTB_LINE_EVENTFD: {
        uint64_t v = (uint64_t)(level & 1) + 1;
        n = write(p->out_fd, &v, sizeof v);
        return n == (ssize_t)sizeof v ? RTB_OK : n < 0 ? posix_line_status(errno) : RTB_EFAIL;
    }
#endif
    default: {
        char c = level ? '1' : '0';
        n = write(p->out_fd, &c, 1);
        return n == 1 ? RTB_OK : n < 0 && errno == EAGAIN ? RTB_EAGAIN
                                 : n < 0                   ? posix_line_status(errno)
                                                           : RTB_EFAIL;
    }
    }
}

/* ---- shared with stim.c ------------------------------------------------ */

int posix_line_status(int e)
{
    switch (e) {
    case ENOMEM: case EMFILE: case ENFILE: return RTB_ENOMEM;
    case EPERM: case EACCES: return RTB_EPERM;
    case EINVAL: return RTB_EINVAL;
    case ENOENT: case ENODEV: case ENOSYS: case ENOTTY: return RTB_ENOTSUP;
    default: return RTB_EFAIL;
    }
}

int posix_line_say(char *why, size_t cap, int rc, const char *fmt, ...)
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

void posix_line_close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}
