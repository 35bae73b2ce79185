/* SPDX-License-Identifier: Apache-2.0 */
/* The "stress" load: stress-ng as a child process, where it is installed.
 *
 * stress-ng forks workers that do not all stop promptly when stress-ng
 * itself is told to (its timer stressor took over ten seconds under
 * load), and that a parent-death signal on stress-ng alone does not reach.
 * So a small guardian stands between the agent and stress-ng: the agent
 * re-executed as `rtbench-agent --load-guard ...` (a fresh, single-threaded
 * process, so it may fork). It stays in the agent's process group (the
 * host's Ctrl-C reaches it) and has PR_SET_PDEATHSIG (the agent's death
 * reaches it, however the agent ends). It runs stress-ng in a process group
 * of its own and, when told to stop or orphaned, asks stress-ng to stop
 * (SIGTERM), kills the whole group after STOP_GRACE, and removes the
 * load's folder, where stress-ng keeps its files.
 *
 * Everything runs at normal priority on the load CPUs (not the main
 * thread's real-time priority and pinning) and writes nothing to the
 * agent's stdout (the record stream). ops are the CPU milliseconds used by
 * stress-ng and the workers it reaped. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "load_impl.h"

extern char **environ;

#define DEFAULT_ARGS "--cpu 1 --vm 1 --vm-bytes 64M --hdd 1 --hdd-bytes 16M --switch 1"
#define MAX_ARGV 64
#define START_NS 200000000LL /* time given to stress-ng to start its workers */
#define STOP_GRACE_NS 2000000000LL

const char *load_stress_args(const rtb_load_spec *s) { return s->args[0] ? s->args : DEFAULT_ARGS; }

static bool find_exe(char *out, size_t cap)
{
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    while (*path) {
        size_t n = strcspn(path, ":");
        snprintf(out, cap, "%.*s/stress-ng", (int)n, path);
        if (n && access(out, X_OK) == 0)
            return true;
        path += n + (path[n] == ':');
    }
    return false;
}

/* Splits `text` (in place) on blanks; no quoting. */
static int split(char *text, char **argv, int cap)
{
    int n = 0;
    for (char *t = strtok(text, " \t"); t && n < cap; t = strtok(NULL, " \t"))
        argv[n++] = t;
    return n;
}

typedef struct child_cfg {
    const char *exe;
    char **argv;
    cpu_set_t cpus;
    int out_fd; /* becomes its stdout */
    volatile int exec_errno;
} child_cfg;

/* vfork, not fork: the agent's pages are not marked copy-on-write (see
 * posix_kernel.c); the child only makes system calls until execve. */
static pid_t spawn(child_cfg *c)
{
    pid_t parent = getpid();
    c->exec_errno = 0;
    pid_t pid = vfork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent)
            _exit(127);
        struct sched_param sp = {0};
        sched_setscheduler(0, SCHED_OTHER, &sp);
        sched_setaffinity(0, sizeof c->cpus, &c->cpus);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        dup2(c->out_fd, 1);
        execve(c->exe, c->argv, environ);
        c->exec_errno = errno;
        _exit(127);
    }
    return pid;
}

static int build_argv(const rtb_load_spec *s, char *text, size_t cap, char **argv, int at)
{
    snprintf(text, cap, "%s", load_stress_args(s));
    argv[at] = "stress-ng";
    return at + 1 + split(text, argv + at + 1, MAX_ARGV - at - 8);
}

static int stress_validate(const rtb_load_spec *s, char *err, size_t errcap)
{
    char exe[512], text[RTB_LOAD_ARGS], *argv[MAX_ARGV];
    if (!find_exe(exe, sizeof exe)) {
        snprintf(err, errcap, "load stress: stress-ng is not installed (not in PATH); install "
                 "it (apt-get install stress-ng) or leave the stress kind out");
        return RTB_EINVAL;
    }
    int n = build_argv(s, text, sizeof text, argv, 0);
    argv[n++] = "--dry-run";
    argv[n++] = "-q";
    argv[n] = NULL;
    child_cfg c = {.exe = exe, .argv = argv, .out_fd = open("/dev/null", O_WRONLY | O_CLOEXEC)};
    CPU_ZERO(&c.cpus);
    sched_getaffinity(0, sizeof c.cpus, &c.cpus);
    pid_t pid = c.out_fd >= 0 ? spawn(&c) : -1;
    int status = 0;
    if (pid > 0)
        waitpid(pid, &status, 0);
    if (c.out_fd >= 0)
        close(c.out_fd);
    if (pid <= 0 || c.exec_errno || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        snprintf(err, errcap, "load stress: stress-ng refused the options '%s'%s%s",
                 load_stress_args(s), c.exec_errno ? ": " : " (its message is above)",
                 c.exec_errno ? strerror(c.exec_errno) : "");
        return RTB_EINVAL;
    }
    return RTB_OK;
}

static int stress_start(rtb_load *l, const rtb_load_place *place, char *err, size_t errcap)
{
    char exe[512], text[RTB_LOAD_ARGS], *argv[MAX_ARGV], timeout[32], taskset[512], ppid[16];
    if (!find_exe(exe, sizeof exe)) {
        snprintf(err, errcap, "load stress: stress-ng is not installed");
        return RTB_EINVAL;
    }
    snprintf(ppid, sizeof ppid, "%d", (int)getpid());
    char *head[] = {"rtbench-agent", "--load-guard", ppid, l->dir, exe};
    memcpy(argv, head, sizeof head);
    int n = build_argv(&l->spec, text, sizeof text, argv, 5);
    snprintf(timeout, sizeof timeout, "%llds", (long long)(place->max_ms / 1000 + 10));
    argv[n++] = "--temp-path";
    argv[n++] = l->dir;
    argv[n++] = "--timeout"; /* the last resort */
    argv[n++] = timeout;
    child_cfg c = {.exe = "/proc/self/exe", .argv = argv, .out_fd = 2};
    CPU_ZERO(&c.cpus);
    if (place->ncpus > 0) {
        size_t len = 0;
        for (int i = 0; i < place->ncpus; i++) {
            CPU_SET(place->cpus[i], &c.cpus);
            if (len < sizeof taskset)
                len += (size_t)snprintf(taskset + len, sizeof taskset - len, "%s%d",
                                        i ? "," : "", place->cpus[i]);
        }
        argv[n++] = "--taskset";
        argv[n++] = taskset;
    } else {
        for (int i = 0; i < CPU_SETSIZE && i < sysconf(_SC_NPROCESSORS_ONLN); i++)
            CPU_SET(i, &c.cpus);
    }
    argv[n] = NULL;
    pid_t pid = spawn(&c);
    if (pid <= 0 || c.exec_errno) {
        if (pid > 0)
            waitpid(pid, NULL, 0);
        snprintf(err, errcap, "load stress: cannot start the guardian: %s",
                 strerror(c.exec_errno ? c.exec_errno : errno));
        return RTB_EFAIL;
    }
    l->pid = pid;
    /* Give stress-ng time to fork its workers; if it gives up instead, say so. */
    rtb_time until = rtb_clock_now() + START_NS;
    int status;
    while (rtb_clock_now() < until) {
        if (waitpid(pid, &status, WNOHANG) == pid) {
            snprintf(err, errcap, "load stress: stress-ng ended at once (%s %d; its message "
                     "is on the agent's stderr)", WIFEXITED(status) ? "exit" : "signal",
                     WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
            return RTB_EFAIL;
        }
        rtb_sleep_until(rtb_clock_now() + 10000000);
    }
    return RTB_OK;
}

static void stress_stop(rtb_load *l, rtb_time deadline)
{
    pid_t pid = l->pid;
    kill(pid, SIGTERM);
    rtb_time until = rtb_clock_now() + STOP_GRACE_NS + 3000000000LL;
    if (until > deadline)
        until = deadline;
    int status;
    struct rusage ru = {0};
    pid_t got = 0;
    while ((got = wait4(pid, &status, WNOHANG, &ru)) == 0 && rtb_clock_now() < until)
        rtb_sleep_until(rtb_clock_now() + 10000000);
    if (got != pid) { /* a stuck guardian: stress-ng dies with it (its pdeathsig) */
        kill(pid, SIGKILL);
        wait4(pid, &status, 0, &ru);
    }
    l->child_ms = (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000 +
                  (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000;
}

const load_kind load_kind_stress = {
    .name = "stress",
    .unit = "CPU ms used by stress-ng and its workers",
    .what = "stress-ng (stress:ARGS, or stress-ng:ARGS; without ARGS: " DEFAULT_ARGS ")",
    .needs_dir = true,
    .start = stress_start,
    .stop = stress_stop,
    .validate = stress_validate,
};

/* ---- the guardian ------------------------------------------------------ */

static rtb_time mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (rtb_time)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* argv: PPID DIR STRESS-NG-PATH stress-ng ARGS... */
int rtb_load_guard(int argc, char **argv)
{
    if (argc < 4)
        return 2;
    pid_t agent = (pid_t)atoi(argv[0]);
    const char *dir = argv[1];
    sigset_t mask, none;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGCHLD);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    sigemptyset(&none);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    prctl(PR_SET_NAME, "rtbench-guard");
    int status = 0;
    pid_t child = getppid() == agent ? fork() : -1;
    if (child == 0) {
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        sigprocmask(SIG_SETMASK, &none, NULL);
        execve(argv[2], argv + 3, environ);
        _exit(127);
    }
    if (child > 0) {
        setpgid(child, child); /* whichever runs first, the group exists before a kill */
        rtb_time stop_by = 0;
        for (;;) {
            struct timespec tick = {0, 50000000};
            int sig = sigtimedwait(&mask, NULL, &tick);
            if (waitpid(child, &status, WNOHANG) == child)
                break;
            rtb_time now = mono_ns();
            if (!stop_by && (sig == SIGTERM || sig == SIGINT || getppid() != agent)) {
                kill(child, SIGTERM);
                stop_by = now + STOP_GRACE_NS;
            } else if (stop_by && now > stop_by) {
                kill(-child, SIGKILL);
                waitpid(child, &status, 0);
                break;
            }
        }
        kill(-child, SIGKILL); /* workers that outlived stress-ng */
    }
    load_remove_tree(dir);
    return child > 0 && WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
