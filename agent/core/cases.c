/* SPDX-License-Identifier: Apache-2.0 */
/* The case table: one explicit const table (RTOS linkers and constructor
 * tricks do not mix), generated from RTB_CASES in CMakeLists.txt. */
#include <string.h>

#include "rtb.h"
#include "rtb_case_table.h"

const rtb_case *const rtb_cases[] = {RTB_CASE_LIST};
const int rtb_ncases = (int)(sizeof rtb_cases / sizeof rtb_cases[0]);

const rtb_case *rtb_case_find(const char *id)
{
    for (int i = 0; i < rtb_ncases; i++)
        if (strcmp(rtb_cases[i]->id, id) == 0)
            return rtb_cases[i];
    return NULL;
}
