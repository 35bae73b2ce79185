/* SPDX-License-Identifier: Apache-2.0 */
/* The case table: one explicit const table (RTOS linkers and constructor
 * tricks do not mix). Add a case here and in CMakeLists.txt. */
#include <string.h>

#include "rtb.h"

extern const rtb_case rtb_case_cal_timer;
extern const rtb_case rtb_case_cal_ref;
extern const rtb_case rtb_case_thr_sw;
extern const rtb_case rtb_case_sem_shf;
/* @THR-decls */
/* @SEM-decls */
/* @MUTMQ-decls */

const rtb_case *const rtb_cases[] = {
    &rtb_case_cal_timer,
    &rtb_case_cal_ref,
    &rtb_case_thr_sw,
    &rtb_case_sem_shf,
    /* @THR-table */
    /* @SEM-table */
    /* @MUTMQ-table */
};
const int rtb_ncases = (int)(sizeof rtb_cases / sizeof rtb_cases[0]);

const rtb_case *rtb_case_find(const char *id)
{
    for (int i = 0; i < rtb_ncases; i++)
        if (strcmp(rtb_cases[i]->id, id) == 0)
            return rtb_cases[i];
    return NULL;
}
