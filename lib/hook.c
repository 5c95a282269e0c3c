/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The libvirt qemu hook's operations: prepare, release, reconnect (hook.h).
 * migrate/restore are in migrate.c.
 *
 * Everything below runs under the host-wide lock, so a kill is the only way
 * to leave a half-done change. The crash-safety rule is stated once, at
 * the top of alloc.c, and doc/design.md §4.4 lists each kill point of these
 * operations and what repairs it. Records are written and removed without the fsync of the
 * record directory; each operation fsyncs it once, with hook_sync(), before
 * it returns to the worker, which then lets the lock go and exits. prepare
 * lets the lock go first, once everything is in place, and fsyncs before it
 * commits, so that a failed sync still rolls the start back (under the lock
 * again: prepare_sync()). Claims are checked against the record under the lock, so a record
 * never names another guest's mdev (doc/design.md §4.1).
 */
#include <stdio.h>
#include <time.h>

#include "alloc.h"
#include "crash.h"
#include "domscan.h"
#include "hook.h"
#include "ledger.h"
#include "log.h"
#include "lock.h"
#include "sysfs.h"
#include "vgpu.h"

_Static_assert(DOMSCAN_MAX_SIZE == DOMXML_MAX_SIZE, "the hook's scan and its parser must agree on the size limit");

/* How long release retries a busy remove before leaving it for later. */
#define RELEASE_REMOVE_MSEC 3000

static void hook_alloc_init(const HookContext *ctx, Alloc *a) {
        alloc_init(a, ctx->rootfd, ctx->ledgerfd, ctx->config, ctx->guest,
                   ctx->dom && ctx->dom->uuid[0] ? ctx->dom->uuid : NULL, ctx->boot_id);
        a->lockfd = ctx->lockfd;
        a->opened = ctx->opened;
}

/* Makes the operation's record changes durable: one fsync of the record
 * directory. r: the operation's result, which a failed sync turns into an
 * error only when it was a success. */
static int hook_sync(const HookContext *ctx, int r) {
        int k = ledger_sync(ctx->ledgerfd);

        if (k < 0 && r >= 0)
                return k;
        if (k < 0)
                log_warning("%s", error_get(k));
        return r;
}

static void alloc_wants_free(AllocWant *w, size_t n) {
        for (size_t i = 0; i < n; i++)
                alloc_want_done(&w[i]);
        free(w);
}

/* What prepare needs for one hostdev, found before anything is changed so
 * that a guest that cannot start leaves sysfs untouched when the reason is
 * known up front (unknown type, UUID of another guest, wrong type). */
typedef struct PrepareItem {
        bool exists;
        SysfsMdev mdev;
        LedgerEntry entry; /* what it got */
} PrepareItem;

/* Phase 1, read only: what exists, what is wanted, whether it may be had. */
static int prepare_check_one(const HookContext *ctx, Alloc *a, const DomxmlMdev *m, PrepareItem *it, AllocWant *w) {
        LedgerEntry holder;
        int r;

        r = sysfs_mdev_get(ctx->rootfd, m->uuid, &it->mdev);
        if (r < 0 && r != -ENOENT)
                return error_prefix(r, "cannot look up mdev %s", m->uuid);
        it->exists = r >= 0;
        r = alloc_want_resolve(a, m, it->exists ? &it->mdev : NULL, w);
        if (r < 0)
                return r;
        r = alloc_held_by_other(a, m->uuid, &holder);
        if (r < 0)
                return r;
        if (r > 0)
                return error_set(-EBUSY, "mdev %s is held by guest '%s' (%s); give this guest another UUID or stop '%s'",
                                 m->uuid, holder.guest, ledger_state_to_string(holder.state), holder.guest);
        if (it->exists && !strv_contains(w->types, it->mdev.type))
                return error_set(-EMEDIUMTYPE, "mdev %s exists with type %s, but the domain asks for %s; fix the domain's metadata or remove the mdev",
                                 m->uuid, it->mdev.type, w->what);
        return it->exists ? alloc_reserve(a, m->uuid) : 0;
}

/* Phase 2: claims every mdev that exists. A create (phase 3) that finds
 * every candidate full removes a free mdev kept by release = keep to make
 * room; the guest's own kept mdevs are free until claimed here, and one of
 * them must never be that mdev (they are reserved as well), or the guest
 * would be given an mdev that no longer exists. */
static int prepare_claim(const HookContext *ctx, Alloc *a, PrepareItem *items, AllocWant *wants) {
        for (size_t i = 0; i < ctx->dom->n_mdevs; i++) {
                LedgerEntry *e = &items[i].entry;
                int r;

                if (!items[i].exists)
                        continue;
                r = alloc_claim(a, &wants[i], &items[i].mdev, LEDGER_ASSIGNED, e);
                if (r < 0)
                        return r;
                log_info("mdev %s (%s on %s): %s", e->uuid, e->type, e->parent,
                         e->origin == LEDGER_BORROWED ? "borrowed" : "reused");
                CRASHPOINT("prepare-after-record");
        }
        return 0;
}

/* Phase 3: creates the others. They are planned first from what was read
 * once (alloc_plan()) and made together (alloc_run_plans(): their intent
 * records written and fsynced together, each before its create). When no
 * candidate has room by what was read, the planned ones are made first and
 * this one as alloc_create() decides alone: wait, make room, or say why not. */
static int prepare_create(const HookContext *ctx, Alloc *a, PrepareItem *items, AllocWant *wants) {
        int r;

        a->crashpoint_made = "prepare-after-record";
        a->skip_refused_plan = true; /* as one alloc_create() per mdev did */
        for (size_t i = 0; i < ctx->dom->n_mdevs; i++) {
                const char *uuid = ctx->dom->mdevs[i].uuid;

                if (items[i].exists)
                        continue;
                r = alloc_plan(a, &wants[i], uuid, LEDGER_ASSIGNED, &items[i].entry);
                if (r == 0) {
                        r = alloc_run_plans(a);
                        if (r >= 0)
                                r = alloc_create(a, &wants[i], uuid, LEDGER_ASSIGNED, &items[i].entry);
                        if (r >= 0)
                                CRASHPOINT("prepare-after-record");
                }
                if (r < 0)
                        return r;
        }
        r = alloc_run_plans(a);
        if (r < 0)
                return r;
        for (size_t i = 0; i < ctx->dom->n_mdevs; i++)
                if (!items[i].exists)
                        log_info("mdev %s (%s on %s): created", items[i].entry.uuid, items[i].entry.type, items[i].entry.parent);
        return 0;
}

/* The fsync of the record's directory that makes a prepare durable. It
 * is all that is left when the records and sysfs are as they must be, and
 * it needs no lock: it only waits for the disk to hold what every other hook
 * already sees. So the lock is let go first, and the guests that wait for it
 * (all of them, after a boot) need not wait for this one's disk too. A sync
 * that fails takes the lock again for the rollback: -errno then, with the
 * message; -ENOLCK if the lock cannot be had back (the message says that
 * the guest's release, which libvirt runs after a failed prepare, frees what
 * was made). */
static int prepare_sync(HookContext *ctx) {
        char what[GUEST_NAME_MAX + 32];
        ErrorSaved why;
        int r, k;

        if (ctx->lockfd < 0 || lock_suspend(ctx->lockfd) < 0) {
                error_clear();
                return ledger_sync(ctx->ledgerfd); /* under the lock, as before */
        }
        PAUSEPOINT("prepare-before-sync");
        CRASHPOINT("prepare-before-sync");
        r = FAILPOINT("prepare-sync") ? error_set(-EIO, "cannot sync '/" LEDGER_DIR "': %s", strerror(EIO))
                                      : ledger_sync(ctx->ledgerfd);
        if (r >= 0)
                return 0;
        error_save(&why);
        snprintf(what, sizeof what, "prepare %s", ctx->guest);
        k = lock_resume(ctx->lockfd, ctx->config->lock_timeout, what);
        if (k < 0) {
                log_warning("cannot take the lock back to undo this start (%s); the guest's release frees what it made",
                            error_get(k));
                error_restore(r, &why);
                return -ENOLCK;
        }
        return error_restore(r, &why);
}

int hook_prepare(HookContext *ctx) {
        const Domxml *dom = ctx->dom;
        _cleanup_free_ PrepareItem *items = NULL;
        VgpuPlan vplan = { 0 };
        AllocWant *wants = NULL;
        bool written = false;
        Alloc a;
        int r = 0;

        items = calloc(dom->n_mdevs + 1, sizeof *items);
        wants = calloc(dom->n_mdevs + 1, sizeof *wants);
        if (!items || !wants) {
                free(wants);
                return -ENOMEM;
        }
        hook_alloc_init(ctx, &a);

        for (size_t i = 0; i < dom->n_mdevs; i++) {
                r = prepare_check_one(ctx, &a, &dom->mdevs[i], &items[i], &wants[i]);
                if (r < 0)
                        goto out;
        }
        /* vGPUs of NVIDIA's VFIO framework (vgpu.h): checked, read only. */
        r = vgpu_prepare_check(ctx, &vplan, LEDGER_ASSIGNED);
        if (r < 0)
                goto out;

        /* All or nothing from here on. */
        written = true;
        r = prepare_claim(ctx, &a, items, wants);
        if (r >= 0)
                r = prepare_create(ctx, &a, items, wants);
        if (r < 0)
                goto rollback;
        r = vgpu_prepare_apply(ctx, &vplan, LEDGER_ASSIGNED); /* undoes its own on failure */
        if (r < 0)
                goto rollback;
        /* Durable before the commit, but not under the lock (see above). */
        r = prepare_sync(ctx);
        if (r == -ENOLCK)
                goto out; /* cannot roll back without the lock: release will */
        if (r < 0)
                goto rollback;
        alloc_commit(&a);
        written = false;
        goto out;

rollback: {
        ErrorSaved why; /* the rollback may set messages of its own */
        int k, k2;

        error_save(&why);
        k = vgpu_rollback(ctx, &vplan);
        k2 = alloc_rollback(&a);
        if (k2 < 0 && k >= 0)
                k = k2;
        if (k < 0)
                log_warning("rollback left something behind: %s", error_get(k));
        error_restore(r, &why);
}
out:
        vgpu_plan_done(&vplan);
        alloc_done(&a);
        alloc_wants_free(wants, dom->n_mdevs);
        return written ? hook_sync(ctx, r) : r; /* what a rollback wrote */
}

/* The mdev's side of hook_release_record(). */
static const HookReleaseKind release_mdev = {
        .noun = "mdev", .kept = "free", .verb = "remove", .verb_noun = "removal", .done = "removed",
        .crashpoint = "release-after-remove", .remove = alloc_remove_mdev,
};

int hook_release_record(HookContext *ctx, LedgerEntry *e, const HookReleaseKind *k, int present,
                        unsigned timeout_msec) {
        int r;

        /* A record of an earlier boot, or whose device is gone: nothing to remove. */
        if (present == -ENOENT) {
                log_info("%s %s is gone; forgetting it", k->noun, e->uuid);
                return ledger_remove_nosync(ctx->ledgerfd, e->uuid);
        }
        if (present < 0)
                return present;

        if (e->origin == LEDGER_BORROWED) {
                log_info("%s %s was borrowed; leaving it in place", k->noun, e->uuid);
                return ledger_remove_nosync(ctx->ledgerfd, e->uuid);
        }

        if (ctx->config->release == CONFIG_RELEASE_KEEP) {
                ledger_entry_set_free(e, (uint64_t) time(NULL));
                log_info("%s %s kept %s (release = keep)", k->noun, e->uuid, k->kept);
                return ledger_write_nosync(ctx->ledgerfd, e);
        }

        r = k->remove(ctx->rootfd, e->uuid, timeout_msec);
        if (r < 0) {
                int w;

                /* Left for the next hook, the udev helper or reconcile. */
                ledger_entry_set_free(e, (uint64_t) time(NULL));
                e->remove_pending = true;
                w = ledger_write_nosync(ctx->ledgerfd, e);
                if (w < 0)
                        log_warning("cannot mark %s %s for later %s: %s", k->noun, e->uuid, k->verb_noun, error_get(w));
                return error_set(r, "cannot %s %s %s: %s; marked remove_pending for later cleanup (mdev-hooks reconcile --apply)",
                                 k->verb, k->noun, e->uuid, strerror(-r));
        }
        CRASHPOINT(k->crashpoint);
        log_info("%s %s %s", k->noun, e->uuid, k->done);
        return ledger_remove_nosync(ctx->ledgerfd, e->uuid);
}

/* Frees one record of the guest. Returns <0 when something is left for later. */
static int release_one(HookContext *ctx, LedgerEntry *e) {
        SysfsMdev m;
        int r;

        if (ledger_key_is_vf(e->uuid)) /* a VFIO-framework vGPU (vgpu.h) */
                return vgpu_release_one(ctx, e, RELEASE_REMOVE_MSEC);
        r = streq(e->boot_id, ctx->boot_id) ? sysfs_mdev_get(ctx->rootfd, e->uuid, &m) : -ENOENT;
        return hook_release_record(ctx, e, &release_mdev, r, RELEASE_REMOVE_MSEC);
}

int hook_release_one(HookContext *ctx, LedgerEntry *e) {
        return hook_sync(ctx, release_one(ctx, e));
}

/* Adds the records of the XML's UUIDs that name this guest and that the
 * guest index did not list (a record written by other means than ledger.c),
 * and to *unreadable those of its UUIDs whose record does not parse. */
static int release_add_xml_records(HookContext *ctx, LedgerEntry **l, size_t *n, char ***unreadable) {
        if (!ctx->dom)
                return 0;
        for (size_t i = 0; i < ctx->dom->n_mdevs; i++) {
                const char *uuid = ctx->dom->mdevs[i].uuid;
                bool listed = false;
                LedgerEntry e, *t;
                int r;

                for (size_t j = 0; j < *n; j++)
                        if (streq((*l)[j].uuid, uuid))
                                listed = true;
                if (listed)
                        continue;
                r = ledger_read(ctx->ledgerfd, uuid, &e);
                if (r < 0 && r != -ENOENT && !strv_contains(*unreadable, uuid) && strv_extend(unreadable, uuid) < 0)
                        return -ENOMEM;
                if (r < 0 || !streq(e.guest, ctx->guest))
                        continue;
                t = realloc(*l, (*n + 1) * sizeof *t);
                if (!t)
                        return -ENOMEM;
                t[(*n)++] = e;
                *l = t;
        }
        error_clear();
        return 0;
}

/* A record of the guest that does not parse (truncated, garbage): release
 * cannot tell which mdev it kept, nor whether mdev-hooks created it, so the
 * mdev stays. Never silently: that would leak it for good. */
static void release_report_unreadable(HookContext *ctx, const char *uuid) {
        LedgerEntry e;
        int r;

        error_clear();
        r = ledger_read(ctx->ledgerfd, uuid, &e);
        if (r >= 0 || r == -ENOENT)
                return; /* repaired or gone meanwhile */
        log_warning("cannot read the record of mdev %s: %s; the mdev, if it exists, is left in place: "
                    "run 'mdev-hooks reconcile' to report it and 'mdev-hooks reconcile --apply' to repair it",
                    uuid, error_get(r));
}

int hook_release(HookContext *ctx) {
        _cleanup_free_ LedgerEntry *l = NULL;
        _cleanup_strv_free_ char **unreadable = NULL;
        bool written = false;
        size_t n;
        int r, ret = 0;

        /* Every record of the guest, not only the UUIDs in this XML: an mdev
         * hot-unplugged from the running guest is still the guest's. */
        r = ledger_list_guest_checked(ctx->ledgerfd, ctx->guest, &l, &n, &unreadable);
        if (r < 0)
                return r;
        r = release_add_xml_records(ctx, &l, &n, &unreadable);
        if (r < 0)
                return r;
        for (char **u = unreadable; u && *u; u++) {
                release_report_unreadable(ctx, *u);
                ret = -EBADMSG;
        }
        for (size_t i = 0; i < n; i++) {
                /* Only what this guest holds; free records have no guest. */
                if (l[i].state != LEDGER_ASSIGNED && l[i].state != LEDGER_INCOMING && l[i].state != LEDGER_LOST)
                        continue;
                error_clear();
                written = true;
                r = release_one(ctx, &l[i]);
                if (r < 0) {
                        log_warning("%s", error_get(r));
                        if (ret == 0)
                                ret = r;
                }
        }
        if (ret < 0)
                error_set(ret, "some mdevs could not be freed; see the messages above");
        return written ? hook_sync(ctx, ret) : ret;
}

int hook_reconnect(HookContext *ctx) {
        const Domxml *dom = ctx->dom;
        Alloc a;
        int ret = 0;

        hook_alloc_init(ctx, &a);
        for (size_t i = 0; i < dom->n_mdevs; i++) {
                const DomxmlMdev *m = &dom->mdevs[i];
                AllocWant w;
                SysfsMdev sm;
                int r;

                error_clear();
                r = sysfs_mdev_get(ctx->rootfd, m->uuid, &sm);
                if (r < 0) {
                        if (r == -ENOENT)
                                r = error_set(r, "mdev %s of the running guest does not exist", m->uuid);
                        log_warning("%s", error_get(r));
                        ret = ret ? ret : r;
                        continue;
                }
                /* The running guest uses it: its real type wins over metadata. */
                r = alloc_want_resolve(&a, m, &sm, &w);
                if (r >= 0 && !strv_contains(w.types, sm.type)) {
                        alloc_want_done(&w);
                        r = alloc_want_resolve(&a, &(DomxmlMdev) { .address = NULL }, &sm, &w);
                        if (r >= 0)
                                snprintf(w.uuid, sizeof w.uuid, "%s", m->uuid);
                }
                if (r >= 0) {
                        r = alloc_claim(&a, &w, &sm, LEDGER_ASSIGNED, NULL);
                        alloc_want_done(&w);
                }
                if (r < 0) {
                        log_warning("cannot re-assert mdev %s: %s", m->uuid, error_get(r));
                        ret = ret ? ret : r;
                }
        }
        alloc_commit(&a); /* partial is better than nothing here */
        alloc_done(&a);
        if (vgpu_dom_may_have(dom)) {
                int r = vgpu_reconnect(ctx); /* vGPUs of NVIDIA's VFIO framework */
                if (r < 0) {
                        log_warning("cannot re-assert the guest's vGPUs: %s", error_get(r));
                        ret = ret ? ret : r;
                }
        }
        if (ret < 0)
                error_set(ret, "some mdevs could not be re-asserted; see the messages above");
        return dom->n_mdevs > 0 || vgpu_dom_may_have(dom) ? hook_sync(ctx, ret) : ret;
}
