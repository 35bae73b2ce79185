/* SPDX-License-Identifier: Apache-2.0 */
/* C-states during a run (power.c). */
#ifndef RTB_POSIX_POWER_H
#define RTB_POSIX_POWER_H

#include <stdbool.h>

#include "rtb.h"

/* rtb_port_init hands over the info the hello is written from. */
void posix_power_attach(rtb_port_info *info);
/* hold: ask the kernel for a 0 us wake-up latency (no deep C-state) until
 * the process ends; otherwise only record that they were left alone. */
void posix_cstates(bool hold);

#endif
