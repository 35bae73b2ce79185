/* SPDX-License-Identifier: Apache-2.0 */
/* The "kernel" load on POSIX: threads that loop over system calls which
 * take kernel locks or run with preemption disabled (VFS and the inode
 * lock, the mmap lock and page tables, the run queue lock, the pipe
 * mutex). They start through the port, so they get its priority and
 * affinity rules; the calls themselves go straight to the OS. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "load.h"

#define MAP_BYTES (64 * 1024)
#define IO_BYTES 4096

typedef struct worker {
    struct rtb_load *load;
    int id;
    int pipe_fd[2];
    char path[128];
    _Atomic uint64_t ops;
} worker;

struct rtb_load {
    atomic_bool stop;
    int n, started;
    char dir[96];
    bool have_dir;
    rtb_thread *th;
    worker *w;
};

static void kernel_load(void *arg)
{
    worker *w = arg;
    char buf[IO_BYTES];
    memset(buf, 'x', sizeof buf);
    /* Threads start at different steps so they do not all queue on the
     * same lock at once. */
    for (unsigned k = (unsigned)w->id; !atomic_load_explicit(&w->load->stop, memory_order_relaxed);
         k++) {
        switch (k % 4) {
        case 0: {
            int fd = open(w->path, O_CREAT | O_TRUNC | O_WRONLY, 0600);
            if (fd >= 0) {
                ssize_t r = write(fd, buf, sizeof buf);
                (void)r;
                close(fd);
            }
            unlink(w->path);
            break;
        }
        case 1: {
            /* Under mlockall(MCL_FUTURE) this also populates and locks the
             * pages: more time under the mmap lock. */
            char *p = mmap(NULL, MAP_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                           -1, 0);
            if (p != MAP_FAILED) {
                p[0] = 1;
                p[MAP_BYTES / 2] = 1;
                munmap(p, MAP_BYTES);
            }
            break;
        }
        case 2:
            syscall(SYS_getpid); /* a real entry: glibc no longer caches it */
            sched_yield();
            break;
        default:
            /* Non-blocking both ways, and a write is always read back: the
             * thread can never block here, so it always sees `stop`. */
            if (write(w->pipe_fd[1], buf, 512) > 0) {
                ssize_t r = read(w->pipe_fd[0], buf, 512);
                (void)r;
            }
            break;
        }
        atomic_fetch_add_explicit(&w->ops, 1, memory_order_relaxed);
    }
}

static void release(rtb_load *l)
{
    for (int i = 0; i < l->n; i++) {
        if (l->w[i].pipe_fd[0] >= 0)
            close(l->w[i].pipe_fd[0]);
        if (l->w[i].pipe_fd[1] >= 0)
            close(l->w[i].pipe_fd[1]);
        if (l->have_dir)
            unlink(l->w[i].path); /* normally gone already */
    }
    if (l->have_dir)
        rmdir(l->dir);
    free(l->th);
    free(l->w);
    free(l);
}

int rtb_load_stop(rtb_load *l, rtb_time deadline, rtb_load_stats *st)
{
    if (st)
        *st = (rtb_load_stats){0};
    if (!l)
        return RTB_OK;
    atomic_store(&l->stop, true);
    int rc = RTB_OK;
    for (int i = 0; i < l->started; i++) {
        int r = rtb_thread_join(&l->th[i], deadline);
        if (r != RTB_OK)
            rc = r;
    }
    if (st) {
        st->threads = l->started;
        st->ops_min = l->started ? UINT64_MAX : 0;
        for (int i = 0; i < l->started; i++) {
            uint64_t ops = atomic_load(&l->w[i].ops);
            st->ops_total += ops;
            if (ops < st->ops_min)
                st->ops_min = ops;
        }
    }
    /* A thread still running uses this memory: leave it (the watchdog is
     * about to end the run anyway). */
    if (rc == RTB_OK)
        release(l);
    return rc;
}

int rtb_load_start(rtb_load **out, const char *kind, int n, int cpu, int priority, char *err,
                   size_t errcap)
{
    *out = NULL;
    if (strcmp(kind, "kernel") != 0) {
        snprintf(err, errcap, "unknown load kind '%s' (kinds: kernel)", kind);
        return RTB_EINVAL;
    }
    if (n <= 0)
        return RTB_OK;
    rtb_load *l = calloc(1, sizeof *l);
    if (!l || !(l->th = calloc((size_t)n, sizeof *l->th)) ||
        !(l->w = calloc((size_t)n, sizeof *l->w))) {
        if (l)
            free(l->th);
        free(l);
        snprintf(err, errcap, "no memory for %d load threads", n);
        return RTB_ENOMEM;
    }
    l->n = n;
    for (int i = 0; i < n; i++)
        l->w[i] = (worker){.load = l, .id = i, .pipe_fd = {-1, -1}};
    const char *tmp = getenv("TMPDIR");
    snprintf(l->dir, sizeof l->dir, "%s/rtbench-load-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(l->dir)) {
        snprintf(err, errcap, "cannot create a folder for the file load in %s: %s",
                 tmp && *tmp ? tmp : "/tmp", strerror(errno));
        release(l);
        return RTB_EFAIL;
    }
    l->have_dir = true;
    for (int i = 0; i < n; i++) {
        snprintf(l->w[i].path, sizeof l->w[i].path, "%s/f%d", l->dir, i);
        if (pipe2(l->w[i].pipe_fd, O_NONBLOCK | O_CLOEXEC) != 0) {
            snprintf(err, errcap, "pipe: %s", strerror(errno));
            release(l);
            return RTB_ENOMEM;
        }
    }
    rtb_thread_attr attr = {.name = "load-kernel", .priority = priority, .cpu = cpu,
                            .stack_size = 64 * 1024};
    for (; l->started < n; l->started++) {
        int rc = rtb_thread_create(&l->th[l->started], &attr, kernel_load, &l->w[l->started]);
        if (rc != RTB_OK) {
            snprintf(err, errcap, "only %d of %d load threads could be created", l->started, n);
            rtb_load_stop(l, rtb_clock_now() + 2000000000, NULL);
            return rc;
        }
    }
    *out = l;
    return RTB_OK;
}
