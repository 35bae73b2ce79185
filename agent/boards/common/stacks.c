/* SPDX-License-Identifier: Apache-2.0 */
/* Stack use of the firmware's tasks (the kernel's high-water marks): noted
 * when a thread is joined, written on the console after the agent's last
 * record, as plain lines that the stream's parser skips and bench/ reads. */
#include <stdio.h>
#include <string.h>

#include "firmware.h"

/* Thread names a run notes (48 in the whole suite; THR-SW's 1000 threads
 * are one); a name past the table keeps its overflow check, and the report
 * says how many were not noted. 48, not 64: 384 bytes of a board's RAM. */
#define NOTES 48

static struct {
    char name[16];
    size_t size, used;
} notes[NOTES];
static int nnotes, unnoted;

/* A stack whose high-water mark is this close to its end has overflowed
 * or is about to (FreeRTOS's check watches the same last 16 bytes at each
 * switch; uC/OS has none on Cortex-M3 without its redzone, which would
 * lengthen every switch): the run ends loudly, never on a stack that may
 * have written over its neighbour. */
#define STACK_GUARD 16

void firmware_stack_note(const char *name, size_t size, size_t unused)
{
    if (unused < STACK_GUARD) {
        printf("\nrtbench-firmware: stack overflow in task %s: %u of its %u bytes used\n", name,
               (unsigned)(size - unused), (unsigned)size);
        fflush(stdout);
        board_exit(4);
    }
    size_t used = size - unused;
    rtb_os_lock();
    int i = 0;
    while (i < nnotes && strcmp(notes[i].name, name) != 0)
        i++;
    if (i == nnotes && nnotes < NOTES) {
        snprintf(notes[i].name, sizeof notes[i].name, "%s", name);
        nnotes++;
    }
    if (i == NOTES)
        unnoted++;
    else {
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
    if (unnoted)
        printf("rtbench-firmware: stack notes: %d threads not noted (table of %d names full)\n",
               unnoted, NOTES);
    uintptr_t data, bss_end, stack_top, heap_end;
    board_ram(&data, &bss_end, &stack_top, &heap_end);
    /* The main stack (the interrupts' on FreeRTOS) has no kernel check: its
     * high-water mark, from the reset's paint, ends the run as a thread's
     * does when it comes within the guard of the end. */
    size_t irq_used = board_main_stack_used();
    if (irq_used + STACK_GUARD > stack_top - bss_end) {
        printf("\nrtbench-firmware: stack overflow in the main stack: %u of its %u bytes used\n",
               (unsigned)irq_used, (unsigned)(stack_top - bss_end));
        fflush(stdout);
        board_exit(4);
    }
    /* What a board must hold for this run: every byte set aside by the
     * linker in RAM (data, bss, the interrupts' main stack) and what the
     * pools and the heap handed out (bench/bench_rtos.py adds them up). */
    printf("rtbench-firmware: ram data+bss=%u irq_stack=%u thread_slots=%u thread_stacks=%u "
           "queue_storage=%u heap_used=%u irq_stack_used=%u\n",
           (unsigned)(bss_end - data), (unsigned)(stack_top - bss_end),
           (unsigned)rtb_os_thread_slots_used(), (unsigned)rtb_os_stacks_reserved(),
           (unsigned)rtb_os_queues_reserved(), (unsigned)firmware_heap_used(),
           (unsigned)irq_used);
    nnotes = unnoted = 0;
}
