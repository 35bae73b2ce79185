/* SPDX-License-Identifier: Apache-2.0 */
/* Fault injection for known-answer tests; compiled into test builds only.
 * A process-wide table is acceptable here: it is test instrumentation set
 * once from the command line before any case runs, not an option. */
#include <stdlib.h>
#include <string.h>

#include "rtb.h"

#ifdef RTB_TEST_HOOKS

static int64_t injected[RTB_INJ_COUNT];
static const char *const sites[RTB_INJ_COUNT] = {
    [RTB_INJ_YIELD_DELAY] = "yield_delay",
    [RTB_INJ_GIVE_DELAY] = "give_delay",
    [RTB_INJ_SEM_NOBLOCK] = "sem_noblock",
    [RTB_INJ_REF_DELAY] = "ref_delay",
};

int rtb_inject_set(const char *assignment)
{
    const char *eq = strchr(assignment, '=');
    if (!eq)
        return RTB_EINVAL;
    for (int i = 0; i < RTB_INJ_COUNT; i++) {
        if (strlen(sites[i]) == (size_t)(eq - assignment) &&
            strncmp(sites[i], assignment, (size_t)(eq - assignment)) == 0) {
            injected[i] = strtoll(eq + 1, NULL, 10);
            return RTB_OK;
        }
    }
    return RTB_EINVAL;
}

int64_t rtb_inject_value(rtb_inject_site site) { return injected[site]; }

void rtb_inject_delay(rtb_inject_site site)
{
    int64_t d = injected[site];
    if (d <= 0)
        return;
    /* Busy-wait on the measurement clock: a sleep would hand the CPU to
     * another thread and change what is measured. */
    rtb_time until = rtb_ts_now() + d;
    while (rtb_ts_now() < until)
        ;
}

#endif
