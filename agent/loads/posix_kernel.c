/* SPDX-License-Identifier: Apache-2.0 */
/* The "kernel" load on POSIX: threads that loop over system calls which
 * take kernel locks or run with preemption disabled (VFS and the inode
 * lock, the mmap lock and page tables, process creation and exit, the run
 * queue lock, the pipe mutex and wake-ups). The calls go straight to the
 * OS; ops count the system calls made.
 *
 * Process creation is vfork + _exit: a real fork() would mark every page
 * of the agent copy-on-write, and the measured threads would then take
 * page faults on their own prefaulted buffers - an artefact of the agent,
 * not the OS. The hackbench-style messages go to a partner thread on the
 * same CPU that echoes them back, so each one is two wake-ups and two
 * context switches through blocking pipes. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "load_impl.h"

#define MAP_BYTES (64 * 1024)
#define IO_BYTES 4096
#define MSG_BYTES 100 /* hackbench's message size */

typedef struct echo {
    int in, out;
} echo;

/* Answers every message until the worker closes its end. */
static void echo_main(void *arg)
{
    echo *e = arg;
    char buf[MSG_BYTES];
    for (;;) {
        ssize_t r = read(e->in, buf, sizeof buf);
        if (r <= 0 || write(e->out, buf, (size_t)r) != r)
            break;
    }
}

static void spawn_exit(void)
{
    pid_t pid = vfork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        _exit(0);
    }
    if (pid > 0)
        waitpid(pid, NULL, 0);
}

static void kernel_run(load_worker *w)
{
    int to_echo[2] = {-1, -1}, from_echo[2] = {-1, -1};
    char path[200];
    snprintf(path, sizeof path, "%s/k%d", w->load->dir, w->id);
    if (pipe2(to_echo, O_CLOEXEC) != 0 || pipe2(from_echo, O_CLOEXEC) != 0) {
        load_fail(w, "pipe: %s", strerror(errno));
        goto out;
    }
    echo e = {to_echo[0], from_echo[1]};
    rtb_thread th;
    if (load_helper(w, &th, echo_main, &e) != RTB_OK) {
        load_fail(w, "cannot create the echo thread");
        goto out;
    }
    char buf[IO_BYTES];
    memset(buf, 'x', sizeof buf);
    load_ready(w);
    /* Threads start at different steps so they do not all queue on the
     * same lock at once. */
    for (unsigned k = (unsigned)w->id; !load_stopping(w); k++) {
        switch (k % 5) {
        case 0: {
            int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0600);
            if (fd >= 0) {
                ssize_t r = write(fd, buf, sizeof buf);
                (void)r;
                close(fd);
            }
            unlink(path);
            load_count(w, 4);
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
            load_count(w, 2);
            break;
        }
        case 2:
            syscall(SYS_getpid); /* a real entry: glibc no longer caches it */
            sched_yield();
            load_count(w, 2);
            break;
        case 3:
            spawn_exit();
            load_count(w, 3); /* vfork, the child's exit, wait */
            break;
        default:
            /* The echo always answers, so this never blocks for long. */
            if (write(to_echo[1], buf, MSG_BYTES) == MSG_BYTES) {
                ssize_t r = read(from_echo[0], buf, MSG_BYTES);
                (void)r;
            }
            load_count(w, 4);
            break;
        }
    }
    close(to_echo[1]); /* the echo reads end-of-file and returns */
    to_echo[1] = -1;
    rtb_thread_join(&th, rtb_clock_now() + 5000000000LL);
out:
    for (int i = 0; i < 2; i++) {
        if (to_echo[i] >= 0)
            close(to_echo[i]);
        if (from_echo[i] >= 0)
            close(from_echo[i]);
    }
    unlink(path);
}

const load_kind load_kind_kernel = {
    .name = "kernel",
    .unit = "system calls",
    .what = "system-call storms: file create/write/unlink, mmap/munmap, vfork/exit, "
            "getpid/sched_yield, hackbench-style pipe messages to an echo thread",
    .needs_dir = true,
    .run = kernel_run,
};
