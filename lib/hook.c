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
#include "backend.h"
#include "crash.h"
#include "domscan.h"
#include "hook.h"
#include "ledger.h"
#include "log.h"
#include "lock.h"

_Static_assert(DOMSCAN_MAX_SIZE == DOMXML_MAX_SIZE, "the hook's scan and its parser must agree on the size limit");

/* How long release retries a busy remove before leaving it for later. */
#define RELEASE_REMOVE_MSEC 3000

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
        BackendRun run = { { NULL } };
        bool written = false;
        int r;

        /* Read only: every backend's devices checked before anything changes. */
        r = backend_run_check(&run, ctx, HOOK_OP_PREPARE);
        if (r < 0)
                goto out;

        /* All or nothing from here on. */
        written = true;
        r = backend_run_apply(&run);
        if (r < 0)
                goto rollback;
        /* Durable before the commit, but not under the lock (see above). */
        r = prepare_sync(ctx);
        if (r == -ENOLCK)
                goto out; /* cannot roll back without the lock: release will */
        if (r < 0)
                goto rollback;
        backend_run_commit(&run);
        written = false;
        goto out;

rollback: {
        ErrorSaved why; /* the rollback may set messages of its own */

        error_save(&why);
        backend_run_rollback(&run);
        error_restore(r, &why);
}
out:
        backend_run_done(&run);
        return written ? hook_sync(ctx, r) : r; /* what a rollback wrote */
}

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

/* Frees one record of the guest, by its backend. Returns <0 when something
 * is left for later. */
static int release_one(HookContext *ctx, LedgerEntry *e) {
        const Backend *b = backend_of_record(e->uuid, e->type);

        if (!b) /* ledger.c reads no record with another key */
                return error_set(-EINVAL, "the record '%s' names no device; run 'mdev-hooks reconcile'", e->uuid);
        return b->release_one(ctx, e, RELEASE_REMOVE_MSEC);
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
        const Backend *b;
        bool any = false;
        int ret = 0;

        BACKEND_FOREACH(b) {
                int r;

                if (!b->dom_has(ctx->dom))
                        continue;
                any = true;
                r = b->reconnect(ctx); /* logs each problem itself */
                if (r < 0 && ret == 0)
                        ret = r;
        }
        if (ret < 0)
                error_set(ret, "some mdevs could not be re-asserted; see the messages above");
        return any ? hook_sync(ctx, ret) : ret;
}
