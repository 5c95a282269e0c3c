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
 */
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>

#include "alloc.h"
#include "crash.h"
#include "inventory.h"
#include "lock.h"
#include "log.h"
#include "parentwait.h"

#define ROLLBACK_REMOVE_MSEC 2000
#define RECLAIM_REMOVE_MSEC 1000

/* --- small pure helpers (unit-tested) ----------------------------------- */

void alloc_want_done(AllocWant *w) {
        strv_free(w->types);
        w->types = NULL;
}

/* The parents offering one type are GPUs of one model, with the same total
 * per type (and with the one-type rule, a parent holding other types offers
 * 0): so fewer available means more of the type held. Ordering by
 * available_instances gives pack and spread without listing every
 * candidate's devices/ directory. */
static int candidate_cmp(const void *x, const void *y, void *userdata) {
        const AllocCandidate *a = x, *b = y;
        const ConfigPlacement *placement = userdata;

        if (a->available != b->available) {
                if (*placement == CONFIG_PLACEMENT_PACK)
                        return a->available < b->available ? -1 : 1;
                return a->available > b->available ? -1 : 1;
        }
        if (a->order != b->order)
                return a->order < b->order ? -1 : 1;
        return strcmp(a->parent, b->parent);
}

void alloc_candidates_sort(AllocCandidate *c, size_t n, ConfigPlacement placement) {
        if (n > 1)
                qsort_r(c, n, sizeof *c, candidate_cmp, &placement);
}

static int tie_cmp(const void *x, const void *y) {
        const AllocCandidate *a = x, *b = y;

        if (a->order != b->order)
                return a->order < b->order ? -1 : 1;
        return strcmp(a->parent, b->parent);
}

void alloc_candidates_sort_ties(AllocCandidate *c, size_t n) {
        if (n > 1)
                qsort(c, n, sizeof *c, tie_cmp);
}

/* Reads c[0..n) in order and stops at the first error (*ret_r) or, when
 * certain, at the first with room and exactly 1 left; or, told by *stop,
 * anywhere. Returns where it stopped, n at the end. */
static size_t probe_span(AllocCandidate *c, size_t n, bool certain, AllocProbe probe, void *userdata,
                         const atomic_bool *stop, int *ret_r) {
        *ret_r = 0;
        for (size_t i = 0; i < n; i++) {
                if (stop && atomic_load_explicit(stop, memory_order_relaxed))
                        return n;
                *ret_r = probe(&c[i], userdata);
                if (*ret_r < 0 || (certain && c[i].verdict == ALLOC_OK && c[i].available == 1))
                        return i;
        }
        return n;
}

/* Why the first candidate read with room and exactly 1 available is pack's
 * choice: candidate_cmp() orders by available, then type order, then
 * parent name, and the choice is the first with room (available > 0) in
 * that order. Nothing with room has fewer than 1; those read before it
 * have none or more; those after it come later in (order, name) and so
 * lose a tie at 1. */
int alloc_pack_certain(AllocCandidate *c, size_t n, AllocProbe probe, void *userdata, size_t *ret) {
        int r;
        size_t at = probe_span(c, n, true, probe, userdata, NULL, &r);

        if (r < 0)
                return r;
        *ret = at;
        return 0;
}

/* The second thread of alloc_probe_split(): the second half. */
typedef struct ProbeHalf {
        AllocCandidate *c;
        size_t n, at;
        bool certain;
        AllocProbe probe;
        void *userdata;
        atomic_bool stop; /* the first half decided: nothing here counts */
        int r;
        ErrorSaved why; /* the message of r, set on this thread */
} ProbeHalf;

static void *probe_half_run(void *userdata) {
        ProbeHalf *h = userdata;

        h->at = probe_span(h->c, h->n, h->certain, h->probe, h->userdata, &h->stop, &h->r);
        if (h->r < 0)
                error_save(&h->why);
        return NULL;
}

/* A small stack: a probe needs a few KiB (a path, a message). */
static bool probe_half_start(pthread_t *thread, ProbeHalf *h) {
        pthread_attr_t attr;
        bool attr_ok = pthread_attr_init(&attr) == 0;
        bool started;

        if (attr_ok)
                (void) pthread_attr_setstacksize(&attr, 64 * 1024);
        started = pthread_create(thread, attr_ok ? &attr : NULL, probe_half_run, h) == 0;
        if (attr_ok)
                pthread_attr_destroy(&attr);
        return started;
}

/* Why it reads as the reading in order: that reading stops in the first
 * half (an error, a certain choice) exactly where this one's first thread
 * does, and the second half is then not looked at; otherwise it goes on
 * into the second half as the second thread did, which stops at the first
 * error or certain choice there too. */
int alloc_probe_split(AllocCandidate *c, size_t n, size_t min_split, bool certain,
                      AllocProbe probe, void *userdata, size_t *ret) {
        size_t half = n / 2, at;
        ProbeHalf h = { .c = c + half, .n = n - half, .certain = certain, .probe = probe, .userdata = userdata };
        pthread_t thread;
        int r;

        atomic_init(&h.stop, false);
        if (n < 2 || n < min_split || !probe_half_start(&thread, &h)) {
                at = probe_span(c, n, certain, probe, userdata, NULL, &r);
                if (r < 0)
                        return r;
                *ret = at;
                return 0;
        }
        at = probe_span(c, half, certain, probe, userdata, NULL, &r);
        if (r < 0 || at < half)
                atomic_store(&h.stop, true);
        pthread_join(thread, NULL);
        if (r < 0)
                return r;
        if (at < half) {
                *ret = at;
                return 0;
        }
        if (h.r < 0)
                return error_restore(h.r, &h.why);
        *ret = half + h.at;
        return 0;
}

unsigned alloc_max_left(unsigned max_instances, unsigned existing) {
        if (max_instances == 0)
                return UINT_MAX;
        return existing >= max_instances ? 0 : max_instances - existing;
}

int alloc_candidate_describe(const AllocCandidate *c, char *buf, size_t size) {
        int n = -1;

        switch (c->verdict) {
        case ALLOC_OK:
                n = snprintf(buf, size, "%s has %u of %u left", c->parent, c->available, c->available + c->count);
                break;
        case ALLOC_FULL:
                n = snprintf(buf, size, "%s has 0 of %u left", c->parent, c->count);
                break;
        case ALLOC_NOT_REGISTERED:
                n = snprintf(buf, size, "%s is not registered as an mdev parent", c->parent);
                break;
        case ALLOC_NOT_OFFERED:
                n = snprintf(buf, size, "%s does not offer %s", c->parent, c->type);
                break;
        case ALLOC_OTHER_TYPE:
                if (c->other_type[0])
                        n = snprintf(buf, size, "%s is configured for %s", c->parent, c->other_type);
                else
                        n = snprintf(buf, size, "%s is not configured for any type", c->parent);
                break;
        case ALLOC_CREATE_FAILED:
                if (c->create_errno == ENOENT || c->create_errno == EPROTO)
                        n = snprintf(buf, size, "%s accepted create but did not show the mdev", c->parent);
                else
                        n = snprintf(buf, size, "%s refused create (%s)", c->parent, strerror(c->create_errno));
                break;
        case ALLOC_OVER_MAX:
                n = snprintf(buf, size, "%s is over max_instances for %s", c->parent, c->type);
                break;
        }
        if (n < 0 || (size_t) n >= size)
                return -ENOBUFS;
        return n;
}

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
static uint32_t probe_key_hash(const char *parent, const char *type) {
        return fnv1a32(fnv1a32(fnv1a32(FNV1A32_INIT, parent), "/"), type);
}

/* The slot of (parent, type): the one holding its entry, else the empty
 * one where it would go. The table is never full (probe_index_add()). */
static size_t probe_slot(const Alloc *a, const char *parent, const char *type) {
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
static void probe_forget(Alloc *a, const char *parent) {
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
static void probed_reserve(Alloc *a, size_t more) {
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
static void probed_append(Alloc *a, const AllocCandidate *c) {
        if (a->n_probed == a->probed_allocated)
                probed_reserve(a, a->probed_allocated ? a->probed_allocated : 32);
        if (a->n_probed == a->probed_allocated)
                return;
        a->probed[a->n_probed++] = *c;
        probe_index_add(a);
}

/* A creation alloc_plan() chose, that alloc_run_plans() makes. */
typedef struct AllocPlan {
        const AllocWant *want;
        char uuid[UUID_STRING_MAX];
        char parent[NAME_STRING_MAX];
        char type[NAME_STRING_MAX];
        LedgerState state;
        LedgerEntry *ret;
} AllocPlan;

static void plans_clear(Alloc *a) {
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

static bool is_reserved(const Alloc *a, const char *uuid) {
        for (size_t i = 0; i < a->n_reserved; i++)
                if (streq(a->reserved[i], uuid))
                        return true;
        return false;
}

void alloc_commit(Alloc *a) {
        a->n_undo = 0;
}

/* Remembers the record of uuid as it is before this call first touches it. */
static int undo_push(Alloc *a, const char *uuid, bool created) {
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

static void entry_fill(const Alloc *a, LedgerEntry *e, const char *uuid, const char *parent,
                       const char *type, LedgerState state, LedgerOrigin origin) {
        memset(e, 0, sizeof *e);
        snprintf(e->uuid, sizeof e->uuid, "%s", uuid);
        snprintf(e->parent, sizeof e->parent, "%s", parent);
        snprintf(e->type, sizeof e->type, "%s", type);
        e->state = state;
        e->origin = origin;
        snprintf(e->guest, sizeof e->guest, "%s", a->guest);
        if (a->guest_uuid && uuid_is_valid(a->guest_uuid))
                uuid_normalize(a->guest_uuid, e->guest_uuid);
        snprintf(e->boot_id, sizeof e->boot_id, "%s", a->boot_id);
        e->since = (uint64_t) time(NULL);
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

static bool entry_is_held(const Alloc *a, const LedgerEntry *e) {
        return (e->state == LEDGER_ASSIGNED || e->state == LEDGER_INCOMING) &&
               streq(e->boot_id, a->boot_id);
}

int alloc_held_by_other(const Alloc *a, const char *uuid, LedgerEntry *ret_holder) {
        LedgerEntry e;
        int r;

        r = ledger_read(a->ledgerfd, uuid, &e);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        if (!entry_is_held(a, &e) || streq(e.guest, a->guest))
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
                if (entry_is_held(a, &prev) && !streq(prev.guest, a->guest))
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

/* --- creating ----------------------------------------------------------- */

typedef struct CandidateList {
        AllocCandidate *c;
        size_t n, allocated;
} CandidateList;

/* Room for `more` candidates, allocated at once (a listing of 256 parents
 * is not grown by doubling, each step a copy). */
static int candidates_reserve(CandidateList *l, size_t more) {
        AllocCandidate *c;
        size_t k = l->n + more;

        if (k <= l->allocated)
                return 0;
        c = reallocarray(l->c, k, sizeof *c);
        if (!c)
                return -ENOMEM;
        l->c = c;
        l->allocated = k;
        return 0;
}

/* Adds parent unless one of the first `known` candidates names it already
 * (known = l->n: the whole list; a caller adding names known to be distinct
 * among themselves, a directory listing, checks only what was there before
 * it began). */
static int candidates_add_upto(CandidateList *l, size_t known, const char *parent, const char *type, unsigned order) {
        AllocCandidate *c;
        int r;

        for (size_t i = 0; i < known && i < l->n; i++)
                if (streq(l->c[i].parent, parent))
                        return 0;
        if (l->n == l->allocated) {
                r = candidates_reserve(l, l->allocated ? l->allocated : 16);
                if (r < 0)
                        return r;
        }
        c = &l->c[l->n++];
        memset(c, 0, sizeof *c);
        /* as snprintf("%s") would, at a fraction of its cost: 256 parents
         * for each mdev of a guest */
        memcpy(c->parent, parent, strnlen(parent, sizeof c->parent - 1));
        memcpy(c->type, type, strnlen(type, sizeof c->type - 1));
        c->order = order;
        c->verdict = ALLOC_OK;
        return 0;
}

static int candidates_add(CandidateList *l, const char *parent, const char *type, unsigned order) {
        return candidates_add_upto(l, l->n, parent, type, order);
}

/* The parents the config assigns to the wanted types (or the pinned one). */
static int candidates_collect(Alloc *a, const AllocWant *w, CandidateList *l, bool *ret_any_enabled) {
        bool any = false;
        int r;

        for (size_t t = 0; w->types[t]; t++) {
                const ConfigType *ct = config_find_type(a->config, w->types[t]);

                if (!ct)
                        continue;
                any = true;
                if (w->parent[0]) {
                        const ConfigType *pt = config_parent_type(a->config, w->parent);

                        r = candidates_add(l, w->parent, ct->name, (unsigned) t);
                        if (r < 0)
                                return r;
                        if (pt != ct) {
                                AllocCandidate *c = &l->c[l->n - 1];
                                c->verdict = ALLOC_OTHER_TYPE;
                                snprintf(c->other_type, sizeof c->other_type, "%s", pt ? pt->name : "");
                        }
                        continue;
                }
                if (ct->addresses && ct->addresses[0]) {
                        for (char **p = ct->addresses; *p; p++) {
                                r = candidates_add(l, *p, ct->name, (unsigned) t);
                                if (r < 0)
                                        return r;
                        }
                        continue;
                }
                /* The default type: every registered parent not listed
                 * elsewhere, listed once per call (Alloc.parents). */
                if (!a->parents) {
                        r = sysfs_parent_list(a->rootfd, &a->parents);
                        if (r < 0)
                                return r;
                }
                char **all = a->parents;
                /* The listing's names are distinct: each is checked only
                 * against the candidates of the types before (n² strcmp
                 * for 256 parents otherwise). */
                size_t before = l->n;
                r = candidates_reserve(l, strv_length(all));
                if (r < 0)
                        return r;
                for (char **p = all; *p; p++)
                        if (config_parent_type(a->config, *p) == ct) {
                                r = candidates_add_upto(l, before, *p, ct->name, (unsigned) t);
                                if (r < 0)
                                        return r;
                        }
        }
        *ret_any_enabled = any;
        return 0;
}

/* sys/class/mdev_bus, opened once per call for the candidates' reads
 * (Alloc.busfd); -1 when it cannot be: they are read from the root. */
static int bus_fd(Alloc *a) {
        if (!a->bus_tried) {
                a->bus_tried = true;
                if (sysfs_bus_open(a->rootfd, &a->busfd) < 0)
                        a->busfd = -1;
        }
        return a->busfd;
}

/* Counts `read` candidates, read or about to be, towards Alloc.dirs_on. */
static void dirs_consider(Alloc *a, size_t read) {
        if (read >= ALLOC_DIRS_MIN)
                a->dirs_on = true;
}

/* --- the candidates' files opened while waiting for the lock ------------ */

/* The slot of (parent, type) in o: its file's, else the empty one where it
 * would go. */
static size_t opened_slot(const AllocOpened *o, const char *parent, const char *type) {
        size_t mask = ALLOC_OPENED_SLOTS - 1, i = probe_key_hash(parent, type) & mask;

        for (;; i = (i + 1) & mask) {
                uint32_t k = o->slots[i];

                if (k == 0 || (streq(o->files[k - 1].parent, parent) && streq(o->files[k - 1].type, type)))
                        return i;
        }
}

/* Opens (parent, type)'s file into o unless it is there, o is full or it
 * cannot be opened. */
static void opened_add(AllocOpened *o, size_t max, int busfd, const char *parent, const char *type) {
        AllocOpenedFile *f;
        size_t s;

        if (!o->slots) {
                o->slots = calloc(ALLOC_OPENED_SLOTS, sizeof *o->slots);
                if (!o->slots)
                        return;
        }
        s = opened_slot(o, parent, type);
        if (o->slots[s] != 0 || o->n == max)
                return;
        if (o->n == o->allocated) {
                /* grown by doubling: a guest's 32 candidates take 8 KiB */
                size_t k = o->allocated ? 2 * o->allocated : 32;
                AllocOpenedFile *x = reallocarray(o->files, k, sizeof *x);

                if (!x)
                        return;
                o->files = x;
                o->allocated = k;
        }
        f = &o->files[o->n];
        *f = (AllocOpenedFile) { .fd = -1 };
        if (sysfs_type_available_open(busfd, parent, type, &f->fd) < 0)
                return;
        /* cut as AllocCandidate's are, which are looked up here */
        memcpy(f->parent, parent, strnlen(parent, sizeof f->parent - 1));
        memcpy(f->type, type, strnlen(type, sizeof f->type - 1));
        o->slots[s] = (uint32_t) ++o->n;
}

/* (parent, type)'s value, read from its file in o: -errno when o has none
 * or it cannot be read so (the caller reads it the usual way). */
static int opened_read(const AllocOpened *o, const char *parent, const char *type, unsigned *ret) {
        uint32_t k;

        if (!o || o->n == 0)
                return -ENOENT;
        k = o->slots[opened_slot(o, parent, type)];
        return k == 0 ? -ENOENT : sysfs_available_pread(o->files[k - 1].fd, ret);
}

void alloc_opened_done(AllocOpened *o) {
        for (size_t i = 0; i < o->n; i++)
                close(o->files[i].fd);
        free(o->files);
        free(o->slots);
        *o = (AllocOpened) { .files = NULL };
}

/* Reads registration, available_instances and the count of one candidate. */
static int candidate_probe(Alloc *a, AllocCandidate *c) {
        int r;

        if (c->verdict == ALLOC_OTHER_TYPE)
                return 0;
        r = opened_read(a->opened, c->parent, c->type, &c->available);
        if (r < 0)
                r = sysfs_type_available_dirs(a->rootfd, bus_fd(a), a->dirs_on ? &a->dirs : NULL, c->parent,
                                              c->type, &c->available);
        if (r == -ENOENT) {
                r = sysfs_parent_is_registered(a->rootfd, c->parent);
                if (r < 0)
                        return r;
                c->verdict = r > 0 ? ALLOC_NOT_OFFERED : ALLOC_NOT_REGISTERED;
                c->available = 0;
                return 0;
        }
        if (r < 0)
                return r;
        c->verdict = c->available > 0 ? ALLOC_OK : ALLOC_FULL;
        return 0;
}

/* Whether one of the first `known` entries of the cache (Alloc.probed) is
 * c's: then c is given what was read of it. */
static bool probe_cache_find(const Alloc *a, size_t known, AllocCandidate *c) {
        const AllocCandidate *p = NULL;

        if (a->probed_slots) {
                uint32_t k = a->probed_slots[probe_slot(a, c->parent, c->type)];

                /* the first entry of the key: none before `known` if not it */
                if (k > 0 && k - 1 < known)
                        p = &a->probed[k - 1];
        } else
                for (size_t i = 0; i < known && i < a->n_probed && !p; i++)
                        if (streq(a->probed[i].parent, c->parent) && streq(a->probed[i].type, c->type))
                                p = &a->probed[i];
        if (!p)
                return false;
        c->available = p->available;
        c->verdict = p->verdict;
        c->create_errno = p->create_errno;
        return true;
}

/* candidate_probe(), once per candidate and call (Alloc.probed). The
 * first `known` entries of the cache are searched (a->n_probed: all; a
 * caller probing distinct candidates passes how many there were before it
 * began, since none it adds can match another). */
static int candidate_probe_cached_upto(Alloc *a, size_t known, AllocCandidate *c) {
        int r;

        if (c->verdict == ALLOC_OTHER_TYPE || probe_cache_find(a, known, c))
                return 0;
        r = candidate_probe(a, c);
        if (r < 0)
                return r;
        probed_append(a, c);
        return 0;
}

static int candidate_probe_cached(Alloc *a, AllocCandidate *c) {
        return candidate_probe_cached_upto(a, a->n_probed, c);
}

static bool candidates_have_room(const CandidateList *l) {
        for (size_t i = 0; i < l->n; i++)
                if (l->c[i].verdict == ALLOC_OK)
                        return true;
        return false;
}

/* parent_wait: a configured parent that has not registered yet but may (the
 * vendor driver is still starting after a boot, a module loads late) is waited
 * for until it registers or the time is up, but only when no registered
 * candidate has room. A udev monitor wakes the wait at once on a real host;
 * a short poll interval covers hosts without udevd and test trees.
 *
 * The wait does not hold the host-wide lock (when the caller gave it in
 * a->lockfd): after a boot every guest may be waiting for its GPU, and one
 * guest's parent_wait must not make the others time out on lock_timeout.
 * Returns 1 when it let go of the lock: the caller re-checks what it read. */
static int candidates_wait_unlocked(Alloc *a, CandidateList *l) {
        _cleanup_(parent_wait_close) ParentWait monitor = { .lib = NULL };
        unsigned long long deadline;
        bool waiting = false;
        int r = 0;

        if (a->config->parent_wait == 0 || candidates_have_room(l))
                return 0;
        for (size_t i = 0; i < l->n; i++)
                if (l->c[i].verdict == ALLOC_NOT_REGISTERED && parent_wait_may_register(a->rootfd, l->c[i].parent))
                        waiting = true;
        if (!waiting)
                return 0;

        parent_wait_open(&monitor);
        deadline = now_usec() + (unsigned long long) a->config->parent_wait * 1000000ULL;
        if (a->lockfd >= 0) {
                /* What this call wrote so far is durable before others get the lock. */
                r = ledger_sync(a->ledgerfd);
                if (r < 0)
                        return r;
                r = lock_suspend(a->lockfd);
                if (r < 0)
                        return r;
        }
        while (now_usec() < deadline) {
                bool pending = false;

                parent_wait_step(&monitor);
                for (size_t i = 0; i < l->n; i++) {
                        AllocCandidate *c = &l->c[i];

                        if (c->verdict != ALLOC_NOT_REGISTERED)
                                continue;
                        r = candidate_probe(a, c);
                        if (r < 0)
                                break;
                        if (c->verdict == ALLOC_NOT_REGISTERED)
                                pending = true;
                }
                if (r < 0 || candidates_have_room(l) || !pending)
                        break;
        }
        if (a->lockfd >= 0) {
                char what[GUEST_NAME_MAX + 16];
                int k;

                snprintf(what, sizeof what, "prepare %s", a->guest);
                k = lock_resume(a->lockfd, a->config->lock_timeout, what);
                if (k < 0) {
                        a->lock_lost = true;
                        return k;
                }
        }
        if (r < 0)
                return r;
        return a->lockfd >= 0;
}

/* The parents the config gives a type: its device_addresses, or for the
 * default type every registered parent not listed elsewhere (*all: the
 * registered parents, listed on first use). */
static int type_parents(const Alloc *a, const ConfigType *ct, char ***all, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        int r;

        if (ct->addresses && ct->addresses[0]) {
                for (char **p = ct->addresses; *p; p++)
                        if (strv_extend(&l, *p) < 0)
                                return -ENOMEM;
                *ret = steal_pointer(&l);
                return 0;
        }
        if (!*all) {
                r = sysfs_parent_list(a->rootfd, all);
                if (r < 0)
                        return r;
        }
        for (char **p = *all; *p; p++)
                if (config_parent_type(a->config, *p) == ct && strv_extend(&l, *p) < 0)
                        return -ENOMEM;
        *ret = steal_pointer(&l);
        return 0;
}

/* max_instances, by the inventory's rule (inventory.h): a candidate of a
 * capped type has room only where the type's inventory, built from what
 * this call read of every parent of the type and the mdevs that exist or
 * are planned, shows free capacity. So the hook never places where
 * `mdev-hooks inventory` says there is none. */
static int candidates_apply_max(Alloc *a, const AllocWant *w, CandidateList *l) {
        _cleanup_free_ SysfsMdev *mdevs = NULL;
        _cleanup_strv_free_ char **all = NULL;
        size_t n_mdevs = 0;
        bool listed = false;
        int r;

        for (size_t t = 0; w->types[t]; t++) {
                const ConfigType *ct = config_find_type(a->config, w->types[t]);
                _cleanup_strv_free_ char **parents = NULL;
                _cleanup_free_ AllocCandidate *seen = NULL;
                _cleanup_free_ InventoryParent *inv = NULL;
                size_t n;

                if (!ct || ct->max_instances == 0)
                        continue;
                if (!listed) {
                        r = sysfs_mdev_list(a->rootfd, &mdevs, &n_mdevs);
                        if (r < 0)
                                return r;
                        listed = true;
                }
                r = type_parents(a, ct, &all, &parents);
                if (r < 0)
                        return r;
                n = strv_length(parents);
                seen = calloc(n + 1, sizeof *seen);
                inv = calloc(n + 1, sizeof *inv);
                if (!seen || !inv)
                        return -ENOMEM;
                for (size_t i = 0; i < n; i++) {
                        AllocCandidate *x = &seen[i];

                        snprintf(x->parent, sizeof x->parent, "%s", parents[i]);
                        snprintf(x->type, sizeof x->type, "%s", ct->name);
                        x->verdict = ALLOC_OK;
                        r = candidate_probe_cached(a, x);
                        if (r < 0)
                                return r;
                        inv[i] = (InventoryParent) {
                                .parent = x->parent,
                                .type = ct->name,
                                .max_instances = ct->max_instances,
                                .offered = x->verdict == ALLOC_OK || x->verdict == ALLOC_FULL,
                                .available = x->available,
                        };
                }
                /* the mdevs of the type that exist, or are planned (counted as made) */
                inventory_sort(inv, n);
                for (size_t k = 0; k < n_mdevs; k++) {
                        InventoryParent *ip = streq(mdevs[k].type, ct->name) ? inventory_find(inv, n, mdevs[k].parent) : NULL;

                        if (ip)
                                ip->existing++;
                }
                for (size_t k = a->plan_next; k < a->n_plans; k++) {
                        InventoryParent *ip = streq(a->plans[k].type, ct->name) ? inventory_find(inv, n, a->plans[k].parent) : NULL;

                        if (ip)
                                ip->existing++;
                }
                inventory_compute(inv, n);
                for (size_t i = 0; i < l->n; i++) {
                        AllocCandidate *c = &l->c[i];
                        const InventoryParent *ip;

                        if (!streq(c->type, ct->name) || c->verdict != ALLOC_OK)
                                continue;
                        ip = inventory_find(inv, n, c->parent);
                        if (ip && ip->free == 0)
                                c->verdict = ALLOC_OVER_MAX;
                }
        }
        return 0;
}

/* The candidates for w, each probed once per call. */
static int candidates_read(Alloc *a, const AllocWant *w, CandidateList *l, bool *ret_any_enabled) {
        size_t known = a->n_probed;
        int r;

        r = candidates_collect(a, w, l, ret_any_enabled);
        if (r < 0 || !*ret_any_enabled)
                return r;
        /* The candidates name distinct parents: only what was cached before
         * can match one (n² strcmp for 256 candidates otherwise). */
        for (size_t i = 0; i < l->n; i++) {
                r = candidate_probe_cached_upto(a, known, &l->c[i]);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* max_instances applied, then in placement order: the order of the tries. */
static int candidates_order(Alloc *a, const AllocWant *w, CandidateList *l) {
        int r;

        r = candidates_apply_max(a, w, l);
        if (r < 0)
                return r;
        alloc_candidates_sort(l->c, l->n, a->config->placement);
        return 0;
}

/* Creates uuid on the candidate and checks it appeared there with the type;
 * its intent record is written already. 0 on success; >0 (the errno) when
 * this candidate refused and the next should be tried; <0 hard error. */
static int candidate_make(Alloc *a, AllocCandidate *c, const char *uuid) {
        char type[NAME_STRING_MAX];
        int r;

        r = sysfs_mdev_create(a->rootfd, c->parent, c->type, uuid);
        probe_forget(a, c->parent);
        if (r == -EEXIST || r == -ENOSPC || r == -EUSERS || r == -EINVAL) {
                c->verdict = ALLOC_CREATE_FAILED;
                c->create_errno = -r;
                return -r;
        }
        if (r < 0)
                return error_set(r, "cannot create mdev %s of type %s on %s: %s", uuid, c->type, c->parent, strerror(-r));

        r = sysfs_mdev_type_on(a->rootfd, c->parent, uuid, type);
        if (r < 0 || !streq(type, c->type)) {
                /* The write succeeded but the device is not what we asked for. */
                if (r >= 0)
                        (void) alloc_remove_mdev(a->rootfd, uuid, ROLLBACK_REMOVE_MSEC);
                c->verdict = ALLOC_CREATE_FAILED;
                c->create_errno = r < 0 ? -r : EPROTO;
                return c->create_errno;
        }
        /* From here on a rollback removes it. */
        for (size_t i = 0; i < a->n_undo; i++)
                if (streq(a->undo[i].uuid, uuid))
                        a->undo[i].created = true;
        if (a->crashpoint_create)
                CRASHPOINT(a->crashpoint_create);
        return 0;
}

/* Writes the intent record, creates, confirms: candidate_make()'s returns. */
static int candidate_create(Alloc *a, AllocCandidate *c, const char *uuid, LedgerState state, LedgerEntry *ret) {
        LedgerEntry e;
        int r;

        r = undo_push(a, uuid, false);
        if (r < 0)
                return r;
        entry_fill(a, &e, uuid, c->parent, c->type, state, LEDGER_CREATED);
        r = ledger_write_nosync(a->ledgerfd, &e);
        if (r < 0)
                return r;
        r = candidate_make(a, c, uuid);
        if (r == 0 && ret)
                *ret = e;
        return r;
}

/* Removes one free mdev that mdev-hooks kept on a full candidate, to make
 * room: never one that this call claims or will claim (alloc_reserve()),
 * whose record may still say free. Returns the index of the candidate that
 * got room, or -ENOENT. */
static int candidates_reclaim(Alloc *a, CandidateList *l) {
        _cleanup_free_ LedgerEntry *recs = NULL;
        size_t n;
        int r;

        r = ledger_list_free(a->ledgerfd, &recs, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < l->n; i++) {
                AllocCandidate *c = &l->c[i];

                if (c->verdict != ALLOC_FULL && c->verdict != ALLOC_OVER_MAX)
                        continue;
                for (size_t j = 0; j < n; j++) {
                        LedgerEntry *e = &recs[j];

                        if (e->state != LEDGER_FREE || e->origin != LEDGER_CREATED ||
                            !streq(e->boot_id, a->boot_id) || !streq(e->type, c->type) ||
                            is_reserved(a, e->uuid))
                                continue;
                        /* over max_instances: a kept mdev anywhere of the type frees a slot;
                         * full: it must be on this parent. */
                        if (c->verdict == ALLOC_FULL && !streq(e->parent, c->parent))
                                continue;
                        r = alloc_remove_mdev(a->rootfd, e->uuid, RECLAIM_REMOVE_MSEC);
                        probe_forget(a, e->parent);
                        if (r < 0)
                                continue;
                        r = ledger_remove_nosync(a->ledgerfd, e->uuid);
                        if (r < 0)
                                return r;
                        e->state = LEDGER_LOST; /* do not pick it twice */
                        r = candidate_probe(a, c);
                        if (r < 0)
                                return r;
                        if (c->verdict == ALLOC_OK)
                                return (int) i;
                        break;
                }
        }
        return -ENOENT;
}

/* Appends one candidate's reason; counts it in *omitted when it does not
 * fit, so that the message can say how many it left out. */
static void message_append(char *buf, size_t size, const AllocCandidate *c, bool *first, unsigned *omitted) {
        size_t o = strlen(buf);
        int n;

        if (o + 3 >= size) {
                (*omitted)++;
                return;
        }
        memcpy(buf + o, *first ? " " : ", ", *first ? 2 : 3);
        n = alloc_candidate_describe(c, buf + o + (*first ? 1 : 2), size - o - (*first ? 1 : 2));
        if (n < 0) {
                buf[o] = '\0'; /* does not fit: leave it out */
                (*omitted)++;
        } else
                *first = false;
}

static void candidates_message(const Alloc *a, const AllocWant *w, CandidateList *l, char *buf, size_t size) {
        _cleanup_strv_free_ char **all = NULL;
        /* Room kept for ", and 9999 more (see mdev-hooks inventory)". */
        size_t room = size > 64 ? size - 48 : size;
        unsigned omitted = 0;
        bool first = true;

        snprintf(buf, size, "no capacity for %s:", w->what);
        for (size_t i = 0; i < l->n; i++) {
                AllocCandidate *c = &l->c[i];

                /* "has 0 of N left": N is what it holds now (the failure path
                 * only; placement did not need it). */
                if (c->verdict == ALLOC_FULL && sysfs_type_count(a->rootfd, c->parent, c->type, &c->count) < 0)
                        c->count = 0;
                message_append(buf, room, c, &first, &omitted);
        }

        /* Registered parents that offer the type but are not candidates: say why. */
        if (w->parent[0] || sysfs_parent_list(a->rootfd, &all) < 0)
                goto out;
        for (char **p = all; *p; p++) {
                AllocCandidate x = { .verdict = ALLOC_OTHER_TYPE };
                const ConfigType *pt;
                bool skip = false, offers = false;
                unsigned avail;

                for (size_t i = 0; i < l->n; i++)
                        if (streq(l->c[i].parent, *p))
                                skip = true;
                for (size_t t = 0; !skip && w->types[t] && !offers; t++)
                        offers = sysfs_type_available(a->rootfd, *p, w->types[t], &avail) >= 0;
                if (skip || !offers)
                        continue;
                pt = config_parent_type(a->config, *p);
                snprintf(x.parent, sizeof x.parent, "%s", *p);
                snprintf(x.other_type, sizeof x.other_type, "%s", pt ? pt->name : "");
                message_append(buf, room, &x, &first, &omitted);
        }
out:
        if (first && omitted == 0)
                strncat(buf, " no parent is configured for it", size - strlen(buf) - 1);
        if (omitted > 0)
                snprintf(buf + strlen(buf), size - strlen(buf), ", and %u more (see mdev-hooks inventory)", omitted);
}

int alloc_create(Alloc *a, const AllocWant *w, const char *uuid, LedgerState state, LedgerEntry *ret) {
        _cleanup_free_ AllocCandidate *cand = NULL;
        CandidateList l = { 0 };
        bool any_enabled = false;
        char msg[1024];
        int r;

        if (!uuid_is_valid(uuid))
                return error_set(-EINVAL, "'%s' is not a UUID", uuid);

        r = candidates_read(a, w, &l, &any_enabled);
        cand = l.c;
        if (r < 0)
                return r;
        if (!any_enabled) {
                char enabled[512];

                config_enabled_types_string(a->config, enabled, sizeof enabled);
                return error_set(-ENOENT, "type %s is not enabled here; enabled: %s", w->what, enabled);
        }
        r = candidates_wait_unlocked(a, &l);
        if (r < 0)
                return r;
        if (r > 0) {
                /* Others had the lock meanwhile: the UUID may be theirs now. */
                LedgerEntry holder;

                r = alloc_held_by_other(a, uuid, &holder);
                if (r < 0)
                        return r;
                if (r > 0)
                        return error_set(-EBUSY, "mdev %s was claimed by guest '%s' while this guest waited for its parent",
                                         uuid, holder.guest);
                probe_forget(a, NULL);
                for (size_t i = 0; i < l.n; i++) {
                        r = candidate_probe(a, &l.c[i]);
                        if (r < 0)
                                return r;
                }
        }
        r = candidates_order(a, w, &l);
        if (r < 0)
                return r;

        for (;;) {
                for (size_t i = 0; i < l.n; i++) {
                        if (l.c[i].verdict != ALLOC_OK)
                                continue;
                        r = candidate_create(a, &l.c[i], uuid, state, ret);
                        if (r <= 0)
                                return r;
                }
                /* Every candidate is full: make room by removing a kept free mdev. */
                r = candidates_reclaim(a, &l);
                if (r == -ENOENT)
                        break;
                if (r >= 0)
                        r = candidates_apply_max(a, w, &l); /* room by the inventory's rule */
                if (r < 0)
                        return r;
        }

        /* The intent record of the last try must not outlive the failure. */
        for (size_t i = 0; i < a->n_undo; i++)
                if (streq(a->undo[i].uuid, uuid)) {
                        if (a->undo[i].had_record)
                                (void) ledger_write_nosync(a->ledgerfd, &a->undo[i].prev);
                        else
                                (void) ledger_remove_nosync(a->ledgerfd, uuid);
                }

        candidates_message(a, w, &l, msg, sizeof msg);
        return error_set(-ENOSPC, "%s", msg);
}

/* --- creating many ------------------------------------------------------ */

/* Remembers that the candidate refused a create (candidate_make()), so
 * that alloc_create() after a refused plan moves on to the next candidate,
 * as it does alone, instead of trying it again (Alloc.skip_refused_plan).
 * probe_forget() forgets it again. */
static void probe_remember_refusal(Alloc *a, const AllocCandidate *c) {
        probed_append(a, c); /* only a cache: without room, it is tried again */
}

/* Counts one more instance as taken on the parent in what was read of it. */
static void probe_take(Alloc *a, const char *parent, const char *type) {
        for (size_t i = 0; i < a->n_probed; i++) {
                AllocCandidate *p = &a->probed[i];

                if (!streq(p->parent, parent) || !streq(p->type, type))
                        continue;
                if (p->available > 0)
                        p->available--;
                if (p->available == 0 && p->verdict == ALLOC_OK)
                        p->verdict = ALLOC_FULL;
        }
}

/* Whether a wanted type has max_instances (candidates_apply_max()). */
static bool want_capped(const Alloc *a, const AllocWant *w) {
        for (size_t t = 0; w->types[t]; t++) {
                const ConfigType *ct = config_find_type(a->config, w->types[t]);

                if (ct && ct->max_instances > 0)
                        return true;
        }
        return false;
}

/* plan_choose()'s probe, for alloc_probe_split(): candidate_probe_cached_upto()
 * without the append, which is left to the caller, since the cache must not
 * grow while two threads read it. fresh[i]: base[i] was read now. */
typedef struct ProbeCached {
        Alloc *a;
        size_t known;
        const AllocCandidate *base;
        bool *fresh;
} ProbeCached;

static int probe_cached_cb(AllocCandidate *c, void *userdata) {
        ProbeCached *p = userdata;
        int r;

        if (c->verdict == ALLOC_OTHER_TYPE || probe_cache_find(p->a, p->known, c))
                return 0;
        r = candidate_probe(p->a, c);
        if (r >= 0)
                p->fresh[c - p->base] = true;
        return r;
}

/* The candidate alloc_create() would try first (NULL: none has room), read
 * as little as that takes: pack without a cap stops at a certain choice
 * (alloc_pack_certain()); otherwise every candidate is read and sorted.
 * Many candidates are read on two threads (alloc_probe_split()). */
static int plan_choose(Alloc *a, const AllocWant *w, CandidateList *l, const AllocCandidate **ret) {
        _cleanup_free_ bool *fresh = calloc(l->n + 1, sizeof *fresh);
        ProbeCached p = { .a = a, .known = a->n_probed, .base = l->c, .fresh = fresh };
        bool certain = a->config->placement == CONFIG_PLACEMENT_PACK && !want_capped(a, w);
        size_t i = l->n, n_fresh;
        int r;

        *ret = NULL;
        if (!fresh)
                return -ENOMEM;
        if (certain)
                alloc_candidates_sort_ties(l->c, l->n);
        if (l->n >= ALLOC_SPLIT_MIN)
                (void) bus_fd(a); /* opened before two threads read from it */
        dirs_consider(a, a->n_probed + l->n);
        r = alloc_probe_split(l->c, l->n, ALLOC_SPLIT_MIN, certain, probe_cached_cb, &p, &i);
        if (r < 0)
                return r;
        /* Cached as the reading in order would have: not what the second
         * thread read past the choice. */
        n_fresh = 0;
        for (size_t k = 0; k < l->n && k <= i; k++)
                n_fresh += fresh[k];
        probed_reserve(a, n_fresh);
        for (size_t k = 0; k < l->n && k <= i; k++)
                if (fresh[k])
                        probed_append(a, &l->c[k]);
        if (certain && i < l->n) {
                *ret = &l->c[i];
                return 0;
        }
        r = candidates_order(a, w, l);
        if (r < 0)
                return r;
        for (size_t k = 0; k < l->n && !*ret; k++)
                if (l->c[k].verdict == ALLOC_OK)
                        *ret = &l->c[k];
        return 0;
}

int alloc_plan(Alloc *a, const AllocWant *w, const char *uuid, LedgerState state, LedgerEntry *ret) {
        _cleanup_free_ AllocCandidate *cand = NULL;
        CandidateList l = { 0 };
        const AllocCandidate *chosen = NULL;
        bool any_enabled = false;
        AllocPlan *p;
        int r;

        if (!uuid_is_valid(uuid))
                return 0; /* alloc_create() says so */
        r = candidates_collect(a, w, &l, &any_enabled);
        cand = l.c;
        if (r < 0 || !any_enabled)
                return r;
        r = plan_choose(a, w, &l, &chosen);
        if (r < 0)
                return r;
        if (!chosen)
                return 0;

        p = realloc(a->plans, (a->n_plans + 1) * sizeof *p);
        if (!p)
                return -ENOMEM;
        a->plans = p;
        p = &a->plans[a->n_plans++];
        *p = (AllocPlan) { .want = w, .state = state, .ret = ret };
        memcpy(p->uuid, uuid, sizeof p->uuid);
        snprintf(p->parent, sizeof p->parent, "%s", chosen->parent);
        snprintf(p->type, sizeof p->type, "%s", chosen->type);
        probe_take(a, chosen->parent, chosen->type);
        return 1;
}

int alloc_run_plans(Alloc *a) {
        _cleanup_free_ LedgerEntry *entries = NULL;
        size_t n = a->n_plans;
        int r = 0;

        if (n == 0)
                return 0;
        entries = calloc(n, sizeof *entries);
        if (!entries) {
                r = -ENOMEM;
                goto out;
        }
        for (size_t i = 0; i < n; i++) {
                const AllocPlan *p = &a->plans[i];

                r = undo_push(a, p->uuid, false);
                if (r < 0)
                        goto out;
                entry_fill(a, &entries[i], p->uuid, p->parent, p->type, p->state, LEDGER_CREATED);
        }
        /* Every intent record visible before the first create, as one by one. */
        r = ledger_write_many_nosync(a->ledgerfd, entries, n);
        if (r < 0)
                goto out;

        for (size_t i = 0; i < n; i++) {
                const AllocPlan *p = &a->plans[i];
                AllocCandidate c = { .verdict = ALLOC_OK };

                a->plan_next = i + 1;
                snprintf(c.parent, sizeof c.parent, "%s", p->parent);
                snprintf(c.type, sizeof c.type, "%s", p->type);
                r = candidate_make(a, &c, p->uuid);
                if (r < 0)
                        goto out;
                if (r == 0) {
                        if (p->ret)
                                *p->ret = entries[i];
                } else {
                        /* The parent refused (someone else took the room meanwhile):
                         * from the start, as alloc_create() alone; it rewrites the
                         * intent record for the parent it tries. */
                        if (a->skip_refused_plan)
                                probe_remember_refusal(a, &c);
                        r = alloc_create(a, p->want, p->uuid, p->state, p->ret);
                        probe_forget(a, c.parent); /* the next mdev reads it afresh */
                        if (r < 0)
                                goto out;
                }
                if (a->crashpoint_made)
                        CRASHPOINT(a->crashpoint_made);
        }
        r = 0;
out:
        plans_clear(a);
        return r;
}

/* --- room, read only (mdev-hooks attach) ------------------------------- */

/* Kept free mdevs (release = keep) of one of w's types, which alloc_create()
 * removes to make room when every candidate is full. */
static unsigned kept_free_count(const Alloc *a, const AllocWant *w) {
        _cleanup_free_ LedgerEntry *recs = NULL;
        unsigned kept = 0;
        size_t n;

        if (a->ledgerfd < 0 || ledger_list_free(a->ledgerfd, &recs, &n) < 0) {
                error_clear();
                return 0;
        }
        for (size_t i = 0; i < n; i++)
                if (recs[i].state == LEDGER_FREE && recs[i].origin == LEDGER_CREATED &&
                    streq(recs[i].boot_id, a->boot_id) && strv_contains(w->types, recs[i].type) &&
                    (!w->parent[0] || streq(recs[i].parent, w->parent)))
                        kept++;
        return kept;
}

int alloc_check_room(Alloc *a, const AllocWant *w, char (*uuids)[UUID_STRING_MAX], size_t count) {
        _cleanup_free_ LedgerEntry *entries = calloc(count + 1, sizeof *entries);
        _cleanup_free_ AllocCandidate *cand = NULL;
        CandidateList l = { 0 };
        bool any_enabled = false;
        size_t planned = 0;
        char msg[1024];
        int r = 0;

        if (!entries)
                return -ENOMEM;
        while (planned < count) {
                r = alloc_plan(a, w, uuids[planned], LEDGER_ASSIGNED, &entries[planned]);
                if (r <= 0)
                        break;
                planned++;
        }
        plans_clear(a); /* only counted: nothing is made */
        probe_forget(a, NULL);
        if (r < 0)
                return r;
        if (planned == count || planned + kept_free_count(a, w) >= count)
                return 0;

        /* As alloc_create() explains it. */
        r = candidates_read(a, w, &l, &any_enabled);
        cand = l.c;
        if (r < 0)
                return r;
        if (!any_enabled) {
                char enabled[512];

                config_enabled_types_string(a->config, enabled, sizeof enabled);
                return error_set(-ENOENT, "type %s is not enabled here; enabled: %s", w->what, enabled);
        }
        r = candidates_order(a, w, &l);
        if (r < 0)
                return r;
        candidates_message(a, w, &l, msg, sizeof msg);
        if (planned > 0)
                return error_set(-ENOSPC, "%s (room for %zu of the %zu asked for)", msg, planned, count);
        return error_set(-ENOSPC, "%s", msg);
}

/* How many files alloc_preopen() may open: ALLOC_OPENED_MAX, and a quarter
 * of what this process may have open. */
static size_t opened_max(void) {
        struct rlimit rl;

        if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
                return ALLOC_OPENED_MAX;
        return rl.rlim_cur / 4 < ALLOC_OPENED_MAX ? (size_t) rl.rlim_cur / 4 : ALLOC_OPENED_MAX;
}

/* Whether w's candidates come from the config alone (device_addresses,
 * or the pinned parent): not a listing of every registered parent. */
static bool want_from_config(const Alloc *a, const AllocWant *w) {
        if (w->parent[0])
                return true;
        for (size_t t = 0; w->types[t]; t++) {
                const ConfigType *ct = config_find_type(a->config, w->types[t]);

                if (ct && !(ct->addresses && ct->addresses[0]))
                        return false;
        }
        return true;
}

/* The candidates of one mdev, as alloc_create() collects them; none when
 * they are ALLOC_SPLIT_MIN or more, or every registered parent (a listing
 * of them all, which the lock's holder makes again): those are read on two
 * threads under the lock, sooner than one thread opens them before it
 * (bench/run's cand256: 1.15 x the time with them opened here). */
static void preopen_one(Alloc *a, const DomxmlMdev *m, size_t *max, AllocOpened *o) {
        AllocWant w;
        CandidateList l = { 0 };
        bool any;

        if (!uuid_is_valid(m->uuid) || alloc_want_resolve(a, m, NULL, &w) < 0)
                return;
        if (want_from_config(a, &w) && !sysfs_mdev_exists(a->rootfd, m->uuid) &&
            candidates_collect(a, &w, &l, &any) >= 0 && l.n < ALLOC_SPLIT_MIN) {
                if (*max == 0)
                        *max = opened_max();
                for (size_t i = 0; i < l.n && o->n < *max; i++)
                        if (l.c[i].verdict != ALLOC_OTHER_TYPE)
                                opened_add(o, *max, bus_fd(a), l.c[i].parent, l.c[i].type);
        }
        free(l.c);
        alloc_want_done(&w);
}

void alloc_preopen(int rootfd, const Config *config, const DomxmlMdev *mdevs, size_t n, AllocOpened *o) {
        size_t max = 0; /* opened_max(), asked once there is a file to open */
        Alloc a;

        *o = (AllocOpened) { .files = NULL };
        alloc_init(&a, rootfd, -1, config, "", NULL, "");
        for (size_t i = 0; i < n && (max == 0 || o->n < max); i++)
                preopen_one(&a, &mdevs[i], &max, o);
        alloc_done(&a);
        error_clear();
}
