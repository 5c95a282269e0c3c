/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `mdev-hooks metrics`: the host's vGPU capacity and the record, in the
 * Prometheus text exposition format, for node_exporter's textfile collector
 * (conf/mdev-hooks-metrics.{service,timer} write it there atomically).
 *
 * The capacity numbers are `inventory`'s (inventory_read()); the states are
 * `list`'s: every mdev in sysfs joined with the record.
 */
#include <fcntl.h>
#include <sys/stat.h>

#include "cli.h"
#include "inventory.h"
#include "ledger.h"
#include "log.h"
#include "sysfs.h"
#include "backend.h"

static const char help[] =
        "Usage: mdev-hooks metrics [--config FILE]\n"
        "\n"
        "Prints the host's vGPU capacity and mdev states in the Prometheus text\n"
        "format, for node_exporter's textfile collector:\n"
        "  mdev_hooks_parent_capacity_vgpus{parent,type,class}  inventory's TOTAL\n"
        "  mdev_hooks_parent_used_vgpus{parent,type,class}      inventory's USED\n"
        "  mdev_hooks_parent_free_vgpus{parent,type,class}      inventory's FREE\n"
        "    (one series per parent and type: a GPU listed under several types has\n"
        "    one for each, as 'inventory' has a row for each)\n"
        "  mdev_hooks_mdevs{state}       mdevs per state, as 'list' shows them\n"
        "  mdev_hooks_parents_registered mdev parents registered\n"
        "  mdev_hooks_record_last_change_timestamp_seconds\n"
        "                                when /var/lib/mdev-hooks last changed\n"
        "\n"
        "Write it atomically into the collector's directory, e.g.\n"
        "  mdev-hooks metrics > DIR/.mh.prom.$$ && mv DIR/.mh.prom.$$ DIR/mdev-hooks.prom\n"
        "\n"
        "  --config FILE   read FILE instead of /etc/mdev-hooks/mdev-hooks.conf\n"
        "  --help          show this help\n";

/* The states of `list`, in its order; "foreign": in sysfs, not in the record. */
static const char * const states[] = { "assigned", "incoming", "free", "lost", "foreign" };

/* A label value: backslash, double quote and newline escaped. */
static void print_label(FILE *f, const char *name, const char *value, bool last) {
        fprintf(f, "%s=\"", name);
        for (const char *c = value; *c; c++)
                if (*c == '\\')
                        fputs("\\\\", f);
                else if (*c == '"')
                        fputs("\\\"", f);
                else if (*c == '\n')
                        fputs("\\n", f);
                else
                        fputc(*c, f);
        fprintf(f, "\"%s", last ? "" : ",");
}

static void header(FILE *f, const char *name, const char *text) {
        fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n", name, text, name);
}

static void print_capacity(FILE *f, const Config *c, const InventoryParent *p, size_t n) {
        static const struct {
                const char *name, *help;
        } metrics[] = {
                { "mdev_hooks_parent_capacity_vgpus",
                  "vGPUs of its configured type that the parent can hold, as Nova counts them (mdev-hooks inventory TOTAL)." },
                { "mdev_hooks_parent_used_vgpus", "vGPUs of its configured type on the parent (mdev-hooks inventory USED)." },
                { "mdev_hooks_parent_free_vgpus", "vGPUs of its configured type the parent can still take (mdev-hooks inventory FREE)." },
        };

        for (size_t m = 0; m < ELEMENTSOF(metrics); m++) {
                header(f, metrics[m].name, metrics[m].help);
                for (size_t i = 0; i < n; i++) {
                        const ConfigType *t = p[i].type ? config_find_type(c, p[i].type) : NULL;
                        unsigned v = m == 0 ? p[i].total : m == 1 ? p[i].used : p[i].free;

                        if (!t)
                                continue;
                        fprintf(f, "%s{", metrics[m].name);
                        print_label(f, "class", t->mdev_class, false);
                        print_label(f, "parent", p[i].parent, false);
                        print_label(f, "type", t->name, true);
                        fprintf(f, "} %u\n", v);
                }
        }
}

/* The parents of the inventory's rows (a parent with several types has a
 * row for each, next to each other). */
static size_t count_parents(const InventoryParent *p, size_t n) {
        size_t k = 0;

        for (size_t i = 0; i < n; i++)
                if (i == 0 || !streq(p[i].parent, p[i - 1].parent))
                        k++;
        return k;
}

/* The count per state of mdevs and VFIO vGPUs: sysfs and the record merged
 * as `list` merges them. */
static int count_states(int rootfd, unsigned counts[ELEMENTSOF(states)], struct timespec *ret_mtime) {
        _cleanup_close_ int ledgerfd = -1;
        _cleanup_free_ SysfsMdev *mdevs = NULL;
        _cleanup_free_ LedgerEntry *records = NULL;
        size_t n_mdevs = 0, n_records = 0;
        struct stat st;
        int r;

        r = backend_device_list(rootfd, &mdevs, &n_mdevs); /* every backend's, by key */
        if (r < 0)
                return r;
        r = ledger_open_existing(rootfd, &ledgerfd);
        if (r >= 0) {
                if (fstat(ledgerfd, &st) == 0)
                        *ret_mtime = st.st_mtim;
                r = ledger_list(ledgerfd, &records, &n_records, NULL);
        }
        if (r < 0 && r != -ENOENT)
                return error_prefix(r, "cannot read the record in /" LEDGER_DIR);

        /* Both lists are sorted by UUID. */
        for (size_t i = 0, j = 0; i < n_mdevs || j < n_records;) {
                int cmp = i >= n_mdevs ? 1 : j >= n_records ? -1 : strcmp(mdevs[i].uuid, records[j].uuid);
                const char *s;

                if (cmp < 0)
                        s = "foreign";
                else if (cmp > 0)
                        s = ledger_state_to_string(LEDGER_LOST); /* recorded, gone from sysfs */
                else
                        s = ledger_state_to_string(records[j].state);
                if (cmp <= 0)
                        i++;
                if (cmp >= 0)
                        j++;
                for (size_t k = 0; s && k < ELEMENTSOF(states); k++)
                        if (streq(states[k], s))
                                counts[k]++;
        }
        return 0;
}

int cli_metrics_main(int argc, char *argv[], const char *config_path) {
        CliOptions o = { .config_path = config_path };
        _cleanup_config_free_ Config *c = NULL;
        _cleanup_close_ int rootfd = -1;
        _cleanup_free_ char *text = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        unsigned counts[ELEMENTSOF(states)] = { 0 };
        struct timespec mtime = { .tv_sec = -1 };
        InventoryParent *p = NULL;
        size_t n = 0, size = 0;
        int r;

        r = cli_parse_options(argc, argv, 0, help, &o);
        if (r >= 0)
                return r;
        r = cli_open_root_config(o.config_path, &rootfd, &c);
        if (r > 0)
                return r;

        r = cli_read_inventory("metrics", rootfd, c, &p, &n);
        if (r > 0)
                return r;
        error_clear();
        r = count_states(rootfd, counts, &mtime);
        if (r < 0) {
                inventory_free(p, n);
                log_error("metrics: %s", error_get(r));
                return CLI_EXIT_FAILED;
        }

        /* All or nothing on stdout: a half-written file would be a scrape error. */
        f = open_memstream(&text, &size);
        if (!f) {
                inventory_free(p, n);
                return cli_oom();
        }
        print_capacity(f, c, p, n);
        header(f, "mdev_hooks_mdevs", "mdevs on the host per state, as mdev-hooks list shows them (foreign: not created or claimed by mdev-hooks).");
        for (size_t k = 0; k < ELEMENTSOF(states); k++)
                fprintf(f, "mdev_hooks_mdevs{state=\"%s\"} %u\n", states[k], counts[k]);
        header(f, "mdev_hooks_parents_registered", "mdev parents registered (/sys/class/mdev_bus).");
        fprintf(f, "mdev_hooks_parents_registered %zu\n", count_parents(p, n));
        if (mtime.tv_sec >= 0) {
                header(f, "mdev_hooks_record_last_change_timestamp_seconds",
                       "When the record in /var/lib/mdev-hooks last changed, in seconds since the epoch.");
                fprintf(f, "mdev_hooks_record_last_change_timestamp_seconds %lld.%03ld\n", (long long) mtime.tv_sec,
                        mtime.tv_nsec / 1000000);
        }
        inventory_free(p, n);
        if (fflush(f) != 0 || ferror(f))
                return cli_oom();
        fclose(steal_pointer(&f));
        if (fputs(text, stdout) < 0)
                return CLI_EXIT_FAILED;
        return CLI_EXIT_OK;
}
