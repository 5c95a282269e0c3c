/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `mdev-hooks list`: every mdev in sysfs joined with the record. The state
 * comes from the record (assigned, incoming, free, lost); an mdev without a
 * record is "foreign"; a record whose mdev is gone shows as "lost" (what
 * udev or the next hook will make of it), with the record's parent and type.
 */
#include "cli.h"
#include "ledger.h"
#include "log.h"
#include "sysfs.h"

static const char help[] =
        "Usage: mdev-hooks list [--parent PARENT] [--uuid UUID] [--json]\n"
        "\n"
        "Lists every mdev on the host with its parent, type, state and owning\n"
        "guest, grouped by parent as mdevctl list does (sorted by parent, then\n"
        "UUID; --json: sorted by UUID). The state comes from mdev-hooks' record:\n"
        "  assigned   a guest holds it\n"
        "  incoming   claimed for a guest that is migrating here\n"
        "  free       created by mdev-hooks and kept (release = keep)\n"
        "  lost       recorded for a guest, but the mdev no longer exists\n"
        "  foreign    exists, but mdev-hooks has no record of it\n"
        "ORIGIN is \"created\" (mdev-hooks may remove it) or \"borrowed\" (never).\n"
        "A vGPU of NVIDIA's VFIO framework (vGPU 17+) is listed by its VF's PCI\n"
        "address, with its PF as parent and nvidia-<ID> as type.\n"
        "\n"
        "  -p, --parent PARENT  only the mdevs of this parent (as mdevctl list --parent)\n"
        "  -u, --uuid UUID      only this mdev (as mdevctl list --uuid)\n"
        "  --json     print JSON: {\"mdevs\": [...]}\n"
        "  --help     show this help\n";

typedef struct Row {
        const char *uuid;
        const char *parent;
        const char *type;
        const char *state;
        const LedgerEntry *record; /* NULL: foreign */
        bool exists;
} Row;

static int cmp_row(const void *a, const void *b) {
        return strcmp(((const Row *) a)->uuid, ((const Row *) b)->uuid);
}

/* mdevctl's order: by parent, then UUID. */
static int cmp_row_parent(const void *a, const void *b) {
        const Row *x = a, *y = b;
        int r = strcmp(x->parent, y->parent);

        return r != 0 ? r : strcmp(x->uuid, y->uuid);
}

static bool row_wanted(const Row *r, const CliOptions *o) {
        return (!o->parent || streq(r->parent, o->parent)) && (!o->uuid[0] || streq(r->uuid, o->uuid));
}

static const char *record_state(const LedgerEntry *e, bool exists) {
        if (!exists)
                return ledger_state_to_string(LEDGER_LOST);
        return strna(ledger_state_to_string(e->state));
}

static json_object *row_json(const Row *r) {
        json_object *o = json_object_new_object();
        const LedgerEntry *e = r->record;

        json_object_object_add(o, "exists", json_object_new_boolean(r->exists));
        json_object_object_add(o, "guest", cli_json_string(e && *e->guest ? e->guest : NULL));
        json_object_object_add(o, "guest_uuid", cli_json_string(e && *e->guest_uuid ? e->guest_uuid : NULL));
        json_object_object_add(o, "origin", cli_json_string(e ? ledger_origin_to_string(e->origin) : NULL));
        json_object_object_add(o, "parent", json_object_new_string(r->parent));
        json_object_object_add(o, "remove_pending", json_object_new_boolean(e && e->remove_pending));
        json_object_object_add(o, "state", json_object_new_string(r->state));
        json_object_object_add(o, "type", json_object_new_string(r->type));
        json_object_object_add(o, "uuid", json_object_new_string(r->uuid));
        return o;
}

/* What list shows: sysfs's mdevs and the record, joined by UUID. */
typedef struct Listing {
        CliHost host;
        Row *rows;         /* point into host's mdevs and records */
        size_t n;
} Listing;

static void listing_done(Listing *l) {
        free(l->rows);
        cli_host_done(&l->host);
}

/* One row per UUID that sysfs or the record knows and the filters keep,
 * sorted by UUID for --json and by parent then UUID (as mdevctl) otherwise. */
static int join(Listing *l, const CliOptions *o) {
        const SysfsMdev *mdevs = l->host.mdevs;
        const LedgerEntry *records = l->host.records;

        l->rows = calloc(l->host.n_mdevs + l->host.n_records + 1, sizeof *l->rows);
        if (!l->rows)
                return -ENOMEM;
        /* Both lists are sorted by UUID: merge them. */
        for (size_t i = 0, j = 0; i < l->host.n_mdevs || j < l->host.n_records;) {
                int c = i >= l->host.n_mdevs ? 1 : j >= l->host.n_records ? -1 : strcmp(mdevs[i].uuid, records[j].uuid);
                Row *row = &l->rows[l->n++];

                if (c < 0) {
                        *row = (Row) { .uuid = mdevs[i].uuid, .parent = mdevs[i].parent, .type = mdevs[i].type,
                                       .state = "foreign", .exists = true };
                        i++;
                } else if (c > 0) {
                        *row = (Row) { .uuid = records[j].uuid, .parent = records[j].parent, .type = records[j].type,
                                       .record = &records[j], .state = record_state(&records[j], false) };
                        j++;
                } else {
                        /* sysfs tells where it is; the record whose it is. */
                        *row = (Row) { .uuid = mdevs[i].uuid, .parent = mdevs[i].parent, .type = mdevs[i].type,
                                       .record = &records[j], .state = record_state(&records[j], true), .exists = true };
                        i++;
                        j++;
                }
                if (!row_wanted(row, o))
                        l->n--;
        }
        qsort(l->rows, l->n, sizeof *l->rows, o->json ? cmp_row : cmp_row_parent);
        return 0;
}

static int print_json(const Listing *l) {
        _cleanup_json_ json_object *root = json_object_new_object();
        json_object *a = json_object_new_array();

        json_object_object_add(root, "mdevs", a);
        for (size_t i = 0; i < l->n; i++)
                json_object_array_add(a, row_json(&l->rows[i]));
        return cli_print_json(root);
}

static int print_text(const Listing *l, const CliOptions *o) {
        static const char * const headers[] = { "UUID", "PARENT", "TYPE", "STATE", "ORIGIN", "GUEST" };
        _cleanup_table_free_ CliTable *t = NULL;

        if (l->n == 0 && (o->parent || o->uuid[0])) {
                log_notice("no mdev matches%s%s%s%s", o->parent ? " --parent " : "", strempty(o->parent),
                           o->uuid[0] ? " --uuid " : "", o->uuid);
                return 0;
        }
        if (l->n == 0) {
                log_notice("no mdevs on this host and none recorded");
                return 0;
        }
        t = cli_table_new(headers, ELEMENTSOF(headers), 0);
        if (!t)
                return -ENOMEM;
        for (size_t i = 0; i < l->n; i++) {
                const LedgerEntry *e = l->rows[i].record;
                const char *row[] = { l->rows[i].uuid, l->rows[i].parent, l->rows[i].type, l->rows[i].state,
                                      e ? ledger_origin_to_string(e->origin) : NULL,
                                      e && *e->guest ? e->guest : NULL };

                if (cli_table_add(t, row) < 0)
                        return -ENOMEM;
        }
        cli_table_print(t, stdout);
        return 0;
}

int cli_list_main(int argc, char *argv[], const char *config_path) {
        CliOptions o = { .config_path = config_path };
        _cleanup_(listing_done) Listing l = { .rows = NULL };
        _cleanup_close_ int rootfd = -1;
        int r;

        r = cli_parse_options(argc, argv, CLI_OPT_JSON | CLI_OPT_PARENT | CLI_OPT_UUID, help, &o);
        if (r >= 0)
                return r;
        r = cli_open_root(&rootfd);
        if (r > 0)
                return r;

        if (cli_host_read(rootfd, &l.host) < 0)
                return CLI_EXIT_FAILED;
        if (join(&l, &o) < 0)
                return cli_oom();
        if ((o.json ? print_json(&l) : print_text(&l, &o)) < 0)
                return cli_oom();

        if (l.host.n_bad > 0) {
                log_warning("%zu record file(s) in /" LEDGER_DIR " could not be read and are not shown; 'mdev-hooks reconcile' reports them",
                            l.host.n_bad);
                return CLI_EXIT_FAILED;
        }
        return CLI_EXIT_OK;
}
