/* SPDX-License-Identifier: Apache-2.0 */
/* Reset and the vector table of mps2-an385 (Cortex-M3, 32 external IRQs):
 * copy .data, clear .bss, run main(). */
#include <stdint.h>
#include <string.h>

#include "board.h"

extern uint32_t __etext, __data_start__, __data_end__, __bss_start__, __bss_end__, __StackTop;
extern int main(void);
extern void __libc_init_array(void);
/* The kernel's handlers, under CMSIS's names: a port renames its kernel's
 * own (FreeRTOSConfig.h's #define xPortPendSVHandler PendSV_Handler; uC/OS:
 * -DOS_CPU_PendSVHandler=PendSV_Handler on its port files). SVCall is
 * used by some kernels only (FreeRTOS's first task). */
extern void PendSV_Handler(void);
extern void SysTick_Handler(void);
void TIMER0_Handler(void);
void SOFT_Handler(void);
void DUALTIMER_Handler(void);

/* What fills the main stack below the reset's own frame: the words still
 * holding it at the end are the ones never used (board_main_stack_used). */
#define STACK_PAINT 0xA5A5A5A5u

void Reset_Handler(void);
void Reset_Handler(void)
{
    /* Painted before anything runs on it but this frame: a plain loop, no
     * call whose frame would lie in what it paints, and no interrupt source
     * enabled yet; it stops 8 bytes under the stack pointer. */
    uint32_t *sp;
    __asm__ volatile("mov %0, sp" : "=r"(sp));
    for (volatile uint32_t *w = &__bss_end__; w < sp - 2; w++)
        *w = STACK_PAINT;
    memcpy(&__data_start__, &__etext,
           (size_t)((char *)&__data_end__ - (char *)&__data_start__));
    memset(&__bss_start__, 0, (size_t)((char *)&__bss_end__ - (char *)&__bss_start__));
    __libc_init_array();
    board_exit(main());
}

size_t board_main_stack_used(void)
{
    const uint32_t *w = &__bss_end__;
    while (w < &__StackTop && *w == STACK_PAINT)
        w++;
    return (size_t)((const char *)&__StackTop - (const char *)w);
}

static void fault_text(const char *what)
{
    for (const char *p = what; *p; p++)
        board_putc(*p);
}

/* A fault is a bug of the port or of a case: say so on the console (the
 * host shows the console's noise) and end with a status of its own. */
static void fault(void)
{
    uint32_t ipsr;
    __asm__ volatile("mrs %0, ipsr" : "=r"(ipsr));
    fault_text("\nrtbench-firmware: fault, exception ");
    board_putc((char)('0' + ipsr / 10 % 10));
    board_putc((char)('0' + ipsr % 10));
    fault_text("\n");
    board_exit(4);
}

static void unexpected(void) { fault(); }
void SVC_Handler(void) __attribute__((weak, alias("fault")));

typedef void (*vector)(void);

__attribute__((section(".vectors"), used)) static const vector vectors[16 + 32] = {
    (vector)(uintptr_t)&__StackTop,
    Reset_Handler,
    fault, /* NMI */
    fault, /* HardFault */
    fault, /* MemManage */
    fault, /* BusFault */
    fault, /* UsageFault */
    0, 0, 0, 0,
    SVC_Handler,
    unexpected, /* DebugMon */
    0,
    PendSV_Handler,
    SysTick_Handler,
    /* External interrupts 0..31 */
    [16 + 0 ... 16 + BOARD_EVENT_IRQ_TIMER - 1] = unexpected,
    [16 + BOARD_EVENT_IRQ_TIMER] = TIMER0_Handler,
    [16 + BOARD_EVENT_IRQ_TIMER + 1 ... 16 + BOARD_GEN_IRQ - 1] = unexpected,
    [16 + BOARD_GEN_IRQ] = DUALTIMER_Handler,
    [16 + BOARD_GEN_IRQ + 1 ... 16 + BOARD_EVENT_IRQ_SOFT - 1] = unexpected,
    [16 + BOARD_EVENT_IRQ_SOFT] = SOFT_Handler,
};
