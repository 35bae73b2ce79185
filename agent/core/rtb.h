/* SPDX-License-Identifier: Apache-2.0 */
/* The agent core: JSON writer, stream writer, histograms, sample buffers,
 * parameters, the case table and the context every case receives. */
#ifndef RTB_CORE_H
#define RTB_CORE_H

#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "rtb/port.h"
#include "rtb/timing.h"
#include "rtb/types.h"

#define RTB_AGENT_VERSION "0.1.0"
#define RTB_STREAM_FORMAT 1

#if defined(__GNUC__)
#define RTB_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define RTB_PRINTF(f, a)
#endif

/* ---- JSON writer (json.c): the only code that formats record bodies ---- */

#define RTB_JSON_DEPTH 16

typedef struct rtb_json {
    char *buf;
    size_t cap, len;
    bool overflow;      /* something did not fit: the writer clipped it */
    int skipped;        /* containers opened while clipped (not written) */
    int depth;
    bool first[RTB_JSON_DEPTH]; /* no member written yet at this depth */
} rtb_json;

void rtb_json_init(rtb_json *j, char *buf, size_t cap);
/* key may be NULL inside arrays and for the outermost object. */
void rtb_json_obj(rtb_json *j, const char *key);
void rtb_json_obj_end(rtb_json *j);
void rtb_json_arr(rtb_json *j, const char *key);
void rtb_json_arr_end(rtb_json *j);
void rtb_json_str(rtb_json *j, const char *key, const char *value);
void rtb_json_strf(rtb_json *j, const char *key, const char *fmt, ...) RTB_PRINTF(3, 4);
/* The formatted text (clipped to RTB_JSON_TEXT_CAP - 1 bytes) as a string
 * member; returns that text unescaped, valid until the next write to j.
 * Needs a body of more than 2 * RTB_JSON_TEXT_CAP bytes (a record's). */
#define RTB_JSON_TEXT_CAP 1024
const char *rtb_json_vstrf(rtb_json *j, const char *key, const char *fmt, va_list ap);
void rtb_json_i64(rtb_json *j, const char *key, int64_t value);
/* Decimal digits of a 64-bit integer into out (24 bytes, NUL-terminated); returns
 * the length. Portable where printf lacks 64-bit formats (newlib). */
size_t rtb_fmt_u64(char *out, uint64_t v);
size_t rtb_fmt_i64(char *out, int64_t v);
void rtb_json_u64(rtb_json *j, const char *key, uint64_t value);
void rtb_json_f64(rtb_json *j, const char *key, double value);
void rtb_json_bool(rtb_json *j, const char *key, bool value);
/* A number already formatted (digits of a value wider than 64 bits). */
void rtb_json_num(rtb_json *j, const char *key, const char *digits);
/* Appends pre-escaped text (base64 and the like) as a string value. */
void rtb_json_raw_str(rtb_json *j, const char *key, const char *text, size_t len);
/* The same in pieces, with no copy of the whole text (a board's RAM): open
 * (false: no room, write nothing more), pre-escaped pieces, close. */
bool rtb_json_str_open(rtb_json *j, const char *key);
void rtb_json_str_put(rtb_json *j, const char *text, size_t len);
void rtb_json_str_close(rtb_json *j);

/* ---- stream writer (stream.c) ----------------------------------------- */

#define RTB_BODY_CAP RTB_STREAM_BODY_CAP /* rtb_port_config.h */
_Static_assert(RTB_BODY_CAP > 2 * RTB_JSON_TEXT_CAP, "a record body holds a formatted detail");

typedef struct rtb_stream {
    FILE *out;
    uint64_t seq;
    rtb_mutex lock; /* the watchdog may write while a case is stuck */
    rtb_json json;
    char body[RTB_BODY_CAP];
    const char *kind;
    bool urgent;
    /* The watchdog's three records (warn, end, bye: under 200 bytes each,
     * fixed text and a case id): 512, not the 2 KiB once kept (a board's
     * RAM, issue 22). */
    char urgent_body[512];
} rtb_stream;

uint32_t rtb_crc32(const void *data, size_t len);
/* The CRC of what `crc` covered followed by data (crc 0: nothing yet). */
uint32_t rtb_crc32_update(uint32_t crc, const void *data, size_t len);
void rtb_stream_init(rtb_stream *s, FILE *out);
/* Starts a record; the caller adds members to the returned writer and
 * finishes with rtb_rec_end(), which writes and flushes the line. */
rtb_json *rtb_rec_begin(rtb_stream *s, const char *kind);
void rtb_rec_end(rtb_stream *s);
/* Variant for the watchdog: gives up on the lock after a short wait. */
rtb_json *rtb_rec_begin_urgent(rtb_stream *s, const char *kind);

/* ---- histograms (hist.c) ---------------------------------------------- */

typedef enum { RTB_HIST_LOG2, RTB_HIST_LINEAR } rtb_hist_kind;

/* Buckets of every histogram (rtb_port_config.h may lower it: a log2
 * histogram then keeps fewer sub-buckets, its layout says how many). */
#define RTB_HIST_MAX_BUCKETS RTB_HIST_BUCKETS

/* An exact sum of int64 samples in 128 bits, as a (high, low) pair rather
 * than __int128, which 32-bit targets (armhf) do not have. */
typedef struct rtb_sum {
    uint64_t lo;
    int64_t hi;
} rtb_sum;

static inline void rtb_sum_add(rtb_sum *s, int64_t v)
{
    uint64_t lo = s->lo + (uint64_t)v;
    s->hi += (v < 0 ? -1 : 0) + (lo < s->lo);
    s->lo = lo;
}

static inline double rtb_sum_to_double(const rtb_sum *s)
{
    return (double)s->hi * 18446744073709551616.0 + (double)s->lo;
}

#ifdef RTB_HIST_COUNT32
typedef uint32_t rtb_hist_count; /* rtb/config.h: a small board's RAM */
#else
typedef uint64_t rtb_hist_count;
#endif

typedef struct rtb_hist {
    rtb_hist_kind kind;
    int sub_bits;          /* log2 */
    int64_t lo, width;     /* linear */
    int nbuckets;
    uint64_t n, underflow, overflow;
    int64_t min, max;
    rtb_sum sum;           /* exact: 10^9 samples of 10^10 ns do not fit int64 */
    /* RTB_HIST_MAX_BUCKETS counters from the case's memory (rtb_mem_alloc),
     * never inline: a series stays small enough for a stack. */
    rtb_hist_count *counts;
} rtb_hist;

/* Both keep h->counts (set by rtb_series_init) and clear it. */
void rtb_hist_init_log2(rtb_hist *h, int sub_bits);
void rtb_hist_init_linear(rtb_hist *h, int64_t lo, int64_t width, int nbuckets);
void rtb_hist_add(rtb_hist *h, int64_t v);

/* ---- series: a sample buffer + its histogram (series.c) ---------------- */

/* What a series' values are (docs/wire-format.md, "Series kinds"): the host
 * applies statistics, scores, stars and tests only where the kind gives
 * them a meaning. Declared once, where the series is made. */
typedef enum {
    RTB_KIND_LATENCY,   /* the default: the time an OS path took, ns */
    RTB_KIND_DURATION,  /* a length of time that is no cost (a slice, a signed deviation), ns */
    RTB_KIND_TIMESTAMP, /* when something happened, ns since the case began */
    RTB_KIND_COUNT,     /* events counted */
    RTB_KIND_RATE,      /* events per second */
    RTB_KIND_PERIOD,    /* a measured period, ns */
    RTB_KIND_RATIO,     /* dimensionless */
    RTB_KIND_COUNT_OF_KINDS
} rtb_kind;

typedef struct rtb_series {
    const char *name;
    rtb_kind kind;          /* RTB_KIND_LATENCY unless rtb_series_set_kind says; its unit
                             * follows ("ns", "count", "Hz", ""): never a count called ns */
    const char *point_key;  /* sweep coordinate name, or NULL */
    int64_t point_value;
    int64_t *v;             /* preallocated, prefaulted */
    size_t cap, n;          /* room in v now, samples in v */
    uint64_t dropped;       /* pushed when full: in the hist, not in v */
    rtb_hist hist;
    /* A streamed series (rtb_series_init_streamed): v holds `buffered`
     * samples at a time, sent out as `samples` records between measured
     * windows (rtb_series_drain); `sent` were sent already, `limit` is
     * how many the series keeps in all (what cap is for the others). */
    struct rtb_ctx *stream_ctx;
    size_t buffered, limit;
    uint64_t sent;
} rtb_series;

/* Outside measured sections only: allocates and prefaults the sample
 * buffer and the histogram's counters (RTB_ENOMEM when they do not fit). */
int rtb_series_init(rtb_series *s, const char *name, size_t cap);
void rtb_series_set_point(rtb_series *s, const char *key, int64_t value);
/* A series that is not a latency says what it is (and so its unit). */
void rtb_series_set_kind(rtb_series *s, rtb_kind kind);
const char *rtb_kind_name(rtb_kind kind);
const char *rtb_kind_unit(rtb_kind kind);
void rtb_series_free(rtb_series *s);
/* The same, for a series whose samples leave the RAM as they fill (a
 * board's 64 KiB): v holds RTB_SERIES_BUFFER samples (rtb/config.h; all of
 * cap where the port sets none), and the case calls rtb_series_drain at
 * points where nothing is measured. The records carry each chunk's offset,
 * so the host reassembles the same series a held one gives. */
int rtb_series_init_streamed(rtb_series *s, struct rtb_ctx *ctx, const char *name, size_t cap);
/* Outside measured windows only: the buffered samples as `samples`
 * records; the buffer is empty after. */
void rtb_series_flush(rtb_series *s);
/* Outside measured windows, after pushes: flushes a streamed series whose
 * buffer is full (a no-op otherwise), so the next push finds room. */
static inline void rtb_series_drain(rtb_series *s)
{
    if (s->stream_ctx && s->cap && s->n == s->cap)
        rtb_series_flush(s);
}
/* How many of `rounds` a case stamps before it turns the stamps into
 * samples (RTB_STAMP_BLOCK, rtb/config.h; the test build's
 * `--inject stamp_block=N` sets it on any port): size stamp arrays by it
 * and run the rounds block by block, draining the series between blocks. */
size_t rtb_stamp_block(size_t rounds);
/* Cheap enough for measured sections: no syscall, no allocation. */
static inline void rtb_series_push(rtb_series *s, int64_t v)
{
    if (s->n < s->cap)
        s->v[s->n++] = v;
    else
        s->dropped++;
    rtb_hist_add(&s->hist, v);
}

/* ---- stamps of measured windows (stamp.c) ------------------------------
 * The ends of a measured window are stamped with rtb_stamp_now(): the port's
 * raw counter (rtb_cycles_now) where rtb_timing_info.cycles_stamp says it is
 * invariant, else rtb_ts_now() in ns. Nothing is converted inside the
 * window: a difference of two stamps becomes ns afterwards, with
 * rtb_stamp_ns (Zephyr's timing_cycles_to_ns is the model). Stamps are for
 * differences; an instant on the rtb_clock_now timeline stays rtb_ts_now. */
typedef int64_t rtb_stamp;

/* Once, by the runner, after rtb_timing_init. */
void rtb_stamp_init(const rtb_timing_info *ti);
extern bool rtb_stamp_use_cycles;
static inline rtb_stamp rtb_stamp_now(void)
{
    return rtb_stamp_use_cycles ? (rtb_stamp)rtb_cycles_now() : rtb_ts_now();
}
/* A number of ticks (a difference of stamps, negative too) in ns, exact:
 * floor(ticks * 10^9 / hz) towards zero. */
rtb_time rtb_stamp_ns(rtb_stamp ticks);
/* ns in ticks (a threshold compared with stamp differences in a loop). */
rtb_stamp rtb_stamp_ticks(rtb_time ns);
/* The stamps' rate: ticks a second (10^9 on the rtb_ts_now fallback). */
uint64_t rtb_stamp_hz(void);

/* ---- case memory (mem.c) ---------------------------------------------- */

/* What sample buffers and histograms live in, outside measured sections:
 * the heap where the port has one (malloc/free), or a static arena of
 * RTB_CASE_ARENA bytes (rtb_port_config.h) that the runner empties before
 * every case. Cases keep large things here or in static storage, never on
 * a stack (the build refuses frames over RTB_FRAME_LIMIT bytes). */
void *rtb_mem_alloc(size_t size);
void *rtb_mem_calloc(size_t n, size_t size); /* zeroed; NULL on overflow */
void rtb_mem_free(void *p);
/* The runner, before each case: everything a case allocated is gone. */
void rtb_mem_reset(void);
/* Bytes allocated now, and the most since the last reset (the arena's
 * high-water mark; 0 on the heap). */
size_t rtb_mem_peak(void);

/* ---- parameters (params.c) -------------------------------------------- */

#define RTB_PARAM_MAX_VALUES 16
#define RTB_CASE_MAX_PARAMS 12

typedef struct rtb_param_def {
    const char *name;
    const char *help;
    int64_t def[RTB_PARAM_MAX_VALUES];
    int ndef;              /* >1: a sweep list by default */
    int64_t min, max;
    bool list;             /* accepts a list (a sweep) */
} rtb_param_def;

typedef struct rtb_param_values {
    int64_t v[RTB_CASE_MAX_PARAMS][RTB_PARAM_MAX_VALUES];
    int n[RTB_CASE_MAX_PARAMS];
} rtb_param_values;

/* ---- the context a case runs in -------------------------------------- */

/* docs/outcomes.md: failed is a finding about the OS; skipped means the case
 * cannot apply here (no real-time priority, one CPU), with the reason;
 * error means rtbench could not measure. */
typedef enum { RTB_PASSED, RTB_FAILED, RTB_ERROR, RTB_UNSUPPORTED, RTB_SKIPPED } rtb_result;

typedef struct rtb_options {
    int cpu;             /* measurement CPU; -1: case threads are not pinned */
    int priority;        /* base real-time priority of case threads */
    bool samples;        /* emit raw samples as well as histograms */
    size_t max_samples;  /* per series buffer */
    int64_t deadline_slack_ms; /* added to each case's hard deadline */
    bool pinned;         /* case threads on `cpu` (false: cpu is -1) */
    /* Per-CPU cases (rtb_case.per_cpu): measure on each of these CPUs at
     * once, one series per CPU (point `cpu`); ncpus 0: on `cpu` alone. */
    const int *cpus;
    int ncpus;
    int64_t break_ns;    /* >0: per-CPU cases stop at the first latency above it */
    int64_t progress_ms; /* >0: per-CPU cases write a `progress` record this often */
    /* The run's identity (--run-id, made by the host), echoed in the hello
     * record's `run`; NULL: the hello has none. Points into argv. */
    const char *run_id;
} rtb_options;

/* The defaults every entry point starts from (cpu -1: resolve it with
 * rtb_options_resolve once the port is up). */
#define RTB_OPTIONS_DEFAULT                                                                      \
    ((rtb_options){.cpu = -1, .priority = 80, .samples = true,                                 \
                   .max_samples = RTB_MAX_SAMPLES_DEFAULT, .deadline_slack_ms = 20000,         \
                   .pinned = true})

struct rtb_case;

typedef struct rtb_ctx {
    rtb_stream *stream;
    const rtb_options *opt;
    const rtb_port_info *port;
    const rtb_timing_info *timing;
    const struct rtb_case *cur;
    const rtb_param_values *pv;
    atomic_bool stop;      /* set by the monitor: measured loops check it */
    rtb_time started;      /* when the current case began */
    rtb_time deadline;     /* hard deadline of the current case */
    /* Checks the current case wrote: a case whose every check was skipped
     * is itself skipped (docs/outcomes.md). */
    int checks_applied, checks_skipped;
    /* Why the case was skipped (the first skipped check's detail) or is
     * unsupported here (rtb_unsupported): the `end` record's reason. */
    char skip_reason[256];
} rtb_ctx;

typedef struct rtb_case {
    const char *id;
    const char *title;
    const rtb_param_def *params;
    int nparams;
    /* Returns the case result; writes its own series, checks and warnings. */
    rtb_result (*run)(rtb_ctx *ctx);
    const char *unsupported; /* non-NULL: why no port can run it yet */
    /* Asks the port (e.g. THR-LOCK: a scheduler lock): why this port cannot
     * run it, or NULL. Optional. */
    const char *(*unsupported_here)(const rtb_port_info *port);
    /* (rtb_needs_shared_priorities: for a case whose threads share a
     * priority or yield to an equal, on a kernel of one task per priority.) */
    /* How long the case means to run with its resolved parameters (ns);
     * the hard deadline is 3x this plus the slack. NULL: its `duration_ms`
     * parameter times its sweep points (0 without one). */
    rtb_time (*expected_ns)(const rtb_ctx *ctx);
    /* It honours opt->cpus, opt->break_ns and opt->progress_ms (JIT-PER);
     * the runner warns when a run asks them of any other case. */
    bool per_cpu;
    /* The sweep coordinate (a `point` key) that counts tasks, or NULL: the
     * host draws a determinism slope (growth per task) only over it. */
    const char *tasks;
    /* How the host shows and scores the case, declared here once (`--list`)
     * so that no host table repeats it: */
    bool sigma3;   /* its published method filters gross errors (mean +- 3 sigma) */
    int headline;  /* 1..: its place in the run's composite score; 0: not in it */
    bool unscored; /* no score against T_std (CAL-REF *is* the unit) */
    bool jitter;   /* its `deviation` series is the published jitter table */
} rtb_case;

extern const rtb_case *const rtb_cases[];
extern const int rtb_ncases;
const rtb_case *rtb_case_find(const char *id);
/* Why the case cannot run on this port, or NULL (static or asked). */
const char *rtb_case_unsupported(const rtb_case *c);
/* unsupported_here of a case whose threads share a priority or yield to an
 * equal: the port's reason on a kernel of one task per priority (uC/OS-II). */
const char *rtb_needs_shared_priorities(const rtb_port_info *port);

/* ---- the portable runner (runner.c, plan.c) ---------------------------- */

/* One case of a run with its resolved parameters. */
typedef struct rtb_planned {
    const rtb_case *c;
    rtb_param_values pv;
} rtb_planned;

struct rtb_load_plan;

/* What a run does: built by the port's entry point (POSIX: main() from
 * argv; an RTOS: a plan compiled in or read from the console). */
typedef struct rtb_plan {
    const rtb_planned *cases;
    int n;
    const struct rtb_load_plan *load; /* background load, NULL: none */
    const char *trace_marker;         /* NULL: no kernel-trace alignment */
} rtb_plan;

/* The port as rtb_port_init described it; initialises the port on the
 * first call (the entry point calls it before any thread exists). */
const rtb_port_info *rtb_port(void);
/* "THR-SW:n=2,5:duration_ms=100" -> a planned case; RTB_EINVAL with a
 * message in err for an unknown case or a bad parameter. */
int rtb_plan_case(const char *text, rtb_planned *p, char *err, size_t errcap);
/* One JSON line per case (id, title, supported, reason, params). */
void rtb_list_cases(FILE *out);
/* Checks the options against the port and resolves cpu -1 (the last CPU
 * when pinned); RTB_EINVAL with a message in err. */
int rtb_options_resolve(rtb_options *opt, char *err, size_t errcap);
/* Runs the plan: hello, every case under the watchdog, bye. Returns the
 * exit status: 0 all passed, 1 a check failed, 3 a case errored. */
int rtb_run(const rtb_plan *plan, const rtb_options *opt, rtb_stream *stream);

/* Parameter lookup inside a case (by name; aborts on a typo in the case). */
int64_t rtb_param(const rtb_ctx *ctx, const char *name);
int rtb_param_list(const rtb_ctx *ctx, const char *name, const int64_t **values);
/* Parses "k=v[,v..]" into pv; writes a clear message to err on failure. */
int rtb_params_defaults(const rtb_case *c, rtb_param_values *pv);
int rtb_params_set(const rtb_case *c, rtb_param_values *pv, const char *assignment,
                   char *err, size_t errcap);
void rtb_params_write(rtb_json *j, const rtb_case *c, const rtb_param_values *pv);

/* ---- helpers for cases (run.c) ---------------------------------------- */

/* Duration-bounded measurement: the monitor (the calling thread, raised to
 * the top priority on the measurement CPU) sleeps until `duration_ns` from
 * now, then sets ctx->stop. */
void rtb_monitor(rtb_ctx *ctx, rtb_time duration_ns);
/* Joins case threads; a thread that does not stop by the hard deadline
 * makes the watchdog end the run (the case cannot be trusted). Never
 * returns while one of them still runs. */
int rtb_join_all(rtb_ctx *ctx, rtb_thread *threads, int n);
rtb_thread_attr rtb_attr(const rtb_ctx *ctx, const char *name, int prio_offset);
/* The first instant of the port's release lattice (rtb_release_grain) at or
 * after `t`; `t` itself when grain is 0 (any instant). */
static inline rtb_time rtb_on_grain(rtb_time t, rtb_time grain, rtb_time phase)
{
    if (grain <= 0)
        return t;
    /* Division truncates toward zero: a floor above the phase, a ceiling
     * below it. */
    rtb_time at = phase + (t - phase) / grain * grain;
    return at < t ? at + grain : at;
}

/* Records: all of them outside measured sections. */
void rtb_emit_series(rtb_ctx *ctx, const rtb_series *s);
/* Text coordinates of a series' point beside its sweep value (e.g. scenario
 * "a", line "pipe"); unused keys NULL. */
typedef struct rtb_tags {
    const char *key[2], *value[2];
    /* A measured property written beside the series (`attrs`), never part
     * of its identity across runs (CLK-DUR's period of a recurring source);
     * NULL for none. */
    const char *attr_key;
    int64_t attr_value;
} rtb_tags;
void rtb_emit_series_tagged(rtb_ctx *ctx, const rtb_series *s, const rtb_tags *tags);
void rtb_emit_check(rtb_ctx *ctx, const char *name, bool pass, const char *fmt, ...)
    RTB_PRINTF(4, 5);
void rtb_emit_check_error(rtb_ctx *ctx, const char *name, const char *fmt, ...)
    RTB_PRINTF(3, 4);
/* ---- the CPUs a case may use (cpus.c): the process's affinity -------- */
int rtb_cpus_allowed(const rtb_port_info *pi);
int rtb_cpu_allowed_at(const rtb_port_info *pi, int i);
bool rtb_cpu_is_allowed(const rtb_port_info *pi, int cpu);
/* The next allowed CPU after `cpu` (wrapping), never `cpu`; -1 if none. */
int rtb_cpu_other(const rtb_port_info *pi, int cpu);
/* The allowed CPUs as a list ("0-2,5"); returns their number. */
int rtb_cpus_text(const rtb_port_info *pi, char *out, size_t cap);
/* A case (or check) that needs `n` CPUs: false, with `check` skipped and
 * the reason, when the process may run on fewer; the case then returns
 * RTB_SKIPPED. */
bool rtb_need_cpus(rtb_ctx *ctx, const char *check, int n);
/* A sweep point (`point`, e.g. "n=128") that needs `n` case threads at once:
 * false, with check `threads` skipped and the reason, when the build holds
 * fewer (RTB_CASE_THREADS: a board of 64 KiB of RAM); the case measures its
 * other points and leaves this one out. */
bool rtb_threads_fit(rtb_ctx *ctx, const char *point, int64_t n);
/* A check that cannot apply on this machine; the detail says why. */
void rtb_emit_check_skip(rtb_ctx *ctx, const char *name, const char *fmt, ...) RTB_PRINTF(3, 4);
/* Without real-time priority: every named check is skipped with `why`, and
 * the case's result is RTB_SKIPPED (returns false). True: the checks apply. */
bool rtb_checks_need_realtime(rtb_ctx *ctx, const char *const *names, int n, const char *why);
void rtb_warn(rtb_ctx *ctx, const char *code, const char *fmt, ...) RTB_PRINTF(3, 4);
/* The case cannot run on this port (e.g. it needs a load and the port has
 * none): records the reason and returns RTB_UNSUPPORTED for the case. */
rtb_result rtb_unsupported(rtb_ctx *ctx, const char *fmt, ...) RTB_PRINTF(2, 3);

/* Test builds only (RTB_TEST_HOOKS): injected faults that known-answer
 * tests use to show a case measures what it claims. */
typedef enum {
    RTB_INJ_YIELD_DELAY,   /* busy-wait before a yield */
    RTB_INJ_GIVE_DELAY,    /* busy-wait before a semaphore give */
    RTB_INJ_SEM_NOBLOCK,   /* a broken semaphore: take never blocks */
    RTB_INJ_REF_DELAY,     /* busy-wait inside the CAL-REF workload */
    RTB_INJ_IGNORE_STOP,   /* a runaway case: THR-SW workers ignore the monitor */
    RTB_INJ_CLOCK_BACK,    /* a fake clock: every Nth read steps back 1 us */
    RTB_INJ_CLOCK_SKEW,    /* a fake clock: CPUs other than 0 read NS ahead */
    RTB_INJ_SEM_FIFO,      /* a broken semaphore: wakes waiters in arrival order */
    RTB_INJ_NEW_PRIO,      /* a broken create: new threads get priority + N */
    RTB_INJ_OP_DELAY,      /* busy-wait inside every timed primitive call (SYS-CALL, ARN) */
    RTB_INJ_MUTEX_NOPI,    /* a broken mutex: RTB_MUTEX_PI is ignored */
    RTB_INJ_EVENT_DELAY,   /* a slow machine: busy-wait in every IRQ event handler */
    RTB_INJ_LINE_DELAY,    /* RSP-IO: busy-wait in the response path before the output edge */
    RTB_INJ_LINE_MUTE,     /* RSP-IO: the target never answers an edge */
    RTB_INJ_STIM_SKEW,     /* RSP-IO: the stimulator's clock reads NS ahead */
    RTB_INJ_SCHED_NOLOCK,  /* a broken scheduler lock: rtb_sched_lock locks nothing */
    RTB_INJ_STALL,         /* CLK-DUR: the measuring thread blocks NS once, mid-window */
    RTB_INJ_WAKE_DELAY,    /* a late wake-up: busy-wait NS after every rtb_sleep_until */
    RTB_INJ_HW_STALL,      /* NOISE-HW: busy-wait NS mid-way through every interrupts-off window */
    RTB_INJ_THREAD_STACK,  /* an RTOS port: case threads get a stack of N bytes (overflow check) */
    RTB_INJ_SERIES_BUFFER, /* a streamed series buffers N samples (its records' reassembly) */
    RTB_INJ_STAMP_BLOCK,   /* cases stamp N rounds a block (rtb_stamp_block), as on a board */
    RTB_INJ_WAKE_LATE,     /* a late wake-up that leaves the CPU: sleep NS after every rtb_sleep_until */
    RTB_INJ_IO_HOLD,       /* a slow disk: an io load thread ends NS late, inside its I/O */
    RTB_INJ_LOAD_HOLD,     /* a stuck load: an io load thread ends NS late, outside its I/O */
    RTB_INJ_COUNT
} rtb_inject_site;

#ifdef RTB_TEST_HOOKS
/* Injections act only while a case runs, so the agent's own machinery
 * (watchdog, stream lock) keeps working primitives. */
void rtb_inject_arm(bool on);
int64_t rtb_inject_value(rtb_inject_site site);
int rtb_inject_set(const char *assignment);
void rtb_inject_delay(rtb_inject_site site);
/* Unarmed: for faults of the machinery around a case (a load's stop). */
int64_t rtb_inject_setting(rtb_inject_site site);
rtb_time rtb_inject_clock(rtb_time t);
#define RTB_INJECT_DELAY(site) rtb_inject_delay(site)
#define RTB_INJECTED(site) (rtb_inject_value(site) != 0)
#define RTB_INJECT_VALUE(site) rtb_inject_value(site)
#define RTB_INJECT_ARM(on) rtb_inject_arm(on)
#define RTB_INJECT_SETTING(site) rtb_inject_setting(site)
#else
#define RTB_INJECT_SETTING(site) ((int64_t)0)
#define RTB_INJECT_VALUE(site) ((int64_t)0)
#define RTB_INJECT_ARM(on) ((void)0)
#define RTB_INJECT_DELAY(site) ((void)0)
#define RTB_INJECTED(site) 0
#endif

#endif
