/* SPDX-License-Identifier: Apache-2.0 */
/* Stack use of the firmware's tasks (the kernel's high-water marks): noted
 * when a thread is joined, written on the console after the agent's last
 * record, as plain lines that the stream's parser skips and bench/ reads. */
#include <stdio.h>
#include <string.h>

#include "firmware.h"

#define NOTES 96

static struct {
    char name[16];
    size_t size, used;
} notes[NOTES];
static int nnotes;

void firmware_stack_note(const char *name, size_t size, size_t unused)
{
    size_t used = size - unused;
    rtb_os_lock();
    int i = 0;
    while (i < nnotes && strcmp(notes[i].name, name) != 0)
        i++;
    if (i == nnotes && nnotes < NOTES) {
        snprintf(notes[i].name, sizeof notes[i].name, "%s", name);
        nnotes++;
    }
    if (i < NOTES) {
        if (used > notes[i].used)
            notes[i].used = used;
        if (size > notes[i].size)
            notes[i].size = size;
    }
    rtb_os_unlock();
}

void firmware_stack_report(void)
{
    for (int i = 0; i < nnotes; i++)
        printf("rtbench-firmware: stack %s size=%u used=%u\n", notes[i].name,
               (unsigned)notes[i].size, (unsigned)notes[i].used);
    uintptr_t data, bss_end, heap_end;
    board_ram(&data, &bss_end, &heap_end);
    printf("rtbench-firmware: ram data+bss=%u thread_slots=%u thread_stacks=%u heap_used=%u\n",
           (unsigned)(bss_end - data), (unsigned)rtb_os_thread_slots_used(),
           (unsigned)rtb_os_stacks_reserved(), (unsigned)firmware_heap_used());
    nnotes = 0;
}
