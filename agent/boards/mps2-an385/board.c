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

/* The dual timer's first counter (RSP-IO's generator): LOAD, CONTROL, INTCLR, RIS. */
#define DUALTIMER 0x40002000u
#define DT_LOAD REG(DUALTIMER + 0x00)
#define DT_CTRL REG(DUALTIMER + 0x08)
#define DT_INTCLR REG(DUALTIMER + 0x0C)
#define DT_RIS REG(DUALTIMER + 0x10)
#define DT_ONESHOT 1u
#define DT_SIZE32 2u
#define DT_INTEN 0x20u
#define DT_PERIODIC 0x40u
#define DT_ENABLE 0x80u
#define DT_RUN (DT_ENABLE | DT_PERIODIC | DT_SIZE32 | DT_ONESHOT)
/* The FPGA IO block: LED0 (bits 0-1), read back as written. */
#define FPGAIO_LED0 REG(0x40028000u)

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
    DT_CTRL = 0; /* its reset state enables the interrupt */
    DT_INTCLR = 1;
    NVIC_IPR(BOARD_EVENT_IRQ_TIMER) = EVENT_IRQ_PRIO;
    NVIC_IPR(BOARD_EVENT_IRQ_SOFT) = EVENT_IRQ_PRIO;
    NVIC_IPR(BOARD_GEN_IRQ) = EVENT_IRQ_PRIO;
    const uint32_t irqs =
        (1u << BOARD_EVENT_IRQ_TIMER) | (1u << BOARD_EVENT_IRQ_SOFT) | (1u << BOARD_GEN_IRQ);
    NVIC_ICPR = irqs;
    NVIC_ISER = irqs;
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

/* ---- RSP-IO's generator and output ------------------------------------ */

uint64_t board_gen_arm(uint32_t ticks, int irq)
{
    DT_CTRL = 0;
    DT_INTCLR = 1;
    NVIC_ICPR = 1u << BOARD_GEN_IRQ;
    DT_LOAD = ticks ? ticks : 1; /* stopped: sets the count, starts nothing */
    uint32_t ctrl = DT_RUN | (irq ? DT_INTEN : 0u);
    /* The count starts at the CONTROL write: the stamp is just before it. */
    uint64_t t0 = board_ts_ticks();
    DT_CTRL = ctrl;
    return t0;
}

void board_gen_stop(void)
{
    DT_CTRL = 0;
    DT_INTCLR = 1;
    NVIC_ICPR = 1u << BOARD_GEN_IRQ;
}

int board_gen_fired(void) { return (int)(DT_RIS & 1u); }

void board_gen_irq_on(void)
{
    /* Ended already: the interrupt alone (ENABLE again would restart an
     * ended one-shot); still counting: ENABLE kept, the count goes on. */
    DT_CTRL = DT_RIS & 1u ? DT_INTEN : DT_RUN | DT_INTEN;
}

void board_out_write(int level) { FPGAIO_LED0 = (uint32_t)level & 1u; }

void DUALTIMER_Handler(void);
void DUALTIMER_Handler(void)
{
    DT_CTRL = 0; /* stopped, interrupt masked; the raw status stays (the input's level) */
    board_gen_isr();
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
    if (cap == 0)
        return 0;
    /* The host refuses a line longer than the buffer (QEMU: status -1). */
    if (semihost(SYS_GET_CMDLINE, &block) != 0)
        return SIZE_MAX;
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

extern uint32_t __data_start__, __bss_end__, __StackTop, __HeapLimit;

void board_ram(uintptr_t *data_start, uintptr_t *bss_end, uintptr_t *stack_top,
               uintptr_t *heap_end)
{
    *data_start = (uintptr_t)&__data_start__;
    *bss_end = (uintptr_t)&__bss_end__;
    *stack_top = (uintptr_t)&__StackTop;
    *heap_end = (uintptr_t)&__HeapLimit;
}
