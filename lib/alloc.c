/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Choosing, claiming and creating mdevs (alloc.h).
 *
 * Crash safety (doc/design.md §4.4 lists every kill point and what repairs
 * it). The rule, kept here and nowhere else: the record of an mdev that
 * mdev-hooks creates is written BEFORE the create, as the intent (state
 * assigned/incoming, origin created, the parent being tried), and is removed
 * or restored only AFTER the mdev is gone (alloc_rollback(), and release in
 * hook.c through alloc_remove_mdev()). A hook killed after the intent leaves
 * either
 *   - a record for an mdev that does not exist: the guest's release (libvirt
 *     runs it after the failed prepare), the next prepare, the udev helper or
 *     reconcile sees the mdev missing and drops or marks the record; or
 *   - a record plus the mdev: a consistent claim, which the guest's release
 *     removes (origin created).
 * There is never an mdev that mdev-hooks created without a record saying so,
 * which is what would leak (it would later look borrowed and never be removed).
 *
 * Records are written without the fsync of the directory
 * (ledger_write_nosync()): the callers (hook.c, migrate.c) fsync it once per
 * hook call with ledger_sync() before the hook exits 0 (prepare after it let
 * the lock go, when nothing is left to change), and this file does before it
 * lets the lock go while it waits for a parent. The intent record is still VISIBLE (renamed into place,
 * its contents fsynced) before the create, which is what a hook killed after
 * the create needs. It need not be durable yet: a power loss takes the mdev
 * with it too, and a record that does survive it is one of an earlier boot,
 * which says its mdev no longer exists.
 *
 * Reads stay small: for each candidate parent only the needed type's
 * available_instances and devices/ are read, opened from one descriptor of
 * sys/class/mdev_bus (or while the call waited for the lock:
 * alloc_preopen()); alloc_plan() with pack reads up to a choice no unread
 * candidate can change (alloc_pack_certain()), 64 candidates or more on two
 * threads (alloc_probe_split()). Every parent and every mdev are
 * listed only where the answer needs them: max_instances (count the type on
 * the whole host) and the failure message (which other parents offer it).
 *
 * Split as kmod splits its larger concepts: this file is the transaction
 * (the undo log, what a call read, type resolution and claims);
 * alloc-order.c orders and reads candidates, alloc-candidates.c finds them
 * and what each holds, alloc-create.c creates; alloc-internal.h is what
 * they share.
 */
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>

#include "alloc-internal.h"
#include "crash.h"
#include "inventory.h"
#include "lock.h"
#include "log.h"
#include "owner.h"
#include "parentwait.h"

/* --- the transaction ---------------------------------------------------- */

void alloc_init(Alloc *a, int rootfd, int ledgerfd, const Config *config,
                const char *guest, const char *guest_uuid, const char *boot_id) {
        *a = (Alloc) {
                .rootfd = rootfd,
                .ledgerfd = ledgerfd,
                .config = config,
                .guest = guest,
                .guest_uuid = guest_uuid,
                .crashpoint_create = "prepare-after-create",
                .lockfd = -1,
                .busfd = -1,
        };
        sysfs_devdirs_init(&a->dirs);
        snprintf(a->boot_id, sizeof a->boot_id, "%s", strempty(boot_id));
}

/* --- what this call read (Alloc.probed) and its index ------------------- */

/* FNV-1a over "parent/type". */
uint32_t probe_key_hash(const char *parent, const char *type) {
        return fnv1a32(fnv1a32(fnv1a32(FNV1A32_INIT, parent), "/"), type);
}

/* The slot of (parent, type): the one holding its entry, else the empty
 * one where it would go. The table is never full (probe_index_add()). */
size_t probe_slot(const Alloc *a, const char *parent, const char *type) {
        size_t mask = a->n_probed_slots - 1, i = probe_key_hash(parent, type) & mask;

        for (;; i = (i + 1) & mask) {
                uint32_t k = a->probed_slots[i];

                if (k == 0 || (streq(a->probed[k - 1].parent, parent) && streq(a->probed[k - 1].type, type)))
                        return i;
        }
}

/* Indexes entry i, unless an earlier entry has its key (the first is the
 * one found, as a search in order finds it). */
static void probe_index_put(Alloc *a, size_t i) {
        size_t s = probe_slot(a, a->probed[i].parent, a->probed[i].type);

        if (a->probed_slots[s] == 0)
                a->probed_slots[s] = (uint32_t) i + 1;
}

/* The index made anew for every entry, at least twice as many slots as
 * the entries the array has room for. Without memory, no index. */
static void probe_index_rebuild(Alloc *a) {
        size_t want = 64;

        while (want < 2 * (a->probed_allocated + 1))
                want *= 2;
        if (want != a->n_probed_slots) {
                free(a->probed_slots);
                a->probed_slots = calloc(want, sizeof *a->probed_slots);
                a->n_probed_slots = a->probed_slots ? want : 0;
        } else
                memset(a->probed_slots, 0, want * sizeof *a->probed_slots);
        for (size_t i = 0; a->probed_slots && i < a->n_probed; i++)
                probe_index_put(a, i);
}

/* Entry n_probed - 1 was appended: indexed, the index grown first when it
 * would be more than half full. */
static void probe_index_add(Alloc *a) {
        if (!a->probed_slots || 2 * a->n_probed > a->n_probed_slots)
                probe_index_rebuild(a);
        else
                probe_index_put(a, a->n_probed - 1);
}

/* Forgets what was read of one parent's candidates (NULL: of all, and the
 * parent listing with it). */
void probe_forget(Alloc *a, const char *parent) {
        size_t before = a->n_probed;

        for (size_t i = a->n_probed; i-- > 0;)
                if (!parent || streq(a->probed[i].parent, parent))
                        a->probed[i] = a->probed[--a->n_probed];
        if (!parent) {
                strv_free(a->parents);
                a->parents = NULL;
        }
        if (a->n_probed != before)
                probe_index_rebuild(a); /* entries moved */
}

/* Room for `more` entries in what was read, allocated at once (a caller
 * that knows how many it appends). Only a cache: without room, nothing. */
void probed_reserve(Alloc *a, size_t more) {
        size_t k = a->n_probed + more;
        AllocCandidate *t;

        if (k <= a->probed_allocated)
                return;
        t = reallocarray(a->probed, k, sizeof *t);
        if (!t)
                return;
        a->probed = t;
        a->probed_allocated = k;
}

/* Appends to what was read (a cache: a failed allocation forgets it). It
 * grows by doubling: a call reads up to every parent of the host. */
void probed_append(Alloc *a, const AllocCandidate *c) {
        if (a->n_probed == a->probed_allocated)
                probed_reserve(a, a->probed_allocated ? a->probed_allocated : 32);
        if (a->n_probed == a->probed_allocated)
                return;
        a->probed[a->n_probed++] = *c;
        probe_index_add(a);
}

/* A creation alloc_plan() chose, that alloc_run_plans() makes. */

void plans_clear(Alloc *a) {
        free(a->plans);
        a->plans = NULL;
        a->n_plans = a->plan_next = 0;
}

void alloc_done(Alloc *a) {
        plans_clear(a);
        free(a->reserved);
        a->reserved = NULL;
        a->n_reserved = 0;
        free(a->probed);
        a->probed = NULL;
        a->n_probed = a->probed_allocated = 0;
        free(a->probed_slots);
        a->probed_slots = NULL;
        a->n_probed_slots = 0;
        strv_free(a->parents);
        a->parents = NULL;
        free(a->undo);
        a->undo = NULL;
        a->n_undo = 0;
        if (a->busfd >= 0)
                close(a->busfd);
        a->busfd = -1;
        a->bus_tried = false;
        sysfs_devdirs_done(&a->dirs);
        a->dirs_on = false;
}

int alloc_reserve(Alloc *a, const char *uuid) {
        char (*t)[UUID_STRING_MAX];

        if (!uuid_is_valid(uuid))
                return error_set(-EINVAL, "'%s' is not a UUID", uuid);
        t = reallocarray(a->reserved, a->n_reserved + 1, sizeof *t);
        if (!t)
                return -ENOMEM;
        a->reserved = t;
        uuid_normalize(uuid, a->reserved[a->n_reserved++]);
        return 0;
}

bool is_reserved(const Alloc *a, const char *uuid) {
        for (size_t i = 0; i < a->n_reserved; i++)
                if (streq(a->reserved[i], uuid))
                        return true;
        return false;
}

void alloc_commit(Alloc *a) {
        a->n_undo = 0;
}

/* Remembers the record of uuid as it is before this call first touches it. */
int undo_push(Alloc *a, const char *uuid, bool created) {
        AllocUndo *u;
        int r;

        for (size_t i = 0; i < a->n_undo; i++)
                if (streq(a->undo[i].uuid, uuid)) {
                        a->undo[i].created = a->undo[i].created || created;
                        return 0;
                }
        u = realloc(a->undo, (a->n_undo + 1) * sizeof *u);
        if (!u)
                return -ENOMEM;
        a->undo = u;
        u = &a->undo[a->n_undo];
        memset(u, 0, sizeof *u);
        snprintf(u->uuid, sizeof u->uuid, "%s", uuid);
        u->created = created;
        r = ledger_read(a->ledgerfd, uuid, &u->prev);
        if (r == -ENOENT)
                u->had_record = false;
        else if (r < 0)
                return r;
        else
                u->had_record = true;
        a->n_undo++;
        return 0;
}

void entry_fill(const Alloc *a, LedgerEntry *e, const char *uuid, const char *parent,
                const char *type, LedgerState state, LedgerOrigin origin) {
        LedgerHolder h = { .guest = a->guest, .guest_uuid = a->guest_uuid, .boot_id = a->boot_id,
                          .since = (uint64_t) time(NULL) };

        ledger_entry_init(e, uuid, parent, type, state, origin, &h);
}

int alloc_remove_mdev(int rootfd, const char *uuid, unsigned timeout_msec) {
        unsigned long long deadline = now_usec() + (unsigned long long) timeout_msec * 1000ULL;
        useconds_t delay = 10000;
        int r;

        for (;;) {
                r = sysfs_mdev_remove(rootfd, uuid);
                if (r == 0 || r == -ENOENT)
                        return 0;
                if (r != -EBUSY)
                        return r;
                if (now_usec() >= deadline)
                        return -EBUSY;
                usleep(delay);
                if (delay < 320000)
                        delay *= 2;
        }
}

int alloc_rollback(Alloc *a) {
        int ret = 0;

        probe_forget(a, NULL);
        if (a->lock_lost) {
                /* Without the lock nothing may be changed. What this call
                 * made is recorded as the guest's: libvirt's release after
                 * the failed start frees it, as after a killed hook. */
                alloc_commit(a);
                return error_set(-ENOLCK, "could not take the lock back to undo this start; the guest's release will free what it made");
        }

        for (size_t i = a->n_undo; i-- > 0;) {
                AllocUndo *u = &a->undo[i];
                int r;

                if (u->created) {
                        r = alloc_remove_mdev(a->rootfd, u->uuid, ROLLBACK_REMOVE_MSEC);
                        if (r < 0) {
                                /* Still there: keep a record that says we made it
                                 * and that it must go, for the next hook or reconcile. */
                                LedgerEntry e;

                                if (ret == 0)
                                        ret = r;
                                if (ledger_read(a->ledgerfd, u->uuid, &e) >= 0) {
                                        ledger_entry_set_free(&e, (uint64_t) time(NULL));
                                        e.remove_pending = true;
                                        (void) ledger_write_nosync(a->ledgerfd, &e);
                                }
                                continue;
                        }
                }
                if (u->had_record)
                        r = ledger_write_nosync(a->ledgerfd, &u->prev);
                else
                        r = ledger_remove_nosync(a->ledgerfd, u->uuid);
                if (r < 0 && ret == 0)
                        ret = r;
        }
        a->n_undo = 0;
        return ret;
}

/* --- type resolution and ownership ------------------------------------- */

int alloc_want_resolve(const Alloc *a, const DomxmlMdev *m, const SysfsMdev *existing, AllocWant *ret) {
        AllocWant w = { .types = NULL };
        const Config *c = a->config;
        char enabled[512];
        int r;

        snprintf(w.uuid, sizeof w.uuid, "%s", m->uuid);
        snprintf(w.parent, sizeof w.parent, "%s", m->parent);

        if (m->type[0]) {
                r = strv_extend(&w.types, m->type);
                snprintf(w.what, sizeof w.what, "%s", m->type);
        } else if (m->mdev_class[0]) {
                r = 0;
                for (size_t i = 0; r >= 0 && i < c->n_types; i++)
                        if (streq_ptr(c->types[i].mdev_class, m->mdev_class))
                                r = strv_extend(&w.types, c->types[i].name);
                if (r >= 0 && !w.types) {
                        config_enabled_types_string(c, enabled, sizeof enabled);
                        return error_set(-EINVAL, "mdev %s asks for class %s, but no enabled type has mdev_class = %s (enabled: %s)",
                                         m->uuid, m->mdev_class, m->mdev_class, enabled);
                }
                snprintf(w.what, sizeof w.what, "class %s", m->mdev_class);
        } else if (existing) {
                r = strv_extend(&w.types, existing->type);
                snprintf(w.what, sizeof w.what, "%s", existing->type);
        } else if (c->default_type) {
                r = strv_extend(&w.types, c->default_type->name);
                snprintf(w.what, sizeof w.what, "%s", c->default_type->name);
        } else {
                config_enabled_types_string(c, enabled, sizeof enabled);
                return error_set(-ENOENT, "mdev %s has no type and the config has no default type: add <mh:mdev uuid=\"%s\" type=\"...\"/> to the domain's <metadata><mh:mdevs xmlns:mh=\"" DOMXML_NAMESPACE "\"> (enabled types: %s)",
                                 m->uuid, m->uuid, enabled);
        }
        if (r < 0) {
                strv_free(w.types);
                return r;
        }
        *ret = w;
        return 0;
}

int alloc_held_by_other(const Alloc *a, const char *uuid, LedgerEntry *ret_holder) {
        OwnerState s;
        LedgerEntry e;
        int r;

        r = owner_read(a->ledgerfd, uuid, a->boot_id, a->guest, &s, &e);
        if (r < 0)
                return r;
        if (s != OWNER_OTHER)
                return 0;
        if (ret_holder)
                *ret_holder = e;
        return 1;
}

int alloc_claim(Alloc *a, const AllocWant *w, const SysfsMdev *m, LedgerState state, LedgerEntry *ret) {
        LedgerEntry prev, e;
        LedgerOrigin origin = LEDGER_BORROWED;
        int r;

        if (!strv_contains(w->types, m->type))
                return error_set(-EMEDIUMTYPE, "mdev %s exists with type %s, but the domain asks for %s; fix the domain's metadata or remove the mdev",
                                 m->uuid, m->type, w->what);
        if (w->parent[0] && !streq(w->parent, m->parent))
                return error_set(-EMEDIUMTYPE, "mdev %s exists on parent %s, but the domain's metadata pins parent %s",
                                 m->uuid, m->parent, w->parent);

        r = ledger_read(a->ledgerfd, m->uuid, &prev);
        if (r < 0 && r != -ENOENT)
                return r;
        if (r >= 0) {
                if (!owner_may_give(owner_of(&prev, a->boot_id, a->guest), OWNER_NAMED))
                        return error_set(-EBUSY, "mdev %s is held by guest '%s' (%s); give this guest another UUID",
                                         m->uuid, prev.guest, ledger_state_to_string(prev.state));
                /* Ours if we created it in this boot; an mdev of an earlier
                 * boot's record is gone, so the one here was made by someone else. */
                if (prev.origin == LEDGER_CREATED && streq(prev.boot_id, a->boot_id))
                        origin = LEDGER_CREATED;
        }

        entry_fill(a, &e, m->uuid, m->parent, m->type, state, origin);
        /* A restart of the guest that holds it already: nothing changes, and
         * nothing needs to be written (or fsynced). */
        if (r >= 0 && prev.state == e.state && prev.origin == e.origin && !prev.remove_pending &&
            streq(prev.guest, e.guest) && streq(prev.guest_uuid, e.guest_uuid) &&
            streq(prev.boot_id, e.boot_id) && streq(prev.parent, e.parent) && streq(prev.type, e.type)) {
                if (ret)
                        *ret = prev;
                return 0;
        }
        r = undo_push(a, m->uuid, false);
        if (r < 0)
                return r;
        r = ledger_write_nosync(a->ledgerfd, &e);
        if (r < 0)
                return r;
        if (ret)
                *ret = e;
        return 0;
}
