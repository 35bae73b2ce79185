/* SPDX-License-Identifier: Apache-2.0 */
/* The agent's command line, one parser for every port (options.c): the
 * common options fill rtb_options and the plan; a port adds its own
 * (POSIX: loads, load CPUs, per-CPU cases, trace marker) through
 * rtb_cli_port. An RTOS without argv builds one from its console or a
 * built-in string and calls the same parser. */
#ifndef RTB_OPTIONS_H
#define RTB_OPTIONS_H

#include <getopt.h>

#include "rtb.h"

/* A port's own options. Their getopt codes must be >= RTB_CLI_PORT_CODE so
 * they never collide with the common ones. */
#define RTB_CLI_PORT_CODE 0x100
#define RTB_CLI_MAX_PORT_OPTS 16

typedef struct rtb_cli_port {
    const struct option *longopts; /* terminated by {0}; NULL: none */
    /* One of the port's options seen: 0, or 2 after saying why on stderr. */
    int (*option)(void *ctx, int code, const char *arg, rtb_plan *plan);
    /* After the common checks and the plan: the port's own checks (0, or 2
     * after saying why); it may set opt->cpus and plan->load. */
    int (*finish)(void *ctx, rtb_options *opt, rtb_plan *plan);
    /* The port's lines of the usage text. */
    void (*usage)(FILE *f);
    void *ctx;
} rtb_cli_port;

/* Returned by rtb_parse_options when the plan is ready to run. */
#define RTB_CLI_RUN (-1)

/* Parses argv (the cases as CASE[:name=value...] after the options) into
 * opt and plan; the planned cases come from the heap, once, before
 * anything is measured. Returns RTB_CLI_RUN, or the exit status the entry
 * point returns at once: 0 after --list, --help or --dry-run, 2 for a
 * usage error (said on stderr). `port` may be NULL. */
int rtb_parse_options(int argc, char **argv, const rtb_cli_port *port, rtb_options *opt,
                      rtb_plan *plan);

#endif
