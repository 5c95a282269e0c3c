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
#include <inttypes.h>
#include <stdarg.h>

#include "config.h"
#include "ledger.h"
#include "reconcile.h"
#include "sysfs.h"
#include "backend.h"

ENUM_IMPL(reconcile_action, ReconcileAction, _RECONCILE_ACTION_MAX,
          "none",
          "drop-record",
          "mark-lost",
          "record",
          "keep-free",
          "remove");

ENUM_IMPL(reconcile_result, ReconcileResult, _RECONCILE_RESULT_MAX,
          "planned",
          "done",
          "failed",
          "report-only");

void reconcile_guest_done(ReconcileGuest *g) {
        free(g->name);
        strv_free(g->live);
        strv_free(g->config);
        free(g->error);
        *g = (ReconcileGuest) { 0 };
}

void reconcile_guests_free(ReconcileGuest *g, size_t n) {
        for (size_t i = 0; i < n; i++)
                reconcile_guest_done(&g[i]);
        free(g);
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

static LedgerEntry entry_assigned(const SysfsMdev *m, const ReconcileGuest *g, LedgerOrigin origin,
                                  const ReconcileInput *in) {
        LedgerHolder h = { .guest = g->name, .guest_uuid = g->uuid, .boot_id = in->boot_id, .since = in->now };
        LedgerEntry e;

        ledger_entry_init(&e, m->uuid, m->parent, m->type, LEDGER_ASSIGNED, origin, &h);
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

/* Who uses one UUID: running guests (live XML) and defined ones. */
typedef struct Users {
        const ReconcileGuest *run;    /* the running guest that uses it */
        const ReconcileGuest *shared; /* a second running guest that uses it: a person decides */
        const ReconcileGuest *def;    /* a guest whose definition uses it, the record's own first */
        const ReconcileGuest *owner;  /* the guest the record names */
} Users;

/* The guests are sorted by name, so the first one found is stable. */
static Users uuid_users(const ReconcileInput *in, const char *uuid, const LedgerEntry *e) {
        Users u = { 0 };

        for (size_t i = 0; i < in->n_guests; i++) {
                const ReconcileGuest *g = &in->guests[i];
                bool uses_live = g->active && strv_has(g->live, uuid);
                bool uses_def = strv_has(g->config, uuid) || uses_live;

                if (uses_live && u.run) {
                        u.shared = g;
                        break;
                }
                if (uses_live)
                        u.run = g;
                if (uses_def && (!u.def || (e && record_is_guest(e, g) && !record_is_guest(e, u.def))))
                        u.def = g;
                if (e && record_is_guest(e, g))
                        u.owner = g;
        }
        return u;
}

/* Its record file does not parse: replaced by what libvirt and sysfs show. */
static int plan_unreadable(ReconcilePlan *p, const ReconcileInput *in, const char *uuid,
                           const SysfsMdev *m, const ReconcileGuest *run) {
        if (m && run) {
                LedgerEntry f = entry_assigned(m, run, LEDGER_BORROWED, in);
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

/* No record. */
static int plan_unrecorded(ReconcilePlan *p, const ReconcileInput *in, const char *uuid,
                           const SysfsMdev *m, const Users *u) {
        if (m && u->run) {
                LedgerEntry f = entry_assigned(m, u->run, LEDGER_BORROWED, in);
                return plan_add(p, uuid, "unrecorded-in-use", u->run->name, RECONCILE_ACTION_RECORD, true, &f,
                                "running guest '%s' uses this mdev (%s, %s) but it has no record, "
                                "and nothing shows mdev-hooks created it",
                                u->run->name, m->parent, m->type);
        }
        if (m)
                return plan_add(p, uuid, "foreign", u->def ? u->def->name : NULL, RECONCILE_ACTION_NONE, false, NULL,
                                "mdev (%s, %s) not created by mdev-hooks, used by no running guest%s%s%s; never touched",
                                m->parent, m->type,
                                u->def ? " (defined guest '" : "", u->def ? u->def->name : "", u->def ? "' uses it)" : "");
        if (u->run)
                return plan_add(p, uuid, "missing-mdev", u->run->name, RECONCILE_ACTION_NONE, true, NULL,
                                "running guest '%s' uses this mdev but it does not exist and has no record",
                                u->run->name);
        return 0; /* only a defined guest's: created at its next start */
}

/* The mdev is gone. A guest that runs with it, or a defined guest whose
 * record is from before a reboot, should have it: lost, so that it is
 * created again (recreate = eager does it at boot). A record of this boot
 * for a guest that is not running is what an interrupted prepare or release
 * leaves: a stopped guest holds nothing, so it goes, as its release would
 * have done. */
static int plan_gone(ReconcilePlan *p, const ReconcileInput *in, const LedgerEntry *e,
                     const char *desc, const Users *u) {
        const ReconcileGuest *g = u->run ? u->run :
                                  e->state == LEDGER_LOST || record_is_old(e, in) ? u->def : NULL;

        if (e->state == LEDGER_LOST && g && record_is_guest(e, g))
                return 0; /* lost, and its guest will create it again */
        if (g && !e->remove_pending) {
                LedgerEntry f = *e;

                f.state = LEDGER_LOST;
                snprintf(f.guest, sizeof f.guest, "%s", g->name);
                snprintf(f.guest_uuid, sizeof f.guest_uuid, "%s", g->uuid);
                f.since = in->now;
                return plan_add(p, e->uuid, "record-without-mdev", g->name, RECONCILE_ACTION_MARK_LOST, true, &f,
                                "%s but the mdev does not exist; %s '%s' uses it",
                                desc, g->active ? "running guest" : "after a reboot, defined guest", g->name);
        }
        return plan_add(p, e->uuid, "record-without-mdev", e->guest[0] ? e->guest : NULL,
                        RECONCILE_ACTION_DROP, true, e,
                        "%s but the mdev does not exist%s", desc,
                        e->remove_pending ? " (its pending remove is done)" :
                        u->def ? ", and no running guest uses it (a start creates it again)" :
                        ", and no guest uses it");
}

/* Why the record does not describe the mdev there now, or NULL if it does.
 * A record from an earlier boot, a lost one, or one with another parent or
 * type describes an mdev that went away. */
static const char *record_stale_why(const LedgerEntry *e, const SysfsMdev *m, const ReconcileInput *in) {
        if (e->state == LEDGER_LOST)
                return "says it is lost";
        if (record_is_old(e, in))
                return "is from an earlier boot";
        if (!streq(e->parent, m->parent) || !streq(e->type, m->type))
                return "names another parent or type";
        return NULL;
}

/* The mdev there now was not created by mdev-hooks in this boot. */
static int plan_stale(ReconcilePlan *p, const ReconcileInput *in, const LedgerEntry *e, const SysfsMdev *m,
                      const char *desc, const char *why, const ReconcileGuest *run) {
        if (run) {
                LedgerEntry f = entry_assigned(m, run, LEDGER_BORROWED, in);
                return plan_add(p, e->uuid, "stale-record", run->name, RECONCILE_ACTION_RECORD, true, &f,
                                "record (%s, %s/%s) %s, but the mdev exists (%s, %s) and running guest '%s' "
                                "uses it; mdev-hooks did not create it in this boot",
                                desc, e->parent, e->type, why, m->parent, m->type, run->name);
        }
        return plan_add(p, e->uuid, "stale-record", e->guest[0] ? e->guest : NULL, RECONCILE_ACTION_DROP, true, e,
                        "record (%s, %s/%s) %s; the mdev there now (%s, %s) was not created by mdev-hooks "
                        "in this boot and no guest runs with it, so it stays",
                        desc, e->parent, e->type, why, m->parent, m->type);
}

/* The record describes the mdev, and a running guest uses it. */
static int plan_in_use(ReconcilePlan *p, const ReconcileInput *in, const LedgerEntry *e, const SysfsMdev *m,
                       const char *desc, const ReconcileGuest *run) {
        LedgerEntry f;

        if (record_is_guest(e, run) && e->state == LEDGER_ASSIGNED && !e->remove_pending)
                return 0; /* all agrees */
        f = entry_assigned(m, run, e->origin, in);
        if (record_is_guest(e, run))
                return plan_add(p, e->uuid, "unrecorded-in-use", run->name, RECONCILE_ACTION_RECORD, true, &f,
                                "%s%s, and running guest '%s' uses it",
                                desc, e->remove_pending ? ", marked for removal" : "", run->name);
        if (streq(e->guest, run->name))
                return plan_add(p, e->uuid, "unrecorded-in-use", run->name, RECONCILE_ACTION_RECORD, true, &f,
                                "%s with guest UUID %s, but the running '%s' is another guest (UUID %s), "
                                "defined again under the old name",
                                desc, e->guest_uuid, run->name, run->uuid);
        return plan_add(p, e->uuid, "unrecorded-in-use", run->name, RECONCILE_ACTION_RECORD, true, &f,
                        "%s, but running guest '%s' uses it",
                        desc, run->name);
}

/* The record describes the mdev, and no running guest uses it. */
static int plan_unused(ReconcilePlan *p, const ReconcileInput *in, const LedgerEntry *e,
                       const ReconcileGuest *owner) {
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

/* Every finding about one UUID that the record, sysfs or a running guest
 * knows. */
static int plan_uuid(ReconcilePlan *p, const ReconcileInput *in, const char *uuid) {
        const LedgerEntry *e = in->n_records > 0 ?
                bsearch(uuid, in->records, in->n_records, sizeof *in->records, entry_cmp) : NULL;
        const SysfsMdev *m = in->n_mdevs > 0 ?
                bsearch(uuid, in->mdevs, in->n_mdevs, sizeof *in->mdevs, mdev_cmp) : NULL;
        Users u = uuid_users(in, uuid, e);
        _cleanup_free_ char *desc = NULL;
        const char *why;

        if (u.shared)
                return plan_add(p, uuid, "shared-mdev", u.shared->name, RECONCILE_ACTION_NONE, true, e,
                                "running guests '%s' and '%s' both use this mdev", u.run->name, u.shared->name);
        if (!e && strv_has(in->bad_records, uuid))
                return plan_unreadable(p, in, uuid, m, u.run);
        if (!e)
                return plan_unrecorded(p, in, uuid, m, &u);

        desc = record_describe(e);
        if (!desc)
                return -ENOMEM;
        if (!m)
                return plan_gone(p, in, e, desc, &u);
        why = record_stale_why(e, m, in);
        if (why)
                return plan_stale(p, in, e, m, desc, why, u.run);
        if (u.run)
                return plan_in_use(p, in, e, m, desc, u.run);
        return plan_unused(p, in, e, u.owner);
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
                        return error_prefix(r, "cannot write the record");
                return 0;
        case RECONCILE_ACTION_REMOVE:
                r = backend_device_remove(rootfd, &f->entry, 0); /* -EBUSY: in use */
                if (r == -EBUSY) {
                        LedgerEntry e = f->entry;
                        int k;

                        e.remove_pending = true;
                        k = ledger_write(ledgerfd, &e);
                        if (k < 0)
                                return error_prefix(k, "the mdev is busy, and marking it for a later remove failed");
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
