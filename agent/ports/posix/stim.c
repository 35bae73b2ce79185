/* SPDX-License-Identifier: Apache-2.0 */
/* The POSIX port's stimulator (rtb/line.h): the separate program rtb-stim
 * (agent/tools/rtb-stim.c), started with posix_spawn beside the agent. It
 * shares no code with the measured path, only the far ends of the lines
 * and two control pipes (its stdin and stdout). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "line_impl.h"

extern char **environ;

typedef struct {
    pid_t pid;
    int cmd_fd, reply_fd;
    size_t len;
    char buf[640];
} posix_stim;

_Static_assert(sizeof(posix_stim) <= RTB_STIM_STORAGE, "rtb_stim too small");

/* rtb-stim beside the agent's executable (named after it: an agent copied
 * as rtbench-agent-x86_64 looks for rtb-stim-x86_64), or $RTB_STIM. */
static int stim_path(char *path, size_t cap, char *why, size_t whycap)
{
    const char *env = getenv("RTB_STIM");
    if (env && *env) {
        snprintf(path, cap, "%s", env);
    } else {
        char self[PATH_MAX - 16];
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n <= 0)
            return posix_line_say(why, whycap, RTB_ENOTSUP, "cannot find the agent's own path");
        self[n] = '\0';
        char *slash = strrchr(self, '/');
        const char *base = slash ? slash + 1 : self, *suffix = "";
        if (strncmp(base, "rtbench-agent", 13) == 0)
            suffix = base + 13;
        if (slash)
            *slash = '\0';
        snprintf(path, cap, "%s/rtb-stim%.32s", slash ? self : ".", suffix);
    }
    if (access(path, X_OK) != 0)
        return posix_line_say(why, whycap, RTB_ENOTSUP,
                              "no stimulator program at %s (rtb-stim is built beside the "
                              "agent; or set RTB_STIM)",
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
        return posix_line_say(why, whycap, posix_line_status(errno), "pipe");
    if (pipe2(reply, O_CLOEXEC) != 0) {
        close(cmd[0]);
        close(cmd[1]);
        return posix_line_say(why, whycap, posix_line_status(errno), "pipe");
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
        return posix_line_say(why, whycap, posix_line_status(err), "cannot start %s", path);
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
    posix_line_close_fd(&st->cmd_fd); /* end of its commands: it exits */
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
    posix_line_close_fd(&st->reply_fd);
    return rc;
}
