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
extern const rtb_case rtb_case_thr_pre;
extern const rtb_case rtb_case_thr_ctx;
extern const rtb_case rtb_case_thr_new;
extern const rtb_case rtb_case_thr_b_new;
extern const rtb_case rtb_case_thr_b_rr;
extern const rtb_case rtb_case_thr_lock;
/* @SEM-decls */
extern const rtb_case rtb_case_sem_b_lck;
extern const rtb_case rtb_case_sem_b_rel;
extern const rtb_case rtb_case_sem_new;
extern const rtb_case rtb_case_sem_arn;
extern const rtb_case rtb_case_sem_arc;
extern const rtb_case rtb_case_sem_take;
/* @MUTMQ-decls */
extern const rtb_case rtb_case_mut_b_pi;
extern const rtb_case rtb_case_mut_arn;
extern const rtb_case rtb_case_mut_arc;
extern const rtb_case rtb_case_mq_send;
extern const rtb_case rtb_case_mq_lat;
extern const rtb_case rtb_case_sys_call;
/* @IRQ-decls */
extern const rtb_case rtb_case_irq_lat;
extern const rtb_case rtb_case_irq_rsp;
extern const rtb_case rtb_case_irq_dlt;
extern const rtb_case rtb_case_irq_tlt;
extern const rtb_case rtb_case_irq_sus;
/* @CLKJIT-decls */
extern const rtb_case rtb_case_clk_dur;
extern const rtb_case rtb_case_clk_res;
extern const rtb_case rtb_case_jit_per;
extern const rtb_case rtb_case_rsp_io;
extern const rtb_case rtb_case_noise_os;
extern const rtb_case rtb_case_noise_hw;
extern const rtb_case rtb_case_jit_dl;
extern const rtb_case rtb_case_mem_heap;
extern const rtb_case rtb_case_mem_pool;
extern const rtb_case rtb_case_tm_coop;
extern const rtb_case rtb_case_tm_pre;
extern const rtb_case rtb_case_tm_irq;
extern const rtb_case rtb_case_tm_irq_pre;
extern const rtb_case rtb_case_tm_msg;
extern const rtb_case rtb_case_tm_sync;
extern const rtb_case rtb_case_tm_mem;
extern const rtb_case rtb_case_tm_basic;

const rtb_case *const rtb_cases[] = {
    &rtb_case_cal_timer,
    &rtb_case_cal_ref,
    &rtb_case_thr_sw,
    &rtb_case_sem_shf,
    /* @THR-table */
    &rtb_case_thr_pre,
    &rtb_case_thr_ctx,
    &rtb_case_thr_new,
    &rtb_case_thr_b_new,
    &rtb_case_thr_b_rr,
    &rtb_case_thr_lock,
    /* @SEM-table */
    &rtb_case_sem_b_lck,
    &rtb_case_sem_b_rel,
    &rtb_case_sem_new,
    &rtb_case_sem_arn,
    &rtb_case_sem_arc,
    &rtb_case_sem_take,
    /* @MUTMQ-table */
    &rtb_case_mut_b_pi,
    &rtb_case_mut_arn,
    &rtb_case_mut_arc,
    &rtb_case_mq_send,
    &rtb_case_mq_lat,
    &rtb_case_sys_call,
    /* @IRQ-table */
    &rtb_case_irq_lat,
    &rtb_case_irq_rsp,
    &rtb_case_irq_dlt,
    &rtb_case_irq_tlt,
    &rtb_case_irq_sus,
    /* @CLKJIT-table */
    &rtb_case_clk_dur,
    &rtb_case_clk_res,
    &rtb_case_jit_per,
    &rtb_case_rsp_io,
    &rtb_case_noise_os,
    &rtb_case_noise_hw,
    &rtb_case_jit_dl,
    &rtb_case_mem_heap,
    &rtb_case_mem_pool,
    &rtb_case_tm_coop,
    &rtb_case_tm_pre,
    &rtb_case_tm_irq,
    &rtb_case_tm_irq_pre,
    &rtb_case_tm_msg,
    &rtb_case_tm_sync,
    &rtb_case_tm_mem,
    &rtb_case_tm_basic,
};
const int rtb_ncases = (int)(sizeof rtb_cases / sizeof rtb_cases[0]);

const rtb_case *rtb_case_find(const char *id)
{
    for (int i = 0; i < rtb_ncases; i++)
        if (strcmp(rtb_cases[i]->id, id) == 0)
            return rtb_cases[i];
    return NULL;
}
