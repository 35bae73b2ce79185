/* SPDX-License-Identifier: Apache-2.0 */
/* What every entry point needs before a run: the port's description, the
 * case list, a case planned from its text form, options checked against the
 * port. No argv here: a port's entry point brings its own front end. */
#include <stdlib.h>
#include <string.h>

#include "rtb.h"

const rtb_port_info *rtb_port(void)
{
    static rtb_port_info info;
    static bool ready;
    if (!ready) {
        rtb_port_init(&info);
        info.loads = RTB_PORT_HAS_LOADS;
        ready = true;
    }
    return &info;
}

const char *rtb_needs_shared_priorities(const rtb_port_info *port)
{
    return port->one_task_per_priority ? port->one_task_detail : NULL;
}

const char *rtb_case_unsupported(const rtb_case *c)
{
    if (c->unsupported)
        return c->unsupported;
    return c->unsupported_here ? c->unsupported_here(rtb_port()) : NULL;
}

void rtb_list_cases(FILE *out)
{
    /* From the heap, for the listing only: RAM a small board needs. */
    enum { CAP = 8192 };
    char *buf = malloc(CAP);
    if (!buf)
        return;
    rtb_json j;
    for (int i = 0; i < rtb_ncases; i++) {
        const rtb_case *c = rtb_cases[i];
        rtb_json_init(&j, buf, CAP);
        rtb_json_obj(&j, NULL);
        rtb_json_str(&j, "id", c->id);
        rtb_json_str(&j, "title", c->title);
        const char *why = rtb_case_unsupported(c);
        rtb_json_bool(&j, "supported", why == NULL);
        if (why)
            rtb_json_str(&j, "reason", why);
        if (c->tasks)
            rtb_json_str(&j, "tasks", c->tasks);
        if (c->per_cpu)
            rtb_json_bool(&j, "per_cpu", true);
        if (c->sigma3)
            rtb_json_bool(&j, "sigma3", true);
        if (c->headline)
            rtb_json_i64(&j, "headline", c->headline);
        if (c->unscored)
            rtb_json_bool(&j, "unscored", true);
        if (c->jitter)
            rtb_json_bool(&j, "jitter", true);
        rtb_json_arr(&j, "params");
        for (int k = 0; k < c->nparams; k++) {
            const rtb_param_def *d = &c->params[k];
            rtb_json_obj(&j, NULL);
            rtb_json_str(&j, "name", d->name);
            rtb_json_str(&j, "help", d->help);
            rtb_json_arr(&j, "default");
            for (int v = 0; v < d->ndef; v++)
                rtb_json_i64(&j, NULL, d->def[v]);
            rtb_json_arr_end(&j);
            rtb_json_i64(&j, "min", d->min);
            rtb_json_i64(&j, "max", d->max);
            rtb_json_bool(&j, "list", d->list);
            rtb_json_obj_end(&j);
        }
        rtb_json_arr_end(&j);
        rtb_json_obj_end(&j);
        fputs(buf, out);
        fputc('\n', out);
    }
    free(buf);
}

int rtb_plan_case(const char *text, rtb_planned *p, char *err, size_t errcap)
{
    char id[64];
    size_t idlen = strcspn(text, ":");
    snprintf(id, sizeof id, "%.*s", (int)idlen, text);
    p->c = rtb_case_find(id);
    if (!p->c) {
        size_t len = (size_t)snprintf(err, errcap, "unknown case '%s'; cases:", id);
        for (int i = 0; i < rtb_ncases && len < errcap; i++)
            len += (size_t)snprintf(err + len, errcap - len, " %s", rtb_cases[i]->id);
        return RTB_EINVAL;
    }
    rtb_params_defaults(p->c, &p->pv);
    const char *rest = text + idlen;
    while (*rest == ':') {
        char assignment[256];
        rest++;
        size_t n = strcspn(rest, ":");
        snprintf(assignment, sizeof assignment, "%.*s", (int)n, rest);
        if (rtb_params_set(p->c, &p->pv, assignment, err, errcap) != RTB_OK)
            return RTB_EINVAL;
        rest += n;
    }
    return RTB_OK;
}

int rtb_options_resolve(rtb_options *opt, char *err, size_t errcap)
{
    const rtb_port_info *pi = rtb_port();
    if (opt->priority < 1 || opt->priority > RTB_PRIO_MAX - 2) {
        snprintf(err, errcap, "priority must be 1..%d", RTB_PRIO_MAX - 2);
        return RTB_EINVAL;
    }
    if (opt->max_samples < 1 || opt->max_samples > RTB_MAX_SAMPLES_LIMIT) {
        snprintf(err, errcap, "max-samples must be 1..%lu",
                 (unsigned long)RTB_MAX_SAMPLES_LIMIT);
        return RTB_EINVAL;
    }
    if (opt->deadline_slack_ms < 100 || opt->deadline_slack_ms > 86400000) {
        snprintf(err, errcap, "deadline-slack must be 100..86400000 ms");
        return RTB_EINVAL;
    }
    /* The default: the last CPU the process may run on (taskset, a
     * cpuset), not the machine's last. */
    if (opt->cpu < 0)
        opt->cpu = rtb_cpu_allowed_at(pi, rtb_cpus_allowed(pi) - 1);
    if (opt->cpu >= pi->cpu_count) {
        snprintf(err, errcap, "cpu %d: this machine has CPUs 0..%d", opt->cpu,
                 pi->cpu_count - 1);
        return RTB_EINVAL;
    }
    if (!rtb_cpu_is_allowed(pi, opt->cpu)) {
        char list[64];
        rtb_cpus_text(pi, list, sizeof list);
        snprintf(err, errcap, "cpu %d: this process may run on CPU %s only (its affinity)",
                 opt->cpu, list);
        return RTB_EINVAL;
    }
    /* Unpinned case threads go wherever the scheduler puts them: cases
     * pin to ctx->opt->cpu, and -1 means "any" to the port. */
    if (!opt->pinned)
        opt->cpu = -1;
    return RTB_OK;
}
