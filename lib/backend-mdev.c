/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The mdev backend (backend.h): a device is an mdev of a registered parent
 * (sys/class/mdev_bus), its record keyed by its UUID, named in the guest's
 * XML by a <hostdev type='mdev'> and its <mh:mdev> entry. sysfs.c reads and
 * writes it, alloc.c chooses, claims and creates, backend-mdev-prepare.c and
 * backend-mdev-migrate.c do the hook's work on a guest's mdevs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "backend-mdev.h"
#include "error.h"
#include "log.h"
#include "sysfs.h"

void mdev_alloc_init(const HookContext *ctx, Alloc *a) {
        alloc_init(a, ctx->rootfd, ctx->ledgerfd, ctx->config, ctx->guest,
                   ctx->dom && ctx->dom->uuid[0] ? ctx->dom->uuid : NULL, ctx->boot_id);
        a->lockfd = ctx->lockfd;
        a->opened = ctx->opened;
        a->wish = ctx->dom ? ctx->dom->numa_nodes : 0;
}

static bool mdev_key_is_mine(const char *key) {
        return uuid_is_valid(key);
}

static int mdev_parent_offer(int rootfd, const char *parent, const char *type, BackendOffer *ret, bool *ret_offered) {
        BackendOffer o = { 0 };
        int r;

        r = sysfs_type_available(rootfd, parent, type, &o.available);
        if (r == -ENOENT) {
                *ret = (BackendOffer) { 0 };
                *ret_offered = false;
                return 0;
        }
        if (r >= 0)
                r = sysfs_type_count(rootfd, parent, type, &o.existing);
        if (r < 0)
                return r;
        *ret = o;
        *ret_offered = true;
        return 0;
}

static int mdev_parent_types(int rootfd, const char *parent, SysfsType **ret, size_t *ret_n) {
        _cleanup_strv_free_ char **types = NULL;
        SysfsType *l;
        int r, status = 0;

        r = sysfs_parent_types(rootfd, parent, &types);
        if (r < 0)
                return r;
        l = calloc(strv_length(types) + 1, sizeof *l);
        if (!l)
                return -ENOMEM;
        *ret = l;
        *ret_n = 0;
        for (char **t = types; *t; t++) {
                error_clear();
                r = sysfs_type_read(rootfd, parent, *t, &l[*ret_n]);
                if (r < 0) {
                        log_error("%s", error_get(r));
                        status = 1;
                        continue;
                }
                (*ret_n)++;
        }
        return status;
}

static int mdev_cmp(const void *a, const void *b) {
        return strcmp(((const SysfsMdev *) a)->uuid, ((const SysfsMdev *) b)->uuid);
}

static int mdev_device_append(int rootfd, SysfsMdev **l, size_t *n) {
        _cleanup_free_ SysfsMdev *m = NULL;
        SysfsMdev *t;
        size_t k = 0;
        int r;

        if (!*l)
                return sysfs_mdev_list(rootfd, l, n);
        r = sysfs_mdev_list(rootfd, &m, &k);
        if (r < 0 || k == 0)
                return r;
        t = reallocarray(*l, *n + k, sizeof *t);
        if (!t)
                return -ENOMEM;
        memcpy(t + *n, m, k * sizeof *m);
        *l = t;
        *n += k;
        qsort(*l, *n, sizeof **l, mdev_cmp);
        return 0;
}

static int mdev_device_is(int rootfd, const char *name) {
        return uuid_is_valid(name) && sysfs_mdev_exists(rootfd, name);
}

static bool mdev_dom_has(const Domxml *d) {
        return d && d->n_mdevs > 0;
}

/* --- the hook ------------------------------------------------------------ */

/* prepare's or migrate's, by the operation. */
typedef struct MdevTxn {
        HookOp op;
        MdevPrepare *prepare;
        MdevMigrate *migrate;
} MdevTxn;

static int mdev_txn_new(HookContext *ctx, HookOp op, void **ret) {
        MdevTxn *t = calloc(1, sizeof *t);
        int r;

        if (!t)
                return -ENOMEM;
        t->op = op;
        r = op == HOOK_OP_PREPARE ? mdev_prepare_new(ctx, &t->prepare) : mdev_migrate_new(ctx, op, &t->migrate);
        if (r < 0) {
                free(t);
                return r;
        }
        *ret = t;
        return 0;
}

static int mdev_txn_check(void *p) {
        MdevTxn *t = p;

        return t->prepare ? mdev_prepare_check(t->prepare) : mdev_migrate_check(t->migrate);
}

static int mdev_txn_apply(void *p) {
        MdevTxn *t = p;

        return t->prepare ? mdev_prepare_apply(t->prepare) : mdev_migrate_apply(t->migrate);
}

static int mdev_txn_rollback(void *p) {
        MdevTxn *t = p;

        return t->prepare ? mdev_prepare_rollback(t->prepare) : mdev_migrate_rollback(t->migrate);
}

static void mdev_txn_commit(void *p) {
        MdevTxn *t = p;

        if (t->prepare)
                mdev_prepare_commit(t->prepare);
        else
                mdev_migrate_commit(t->migrate);
}

static void mdev_txn_free(void *p) {
        MdevTxn *t = p;

        mdev_prepare_free(t->prepare);
        mdev_migrate_free(t->migrate);
        free(t);
}

static int mdev_reconnect(HookContext *ctx) {
        const Domxml *dom = ctx->dom;
        Alloc a;
        int ret = 0;

        mdev_alloc_init(ctx, &a);
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
        return ret;
}

static const HookReleaseKind mdev_release_kind = {
        .noun = "mdev", .kept = "free", .verb = "remove", .verb_noun = "removal", .done = "removed",
        .crashpoint = "release-after-remove", .remove = alloc_remove_mdev,
};

static int mdev_release_one(HookContext *ctx, LedgerEntry *e, unsigned timeout_msec) {
        SysfsMdev m;
        int r;

        r = streq(e->boot_id, ctx->boot_id) ? sysfs_mdev_get(ctx->rootfd, e->uuid, &m) : -ENOENT;
        return hook_release_record(ctx, e, &mdev_release_kind, r, timeout_msec);
}

const Backend backend_mdev = {
        .name = "mdev",
        .noun = "mdev",
        .key_is_mine = mdev_key_is_mine,
        .parent_list = sysfs_parent_list,
        .parent_is = sysfs_parent_is_registered,
        .parent_offer = mdev_parent_offer,
        .parent_types = mdev_parent_types,
        .parent_check = NULL, /* check-config's own mdev checks */
        .device_append = mdev_device_append,
        .device_get = sysfs_mdev_get,
        .device_is = mdev_device_is,
        .release = &mdev_release_kind,
        .eperm_is_busy = false,
        .device_make = sysfs_mdev_create,
        .type_is_mine = NULL, /* any name: mdev types are the drivers' */
        .pick = NULL,
        .dom_has = mdev_dom_has,
        .txn_new = mdev_txn_new,
        .txn_check = mdev_txn_check,
        .txn_apply = mdev_txn_apply,
        .txn_rollback = mdev_txn_rollback,
        .txn_commit = mdev_txn_commit,
        .txn_free = mdev_txn_free,
        .reconnect = mdev_reconnect,
        .release_one = mdev_release_one,
        .attach_serves = mdev_attach_serves,
        .attach_choose = mdev_attach_choose,
};
