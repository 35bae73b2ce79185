/* SPDX-License-Identifier: Apache-2.0 */
/* C-states held off like cyclictest does: on real hardware the exit from a
 * deep C-state adds tens to hundreds of us to a wake-up, a cost of the
 * machine's power settings, not of the OS's scheduling. The kernel's PM QoS
 * interface keeps the request while the file stays open and drops it when
 * the process ends, however it ends: nothing to restore, even after
 * SIGKILL. RTB_CPU_DMA_LATENCY names another file (tests). */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "power.h"

static rtb_port_info *info_of_run;
static char detail[192];

void posix_power_attach(rtb_port_info *info) { info_of_run = info; }

void posix_cstates(bool hold)
{
    if (!info_of_run)
        return;
    const char *path = getenv("RTB_CPU_DMA_LATENCY");
    if (!path || !*path)
        path = "/dev/cpu_dma_latency";
    info_of_run->power = detail;
    info_of_run->power_held = false;
    if (!hold) {
        snprintf(detail, sizeof detail, "left alone (--cstates leave)");
        return;
    }
    /* Never closed: the request lasts exactly as long as the process. */
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(detail, sizeof detail, "not held: %s: %s", path, strerror(errno));
        return;
    }
    int32_t zero = 0;
    if (write(fd, &zero, sizeof zero) != (ssize_t)sizeof zero) {
        snprintf(detail, sizeof detail, "not held: writing %s: %s", path, strerror(errno));
        close(fd);
        return;
    }
    info_of_run->power_held = true;
    snprintf(detail, sizeof detail, "held: %s = 0 us while the agent runs", path);
}
