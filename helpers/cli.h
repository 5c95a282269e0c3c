/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The operator CLI `mdev-hooks` (doc/design.md §3): each command is a function
 * of this shape, listed in the table in mdev-hooks.c. argv[0] is the
 * command's name; config_path is the global --config (NULL: the default).
 * It prints and returns the exit status: 0 done, 1 failed, 2 bad usage or
 * bad config.
 */
#pragma once

#include <stdbool.h>
#include <stdio.h>

#include <json-c/json.h>

#include "config.h"
#include "ledger.h"
#include "sysfs.h"

typedef int (*CliMain)(int argc, char *argv[], const char *config_path);

int cli_types_main(int argc, char *argv[], const char *config_path);
int cli_list_main(int argc, char *argv[], const char *config_path);
int cli_inventory_main(int argc, char *argv[], const char *config_path);
int cli_check_config_main(int argc, char *argv[], const char *config_path);
int cli_pick_main(int argc, char *argv[], const char *config_path);
int cli_metrics_main(int argc, char *argv[], const char *config_path);
int cli_placement_main(int argc, char *argv[], const char *config_path);
int cli_gpu_main(int argc, char *argv[], const char *config_path);
/* In mdev-hooks-reconcile, the program that links libvirt (cli-attach.c). */
int cli_attach_main(int argc, char *argv[], const char *config_path);
int cli_detach_main(int argc, char *argv[], const char *config_path);
/* The main() of a program behind one command (mdev-hooks-reconcile,
 * mdev-hooks-placement): argv is "PROGRAM [--config FILE] COMMAND ARGS...",
 * as the CLI runs it; runs fn on "COMMAND ARGS...". */
int cli_libexec_main(int argc, char *argv[], const char *program, const char *command, CliMain fn);

/* --- shared by the commands (cli.c) ------------------------------------ */

#define CLI_EXIT_OK 0
#define CLI_EXIT_FAILED 1
#define CLI_EXIT_USAGE 2

/* Options every command takes besides its own. */
typedef struct CliOptions {
        const char *config_path;
        bool json;
        bool placement;
        const char *hostname;
        const char *parent;   /* --parent / -p: only this parent (mdevctl's filter) */
        char uuid[UUID_STRING_MAX]; /* --uuid / -u: only this mdev, lower case; "" for any */
        const char *connect;  /* --connect: libvirt's URI (reconcile, attach, detach) */
        bool apply;           /* --apply: fix what is found (reconcile) */
        char **args;  /* CLI_OPT_ARGS: the arguments after the options */
        int n_args;
} CliOptions;

/* A command's own option, --NAME: its argument goes to *arg, or, for one
 * that takes none (arg NULL), *flag is set. A table ends with name NULL. */
typedef struct CliOption {
        const char *name;
        const char **arg;
        bool *flag;
} CliOption;

/* Which of the optional options a command accepts. */
enum {
        CLI_OPT_JSON = 1 << 0,
        CLI_OPT_PLACEMENT = 1 << 1,
        CLI_OPT_HOSTNAME = 1 << 2,
        CLI_OPT_PARENT = 1 << 3,
        CLI_OPT_UUID = 1 << 4,
        CLI_OPT_ARGS = 1 << 5, /* arguments after the options (o->args) */
        CLI_OPT_CONNECT = 1 << 6,
        CLI_OPT_APPLY = 1 << 7,
        CLI_OPT_SHORT_C_CONNECT = 1 << 8, /* -c is --connect (virsh's), not --config */
};

/* Parses a command's argv. Returns -1 to go on, else the exit status to
 * return at once (--help printed: 0; bad usage: 2, with a message). */
int cli_parse_options(int argc, char *argv[], unsigned accepted, const char *help, CliOptions *o);
/* The same, with the command's own options besides (own: NULL or a table). */
int cli_parse_options_own(int argc, char *argv[], unsigned accepted, const CliOption *own, const char *help,
                          CliOptions *o);

/* Logs it and returns CLI_EXIT_FAILED. */
int cli_oom(void);

/* root_open(), logging the failure. Returns 0 or an exit status. */
int cli_open_root(int *ret_fd);
/* config_load(), printing every error (one per line) to f. Returns 0 or an exit status. */
int cli_load_config(int rootfd, const char *path, FILE *f, Config **ret);
/* cli_open_root() and cli_load_config() (errors to stderr): what a command
 * that reads the host through its config starts with. */
int cli_open_root_config(const char *config_path, int *ret_rootfd, Config **ret_config);
/* The host's name into host (HOST_NAME_MAX + 1 bytes): given, the value of
 * the command cmd's option, or this node's name. Returns 0 or an exit status
 * (logged). */
int cli_host_name(const char *cmd, const char *option, const char *given, char *host);
/* inventory_read(), logging the failure (after "cmd: " unless cmd is NULL).
 * Returns 0 or an exit status. */
struct InventoryParent;
int cli_read_inventory(const char *cmd, int rootfd, const Config *c, struct InventoryParent **ret, size_t *ret_n);

/* Prints a JSON document, keys in the order they were added (we add them
 * sorted), two-space indented, with a final newline. */
int cli_print_json(json_object *o);
/* A string, or JSON null for NULL. */
json_object *cli_json_string(const char *s);

/* A text table: columns separated by two spaces, each as wide as its widest
 * cell, numbers right-aligned, the last column not padded. */
typedef struct CliTable CliTable;
CliTable *cli_table_new(const char * const *headers, size_t n_columns, unsigned right_aligned_mask);
/* Adds a row of n_columns cells (copied; NULL prints as "-"). */
int cli_table_add(CliTable *t, const char * const *cells);
void cli_table_print(const CliTable *t, FILE *f);
void cli_table_free(CliTable *t);
static inline void cli_table_freep(CliTable **t) {
        cli_table_free(*t);
}
#define _cleanup_table_free_ _cleanup_(cli_table_freep)

static inline void json_object_putp(json_object **o) {
        if (*o)
                json_object_put(*o);
}
#define _cleanup_json_ _cleanup_(json_object_putp)

/* The host as the commands read it: the mdevs in sysfs, with the vGPUs of
 * NVIDIA's VFIO framework, and the record (none when its directory does not
 * exist). */
typedef struct CliHost {
        SysfsMdev *mdevs;
        size_t n_mdevs;
        LedgerEntry *records;
        size_t n_records;
        size_t n_bad;       /* record files that do not parse */
        char **bad;         /* their UUIDs */
} CliHost;

/* Reads sysfs, then the record. Returns 0, or -errno with the reason logged. */
int cli_host_read(int rootfd, CliHost *ret);
void cli_host_done(CliHost *h);
