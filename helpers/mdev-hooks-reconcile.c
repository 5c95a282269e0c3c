/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mdev-hooks-reconcile: `mdev-hooks reconcile`, in a program of its own.
 *
 * reconcile is the one command that uses libvirt's API, and libvirt pulls in
 * some sixty shared libraries (glib, gnutls, ...) whose loading alone costs
 * more than all the rest of `mdev-hooks types`. The CLI therefore does not
 * link libvirt: its `reconcile` entry execs this program (helpers/mdev-hooks.c:
 * reconcile_exec()) as
 *
 *     mdev-hooks-reconcile [--config FILE] reconcile [OPTIONS]
 *
 * Here: reading the guests through libvirt (read-only), the record and sysfs
 * read with them (snapshot_read() says why the lock is not held while
 * libvirt is asked), and the printing. The decisions and the actions are the
 * library's (lib/reconcile.c), which links no libvirt.
 */
#include <time.h>

#include "cli.h"
#include "cli-libvirt.h"
#include "config.h"
#include "domxml.h"
#include "ledger.h"
#include "lock.h"
#include "log.h"
#include "reconcile.h"
#include "sysfs.h"
#include "util.h"
#include "vfio.h"

#define RECONCILE_DEFAULT_URI "qemu:///system"

/* --- libvirt ----------------------------------------------------------- */

/* The sorted mdev UUIDs of one domain XML. */
static int guest_mdevs_from_xml(const char *xml, char ***ret) {
        _cleanup_domxml_free_ Domxml *d = NULL;
        _cleanup_strv_free_ char **l = NULL;
        int r;

        r = domxml_parse(xml, strlen(xml), &d);
        if (r < 0)
                return r;
        for (size_t i = 0; i < d->n_mdevs; i++) {
                r = strv_extend(&l, d->mdevs[i].uuid);
                if (r < 0)
                        return r;
        }
        /* vGPUs of NVIDIA's VFIO framework, by their VF's address (vgpu.h):
         * with an <mh:vgpu> entry, or managed='no' on such a VF here */
        for (size_t i = 0; i < d->n_vgpus; i++) {
                if (!d->vgpus[i].meta) {
                        _cleanup_close_ int rootfd = -1;

                        if (d->vgpus[i].managed || root_open(&rootfd) < 0 || vfio_is_vf(rootfd, d->vgpus[i].pci) <= 0)
                                continue;
                }
                r = strv_extend(&l, d->vgpus[i].pci);
                if (r < 0)
                        return r;
        }
        strv_sort(l);
        *ret = steal_pointer(&l);
        return 0;
}

/* Fills one guest. -ENOENT when the domain went away meanwhile. */
static int guest_load(virDomainPtr dom, ReconcileGuest *g) {
        _cleanup_free_ char *live_xml = NULL, *config_xml = NULL;
        const char *name;
        int active, persistent, r;

        name = virDomainGetName(dom);
        if (!name)
                return -ENOENT;
        g->name = strdup(name);
        if (!g->name)
                return -ENOMEM;
        if (virDomainGetUUIDString(dom, g->uuid) < 0)
                g->uuid[0] = '\0';

        active = virDomainIsActive(dom);
        persistent = virDomainIsPersistent(dom);
        if (active < 0 || persistent < 0) {
                virErrorPtr e = virGetLastError();
                if (e && e->code == VIR_ERR_NO_DOMAIN)
                        return -ENOENT;
                g->error = strdup_printf("cannot read its state: %s", libvirt_message());
                return g->error ? 0 : -ENOMEM;
        }
        g->active = active;
        g->persistent = persistent;

        /* A running guest's live XML says what it holds now; a defined
         * guest's inactive XML says what its next start will use. */
        live_xml = virDomainGetXMLDesc(dom, 0);
        if (live_xml && active && persistent)
                config_xml = virDomainGetXMLDesc(dom, VIR_DOMAIN_XML_INACTIVE);
        if (!live_xml || (active && persistent && !config_xml)) {
                virErrorPtr e = virGetLastError();
                if (e && e->code == VIR_ERR_NO_DOMAIN)
                        return -ENOENT;
                g->error = strdup_printf("cannot read its XML: %s", libvirt_message());
                return g->error ? 0 : -ENOMEM;
        }

        error_clear();
        r = guest_mdevs_from_xml(live_xml, active ? &g->live : &g->config);
        if (r >= 0 && config_xml)
                r = guest_mdevs_from_xml(config_xml, &g->config);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                strv_free(g->live);
                strv_free(g->config);
                g->live = g->config = NULL;
                g->error = strdup_printf("cannot read its mdevs: %s", error_get(r));
                return g->error ? 0 : -ENOMEM;
        }
        return 0;
}

static int guest_cmp(const void *a, const void *b) {
        const ReconcileGuest *x = a, *y = b;
        return strcmp(x->name, y->name);
}

/* Every guest of uri, running or defined, sorted by name, over a read-only
 * connection. Sets a message with libvirt's reason when it cannot connect or
 * list. */
static int guests_load(const char *uri, ReconcileGuest **ret, size_t *ret_n) {
        _cleanup_(virConnectClosep) virConnectPtr conn = NULL;
        virDomainPtr *doms = NULL;
        ReconcileGuest *guests = NULL;
        size_t n = 0;
        int n_doms, r = 0;

        virSetErrorFunc(NULL, libvirt_error_silent);

        conn = virConnectOpenReadOnly(uri);
        if (!conn)
                return error_set(-ECONNREFUSED, "cannot connect to '%s': %s", uri, libvirt_message());

        n_doms = virConnectListAllDomains(conn, &doms, 0);
        if (n_doms < 0)
                return error_set(-EIO, "cannot list the guests of '%s': %s", uri, libvirt_message());

        guests = calloc(n_doms > 0 ? (size_t) n_doms : 1, sizeof *guests);
        if (!guests) {
                for (int i = 0; i < n_doms; i++)
                        virDomainFree(doms[i]);
                free(doms);
                return -ENOMEM;
        }
        for (int i = 0; i < n_doms; i++) {
                _cleanup_(virDomainFreep) virDomainPtr dom = doms[i];

                if (r < 0)
                        continue;
                r = guest_load(dom, &guests[n]);
                if (r == -ENOENT) {
                        /* Undefined while we listed: it uses nothing. */
                        reconcile_guest_done(&guests[n]);
                        r = 0;
                        continue;
                }
                if (r < 0)
                        continue; /* guests[n] is half filled: freed below */
                n++;
        }
        free(doms);
        if (r < 0) {
                reconcile_guests_free(guests, n + 1);
                return r;
        }

        qsort(guests, n, sizeof *guests, guest_cmp);
        *ret = guests;
        *ret_n = n;
        return 0;
}

/* --- reporting ------------------------------------------------------------ */

/* What the action does, for a person. */
static char *action_describe(const ReconcileFinding *f) {
        switch (f->action) {
        case RECONCILE_ACTION_NONE:
                return strdup(f->counts ? "none: needs a person" : "none");
        case RECONCILE_ACTION_DROP:
                return strdup("drop the record");
        case RECONCILE_ACTION_MARK_LOST:
                return strdup_printf("mark it lost for '%s'", f->entry.guest);
        case RECONCILE_ACTION_RECORD:
                return strdup_printf("record it as assigned to '%s' (%s)", f->entry.guest,
                                     strna(ledger_origin_to_string(f->entry.origin)));
        case RECONCILE_ACTION_KEEP_FREE:
                return strdup("keep it as free (release = keep)");
        case RECONCILE_ACTION_REMOVE:
                return strdup("remove the mdev and its record");
        default:
                return NULL;
        }
}

static void print_text(const ReconcilePlan *p, bool applied, FILE *f) {
        if (p->n_findings == 0) {
                fputs("all agrees: libvirt's guests, the record and sysfs\n", f);
                return;
        }
        for (size_t i = 0; i < p->n_findings; i++) {
                const ReconcileFinding *x = &p->findings[i];
                _cleanup_free_ char *what = action_describe(x);

                fprintf(f, "%s %s: %s -> %s", x->uuid[0] ? x->uuid : "-", x->kind, x->message, strna(what));
                switch (x->result) {
                case RECONCILE_DONE:
                        fputs(": done", f);
                        break;
                case RECONCILE_FAILED:
                        fprintf(f, ": FAILED: %s", strna(x->error));
                        break;
                case RECONCILE_PLANNED:
                        if (x->action != RECONCILE_ACTION_NONE)
                                fputs(" (with --apply)", f);
                        break;
                default: /* RECONCILE_SKIPPED: report-only */
                        break;
                }
                fputc('\n', f);
        }
}

static json_object *finding_json(const ReconcileFinding *x) {
        _cleanup_free_ char *what = action_describe(x);
        json_object *o = json_object_new_object();

        json_object_object_add(o, "uuid", cli_json_string(x->uuid[0] ? x->uuid : NULL));
        json_object_object_add(o, "finding", cli_json_string(x->kind));
        json_object_object_add(o, "guest", cli_json_string(x->guest));
        json_object_object_add(o, "message", cli_json_string(x->message));
        json_object_object_add(o, "action", cli_json_string(reconcile_action_to_string(x->action)));
        json_object_object_add(o, "action_text", cli_json_string(what));
        json_object_object_add(o, "counts", json_object_new_boolean(x->counts));
        json_object_object_add(o, "result", cli_json_string(reconcile_result_to_string(x->result)));
        json_object_object_add(o, "error", cli_json_string(x->error));
        return o;
}

/* The keys in the order they have always had (not sorted): scripts read it. */
static int print_json(const ReconcilePlan *p, bool applied) {
        _cleanup_json_ json_object *root = json_object_new_object();
        json_object *list = json_object_new_array();
        size_t fixed = 0, failed = 0;

        json_object_object_add(root, "findings", list);
        for (size_t i = 0; i < p->n_findings; i++) {
                json_object_array_add(list, finding_json(&p->findings[i]));
                fixed += p->findings[i].result == RECONCILE_DONE;
                failed += p->findings[i].result == RECONCILE_FAILED;
        }
        json_object_object_add(root, "applied", json_object_new_boolean(applied));
        json_object_object_add(root, "found", json_object_new_int64((int64_t) reconcile_plan_count(p)));
        json_object_object_add(root, "fixed", json_object_new_int64((int64_t) fixed));
        json_object_object_add(root, "failed", json_object_new_int64((int64_t) failed));
        return cli_print_json(root);
}

/* --- the command ------------------------------------------------------------ */

static const char help[] =
        "usage: mdev-hooks reconcile [--connect URI] [--apply] [--json]\n"
        "\n"
        "Compare the mdevs libvirt's guests use (read-only connection, default\n"
        RECONCILE_DEFAULT_URI ") with the record (/" LEDGER_DIR ") and sysfs; print one\n"
        "line per disagreement, UUID KIND: what disagrees -> what is done, and\n"
        "with --apply do it under the hooks' lock. KIND is one of:\n"
        "  record-without-mdev  mdev gone: mark lost if a guest uses it, else drop\n"
        "  stale-record         earlier boot or other mdev: borrowed if in use, else drop\n"
        "  unused               no guest uses it: remove if created (keep free with\n"
        "                       release = keep), forget if borrowed\n"
        "  remove-pending       a remove that was busy: try it again\n"
        "  incoming-expired     a migration's claim over 10 minutes old: as unused\n"
        "  unrecorded-in-use    a running guest uses an unrecorded mdev: record it\n"
        "  foreign              not created by mdev-hooks: never touched (not counted)\n"
        "  unreadable-record    a record that does not parse: borrowed if in use, else\n"
        "                       drop the file (the mdev stays)\n"
        "  missing-mdev, shared-mdev, unreadable-guest, unreadable-records: for a person\n"
        "\n"
        "  --connect URI  libvirt URI     --apply  fix     --json  print JSON\n"
        "  --help         show this help  --version  show the version\n"
        "Exit status: 0 all agrees (or all fixed), 1 something found or not fixed\n"
        "(or unreadable), 2 bad usage or config. See mdev-hooks(8).\n";

static int safe_close(int fd) {
        if (fd >= 0)
                close(fd);
        return -1;
}

static bool entry_equal(const LedgerEntry *a, const LedgerEntry *b) {
        return streq(a->uuid, b->uuid) && streq(a->parent, b->parent) && streq(a->type, b->type) &&
               a->state == b->state && a->origin == b->origin && streq(a->guest, b->guest) &&
               streq(a->guest_uuid, b->guest_uuid) && streq(a->boot_id, b->boot_id) &&
               a->since == b->since && a->remove_pending == b->remove_pending;
}

static bool host_equal(const CliHost *a, const CliHost *b) {
        if (a->n_records != b->n_records || a->n_bad != b->n_bad || a->n_mdevs != b->n_mdevs ||
            strv_length(a->bad) != strv_length(b->bad))
                return false;
        for (size_t i = 0; a->bad && a->bad[i]; i++)
                if (!streq(a->bad[i], b->bad[i]))
                        return false;
        for (size_t i = 0; i < a->n_records; i++)
                if (!entry_equal(&a->records[i], &b->records[i]))
                        return false;
        for (size_t i = 0; i < a->n_mdevs; i++)
                if (!streq(a->mdevs[i].uuid, b->mdevs[i].uuid) || !streq(a->mdevs[i].parent, b->mdevs[i].parent) ||
                    !streq(a->mdevs[i].type, b->mdevs[i].type))
                        return false;
        return true;
}

/* How often --apply reads again when a hook changed the record while libvirt
 * was being asked. */
#define RECONCILE_READ_TRIES 5

/* libvirt's guests, and the record and sysfs read with them. */
typedef struct Snapshot {
        ReconcileGuest *guests;
        size_t n_guests;
        CliHost host;
} Snapshot;

static void snapshot_done(Snapshot *s) {
        reconcile_guests_free(s->guests, s->n_guests);
        cli_host_done(&s->host);
        *s = (Snapshot) { 0 };
}

/* lock_acquire(), logging the failure. */
static int lock_take(int rootfd, const Config *config, int *ret_fd) {
        int r = lock_acquire(rootfd, config->lock_timeout, "mdev-hooks reconcile --apply", ret_fd);

        if (r < 0)
                log_error("%s", error_get(r));
        return r;
}

/* One try of snapshot_read(). Returns 1 when the record and sysfs did not
 * change while libvirt was asked (always without --apply), with the lock
 * held in *ret_lockfd under --apply; 0 when they changed; -errno (logged)
 * when something could not be read. */
static int snapshot_try(int rootfd, const Config *config, const CliOptions *o, Snapshot *ret, int *ret_lockfd) {
        _cleanup_close_ int lockfd = -1;
        CliHost before = { 0 };
        int r;

        if (o->apply) {
                r = lock_take(rootfd, config, &lockfd);
                if (r < 0)
                        return r;
                r = cli_host_read(rootfd, &before);
                lockfd = safe_close(lockfd);
                if (r < 0)
                        return r;
        }

        error_clear();
        r = guests_load(o->connect, &ret->guests, &ret->n_guests);
        if (r < 0)
                log_error("%s", error_get(r));
        if (r >= 0 && o->apply)
                r = lock_take(rootfd, config, &lockfd);
        if (r >= 0)
                r = cli_host_read(rootfd, &ret->host);
        if (r >= 0)
                r = !o->apply || host_equal(&before, &ret->host);
        cli_host_done(&before);
        if (r <= 0) {
                snapshot_done(ret);
                return r;
        }
        *ret_lockfd = steal_fd(&lockfd);
        return 1;
}

/* libvirt is never asked while the lock is held. A hook runs with its
 * domain locked inside libvirtd, and listing the guests or reading one's XML
 * takes that domain's lock: a prepare waiting for our lock would wait for us
 * while we wait for it, until its lock_timeout fails the guest's start. So
 * with --apply: read the record and sysfs under the lock, ask libvirt
 * without it, take the lock again and act only if nothing changed meanwhile
 * (every change a hook makes shows in the record or in sysfs); else read
 * again. A guest being started is active in libvirt (paused, starting up)
 * before its prepare runs, so no prepare can complete unseen. */
static int snapshot_read(int rootfd, const Config *config, const CliOptions *o, Snapshot *ret, int *ret_lockfd) {
        for (unsigned attempt = 1; attempt <= RECONCILE_READ_TRIES; attempt++) {
                int r = snapshot_try(rootfd, config, o, ret, ret_lockfd);

                if (r != 0)
                        return r < 0 ? r : 0;
        }
        log_error("the record kept changing while reconcile read libvirt's guests "
                  "(hooks at work); nothing was changed, run it again");
        return -EAGAIN;
}

/* Decides from the snapshot. Logs. */
static int plan_make(int rootfd, const Config *config, const Snapshot *s, ReconcilePlan *ret) {
        char boot_id[UUID_STRING_MAX] = "";
        int r;

        if (boot_id_read(rootfd, boot_id) < 0)
                boot_id[0] = '\0'; /* records' boot ids are then not compared */

        r = reconcile_plan(&(ReconcileInput) {
                        .guests = s->guests,
                        .n_guests = s->n_guests,
                        .records = s->host.records,
                        .n_records = s->host.n_records,
                        .n_bad_records = s->host.n_bad,
                        .bad_records = s->host.bad,
                        .mdevs = s->host.mdevs,
                        .n_mdevs = s->host.n_mdevs,
                        .release = config->release,
                        .boot_id = boot_id,
                        .now = (uint64_t) time(NULL),
                }, ret);
        if (r < 0)
                log_error("reconcile: %s", strerror(-r));
        return r;
}

/* Carries the plan out (the caller holds the lock): the number of findings
 * that count and are not fixed in *ret_unfixed. Logs. */
static int plan_carry_out(int rootfd, ReconcilePlan *plan, size_t *ret_unfixed) {
        _cleanup_close_ int ledgerfd = -1;
        int r;

        r = ledger_open(rootfd, &ledgerfd);
        if (r < 0) {
                log_error("cannot open the record under /" LEDGER_DIR ": %s", error_get(r));
                return r;
        }
        *ret_unfixed = reconcile_apply(plan, rootfd, ledgerfd);
        return 0;
}

/* Prints the plan to stdout. Logs, except a failed flush. */
static int plan_print(const ReconcilePlan *plan, const CliOptions *o) {
        int r = 0;

        if (o->json)
                r = print_json(plan, o->apply);
        else
                print_text(plan, o->apply, stdout);
        if (r < 0) {
                log_error("reconcile: cannot print: %s", strerror(-r));
                return r;
        }
        return fflush(stdout) != 0 ? -EIO : 0;
}

/* The `reconcile` command: argv[0] is "reconcile". config_path is the CLI's
 * --config (NULL for the default). Prints, and returns the exit status:
 * 0 all agrees (or all was fixed), 1 something found (or not all fixed, or
 * libvirt/sysfs/the record could not be read), 2 bad usage or bad config. */
static int reconcile_main(int argc, char *argv[], const char *config_path) {
        CliOptions o = { .config_path = config_path, .connect = RECONCILE_DEFAULT_URI };
        _cleanup_config_free_ Config *config = NULL;
        _cleanup_close_ int rootfd = -1, lockfd = -1;
        Snapshot snap = { 0 };
        ReconcilePlan plan = { 0 };
        size_t unfixed;
        int r, status = CLI_EXIT_FAILED;

        r = cli_parse_options(argc, argv, CLI_OPT_CONNECT | CLI_OPT_APPLY | CLI_OPT_JSON, help, &o);
        if (r >= 0)
                return r;
        r = cli_open_root(&rootfd);
        if (r > 0)
                return r;
        r = cli_load_config(rootfd, o.config_path, stderr, &config);
        if (r > 0)
                return r;

        if (snapshot_read(rootfd, config, &o, &snap, &lockfd) < 0)
                return CLI_EXIT_FAILED;
        if (plan_make(rootfd, config, &snap, &plan) < 0)
                goto finish;
        unfixed = reconcile_plan_count(&plan);
        if (o.apply && plan.n_findings > 0 && plan_carry_out(rootfd, &plan, &unfixed) < 0)
                goto finish;
        status = unfixed > 0 ? CLI_EXIT_FAILED : CLI_EXIT_OK;
        if (plan_print(&plan, &o) < 0)
                status = CLI_EXIT_FAILED;

finish:
        reconcile_plan_done(&plan);
        snapshot_done(&snap);
        return status;
}

/* The commands that need libvirt's API: reconcile, and attach and detach
 * (cli-attach.c), as the CLI runs them: PROGRAM [--config FILE] COMMAND ... */
int main(int argc, char *argv[]) {
        static const struct {
                const char *name;
                CliMain fn;
        } commands[] = {
                { "attach",    cli_attach_main },
                { "detach",    cli_detach_main },
                { "reconcile", reconcile_main },
        };
        int i = argc > 2 && streq(argv[1], "--config") ? 3 : 1;

        for (size_t k = 0; k < ELEMENTSOF(commands) && i < argc; k++)
                if (streq(argv[i], commands[k].name))
                        return cli_libexec_main(argc, argv, "mdev-hooks-reconcile", commands[k].name, commands[k].fn);
        return cli_libexec_main(argc, argv, "mdev-hooks-reconcile", "reconcile", reconcile_main);
}
