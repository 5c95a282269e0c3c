/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Which parents are candidates for a type and what each holds, read once
 * per call (alloc-internal.h), and the files opened while waiting for the
 * lock (alloc_preopen()).
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
#include "place.h"

/* --- creating ----------------------------------------------------------- */


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
int candidates_collect(Alloc *a, const AllocWant *w, CandidateList *l, bool *ret_any_enabled) {
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
int bus_fd(Alloc *a) {
        if (!a->bus_tried) {
                a->bus_tried = true;
                if (sysfs_bus_open(a->rootfd, &a->busfd) < 0)
                        a->busfd = -1;
        }
        return a->busfd;
}

/* Counts `read` candidates, read or about to be, towards Alloc.dirs_on. */
void dirs_consider(Alloc *a, size_t read) {
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
int candidate_probe(Alloc *a, AllocCandidate *c) {
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
bool probe_cache_find(const Alloc *a, size_t known, AllocCandidate *c) {
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
int candidate_probe_cached_upto(Alloc *a, size_t known, AllocCandidate *c) {
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
int candidates_wait_unlocked(Alloc *a, CandidateList *l) {
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

/* max_instances, by the placement engine's rule (place.h): the type's
 * inventory built from what this call read of every parent of the type and
 * the mdevs that exist or are planned. */
int candidates_apply_max(Alloc *a, const AllocWant *w, CandidateList *l) {
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

                        if (streq(c->type, ct->name) && c->verdict == ALLOC_OK && place_over_max(inv, n, c->parent))
                                c->verdict = ALLOC_OVER_MAX;
                }
        }
        return 0;
}

/* The candidates for w, each probed once per call. */
int candidates_read(Alloc *a, const AllocWant *w, CandidateList *l, bool *ret_any_enabled) {
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

/* max_instances applied, then in placement order (the guest's NUMA nodes
 * first, when it wishes some): the order of the tries. */
int candidates_order(Alloc *a, const AllocWant *w, CandidateList *l) {
        int r;

        r = candidates_apply_max(a, w, l);
        if (r < 0)
                return r;
        for (size_t i = 0; a->wish && i < l->n; i++)
                l->c[i].near = place_near(a->rootfd, a->wish, l->c[i].parent);
        alloc_candidates_sort(l->c, l->n, a->config->placement);
        return 0;
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
