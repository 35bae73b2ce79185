/* SPDX-License-Identifier: Apache-2.0 */
/* Case parameters: declared per case with defaults and limits, resolved
 * before the case starts, never read from globals. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rtb.h"

static int find(const rtb_case *c, const char *name, size_t len)
{
    for (int i = 0; i < c->nparams; i++)
        if (strlen(c->params[i].name) == len && strncmp(c->params[i].name, name, len) == 0)
            return i;
    return -1;
}

int rtb_params_defaults(const rtb_case *c, rtb_param_values *pv)
{
    memset(pv, 0, sizeof *pv);
    for (int i = 0; i < c->nparams; i++) {
        pv->n[i] = c->params[i].ndef;
        memcpy(pv->v[i], c->params[i].def, sizeof pv->v[i]);
    }
    return RTB_OK;
}

static void names(const rtb_case *c, char *out, size_t cap)
{
    size_t len = 0;
    out[0] = '\0';
    for (int i = 0; i < c->nparams && len < cap; i++)
        len += (size_t)snprintf(out + len, cap - len, "%s%s", i ? ", " : "", c->params[i].name);
    if (c->nparams == 0)
        snprintf(out, cap, "(none)");
}

int rtb_params_set(const rtb_case *c, rtb_param_values *pv, const char *assignment, char *err,
                   size_t errcap)
{
    const char *eq = strchr(assignment, '=');
    if (!eq) {
        snprintf(err, errcap, "%s: '%s' is not name=value", c->id, assignment);
        return RTB_EINVAL;
    }
    int i = find(c, assignment, (size_t)(eq - assignment));
    if (i < 0) {
        char list[512];
        names(c, list, sizeof list);
        snprintf(err, errcap, "%s has no parameter '%.*s'; it has: %s", c->id,
                 (int)(eq - assignment), assignment, list);
        return RTB_EINVAL;
    }
    const rtb_param_def *d = &c->params[i];
    int n = 0;
    const char *p = eq + 1;
    for (;;) {
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (end == p || errno || (*end && *end != ',')) {
            snprintf(err, errcap, "%s.%s: '%s' is not an integer list", c->id, d->name, eq + 1);
            return RTB_EINVAL;
        }
        if (v < d->min || v > d->max) {
            snprintf(err, errcap, "%s.%s=%lld is out of range [%lld, %lld]", c->id, d->name, v,
                     (long long)d->min, (long long)d->max);
            return RTB_EINVAL;
        }
        if (n == RTB_PARAM_MAX_VALUES || (n == 1 && !d->list)) {
            snprintf(err, errcap, "%s.%s takes %s", c->id, d->name,
                     d->list ? "at most 16 values" : "one value");
            return RTB_EINVAL;
        }
        pv->v[i][n++] = v;
        if (!*end)
            break;
        p = end + 1;
    }
    pv->n[i] = n;
    return RTB_OK;
}

static int index_of(const rtb_ctx *ctx, const char *name)
{
    int i = find(ctx->cur, name, strlen(name));
    if (i < 0) { /* a bug in the case, not a user error */
        fprintf(stderr, "rtbench-agent: case %s reads undeclared parameter %s\n", ctx->cur->id,
                name);
        abort();
    }
    return i;
}

int64_t rtb_param(const rtb_ctx *ctx, const char *name)
{
    return ctx->pv->v[index_of(ctx, name)][0];
}

int rtb_param_list(const rtb_ctx *ctx, const char *name, const int64_t **values)
{
    int i = index_of(ctx, name);
    *values = ctx->pv->v[i];
    return ctx->pv->n[i];
}

void rtb_params_write(rtb_json *j, const rtb_case *c, const rtb_param_values *pv)
{
    for (int i = 0; i < c->nparams; i++) {
        if (c->params[i].list) {
            rtb_json_arr(j, c->params[i].name);
            for (int k = 0; k < pv->n[i]; k++)
                rtb_json_i64(j, NULL, pv->v[i][k]);
            rtb_json_arr_end(j);
        } else {
            rtb_json_i64(j, c->params[i].name, pv->v[i][0]);
        }
    }
}
