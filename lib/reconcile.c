/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `mdev-hooks reconcile`: libvirt's guests against the record and sysfs.
 *
 * Every UUID that the record, sysfs or a running guest knows is looked at
 * once. What is found (the finding's kind, stable for scripts) and done:
 *
 *   record-without-mdev  the record names an mdev that does not exist:
 *                        mark it lost when a running guest uses it, or when
 *                        the record is from before a reboot and a defined
 *                        guest uses it; else drop it (an interrupted prepare
 *                        or release of a guest that is not running: a
 *                        stopped guest holds nothing).
 *   stale-record         the record is from an earlier boot, says lost, or
 *                        names another parent/type than the mdev now there:
 *                        the mdev there now was not made by mdev-hooks in
 *                        this boot. Record it as borrowed for the running
 *                        guest using it, else drop the record; the mdev is
 *                        never removed.
 *   unused               held for a guest that is not running or no longer
 *                        uses it, or free under release = remove: remove it
 *                        if mdev-hooks created it (keep it free with
 *                        release = keep), forget it if it was borrowed.
 *   remove-pending       a remove that was busy at release: retry it.
 *   incoming-expired     an incoming claim older than
 *                        RECONCILE_INCOMING_MAX_AGE_SEC whose guest is not
 *                        running here: as unused.
 *   unrecorded-in-use    a running guest uses an mdev the record does not
 *                        give it: record it for that guest. An mdev without
 *                        any record is recorded as borrowed: nothing shows
 *                        that mdev-hooks created it, and an mdev mdev-hooks
 *                        did not create must never be removed by it.
 *   foreign              an mdev without record that no running guest
 *                        uses: reported, never touched. Informative only:
 *                        it does not make the exit status 1.
 *   missing-mdev         a running guest uses an mdev that does not exist
 *                        and has no record: reported.
 *   shared-mdev          two running guests use one mdev: reported.
 *   unreadable-guest     a guest's XML could not be read: reported, and no
 *                        record is dropped and no mdev removed in this run,
 *                        since that guest may be using any of them.
 *   unreadable-record    a record file that does not parse (truncated,
 *                        garbage): what it said cannot be known, so it is
 *                        replaced by what libvirt and sysfs show. A running
 *                        guest uses the mdev: record it for that guest, as
 *                        borrowed (nothing readable shows that mdev-hooks
 *                        created it). Else drop the file: an mdev that
 *                        exists is then left in place and reported as
 *                        foreign, never removed.
 *   unreadable-records   record files that do not parse, beyond those
 *                        named above: reported.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <time.h>

#include <json-c/json.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

#include "config.h"
#include "domxml.h"
#include "ledger.h"
#include "lock.h"
#include "log.h"
#include "reconcile.h"
#include "sysfs.h"
#include "vfio.h"
#include "vgpu.h"

static const char *const action_table[_RECONCILE_ACTION_MAX] = {
        [RECONCILE_ACTION_NONE] = "none",
        [RECONCILE_ACTION_DROP] = "drop-record",
        [RECONCILE_ACTION_MARK_LOST] = "mark-lost",
        [RECONCILE_ACTION_RECORD] = "record",
        [RECONCILE_ACTION_KEEP_FREE] = "keep-free",
        [RECONCILE_ACTION_REMOVE] = "remove",
};

const char *reconcile_action_to_string(ReconcileAction a) {
        if (a < 0 || a >= _RECONCILE_ACTION_MAX)
                return NULL;
        return action_table[a];
}

const char *reconcile_result_to_string(ReconcileResult r) {
        switch (r) {
        case RECONCILE_PLANNED:
                return "planned";
        case RECONCILE_DONE:
                return "done";
        case RECONCILE_FAILED:
                return "failed";
        case RECONCILE_SKIPPED:
                return "report-only";
        }
        return NULL;
}

/* --- libvirt ----------------------------------------------------------- */

/* libvirt prints every error to stderr unless told otherwise; we report its
 * message ourselves, once. */
static void libvirt_error_silent(void *userdata, virErrorPtr err) {
}

static void virDomainFreep(virDomainPtr *d) {
        if (*d)
                virDomainFree(*d);
}

static void virConnectClosep(virConnectPtr *c) {
        if (*c)
                virConnectClose(*c);
}

static const char *libvirt_message(void) {
        const char *m = virGetLastErrorMessage();
        return m ? m : "unknown libvirt error";
}

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

void reconcile_guests_free(ReconcileGuest *g, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(g[i].name);
                strv_free(g[i].live);
                strv_free(g[i].config);
                free(g[i].error);
        }
        free(g);
}

int reconcile_guests_load(const char *uri, ReconcileGuest **ret, size_t *ret_n) {
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
                        free(guests[n].name);
                        strv_free(guests[n].live);
                        strv_free(guests[n].config);
                        free(guests[n].error);
                        memset(&guests[n], 0, sizeof guests[n]);
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

/* --- deciding ------------------------------------------------------------ */

static int plan_add(ReconcilePlan *p, const char *uuid, const char *kind, const char *guest,
                    ReconcileAction action, bool counts, const LedgerEntry *entry,
                    const char *fmt, ...) _printf_(8, 9);

static int plan_add(ReconcilePlan *p, const char *uuid, const char *kind, const char *guest,
                    ReconcileAction action, bool counts, const LedgerEntry *entry,
                    const char *fmt, ...) {
        ReconcileFinding *f, *n;
        va_list ap;
        int k;

        n = realloc(p->findings, (p->n_findings + 1) * sizeof *n);
        if (!n)
                return -ENOMEM;
        p->findings = n;
        f = &p->findings[p->n_findings];
        *f = (ReconcileFinding) {
                .kind = kind,
                .action = action,
                .counts = counts,
                .result = RECONCILE_PLANNED,
        };
        snprintf(f->uuid, sizeof f->uuid, "%s", strempty(uuid));
        if (entry)
                f->entry = *entry;
        if (guest) {
                f->guest = strdup(guest);
                if (!f->guest)
                        return -ENOMEM;
        }
        va_start(ap, fmt);
        k = vasprintf(&f->message, fmt, ap);
        va_end(ap);
        if (k < 0) {
                free(f->guest);
                return -ENOMEM;
        }
        p->n_findings++;
        return 0;
}

static int entry_cmp(const void *key, const void *elem) {
        const LedgerEntry *e = elem;
        return strcmp(key, e->uuid);
}

static int mdev_cmp(const void *key, const void *elem) {
        const SysfsMdev *m = elem;
        return strcmp(key, m->uuid);
}

static int str_cmp(const void *a, const void *b) {
        return strcmp(*(char * const *) a, *(char * const *) b);
}

static bool strv_has(char * const *l, const char *s) {
        return l && bsearch(&s, l, strv_length(l), sizeof *l, str_cmp);
}

/* The record names this libvirt guest: same name, and the same UUID when both
 * are known (a guest undefined and defined again under the old name is
 * another guest). */
static bool record_is_guest(const LedgerEntry *e, const ReconcileGuest *g) {
        if (!g || !streq(e->guest, g->name))
                return false;
        return !e->guest_uuid[0] || !g->uuid[0] || streq(e->guest_uuid, g->uuid);
}

/* Written in an earlier boot: what it describes went away with the reboot. */
static bool record_is_old(const LedgerEntry *e, const ReconcileInput *in) {
        return e->boot_id[0] && in->boot_id && in->boot_id[0] && !streq(e->boot_id, in->boot_id);
}

/* "assigned to 'web1' (created)" */
static char *record_describe(const LedgerEntry *e) {
        const char *state = strna(ledger_state_to_string(e->state));
        const char *origin = strna(ledger_origin_to_string(e->origin));

        switch (e->state) {
        case LEDGER_ASSIGNED:
                return strdup_printf("assigned to '%s' (%s)", e->guest, origin);
        case LEDGER_INCOMING:
        case LEDGER_LOST:
                return strdup_printf("%s for '%s' (%s)", state, e->guest, origin);
        default:
                if (e->guest[0])
                        return strdup_printf("%s, last held by '%s' (%s)", state, e->guest, origin);
                return strdup_printf("%s (%s)", state, origin);
        }
}

static LedgerEntry entry_assigned(const LedgerEntry *old, const SysfsMdev *m, const ReconcileGuest *g,
                                  LedgerOrigin origin, const ReconcileInput *in) {
        LedgerEntry e = old ? *old : (LedgerEntry) { 0 };

        snprintf(e.uuid, sizeof e.uuid, "%s", m->uuid);
        snprintf(e.parent, sizeof e.parent, "%s", m->parent);
        snprintf(e.type, sizeof e.type, "%s", m->type);
        e.state = LEDGER_ASSIGNED;
        e.origin = origin;
        snprintf(e.guest, sizeof e.guest, "%s", g->name);
        snprintf(e.guest_uuid, sizeof e.guest_uuid, "%s", g->uuid);
        snprintf(e.boot_id, sizeof e.boot_id, "%s", strempty(in->boot_id));
        e.since = in->now;
        e.remove_pending = false;
        return e;
}

/* The record says what mdev-hooks holds; no running guest uses it (any
 * more). Undo it the way release would. */
static int plan_release(ReconcilePlan *p, const ReconcileInput *in, const LedgerEntry *e,
                        const char *kind, const char *why) {
        _cleanup_free_ char *desc = record_describe(e);
        const char *guest = e->guest[0] ? e->guest : NULL;

        if (!desc)
                return -ENOMEM;
        if (e->origin != LEDGER_CREATED)
                return plan_add(p, e->uuid, kind, guest, RECONCILE_ACTION_DROP, true, e,
                                "%s, %s; borrowed, so the mdev stays", desc, why);
        if (in->release == CONFIG_RELEASE_KEEP && !e->remove_pending) {
                LedgerEntry f = *e;

                if (e->state == LEDGER_FREE)
                        return 0; /* kept by policy: all agrees */
                ledger_entry_set_free(&f, in->now);
                return plan_add(p, e->uuid, kind, guest, RECONCILE_ACTION_KEEP_FREE, true, &f,
                                "%s, %s", desc, why);
        }
        return plan_add(p, e->uuid, kind, guest, RECONCILE_ACTION_REMOVE, true, e,
                        "%s, %s", desc, why);
}

static int plan_uuid(ReconcilePlan *p, const ReconcileInput *in, const char *uuid) {
        const LedgerEntry *e = in->n_records > 0 ?
                bsearch(uuid, in->records, in->n_records, sizeof *in->records, entry_cmp) : NULL;
        const SysfsMdev *m = in->n_mdevs > 0 ?
                bsearch(uuid, in->mdevs, in->n_mdevs, sizeof *in->mdevs, mdev_cmp) : NULL;
        const ReconcileGuest *run = NULL, *def = NULL, *owner = NULL;
        size_t n_run = 0;
        _cleanup_free_ char *desc = NULL;

        /* Who uses this UUID: running guests (live XML) and defined ones. The
         * guests are sorted by name, so the first one found is stable. */
        for (size_t i = 0; i < in->n_guests; i++) {
                const ReconcileGuest *g = &in->guests[i];
                bool uses_live = g->active && strv_has(g->live, uuid);
                bool uses_def = strv_has(g->config, uuid) || uses_live;

                if (uses_live) {
                        if (n_run++ == 0)
                                run = g;
                        else
                                return plan_add(p, uuid, "shared-mdev", g->name, RECONCILE_ACTION_NONE, true, e,
                                                "running guests '%s' and '%s' both use this mdev", run->name, g->name);
                }
                if (uses_def && (!def || (e && record_is_guest(e, g) && !record_is_guest(e, def))))
                        def = g;
                if (e && record_is_guest(e, g))
                        owner = g;
        }

        if (!e && strv_has(in->bad_records, uuid)) {
                if (m && run) {
                        LedgerEntry f = entry_assigned(NULL, m, run, LEDGER_BORROWED, in);
                        return plan_add(p, uuid, "unreadable-record", run->name, RECONCILE_ACTION_RECORD, true, &f,
                                        "its record file '/" LEDGER_DIR "/%s' does not parse; running guest '%s' uses "
                                        "this mdev (%s, %s), and nothing readable shows mdev-hooks created it",
                                        uuid, run->name, m->parent, m->type);
                }
                return plan_add(p, uuid, "unreadable-record", run ? run->name : NULL, RECONCILE_ACTION_DROP, true, NULL,
                                "its record file '/" LEDGER_DIR "/%s' does not parse, and %s",
                                uuid, m ? "no running guest uses the mdev: it stays, to be removed by hand if nothing needs it "
                                          "(nothing readable shows mdev-hooks created it)" :
                                      "the mdev does not exist");
        }

        if (!e) {
                if (m && run) {
                        LedgerEntry f = entry_assigned(NULL, m, run, LEDGER_BORROWED, in);
                        return plan_add(p, uuid, "unrecorded-in-use", run->name, RECONCILE_ACTION_RECORD, true, &f,
                                        "running guest '%s' uses this mdev (%s, %s) but it has no record, "
                                        "and nothing shows mdev-hooks created it",
                                        run->name, m->parent, m->type);
                }
                if (m)
                        return plan_add(p, uuid, "foreign", def ? def->name : NULL, RECONCILE_ACTION_NONE, false, NULL,
                                        "mdev (%s, %s) not created by mdev-hooks, used by no running guest%s%s%s; never touched",
                                        m->parent, m->type,
                                        def ? " (defined guest '" : "", def ? def->name : "", def ? "' uses it)" : "");
                if (run)
                        return plan_add(p, uuid, "missing-mdev", run->name, RECONCILE_ACTION_NONE, true, NULL,
                                        "running guest '%s' uses this mdev but it does not exist and has no record",
                                        run->name);
                return 0; /* only a defined guest's: created at its next start */
        }

        desc = record_describe(e);
        if (!desc)
                return -ENOMEM;

        if (!m) {
                /* The mdev is gone. A guest that runs with it, or a defined
                 * guest whose record is from before a reboot, should have it:
                 * lost, so that it is created again (recreate = eager does
                 * it at boot). A record of this boot for a guest that is not
                 * running is what an interrupted prepare or release leaves:
                 * a stopped guest holds nothing, so it goes, as its release
                 * would have done. */
                const ReconcileGuest *g = run ? run :
                                          e->state == LEDGER_LOST || record_is_old(e, in) ? def : NULL;

                if (e->state == LEDGER_LOST && g && record_is_guest(e, g))
                        return 0; /* lost, and its guest will create it again */
                if (g && !e->remove_pending) {
                        LedgerEntry f = *e;

                        f.state = LEDGER_LOST;
                        snprintf(f.guest, sizeof f.guest, "%s", g->name);
                        snprintf(f.guest_uuid, sizeof f.guest_uuid, "%s", g->uuid);
                        f.since = in->now;
                        return plan_add(p, uuid, "record-without-mdev", g->name, RECONCILE_ACTION_MARK_LOST, true, &f,
                                        "%s but the mdev does not exist; %s '%s' uses it",
                                        desc, g->active ? "running guest" : "after a reboot, defined guest", g->name);
                }
                return plan_add(p, uuid, "record-without-mdev", e->guest[0] ? e->guest : NULL,
                                RECONCILE_ACTION_DROP, true, e,
                                "%s but the mdev does not exist%s", desc,
                                e->remove_pending ? " (its pending remove is done)" :
                                def ? ", and no running guest uses it (a start creates it again)" :
                                ", and no guest uses it");
        }

        /* The mdev exists. Does the record describe it? A record from an
         * earlier boot, a lost one, or one with another parent or type
         * describes an mdev that went away; the one there now was not
         * created by mdev-hooks in this boot. */
        if (e->state == LEDGER_LOST || record_is_old(e, in) ||
            !streq(e->parent, m->parent) || !streq(e->type, m->type)) {
                const char *why = e->state == LEDGER_LOST ? "says it is lost" :
                                  record_is_old(e, in) ? "is from an earlier boot" :
                                  "names another parent or type";

                if (run) {
                        LedgerEntry f = entry_assigned(e, m, run, LEDGER_BORROWED, in);
                        return plan_add(p, uuid, "stale-record", run->name, RECONCILE_ACTION_RECORD, true, &f,
                                        "record (%s, %s/%s) %s, but the mdev exists (%s, %s) and running guest '%s' "
                                        "uses it; mdev-hooks did not create it in this boot",
                                        desc, e->parent, e->type, why, m->parent, m->type, run->name);
                }
                return plan_add(p, uuid, "stale-record", e->guest[0] ? e->guest : NULL, RECONCILE_ACTION_DROP, true, e,
                                "record (%s, %s/%s) %s; the mdev there now (%s, %s) was not created by mdev-hooks "
                                "in this boot and no guest runs with it, so it stays",
                                desc, e->parent, e->type, why, m->parent, m->type);
        }

        if (run) {
                LedgerEntry f;

                if (record_is_guest(e, run) && e->state == LEDGER_ASSIGNED && !e->remove_pending)
                        return 0; /* all agrees */
                f = entry_assigned(e, m, run, e->origin, in);
                if (record_is_guest(e, run))
                        return plan_add(p, uuid, "unrecorded-in-use", run->name, RECONCILE_ACTION_RECORD, true, &f,
                                        "%s%s, and running guest '%s' uses it",
                                        desc, e->remove_pending ? ", marked for removal" : "", run->name);
                if (streq(e->guest, run->name))
                        return plan_add(p, uuid, "unrecorded-in-use", run->name, RECONCILE_ACTION_RECORD, true, &f,
                                        "%s with guest UUID %s, but the running '%s' is another guest (UUID %s), "
                                        "defined again under the old name",
                                        desc, e->guest_uuid, run->name, run->uuid);
                return plan_add(p, uuid, "unrecorded-in-use", run->name, RECONCILE_ACTION_RECORD, true, &f,
                                "%s, but running guest '%s' uses it",
                                desc, run->name);
        }

        /* No running guest uses it. */
        if (e->remove_pending)
                return plan_release(p, in, e, "remove-pending", "marked for removal after a busy remove");

        switch (e->state) {
        case LEDGER_ASSIGNED:
                return plan_release(p, in, e, "unused",
                                    owner && owner->active ? "which runs without it" :
                                    owner ? "which is not running" : "which is not defined here");
        case LEDGER_INCOMING: {
                uint64_t age = in->now > e->since ? in->now - e->since : 0;

                if (age < RECONCILE_INCOMING_MAX_AGE_SEC)
                        return 0; /* a migration may be arriving */
                _cleanup_free_ char *why = strdup_printf("claimed %" PRIu64 " minutes ago, and the guest %s",
                                                         age / 60, owner && owner->active ?
                                                         "runs without it" : "is not running here");
                if (!why)
                        return -ENOMEM;
                return plan_release(p, in, e, "incoming-expired", why);
        }
        case LEDGER_FREE:
                if (e->origin == LEDGER_CREATED && in->release == CONFIG_RELEASE_KEEP)
                        return 0;
                return plan_release(p, in, e, "unused",
                                    e->origin == LEDGER_CREATED ? "and the config says release = remove" :
                                    "held by nobody");
        default:
                return 0;
        }
}

static int finding_cmp(const void *a, const void *b) {
        const ReconcileFinding *x = a, *y = b;
        int c;

        c = strcmp(x->uuid, y->uuid);
        if (c != 0)
                return c;
        c = strcmp(x->kind, y->kind);
        if (c != 0)
                return c;
        return strcmp(strempty(x->guest), strempty(y->guest));
}

/* Undoes or gives away something: not done while a guest's XML cannot be
 * read, since that guest may hold any mdev. Recording an mdev for a running
 * guest only protects it. */
static bool action_is_destructive(ReconcileAction a) {
        return a == RECONCILE_ACTION_DROP || a == RECONCILE_ACTION_MARK_LOST ||
               a == RECONCILE_ACTION_KEEP_FREE || a == RECONCILE_ACTION_REMOVE;
}

int reconcile_plan(const ReconcileInput *in, ReconcilePlan *ret) {
        _cleanup_strv_free_ char **uuids = NULL;
        ReconcilePlan p = { 0 };
        bool uncertain = false;
        int r = 0;

        for (size_t i = 0; i < in->n_records && r >= 0; i++)
                r = strv_extend(&uuids, in->records[i].uuid);
        for (size_t i = 0; i < in->n_mdevs && r >= 0; i++)
                r = strv_extend(&uuids, in->mdevs[i].uuid);
        for (size_t i = 0; i < in->n_guests && r >= 0; i++) {
                const ReconcileGuest *g = &in->guests[i];

                if (g->error) {
                        uncertain = true;
                        r = plan_add(&p, NULL, "unreadable-guest", g->name, RECONCILE_ACTION_NONE, true, NULL,
                                     "guest '%s': %s; no record is dropped and no mdev removed until it can be read",
                                     g->name, g->error);
                }
                for (char **u = g->live; u && *u && r >= 0; u++)
                        r = strv_extend(&uuids, *u);
        }
        for (char * const *u = in->bad_records; u && *u && r >= 0; u++)
                r = strv_extend(&uuids, *u);
        if (r >= 0 && in->n_bad_records > strv_length(in->bad_records))
                r = plan_add(&p, NULL, "unreadable-records", NULL, RECONCILE_ACTION_NONE, true, NULL,
                             "%zu file(s) under /" LEDGER_DIR " do not parse; fix or remove them by hand",
                             in->n_bad_records - strv_length(in->bad_records));

        /* Each UUID once, in order. */
        strv_sort(uuids);
        for (char **u = uuids; u && *u && r >= 0; u++)
                if (u == uuids || !streq(u[-1], *u))
                        r = plan_uuid(&p, in, *u);
        if (r < 0) {
                reconcile_plan_done(&p);
                return r;
        }

        for (size_t i = 0; i < p.n_findings; i++) {
                ReconcileFinding *f = &p.findings[i];
                char *m;

                if (!uncertain || !action_is_destructive(f->action))
                        continue;
                m = strdup_printf("%s; left as it is while a guest's XML cannot be read", f->message);
                if (!m) {
                        reconcile_plan_done(&p);
                        return -ENOMEM;
                }
                free(f->message);
                f->message = m;
                f->action = RECONCILE_ACTION_NONE;
        }

        if (p.n_findings > 1)
                qsort(p.findings, p.n_findings, sizeof *p.findings, finding_cmp);
        *ret = p;
        return 0;
}

size_t reconcile_plan_count(const ReconcilePlan *p) {
        size_t n = 0;

        for (size_t i = 0; i < p->n_findings; i++)
                n += p->findings[i].counts;
        return n;
}

void reconcile_plan_done(ReconcilePlan *p) {
        for (size_t i = 0; i < p->n_findings; i++) {
                free(p->findings[i].guest);
                free(p->findings[i].message);
                free(p->findings[i].error);
        }
        free(p->findings);
        *p = (ReconcilePlan) { 0 };
}

/* --- acting -------------------------------------------------------------- */

/* error_set() with the message a library call left, which lives in the same
 * buffer error_set() writes: copied first. */
static int error_wrap(int r, const char *what) {
        char inner[512];

        snprintf(inner, sizeof inner, "%s", error_get(r));
        return error_set(r, "%s: %s", what, inner);
}

static int apply_one(ReconcileFinding *f, int rootfd, int ledgerfd) {
        int r;

        switch (f->action) {
        case RECONCILE_ACTION_NONE:
                return 0;
        case RECONCILE_ACTION_DROP:
                r = ledger_remove(ledgerfd, f->uuid);
                if (r < 0)
                        return error_set(r, "cannot remove the record: %s", strerror(-r));
                return 0;
        case RECONCILE_ACTION_MARK_LOST:
        case RECONCILE_ACTION_RECORD:
        case RECONCILE_ACTION_KEEP_FREE:
                r = ledger_write(ledgerfd, &f->entry);
                if (r < 0)
                        return error_wrap(r, "cannot write the record");
                return 0;
        case RECONCILE_ACTION_REMOVE:
                r = ledger_key_is_vf(f->uuid) ? vgpu_clear(rootfd, f->uuid, 0) : sysfs_mdev_remove(rootfd, f->uuid);
                if (r == -EPERM && ledger_key_is_vf(f->uuid))
                        r = -EBUSY; /* nvidia: a guest still has the VF open */
                if (r == -EBUSY) {
                        LedgerEntry e = f->entry;
                        int k;

                        e.remove_pending = true;
                        k = ledger_write(ledgerfd, &e);
                        if (k < 0)
                                return error_wrap(k, "the mdev is busy, and marking it for a later remove failed");
                        return error_set(r, "the mdev is busy (in use?); marked for a later remove");
                }
                if (r < 0 && r != -ENOENT)
                        return error_set(r, "cannot remove the mdev: %s", strerror(-r));
                r = ledger_remove(ledgerfd, f->uuid);
                if (r < 0)
                        return error_set(r, "the mdev is removed but its record is not: %s", strerror(-r));
                return 0;
        default:
                return -EINVAL;
        }
}

size_t reconcile_apply(ReconcilePlan *p, int rootfd, int ledgerfd) {
        size_t unfixed = 0;

        for (size_t i = 0; i < p->n_findings; i++) {
                ReconcileFinding *f = &p->findings[i];
                int r;

                if (f->action == RECONCILE_ACTION_NONE) {
                        f->result = RECONCILE_SKIPPED;
                        unfixed += f->counts;
                        continue;
                }
                error_clear();
                r = apply_one(f, rootfd, ledgerfd);
                if (r < 0) {
                        f->result = RECONCILE_FAILED;
                        f->error = strdup(error_get(r));
                        unfixed += f->counts;
                } else
                        f->result = RECONCILE_DONE;
        }
        return unfixed;
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

void reconcile_print_text(const ReconcilePlan *p, bool applied, FILE *f) {
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
                case RECONCILE_SKIPPED:
                        break;
                case RECONCILE_PLANNED:
                        if (x->action != RECONCILE_ACTION_NONE)
                                fputs(" (with --apply)", f);
                        break;
                }
                fputc('\n', f);
        }
}

static void json_object_putp(json_object **o) {
        if (*o)
                json_object_put(*o);
}

static int json_add_string(json_object *o, const char *key, const char *value) {
        json_object *v = value ? json_object_new_string(value) : NULL;

        if (value && !v)
                return -ENOMEM;
        if (json_object_object_add(o, key, v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
}

static int json_add(json_object *o, const char *key, json_object *v) {
        if (!v || json_object_object_add(o, key, v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
}

int reconcile_print_json(const ReconcilePlan *p, bool applied, FILE *f) {
        _cleanup_(json_object_putp) json_object *root = json_object_new_object();
        json_object *list = json_object_new_array();
        size_t fixed = 0, failed = 0;
        int r;

        if (!root || !list) {
                json_object_put(list);
                return -ENOMEM;
        }
        r = json_add(root, "findings", list);
        if (r < 0)
                return r;

        for (size_t i = 0; i < p->n_findings; i++) {
                const ReconcileFinding *x = &p->findings[i];
                _cleanup_free_ char *what = action_describe(x);
                json_object *o = json_object_new_object();

                if (!o || json_object_array_add(list, o) < 0) {
                        json_object_put(o);
                        return -ENOMEM;
                }
                if ((r = json_add_string(o, "uuid", x->uuid[0] ? x->uuid : NULL)) < 0 ||
                    (r = json_add_string(o, "finding", x->kind)) < 0 ||
                    (r = json_add_string(o, "guest", x->guest)) < 0 ||
                    (r = json_add_string(o, "message", x->message)) < 0 ||
                    (r = json_add_string(o, "action", reconcile_action_to_string(x->action))) < 0 ||
                    (r = json_add_string(o, "action_text", what)) < 0 ||
                    (r = json_add(o, "counts", json_object_new_boolean(x->counts))) < 0 ||
                    (r = json_add_string(o, "result", reconcile_result_to_string(x->result))) < 0 ||
                    (r = json_add_string(o, "error", x->error)) < 0)
                        return r;
                fixed += x->result == RECONCILE_DONE;
                failed += x->result == RECONCILE_FAILED;
        }

        if ((r = json_add(root, "applied", json_object_new_boolean(applied))) < 0 ||
            (r = json_add(root, "found", json_object_new_int64((int64_t) reconcile_plan_count(p)))) < 0 ||
            (r = json_add(root, "fixed", json_object_new_int64((int64_t) fixed))) < 0 ||
            (r = json_add(root, "failed", json_object_new_int64((int64_t) failed))) < 0)
                return r;

        fputs(json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                                   JSON_C_TO_STRING_NOSLASHESCAPE), f);
        fputc('\n', f);
        return 0;
}

/* --- the command ------------------------------------------------------------ */

static void help(FILE *f) {
        fputs("usage: mdev-hooks reconcile [--connect URI] [--apply] [--json]\n"
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
              "(or unreadable), 2 bad usage or config. See mdev-hooks(8).\n", f);
}

static int safe_close(int fd) {
        if (fd >= 0)
                close(fd);
        return -1;
}

/* The record and sysfs as read at one moment. */
typedef struct HostState {
        LedgerEntry *records;
        size_t n_records;
        size_t n_bad;
        char **bad;          /* the UUIDs of the n_bad files */
        SysfsMdev *mdevs;
        size_t n_mdevs;
} HostState;

static void host_state_done(HostState *h) {
        strv_free(h->bad);
        free(h->records);
        free(h->mdevs);
        *h = (HostState) { 0 };
}

/* Reads the record (none if its directory does not exist) and sysfs. Logs. */
static int host_state_read(int rootfd, HostState *ret) {
        _cleanup_close_ int ledgerfd = -1;
        HostState h = { 0 };
        int r;

        error_clear();
        r = ledger_open_existing(rootfd, &ledgerfd);
        if (r >= 0)
                r = ledger_list(ledgerfd, &h.records, &h.n_records, &h.n_bad);
        if (r >= 0 && h.n_bad > 0)
                r = ledger_list_unreadable(ledgerfd, &h.bad);
        if (r < 0 && r != -ENOENT) {
                log_error("cannot read the record under /" LEDGER_DIR ": %s", error_get(r));
                host_state_done(&h);
                return r;
        }
        error_clear();
        r = sysfs_mdev_list(rootfd, &h.mdevs, &h.n_mdevs);
        if (r >= 0) /* and the programmed VFs of NVIDIA's VFIO framework */
                r = vfio_vgpus_append(rootfd, &h.mdevs, &h.n_mdevs);
        if (r < 0) {
                log_error("cannot list the mdevs in sysfs: %s", error_get(r));
                host_state_done(&h);
                return r;
        }
        *ret = h;
        return 0;
}

static bool entry_equal(const LedgerEntry *a, const LedgerEntry *b) {
        return streq(a->uuid, b->uuid) && streq(a->parent, b->parent) && streq(a->type, b->type) &&
               a->state == b->state && a->origin == b->origin && streq(a->guest, b->guest) &&
               streq(a->guest_uuid, b->guest_uuid) && streq(a->boot_id, b->boot_id) &&
               a->since == b->since && a->remove_pending == b->remove_pending;
}

static bool host_state_equal(const HostState *a, const HostState *b) {
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

int reconcile_main(int argc, char *argv[], const char *config_path) {
        static const struct option options[] = {
                { "connect", required_argument, NULL, 'c' },
                { "apply",   no_argument,       NULL, 'a' },
                { "json",    no_argument,       NULL, 'j' },
                { "help",    no_argument,       NULL, 'h' },
                { "version", no_argument,       NULL, 'V' },
                { 0 }
        };
        _cleanup_config_free_ Config *config = NULL;
        _cleanup_strv_free_ char **errors = NULL;
        _cleanup_close_ int rootfd = -1, lockfd = -1, ledgerfd = -1;
        HostState host = { 0 };
        ReconcileGuest *guests = NULL;
        ReconcilePlan plan = { 0 };
        char boot_id[UUID_STRING_MAX] = "";
        const char *uri = RECONCILE_DEFAULT_URI;
        bool apply = false, json = false;
        size_t n_guests = 0, unfixed;
        int c, r, status;

        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, "+c:ajh", options, NULL)) >= 0)
                switch (c) {
                case 'c':
                        uri = optarg;
                        break;
                case 'a':
                        apply = true;
                        break;
                case 'j':
                        json = true;
                        break;
                case 'h':
                        help(stdout);
                        return 0;
                case 'V':
                        puts("mdev-hooks " PACKAGE_VERSION);
                        return 0;
                default:
                        log_error("reconcile: unknown option or missing argument '%s'; see 'mdev-hooks reconcile --help'",
                                  argv[optind - 1]);
                        return 2;
                }
        if (optind < argc) {
                log_error("reconcile: unexpected argument '%s'; see 'mdev-hooks reconcile --help'", argv[optind]);
                return 2;
        }

        r = root_open(&rootfd);
        if (r < 0) {
                log_error("cannot open the root directory: %s", error_get(r));
                return 1;
        }
        r = config_load(rootfd, config_path, &config, &errors);
        if (r < 0) {
                for (char **e = errors; e && *e; e++)
                        log_error("%s", *e);
                if (strv_length(errors) == 0)
                        log_error("cannot load the config: %s", error_get(r));
                return 2;
        }
        for (char **w = config->warnings; w && *w; w++)
                log_warning("%s", *w);

        /* libvirt is never asked while the lock is held. A hook runs with
         * its domain locked inside libvirtd, and listing the guests or
         * reading one's XML takes that domain's lock: a prepare waiting for
         * our lock would wait for us while we wait for it, until its
         * lock_timeout fails the guest's start. So with --apply: read the
         * record and sysfs under the lock, ask libvirt without it, take the
         * lock again and act only if nothing changed meanwhile (every change
         * a hook makes shows in the record or in sysfs); else read again.
         * A guest being started is active in libvirt (paused, starting up)
         * before its prepare runs, so no prepare can complete unseen. */
        for (unsigned attempt = 1;; attempt++) {
                HostState before = { 0 };

                if (apply) {
                        r = lock_acquire(rootfd, config->lock_timeout, "mdev-hooks reconcile --apply", &lockfd);
                        if (r < 0) {
                                log_error("%s", error_get(r));
                                return 1;
                        }
                        r = host_state_read(rootfd, &before);
                        lockfd = safe_close(lockfd);
                        if (r < 0)
                                return 1;
                }

                error_clear();
                r = reconcile_guests_load(uri, &guests, &n_guests);
                if (r < 0) {
                        log_error("%s", error_get(r));
                        host_state_done(&before);
                        return 1;
                }

                if (apply) {
                        r = lock_acquire(rootfd, config->lock_timeout, "mdev-hooks reconcile --apply", &lockfd);
                        if (r < 0) {
                                log_error("%s", error_get(r));
                                host_state_done(&before);
                                status = 1;
                                goto finish;
                        }
                }
                r = host_state_read(rootfd, &host);
                if (r < 0) {
                        host_state_done(&before);
                        status = 1;
                        goto finish;
                }
                if (!apply || host_state_equal(&before, &host)) {
                        host_state_done(&before);
                        break;
                }
                host_state_done(&before);
                host_state_done(&host);
                reconcile_guests_free(guests, n_guests);
                guests = NULL;
                n_guests = 0;
                lockfd = safe_close(lockfd);
                if (attempt >= RECONCILE_READ_TRIES) {
                        log_error("the record kept changing while reconcile read libvirt's guests "
                                  "(hooks at work); nothing was changed, run it again");
                        return 1;
                }
        }

        r = boot_id_read(rootfd, boot_id);
        if (r < 0)
                boot_id[0] = '\0'; /* records' boot ids are then not compared */

        r = reconcile_plan(&(ReconcileInput) {
                        .guests = guests,
                        .n_guests = n_guests,
                        .records = host.records,
                        .n_records = host.n_records,
                        .n_bad_records = host.n_bad,
                        .bad_records = host.bad,
                        .mdevs = host.mdevs,
                        .n_mdevs = host.n_mdevs,
                        .release = config->release,
                        .boot_id = boot_id,
                        .now = (uint64_t) time(NULL),
                }, &plan);
        if (r < 0) {
                log_error("reconcile: %s", strerror(-r));
                status = 1;
                goto finish;
        }

        unfixed = reconcile_plan_count(&plan);
        if (apply && plan.n_findings > 0) {
                r = ledger_open(rootfd, &ledgerfd);
                if (r < 0) {
                        log_error("cannot open the record under /" LEDGER_DIR ": %s", error_get(r));
                        status = 1;
                        goto finish;
                }
                unfixed = reconcile_apply(&plan, rootfd, ledgerfd);
        }
        status = unfixed > 0 ? 1 : 0;

        if (json)
                r = reconcile_print_json(&plan, apply, stdout);
        else {
                reconcile_print_text(&plan, apply, stdout);
                r = 0;
        }
        if (r < 0) {
                log_error("reconcile: cannot print: %s", strerror(-r));
                status = 1;
        }
        if (fflush(stdout) != 0)
                status = 1;

finish:
        reconcile_plan_done(&plan);
        reconcile_guests_free(guests, n_guests);
        host_state_done(&host);
        return status;
}
