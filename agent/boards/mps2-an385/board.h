/* SPDX-License-Identifier: Apache-2.0 */
/* What an RTOS port needs of a board: a console, a free-running
 * timestamp counter, one timer interrupt and one software-pended interrupt
 * for events, the run's arguments, and a way to end. Every RTOS port uses
 * the board through these functions only; another board implements the
 * same ones (board.c), its start-up and vector table (startup.c, naming
 * the kernel's handlers PendSV_Handler, SysTick_Handler, SVC_Handler), its
 * linker script and board.cmake. */
#ifndef RTB_BOARD_H
#define RTB_BOARD_H

#include <stddef.h>
#include <stdint.h>

#define BOARD_NAME "mps2-an385"
#define BOARD_CPU "ARM Cortex-M3"
#define BOARD_CPU_HZ 25000000u
/* The timestamp counter (CMSDK APB TIMER1, clocked by the 25 MHz PCLK). */
#define BOARD_TS_HZ 25000000u
#define BOARD_TS_NS 40 /* 1e9 / BOARD_TS_HZ, exact */
#define BOARD_TS_SOURCE "CMSDK APB TIMER1 (25 MHz)"
#define BOARD_EVENT_IRQ_TIMER 8 /* TIMER0 */
#define BOARD_EVENT_IRQ_SOFT 31 /* pended through the NVIC's STIR */
#define BOARD_GEN_IRQ 10 /* the dual timer: RSP-IO's input line (boards/common/line.c) */
/* Both event interrupts run at this NVIC priority (3 priority bits). */
#define BOARD_EVENT_IRQ_PRIO 0xC0u

void board_init(void);
void board_putc(char c);
void board_write(const char *buf, size_t len);
/* The timestamp counter extended to 64 bits (counts up). Any context. */
uint64_t board_ts_ticks(void);
/* TIMER0: interrupt after `ticks` counter ticks, then every `period`
 * ticks when period > 0. */
void board_timer_start(uint32_t ticks, uint32_t period);
void board_timer_stop(void);
void board_soft_irq_pend(void);
/* Hooks the board calls from its interrupt handlers (the port's). */
void board_timer_isr(void);
void board_soft_isr(void);
/* RSP-IO's emulated line pair (boards/common/line.c serves every kernel):
 * the input edge is made by a hardware timer (here the CMSDK dual timer's
 * first counter, 25 MHz like the timestamp counter) firing `ticks` counter
 * ticks after board_gen_arm; its raw interrupt status is the input's edge
 * (board_gen_fired), its interrupt (BOARD_GEN_IRQ) the handler's. The
 * output is a board register (the FPGA IO block's LED register). */
#define BOARD_LINE_WHAT                                                                    \
    "emulated edges: the CMSDK dual timer (25 MHz) fires at pseudo-random times known on " \
    "the timestamp counter; its raw interrupt status is the input the polling loop reads, " \
    "its interrupt (IRQ 10) the handler's; the output is a write to the FPGA IO LED "     \
    "register, stamped on the same counter"
/* Starts the one-shot count (the interrupt enabled when `irq`); returns
 * the timestamp-counter reading taken just before the count started. */
uint64_t board_gen_arm(uint32_t ticks, int irq);
/* Stops the count and clears the raw status (the input's edge). */
void board_gen_stop(void);
/* The raw interrupt status: 1 once the count ended, until board_gen_stop. */
int board_gen_fired(void);
/* The interrupt on for the edge now armed (a handler came to wait). */
void board_gen_irq_on(void);
/* The output register (bit 0 the level). */
void board_out_write(int level);
/* Hook the board calls from the generator's interrupt (boards/common/line.c);
 * the handler has stopped the count and masked its interrupt, the raw
 * status stays set. */
void board_gen_isr(void);
/* The run's arguments as one line (semihosting SYS_GET_CMDLINE); 0 when
 * the host gave none, SIZE_MAX when it did not give them (a line longer
 * than `cap`). */
size_t board_cmdline(char *buf, size_t cap);
/* Ends the program with `status` (semihosting exit: QEMU's exit code). */
_Noreturn void board_exit(int status);
/* RAM the linker placed: [start, end) of data+bss, the end of the main
 * stack after it (the interrupts' stack), and the heap's end. */
void board_ram(uintptr_t *data_start, uintptr_t *bss_end, uintptr_t *stack_top,
               uintptr_t *heap_end);
/* The most of the main stack (the interrupts' stack where the kernel runs
 * them there, FreeRTOS's; else main() before the kernel starts) ever used:
 * the reset paints it, this counts the words written over since. */
size_t board_main_stack_used(void);

#endif
