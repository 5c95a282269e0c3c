/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * prepare begin for a guest's mdevs (the mdev backend, backend-mdev.h):
 * reuse each mdev that exists and may be had, create the others with the
 * XML's UUIDs, all or nothing. hook_prepare() (hook.c) runs it beside every
 * other backend's, under the host-wide lock. Crash safety is alloc.c's rule
 * (doc/design.md §4.4); the crash point "prepare-after-record" follows each
 * mdev claimed or made.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "backend-mdev.h"
#include "crash.h"
#include "error.h"
#include "ledger.h"
#include "log.h"
#include "sysfs.h"

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

struct MdevPrepare {
        HookContext *ctx;
        Alloc a;
        PrepareItem *items;
        AllocWant *wants;
};

int mdev_prepare_new(HookContext *ctx, MdevPrepare **ret) {
        MdevPrepare *p = calloc(1, sizeof *p);

        if (!p)
                return -ENOMEM;
        p->items = calloc(ctx->dom->n_mdevs + 1, sizeof *p->items);
        p->wants = calloc(ctx->dom->n_mdevs + 1, sizeof *p->wants);
        if (!p->items || !p->wants) {
                free(p->items);
                free(p->wants);
                free(p);
                return -ENOMEM;
        }
        p->ctx = ctx;
        mdev_alloc_init(ctx, &p->a);
        *ret = p;
        return 0;
}

int mdev_prepare_check(MdevPrepare *p) {
        const Domxml *dom = p->ctx->dom;

        for (size_t i = 0; i < dom->n_mdevs; i++) {
                int r = prepare_check_one(p->ctx, &p->a, &dom->mdevs[i], &p->items[i], &p->wants[i]);
                if (r < 0)
                        return r;
        }
        return 0;
}

int mdev_prepare_apply(MdevPrepare *p) {
        int r = prepare_claim(p->ctx, &p->a, p->items, p->wants);

        return r < 0 ? r : prepare_create(p->ctx, &p->a, p->items, p->wants);
}

int mdev_prepare_rollback(MdevPrepare *p) {
        return alloc_rollback(&p->a);
}

void mdev_prepare_commit(MdevPrepare *p) {
        alloc_commit(&p->a);
}

void mdev_prepare_free(MdevPrepare *p) {
        if (!p)
                return;
        alloc_done(&p->a);
        alloc_wants_free(p->wants, p->ctx->dom->n_mdevs);
        free(p->items);
        free(p);
}
