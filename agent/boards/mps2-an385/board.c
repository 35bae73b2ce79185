/* SPDX-License-Identifier: Apache-2.0 */
/* mps2-an385 (ARM's MPS2 FPGA image for Cortex-M3, as QEMU emulates it):
 * CMSDK UART0 for the console, CMSDK APB timers, semihosting. */
#include "board.h"

#include <stdbool.h>

#define REG(addr) (*(volatile uint32_t *)(addr))

#define UART0 0x40004000u
#define UART_DATA REG(UART0 + 0x0)
#define UART_STATE REG(UART0 + 0x4)
#define UART_CTRL REG(UART0 + 0x8)
#define UART_BAUDDIV REG(UART0 + 0x10)
#define UART_STATE_TXFULL 1u
#define UART_CTRL_TXEN 1u

#define TIMER0 0x40000000u
#define TIMER1 0x40001000u
#define T_CTRL(t) REG((t) + 0x0)
#define T_VALUE(t) REG((t) + 0x4)
#define T_RELOAD(t) REG((t) + 0x8)
#define T_INTCLEAR(t) REG((t) + 0xC)
#define T_EN 1u
#define T_IRQEN 8u

#define NVIC_ISER REG(0xE000E100u)
#define NVIC_ICER REG(0xE000E180u)
#define NVIC_ICPR REG(0xE000E280u)
#define NVIC_IPR(n) (*(volatile uint8_t *)(0xE000E400u + (n)))
#define NVIC_STIR REG(0xE000EF00u)

/* Less urgent than a kernel's own interrupt-masking level (FreeRTOS:
 * configMAX_SYSCALL_INTERRUPT_PRIORITY 0xA0; uC/OS masks with BASEPRI at
 * CPU_CFG_KA_IPL_BOUNDARY), so the handlers may call the kernel. */
#define EVENT_IRQ_PRIO BOARD_EVENT_IRQ_PRIO

void board_init(void)
{
    UART_BAUDDIV = 16; /* the smallest divisor; QEMU sends at any rate */
    UART_CTRL = UART_CTRL_TXEN;
    /* TIMER1 counts down from 2^32-1 forever: board_ts_ticks inverts it. */
    T_CTRL(TIMER1) = 0;
    T_RELOAD(TIMER1) = 0xFFFFFFFFu;
    T_VALUE(TIMER1) = 0xFFFFFFFFu;
    T_CTRL(TIMER1) = T_EN;
    T_CTRL(TIMER0) = 0;
    T_INTCLEAR(TIMER0) = 1;
    NVIC_IPR(BOARD_EVENT_IRQ_TIMER) = EVENT_IRQ_PRIO;
    NVIC_IPR(BOARD_EVENT_IRQ_SOFT) = EVENT_IRQ_PRIO;
    NVIC_ICPR = (1u << BOARD_EVENT_IRQ_TIMER) | (1u << BOARD_EVENT_IRQ_SOFT);
    NVIC_ISER = (1u << BOARD_EVENT_IRQ_TIMER) | (1u << BOARD_EVENT_IRQ_SOFT);
}

void board_putc(char c)
{
    while (UART_STATE & UART_STATE_TXFULL)
        ;
    UART_DATA = (uint8_t)c;
}

void board_write(const char *buf, size_t len)
{
    for (size_t i = 0; i < len; i++)
        board_putc(buf[i]);
}

static uint32_t ts_last;
static uint32_t ts_high;

uint64_t board_ts_ticks(void)
{
    /* A 32-bit counter wraps every 172 s: extended in software, under a
     * short critical section so that any context (a handler too) may read
     * it; the tick hook reads it often enough to see every wrap. */
    uint32_t primask;
    __asm__ volatile("mrs %0, primask\n cpsid i" : "=r"(primask)::"memory");
    uint32_t now = ~T_VALUE(TIMER1);
    if (now < ts_last)
        ts_high++;
    ts_last = now;
    uint64_t v = ((uint64_t)ts_high << 32) | now;
    __asm__ volatile("msr primask, %0" ::"r"(primask) : "memory");
    return v;
}

void board_timer_start(uint32_t ticks, uint32_t period)
{
    T_CTRL(TIMER0) = 0;
    T_INTCLEAR(TIMER0) = 1;
    NVIC_ICPR = 1u << BOARD_EVENT_IRQ_TIMER;
    /* The counter runs from VALUE down to 0 and interrupts, then from
     * RELOAD down to 0 again: RELOAD + 1 ticks a period. RELOAD first: a
     * write to it also sets the count (QEMU does so). */
    T_RELOAD(TIMER0) = period ? period - 1 : 0xFFFFFFFFu;
    T_VALUE(TIMER0) = ticks ? ticks : 1;
    T_CTRL(TIMER0) = T_EN | T_IRQEN;
}

void board_timer_stop(void)
{
    T_CTRL(TIMER0) = 0;
    T_INTCLEAR(TIMER0) = 1;
    NVIC_ICPR = 1u << BOARD_EVENT_IRQ_TIMER;
}

void board_soft_irq_pend(void)
{
    NVIC_STIR = BOARD_EVENT_IRQ_SOFT;
    __asm__ volatile("dsb\n isb" ::: "memory");
}

void TIMER0_Handler(void);
void TIMER0_Handler(void)
{
    T_INTCLEAR(TIMER0) = 1;
    board_timer_isr();
}

void SOFT_Handler(void);
void SOFT_Handler(void) { board_soft_isr(); }

/* ---- semihosting (ARM's "angel" calls, bkpt 0xAB on M profile) -------- */

static int semihost(int op, void *arg)
{
    register int r0 __asm__("r0") = op;
    register void *r1 __asm__("r1") = arg;
    __asm__ volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
}

#define SYS_GET_CMDLINE 0x15
#define SYS_EXIT 0x18
#define SYS_EXIT_EXTENDED 0x20
#define ADP_STOPPED_APPLICATION_EXIT 0x20026

size_t board_cmdline(char *buf, size_t cap)
{
    struct {
        char *buf;
        int len;
    } block = {buf, (int)cap};
    if (cap == 0 || semihost(SYS_GET_CMDLINE, &block) != 0)
        return 0;
    buf[cap - 1] = '\0';
    return (size_t)block.len < cap ? (size_t)block.len : cap - 1;
}

_Noreturn void board_exit(int status)
{
    uint32_t block[2] = {ADP_STOPPED_APPLICATION_EXIT, (uint32_t)status};
    semihost(SYS_EXIT_EXTENDED, block);
    /* A host without the extended call: plain exit (status lost). */
    semihost(SYS_EXIT, (void *)(uintptr_t)ADP_STOPPED_APPLICATION_EXIT);
    for (;;)
        __asm__ volatile("wfi");
}

extern uint32_t __data_start__, __bss_end__, __HeapLimit;

void board_ram(uintptr_t *data_start, uintptr_t *bss_end, uintptr_t *heap_end)
{
    *data_start = (uintptr_t)&__data_start__;
    *bss_end = (uintptr_t)&__bss_end__;
    *heap_end = (uintptr_t)&__HeapLimit;
}
