/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Creating mdevs: one (alloc_create()), and many planned from one reading
 * (alloc_plan(), alloc_run_plans()). alloc.c's crash-safety rule holds
 * here: the intent record before the create.
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

/* candidates_read(), and -ENOENT with the reason when the config enables
 * none of w's types. */
static int candidates_read_enabled(Alloc *a, const AllocWant *w, CandidateList *l) {
        bool any_enabled = false;
        char enabled[512];
        int r;

        r = candidates_read(a, w, l, &any_enabled);
        if (r < 0 || any_enabled)
                return r;
        config_enabled_types_string(a->config, enabled, sizeof enabled);
        return error_set(-ENOENT, "type %s is not enabled here; enabled: %s", w->what, enabled);
}

int alloc_create(Alloc *a, const AllocWant *w, const char *uuid, LedgerState state, LedgerEntry *ret) {
        _cleanup_free_ AllocCandidate *cand = NULL;
        CandidateList l = { 0 };
        char msg[1024];
        int r;

        if (!uuid_is_valid(uuid))
                return error_set(-EINVAL, "'%s' is not a UUID", uuid);

        r = candidates_read_enabled(a, w, &l);
        cand = l.c;
        if (r < 0)
                return r;
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
 * as little as that takes: pack without a cap or a NUMA wish stops at a certain choice
 * (alloc_pack_certain()); otherwise every candidate is read and sorted.
 * Many candidates are read on two threads (alloc_probe_split()). */
static int plan_choose(Alloc *a, const AllocWant *w, CandidateList *l, const AllocCandidate **ret) {
        _cleanup_free_ bool *fresh = calloc(l->n + 1, sizeof *fresh);
        ProbeCached p = { .a = a, .known = a->n_probed, .base = l->c, .fresh = fresh };
        bool certain = a->config->placement == CONFIG_PLACEMENT_PACK && !want_capped(a, w) && !a->wish;
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
        r = candidates_read_enabled(a, w, &l);
        cand = l.c;
        if (r < 0)
                return r;
        r = candidates_order(a, w, &l);
        if (r < 0)
                return r;
        candidates_message(a, w, &l, msg, sizeof msg);
        if (planned > 0)
                return error_set(-ENOSPC, "%s (room for %zu of the %zu asked for)", msg, planned, count);
        return error_set(-ENOSPC, "%s", msg);
}
