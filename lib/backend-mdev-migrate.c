/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * migrate begin / restore begin for a guest's mdevs (the mdev backend,
 * backend-mdev.h; migrate.c runs every backend's). libvirt runs the
 * destination's hook with the incoming domain XML on stdin, and whatever the
 * hook prints replaces it. The UUIDs in that XML are the source host's; here
 * each mdev hostdev gets a local mdev of the same type, claimed for the guest
 * as `incoming` (the `prepare` that follows makes it `assigned`), and the
 * XML is rewritten only where the local UUID differs.
 *
 * For each hostdev, in this order of preference:
 *   1. the mdev with the same UUID, if it exists here, is of the type (and on
 *      the pinned parent) and no other guest holds it;
 *   2. an mdev this guest claimed in an earlier migrate that did not finish,
 *      or a free mdev of the type that mdev-hooks kept (release = keep);
 *   3. a new mdev: with the same UUID if nothing here uses it, else with a
 *      fresh random one.
 * All hostdevs are resolved first, without changing anything, so that a type
 * this host does not enable refuses the migration before any create. Then
 * choices 1 are claimed for every hostdev before any choice 2 or 3 is made,
 * so that a kept or new mdev never takes a UUID another hostdev of the guest
 * keeps; and every mdev is claimed the moment it is chosen, before a later
 * create may make room by removing a free kept mdev (alloc_create()), so
 * that one this call takes is never the one removed. All or nothing: one failure rolls back this call's creations and
 * claims (alloc.h), and the XML is left as it came.
 *
 * Crash safety is alloc.c's rule (doc/design.md §4.4); the crash point
 * "migrate-after-create" sits right after a create.
 * The creations are planned first and made together (alloc_plan()), so
 * that their intent records are written in one batch: every record of the
 * call is in place before the first create.
 * Records are written without the fsync of the directory (alloc.c says why);
 * it is fsynced once here, before the commit and before the worker lets the
 * lock go, instead of once per record.
 * libvirt runs `release` for the guest on the destination when the incoming
 * migration fails, which frees the incoming claims like any other.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "alloc.h"
#include "backend-mdev.h"
#include "domxml.h"
#include "enumtable.h"
#include "hook.h"
#include "ledger.h"
#include "log.h"
#include "owner.h"
#include "sysfs.h"

typedef enum MigrateChoice {
        MIGRATE_UNDECIDED,
        MIGRATE_SAME,      /* the mdev with the incoming UUID, here already */
        MIGRATE_KEPT,      /* a free mdev mdev-hooks kept */
        MIGRATE_CREATED,   /* created by this call */
        _MIGRATE_CHOICE_MAX,
        _MIGRATE_CHOICE_INVALID = -EINVAL,
} MigrateChoice;

typedef struct MigrateItem {
        AllocWant want;
        bool exists;                 /* an mdev with the incoming UUID exists here */
        SysfsMdev mdev;              /* ... and this is it */
        MigrateChoice choice;
        char uuid[UUID_STRING_MAX];  /* the local UUID chosen */
        LedgerEntry entry;           /* its record after the claim */
} MigrateItem;

ENUM_DECL(migrate_choice, MigrateChoice);
ENUM_IMPL(migrate_choice, MigrateChoice, _MIGRATE_CHOICE_MAX,
          "undecided",
          "same UUID",
          "kept free mdev",
          "created");

static void items_free(MigrateItem *items, size_t n) {
        if (!items)
                return;
        for (size_t i = 0; i < n; i++)
                alloc_want_done(&items[i].want);
        free(items);
}

/* The type the hostdev needs. The incoming UUID names an mdev on the source
 * host, so an mdev here with that UUID says nothing about the type: without a
 * metadata entry the type is known only when this host enables exactly one
 * type (the default type, or the one type configured). */
static int resolve_want(const HookContext *ctx, const Alloc *a, const DomxmlMdev *m, AllocWant *ret) {
        const Config *c = ctx->config;
        char enabled[512];
        AllocWant w = { .types = NULL };
        bool any = false;
        int r;

        if (!m->type[0] && !m->mdev_class[0]) {
                config_enabled_types_string(c, enabled, sizeof enabled);
                if (c->n_types == 0)
                        return error_set(-ENOENT, "mdev %s: no mdev types are enabled here: %s",
                                         m->uuid, enabled);
                if (c->n_types > 1)
                        return error_set(-ENOENT, "mdev %s has no type in the domain metadata and this host enables several (%s), "
                                         "so the type it has on the source is unknown: add <mh:mdev uuid=\"%s\" type=\"...\"/> to "
                                         "the domain's <metadata><mh:mdevs xmlns:mh=\"" DOMXML_NAMESPACE "\">",
                                         m->uuid, enabled, m->uuid);
                snprintf(w.uuid, sizeof w.uuid, "%s", m->uuid);
                snprintf(w.parent, sizeof w.parent, "%s", m->parent);
                snprintf(w.what, sizeof w.what, "%s", c->types[0].name);
                r = strv_extend(&w.types, c->types[0].name);
                if (r < 0)
                        return r;
                *ret = w;
                return 0;
        }

        r = alloc_want_resolve(a, m, NULL, &w);
        if (r < 0)
                return r;
        /* The type must be enabled here: otherwise refuse now, before any
         * other hostdev of the guest changes anything. */
        for (size_t t = 0; w.types[t] && !any; t++)
                any = config_find_type(c, w.types[t]) != NULL;
        if (!any) {
                config_enabled_types_string(c, enabled, sizeof enabled);
                r = error_set(-ENOENT, "type %s is not enabled here; enabled: %s", w.what, enabled);
                alloc_want_done(&w);
                return r;
        }
        *ret = w;
        return 0;
}

/* Choice 1: the mdev with the incoming UUID, if this guest may have it: of
 * the type (on the pinned parent), held by no other guest, and not one that
 * a failed remove left to be removed (something still has it open). */
static int same_uuid_usable(const Alloc *a, const MigrateItem *it) {
        OwnerState s;
        int r;

        if (!it->exists || !strv_contains(it->want.types, it->mdev.type))
                return 0;
        if (it->want.parent[0] && !streq(it->want.parent, it->mdev.parent))
                return 0;
        r = owner_read(a->ledgerfd, it->mdev.uuid, a->boot_id, a->guest, &s, NULL);
        if (r < 0)
                return r;
        return owner_may_give(s, OWNER_OFFERED);
}

/* Whether a UUID is one of the guest's incoming UUIDs other than item i's,
 * already chosen for another item, or named by a metadata entry that no
 * hostdev uses (the rewrite would give the XML two entries for it). */
static bool uuid_taken_in_call(const Domxml *dom, const MigrateItem *items, size_t i,
                               const char *uuid) {
        if (domxml_has_orphan_meta(dom, uuid))
                return true;
        for (size_t j = 0; j < dom->n_mdevs; j++) {
                if (j == i)
                        continue;
                if (streq(dom->mdevs[j].uuid, uuid) || streq(items[j].uuid, uuid))
                        return true;
        }
        return false;
}

/* Whether nothing on this host uses the UUID: no mdev, no record at all. */
static int uuid_unused_here(const HookContext *ctx, const char *uuid) {
        LedgerEntry e;
        SysfsMdev m;
        int r;

        r = sysfs_mdev_get(ctx->rootfd, uuid, &m);
        if (r >= 0)
                return 0;
        if (r != -ENOENT)
                return r;
        r = ledger_read(ctx->ledgerfd, uuid, &e);
        if (r >= 0)
                return 0;
        if (r != -ENOENT)
                return r;
        return 1;
}

static int uuid_random(char ret[UUID_STRING_MAX]) {
        uint8_t b[16];
        size_t n = 0;

        while (n < sizeof b) {
                ssize_t k = getrandom(b + n, sizeof b - n, 0);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                n += (size_t) k;
        }
        b[6] = (uint8_t) ((b[6] & 0x0f) | 0x40); /* version 4 */
        b[8] = (uint8_t) ((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
        snprintf(ret, UUID_STRING_MAX,
                 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
                 b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
        return 0;
}

/* A fresh UUID for item i: the kernel's proc/sys/kernel/random/uuid under
 * the root (so that a test root can make it predictable), else getrandom().
 * Never one that this host or this guest already uses. */
static int uuid_new(const HookContext *ctx, const MigrateItem *items, size_t i,
                    char ret[UUID_STRING_MAX]) {
        char buf[64];
        int r;

        for (unsigned attempt = 0; attempt < 16; attempt++) {
                char u[UUID_STRING_MAX];

                if (attempt == 0 && read_small_at(ctx->rootfd, "proc/sys/kernel/random/uuid", buf, sizeof buf) >= 0 &&
                    uuid_is_valid(buf))
                        uuid_normalize(buf, u);
                else {
                        r = uuid_random(u);
                        if (r < 0)
                                return error_set(r, "cannot get random bytes for a new mdev UUID: %s", strerror(-r));
                }
                if (uuid_taken_in_call(ctx->dom, items, i, u))
                        continue;
                r = uuid_unused_here(ctx, u);
                if (r < 0)
                        return r;
                if (r > 0) {
                        memcpy(ret, u, UUID_STRING_MAX);
                        return 0;
                }
        }
        return error_set(-EEXIST, "cannot find an unused UUID for a new mdev");
}

/* The guest's own records and those of no guest (the free mdevs that
 * mdev-hooks kept, release = keep), read once per call through the record's
 * indexes: not every record of a host with a thousand, for each hostdev. */
typedef struct KeptList {
        LedgerEntry *own, *free;   /* the guest's records; those of no guest */
        size_t n_own, n_free;
        bool loaded;
} KeptList;

static bool kept_usable(const Alloc *a, const LedgerEntry *e, const AllocWant *w) {
        return e->origin == LEDGER_CREATED && streq(e->boot_id, a->boot_id) &&
               owner_may_give(owner_of(e, a->boot_id, a->guest), OWNER_OFFERED) &&
               strv_contains(w->types, e->type) && (!w->parent[0] || streq(w->parent, e->parent));
}

/* Choice 2: first an mdev this guest already claimed as incoming in an
 * earlier migrate that did not finish (killed, or retried before libvirt
 * ran release), so that a retry does not create a second one; then one
 * that mdev-hooks keeps free: of this boot, created by mdev-hooks, of one of
 * the wanted types (on the pinned parent), no remove pending, and existing
 * with that type. UUIDs that another hostdev of the guest brings along are
 * skipped: the rewrite would give two hostdevs one UUID. Returns 1 and the
 * mdev, 0 if there is none. */
static int kept_find(const HookContext *ctx, const Alloc *a, KeptList *k,
                     const MigrateItem *items, size_t i, SysfsMdev *ret) {
        const AllocWant *w = &items[i].want;
        int r;

        if (!k->loaded) {
                r = ledger_list_guest(ctx->ledgerfd, a->guest, &k->own, &k->n_own);
                if (r < 0)
                        return r;
                r = ledger_list_free(ctx->ledgerfd, &k->free, &k->n_free);
                if (r < 0)
                        return r;
                k->loaded = true;
        }
        for (int pass = 0; pass < 2; pass++) {
                LedgerEntry *l = pass == 0 ? k->own : k->free;
                size_t n = pass == 0 ? k->n_own : k->n_free;

                for (size_t j = 0; j < n; j++) {
                        LedgerEntry *e = &l[j];
                        SysfsMdev m;

                        if (e->state != (pass == 0 ? LEDGER_INCOMING : LEDGER_FREE))
                                continue;
                        if (!kept_usable(a, e, w) || uuid_taken_in_call(ctx->dom, items, i, e->uuid))
                                continue;
                        if (sysfs_mdev_get(ctx->rootfd, e->uuid, &m) < 0 || !streq(m.type, e->type))
                                continue;
                        e->state = LEDGER_LOST; /* taken: not twice */
                        *ret = m;
                        return 1;
                }
        }
        return 0;
}

/* Choices 2 and 3 for one item. */
static int place_one(HookContext *ctx, Alloc *a, KeptList *k, MigrateItem *items, size_t i) {
        MigrateItem *it = &items[i];
        const char *incoming = ctx->dom->mdevs[i].uuid;
        SysfsMdev kept;
        int r;

        r = kept_find(ctx, a, k, items, i, &kept);
        if (r < 0)
                return r;
        if (r > 0) {
                r = alloc_claim(a, &it->want, &kept, LEDGER_INCOMING, &it->entry);
                if (r < 0)
                        return r;
                it->choice = MIGRATE_KEPT;
                memcpy(it->uuid, kept.uuid, sizeof it->uuid);
                return 0;
        }

        /* Create: with the incoming UUID if nothing here uses it. */
        if (it->exists)
                r = 0;
        else {
                r = alloc_held_by_other(a, incoming, NULL);
                if (r < 0)
                        return r;
                r = r == 0;
        }
        if (r > 0 && !uuid_taken_in_call(ctx->dom, items, i, incoming))
                memcpy(it->uuid, incoming, sizeof it->uuid);
        else {
                r = uuid_new(ctx, items, i, it->uuid);
                if (r < 0)
                        return r;
        }
        /* Planned, and made with the others (alloc_run_plans(): their
         * intent records are written together). When no candidate has room
         * by what was read, the planned ones are made first, and this one
         * as alloc_create() decides: wait, make room, or say why not. */
        r = alloc_plan(a, &it->want, it->uuid, LEDGER_INCOMING, &it->entry);
        if (r == 0) {
                r = alloc_run_plans(a);
                if (r >= 0)
                        r = alloc_create(a, &it->want, it->uuid, LEDGER_INCOMING, &it->entry);
        }
        if (r < 0) {
                it->uuid[0] = '\0';
                return r;
        }
        it->choice = MIGRATE_CREATED;
        return 0;
}

/* Rewrites the XML where a local UUID differs; sets ctx->rewritten if it
 * did (the worker prints it once the call succeeded). */
static int rewrite(HookContext *ctx, const MigrateItem *items) {
        Domxml *dom = ctx->dom;
        int r;

        for (size_t i = 0; i < dom->n_mdevs; i++) {
                if (streq(dom->mdevs[i].uuid, items[i].uuid))
                        continue;
                r = domxml_set_mdev_uuid(dom, i, items[i].uuid);
                if (r < 0)
                        return r;
                ctx->rewritten = true;
        }
        return 0;
}

/* Read only: every hostdev's type resolved and enabled, and what exists
 * here with its incoming UUID. */
static int resolve_all(HookContext *ctx, const Alloc *a, MigrateItem *items) {
        const Domxml *dom = ctx->dom;
        int r;

        for (size_t i = 0; i < dom->n_mdevs; i++) {
                r = resolve_want(ctx, a, &dom->mdevs[i], &items[i].want);
                if (r < 0)
                        return r;
                r = sysfs_mdev_get(ctx->rootfd, dom->mdevs[i].uuid, &items[i].mdev);
                if (r < 0 && r != -ENOENT)
                        return error_prefix(r, "cannot look up mdev %s", dom->mdevs[i].uuid);
                items[i].exists = r >= 0;
        }
        return 0;
}

/* Choice 1 for every hostdev, then 2 or 3 for the rest, and the planned
 * creations made. */
static int choose_all(HookContext *ctx, Alloc *a, KeptList *kept, MigrateItem *items) {
        const Domxml *dom = ctx->dom;
        int r;

        for (size_t i = 0; i < dom->n_mdevs; i++) {
                r = same_uuid_usable(a, &items[i]);
                if (r < 0)
                        return r;
                if (r == 0)
                        continue;
                r = alloc_claim(a, &items[i].want, &items[i].mdev, LEDGER_INCOMING, &items[i].entry);
                if (r < 0)
                        return r;
                items[i].choice = MIGRATE_SAME;
                memcpy(items[i].uuid, items[i].mdev.uuid, sizeof items[i].uuid);
        }
        for (size_t i = 0; i < dom->n_mdevs; i++) {
                if (items[i].choice != MIGRATE_UNDECIDED)
                        continue;
                r = place_one(ctx, a, kept, items, i);
                if (r < 0)
                        return r;
        }
        return alloc_run_plans(a);
}

/* One migrate's (or restore's) work on the guest's mdevs (backend-mdev.h). */
struct MdevMigrate {
        HookContext *ctx;
        HookOp op;
        Alloc a;
        MigrateItem *items;
        char (*incoming)[UUID_STRING_MAX];
        KeptList kept;
};

int mdev_migrate_new(HookContext *ctx, HookOp op, MdevMigrate **ret) {
        const Domxml *dom = ctx->dom;
        MdevMigrate *m = calloc(1, sizeof *m);

        if (!m)
                return -ENOMEM;
        m->items = calloc(dom->n_mdevs + 1, sizeof *m->items);
        m->incoming = calloc(dom->n_mdevs + 1, sizeof *m->incoming);
        if (!m->items || !m->incoming) {
                free(m->items);
                free(m->incoming);
                free(m);
                return -ENOMEM;
        }
        m->ctx = ctx;
        m->op = op;
        alloc_init(&m->a, ctx->rootfd, ctx->ledgerfd, ctx->config, ctx->guest,
                   dom->uuid[0] ? dom->uuid : NULL, ctx->boot_id);
        m->a.crashpoint_create = "migrate-after-create";
        m->a.wish = dom->numa_nodes;
        for (size_t i = 0; i < dom->n_mdevs; i++)
                memcpy(m->incoming[i], dom->mdevs[i].uuid, UUID_STRING_MAX);
        *ret = m;
        return 0;
}

int mdev_migrate_check(MdevMigrate *m) {
        return resolve_all(m->ctx, &m->a, m->items);
}

int mdev_migrate_apply(MdevMigrate *m) {
        int r = choose_all(m->ctx, &m->a, &m->kept, m->items);

        return r < 0 ? r : rewrite(m->ctx, m->items);
}

int mdev_migrate_rollback(MdevMigrate *m) {
        return alloc_rollback(&m->a);
}

void mdev_migrate_commit(MdevMigrate *m) {
        const Domxml *dom = m->ctx->dom;

        alloc_commit(&m->a);
        for (size_t i = 0; i < dom->n_mdevs; i++)
                log_info("%s: mdev %s -> %s (%s on %s, %s)", hook_op_to_string(m->op), m->incoming[i], m->items[i].uuid,
                         m->items[i].entry.type, m->items[i].entry.parent, migrate_choice_to_string(m->items[i].choice));
}

void mdev_migrate_free(MdevMigrate *m) {
        if (!m)
                return;
        free(m->kept.own);
        free(m->kept.free);
        alloc_done(&m->a);
        items_free(m->items, m->ctx->dom->n_mdevs);
        free(m->incoming);
        free(m);
}
