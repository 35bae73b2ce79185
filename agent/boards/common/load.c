/* SPDX-License-Identifier: Apache-2.0 */
/* Loads of the RTOS ports, for every kernel. The cases' own "kernel" load
 * (THR-PRE, IRQ-RSP, JIT-PER: threads below the case's that keep the kernel
 * busy) is n threads, each a storm of the kernel's calls that enter its
 * critical sections; the storm is the port's (rtb_os_kernel_storm in its
 * load.c), the rest is here. A kernel of one task per priority (uC/OS-II)
 * runs one such thread at the most. A run-wide --load is `none` only (the
 * POSIX kinds are file, memory and process storms a board has no
 * counterpart for). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/rtb.h"
#include "firmware.h"
#include "rtb/load.h"

#define MAX_LOAD_THREADS 16

typedef struct kernel_worker {
    rtb_load *load;
    _Alignas(8) unsigned char objects[FIRMWARE_LOAD_OBJECTS]; /* the storm's kernel objects */
    _Atomic uint32_t ops;
} kernel_worker;

struct rtb_load {
    int n;
    rtb_thread th[MAX_LOAD_THREADS];
    kernel_worker w[MAX_LOAD_THREADS];
    atomic_bool stop;
};

static void kernel_storm(void *arg)
{
    kernel_worker *w = arg;
    rtb_os_kernel_storm(w->objects, &w->load->stop, &w->ops);
}

const char *rtb_load_kind_name(const rtb_load_spec *spec)
{
    (void)spec;
    return "none";
}

int rtb_load_begin(rtb_load **out, const rtb_load_spec *spec, const rtb_load_place *place,
                   char *err, size_t errcap)
{
    (void)spec;
    (void)place;
    *out = NULL;
    snprintf(err, errcap, "unsupported: this port has no run-wide background loads");
    return RTB_ENOTSUP;
}

int rtb_load_stop(rtb_load *l, rtb_time deadline, rtb_load_stats *st)
{
    if (st)
        memset(st, 0, sizeof *st);
    if (!l)
        return RTB_OK;
    atomic_store(&l->stop, true);
    int rc = RTB_OK;
    uint64_t min = UINT64_MAX, total = 0;
    for (int i = 0; i < l->n; i++) {
        if (rtb_thread_join(&l->th[i], deadline) != RTB_OK) {
            rc = RTB_ETIMEDOUT; /* its memory stays reserved */
            continue;
        }
        uint64_t ops = atomic_load(&l->w[i].ops);
        total += ops;
        min = ops < min ? ops : min;
    }
    if (st) {
        st->threads = l->n;
        st->ops_total = total;
        st->ops_min = l->n ? min : 0;
        st->unit = "kernel-call rounds";
    }
    if (rc == RTB_OK)
        free(l); /* else a thread may still use it: deliberately kept */
    return rc;
}

rtb_time rtb_load_start_ns(const rtb_load *l)
{
    (void)l;
    return 0;
}

void rtb_load_describe(const rtb_load *l, char *buf, size_t cap)
{
    snprintf(buf, cap, "%d kernel-call thread%s", l ? l->n : 0, l && l->n == 1 ? "" : "s");
}

int rtb_load_check(const char *kind, int n, char *err, size_t errcap)
{
    if (n == 0)
        return RTB_OK;
    const rtb_port_info *port = rtb_port();
    if (strcmp(kind, "kernel") != 0) {
        snprintf(err, errcap, "the %s port has no %s load", port->port, kind);
        return RTB_ENOTSUP;
    }
    if (n > 1 && port->one_task_per_priority) {
        snprintf(err, errcap, "%s runs one task per priority: %d load threads cannot share one",
                 port->sysname, n);
        return RTB_ENOTSUP;
    }
    return RTB_OK;
}

int rtb_load_start(rtb_load **out, const char *kind, int n, int cpu, int priority, char *err,
                   size_t errcap)
{
    (void)cpu; /* one CPU */
    *out = NULL;
    if (n == 0)
        return RTB_OK;
    int rc = rtb_load_check(kind, n, err, errcap);
    if (rc != RTB_OK)
        return rc;
    if (n < 0 || n > MAX_LOAD_THREADS) {
        snprintf(err, errcap, "at most %d load threads on this port", MAX_LOAD_THREADS);
        return RTB_EINVAL;
    }
    /* From the heap, before anything is measured: only the cases that
     * start a load pay for its threads' kernel objects. */
    rtb_load *l = calloc(1, sizeof *l);
    if (!l) {
        snprintf(err, errcap, "no memory for a load of %d threads", n);
        return RTB_ENOMEM;
    }
    /* 0: "normal" scheduling, the kernel's lowest priority above idle,
     * below every real-time priority. */
    rtb_thread_attr a = {.name = "load-kernel", .priority = priority > 0 ? priority : 1,
                         .cpu = -1};
    for (int i = 0; i < n; i++) {
        l->w[i].load = l;
        atomic_store(&l->w[i].ops, 0);
        if (rtb_thread_create(&l->th[i], &a, kernel_storm, &l->w[i]) != RTB_OK) {
            snprintf(err, errcap, "could create only %d of %d load threads", i, n);
            rtb_load_stop(l, RTB_FOREVER, NULL);
            return RTB_ENOMEM;
        }
        l->n = i + 1;
    }
    *out = l;
    return RTB_OK;
}
