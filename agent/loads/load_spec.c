/* SPDX-License-Identifier: Apache-2.0 */
/* Load specs: "KIND[:name=value...][,KIND...]" into rtb_load_spec, with
 * messages that name what is allowed. Portable: the kinds themselves are
 * the port's (load_kinds[]). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "load_impl.h"

#define MAX_THREADS 64

static const char *const mixed_kinds[] = {"cpu", "memory", "kernel", "io", "irq"};

static const load_kind *find_kind(const char *name, size_t len)
{
    for (int i = 0; i < load_nkinds; i++)
        if (strlen(load_kinds[i]->name) == len && strncmp(load_kinds[i]->name, name, len) == 0)
            return load_kinds[i];
    if (len == 9 && strncmp(name, "stress-ng", 9) == 0)
        return &load_kind_stress;
    return NULL;
}

static void kind_list(char *buf, size_t cap)
{
    size_t len = (size_t)snprintf(buf, cap, "none");
    for (int i = 0; i < load_nkinds && len < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, ", %s%s", load_kinds[i]->name,
                                load_kinds[i] == &load_kind_stress ? "[:ARGS]" : "");
    if (len < cap)
        snprintf(buf + len, cap - len, ", mixed (= cpu, memory, kernel, io, irq)");
}

static bool parse_int(const char *s, int64_t *out)
{
    char *end;
    if (!*s)
        return false;
    long long v = strtoll(s, &end, 10);
    *out = v;
    return *end == '\0';
}

/* One "name=value" for `spec`. */
static int set_param(rtb_load_spec *spec, const char *kv, char *err, size_t errcap)
{
    const load_kind *k = spec->kind;
    char name[32];
    const char *eq = strchr(kv, '=');
    size_t nlen = eq ? (size_t)(eq - kv) : strlen(kv);
    snprintf(name, sizeof name, "%.*s", (int)nlen, kv);
    int64_t v;
    if (!eq || !parse_int(eq + 1, &v)) {
        snprintf(err, errcap, "load %s: write %s=INTEGER, not '%s'", k->name, name, kv);
        return RTB_EINVAL;
    }
    int64_t lo, hi;
    if (strcmp(name, "threads") == 0) {
        lo = 0, hi = MAX_THREADS;
    } else if (strcmp(name, "prio") == 0) {
        lo = 0, hi = RTB_PRIO_MAX - 2;
    } else {
        int i = 0;
        while (i < k->nparams && strcmp(k->params[i].name, name) != 0)
            i++;
        if (i == k->nparams) {
            size_t len = (size_t)snprintf(err, errcap, "load %s has no parameter '%s' (it has: "
                                          "threads, prio", k->name, name);
            for (int j = 0; j < k->nparams && len < errcap; j++)
                len += (size_t)snprintf(err + len, errcap - len, ", %s", k->params[j].name);
            if (len < errcap)
                snprintf(err + len, errcap - len, ")");
            return RTB_EINVAL;
        }
        lo = k->params[i].min, hi = k->params[i].max;
        if (v >= lo && v <= hi) {
            spec->v[i] = v;
            return RTB_OK;
        }
    }
    if (v < lo || v > hi) {
        snprintf(err, errcap, "load %s: %s=%" PRId64 " is out of range %" PRId64 "..%" PRId64,
                 k->name, name, v, lo, hi);
        return RTB_EINVAL;
    }
    if (strcmp(name, "threads") == 0)
        spec->threads = (int)v;
    else
        spec->priority = (int)v;
    return RTB_OK;
}

static void init_spec(rtb_load_spec *s, const load_kind *k)
{
    memset(s, 0, sizeof *s);
    s->kind = k;
    s->threads = -1;
    for (int i = 0; i < k->nparams; i++)
        s->v[i] = k->params[i].def;
}

static int add(rtb_load_spec *specs, int cap, int *n, const load_kind *k, char *err,
               size_t errcap)
{
    for (int i = 0; i < *n; i++)
        if (specs[i].kind == k) {
            snprintf(err, errcap, "load %s is listed twice (mixed already has cpu, memory, "
                     "kernel, io and irq)", k->name);
            return RTB_EINVAL;
        }
    if (*n == cap) {
        snprintf(err, errcap, "at most %d load kinds", cap);
        return RTB_EINVAL;
    }
    init_spec(&specs[(*n)++], k);
    return RTB_OK;
}

int rtb_load_parse(const char *text, rtb_load_spec *specs, int cap, int *n, char *err,
                   size_t errcap)
{
    *n = 0;
    char kinds[256];
    kind_list(kinds, sizeof kinds);
    if (strcmp(text, "none") == 0 || *text == '\0')
        return RTB_OK;
    const char *p = text;
    while (*p) {
        size_t item = strcspn(p, ",");
        size_t klen = strcspn(p, ":,");
        const load_kind *k = find_kind(p, klen);
        bool mixed = klen == 5 && strncmp(p, "mixed", 5) == 0;
        if ((klen == 4 && strncmp(p, "none", 4) == 0)) {
            snprintf(err, errcap, "load none cannot be combined with other kinds");
            return RTB_EINVAL;
        }
        if (!k && !mixed) {
            snprintf(err, errcap, "unknown load kind '%.*s' (kinds: %s)", (int)klen,
                     p, kinds);
            return RTB_EINVAL;
        }
        int first = *n;
        if (mixed) {
            for (size_t i = 0; i < sizeof mixed_kinds / sizeof *mixed_kinds; i++)
                if (add(specs, cap, n, find_kind(mixed_kinds[i], strlen(mixed_kinds[i])), err,
                        errcap) != RTB_OK)
                    return RTB_EINVAL;
        } else if (add(specs, cap, n, k, err, errcap) != RTB_OK) {
            return RTB_EINVAL;
        }
        if (k == &load_kind_stress && p[klen] == ':') {
            /* The rest is stress-ng's, commas and colons included. */
            const char *args = p + klen + 1;
            if (strlen(args) >= RTB_LOAD_ARGS) {
                snprintf(err, errcap, "stress-ng options longer than %d characters",
                         RTB_LOAD_ARGS - 1);
                return RTB_EINVAL;
            }
            snprintf(specs[first].args, RTB_LOAD_ARGS, "%s", args);
            break;
        }
        /* name=value pairs up to the comma; mixed passes on the common ones. */
        const char *q = p + klen;
        while (q < p + item && *q == ':') {
            q++;
            size_t len = strcspn(q, ":,");
            char kv[64];
            snprintf(kv, sizeof kv, "%.*s", (int)len, q);
            for (int i = first; i < *n; i++) {
                if (mixed && strncmp(kv, "threads=", 8) != 0 && strncmp(kv, "prio=", 5) != 0) {
                    snprintf(err, errcap, "load mixed takes only threads= and prio= (for the "
                             "others, list the kinds: cpu:busy_us=200,memory,...)");
                    return RTB_EINVAL;
                }
                if (set_param(&specs[i], kv, err, errcap) != RTB_OK)
                    return RTB_EINVAL;
            }
            q += len;
        }
        p += item;
        if (*p == ',' && *++p == '\0') {
            snprintf(err, errcap, "load spec '%s' ends with a comma", text);
            return RTB_EINVAL;
        }
    }
    for (int i = 0; i < *n; i++)
        if (specs[i].kind->validate &&
            specs[i].kind->validate(&specs[i], err, errcap) != RTB_OK)
            return RTB_EINVAL;
    return RTB_OK;
}

const char *rtb_load_kind_name(const rtb_load_spec *spec) { return spec->kind->name; }

void rtb_load_help(FILE *f)
{
    fprintf(f, "load kinds (--load KIND[:name=value...][,KIND...]; every kind takes\n"
               "threads=N and prio=P, 0 = normal scheduling, the default):\n");
    fprintf(f, "  %-8s %s\n", "none", "nothing (the default)");
    for (int i = 0; i < load_nkinds; i++) {
        const load_kind *k = load_kinds[i];
        fprintf(f, "  %-8s %s\n", k->name, k->what);
        for (int j = 0; j < k->nparams; j++)
            fprintf(f, "  %8s   %s=%" PRId64 ": %s\n", "", k->params[j].name, k->params[j].def,
                    k->params[j].help);
    }
    fprintf(f, "  %-8s %s\n", "mixed", "cpu, memory, kernel, io and irq together");
}
