/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Placement order (alloc.c) on many random topologies: the order in which
 * alloc_create() tries the candidates, as its no-capacity message lists
 * them, is the order of a plain reference that collects every candidate
 * with full de-duplication, reads every available_instances and sorts with
 * alloc_candidates_sort(). It checks that the shortcuts taken when reading
 * the candidates (de-duplicating a directory listing only against the
 * types before it, searching the probe cache only for what was cached
 * before the call) choose exactly what a full scan chooses, for
 * pack and for spread, on a cold and on a warm cache.
 *
 * alloc_plan() reads lazily: pack without max_instances stops at the first
 * candidate, in (type order, parent name) order, with room and exactly 1
 * left (alloc_pack_certain()). Its choice is checked against the same full
 * reference on the same random hosts (plan_check()), and the rule itself,
 * on many random candidate lists with ties, 1s and every verdict, against
 * a full read and alloc_candidates_sort() (pack_certain_round()). */
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>

#include "alloc.h"
#include "fixture.h"
#include "sysfs.h"


#define BOOT "1a2b3c4d-0000-4000-8000-000000000001"
#define UUID "b1ae8bf6-38b0-4c81-9d44-78ce2e5d2b09"
#define UUID2 "c2bf9c07-49c1-4d92-8e55-89df3f6e3c1a"
#define MAX_PARENTS 10
/* On tmpfs: every intent record is fsynced, which a busy disk makes slow. */
#define ROUNDS 200

static int rootfd = -1;

/* The reference: every candidate of the wanted types, in the config's
 * order, each parent once, each read, sorted as placement sorts. */
static size_t reference(const Config *config, char **want, AllocCandidate *out) {
        _cleanup_strv_free_ char **all = NULL;
        size_t n = 0;

        check(sysfs_parent_list(rootfd, &all) == 0);
        for (size_t t = 0; want[t]; t++) {
                const ConfigType *ct = config_find_type(config, want[t]);
                _cleanup_strv_free_ char **parents = NULL;

                if (ct->addresses)
                        for (char **p = ct->addresses; *p; p++)
                                check(strv_extend(&parents, *p) == 0);
                else
                        for (char **p = all; *p; p++)
                                if (config_parent_type(config, *p) == ct)
                                        check(strv_extend(&parents, *p) == 0);
                for (char **p = parents; p && *p; p++) {
                        bool seen = false;

                        for (size_t i = 0; i < n; i++)
                                seen = seen || streq(out[i].parent, *p);
                        if (seen)
                                continue;
                        out[n] = (AllocCandidate) { .order = (unsigned) t, .verdict = ALLOC_OK };
                        snprintf(out[n].parent, sizeof out[n].parent, "%s", *p);
                        snprintf(out[n].type, sizeof out[n].type, "%s", ct->name);
                        if (sysfs_type_available(rootfd, *p, ct->name, &out[n].available) < 0) {
                                error_clear();
                                out[n].available = 0;
                                out[n].verdict = sysfs_parent_is_registered(rootfd, *p) > 0 ? ALLOC_NOT_OFFERED : ALLOC_NOT_REGISTERED;
                        } else if (out[n].available == 0)
                                out[n].verdict = ALLOC_FULL;
                        n++;
                }
        }
        alloc_candidates_sort(out, n, config->placement);
        return n;
}

/* The candidates in the order alloc_create()'s message names them. */
static void check_order(const char *msg, const AllocCandidate *ref, size_t n) {
        const char *prev = msg;

        for (size_t i = 0; i < n; i++) {
                const char *at = strstr(msg, ref[i].parent);

                check(at && at >= prev);
                check(!strstr(at + 1, ref[i].parent)); /* tried once: every parent here is a candidate */
                if (ref[i].verdict == ALLOC_OK)
                        check(strncmp(at + strlen(ref[i].parent), " accepted create", 16) == 0);
                else if (ref[i].verdict == ALLOC_FULL)
                        check(strncmp(at + strlen(ref[i].parent), " has 0 of", 9) == 0);
                else if (ref[i].verdict == ALLOC_NOT_OFFERED)
                        check(strncmp(at + strlen(ref[i].parent), " does not offer", 15) == 0);
                else
                        check(strncmp(at + strlen(ref[i].parent), " is not registered", 18) == 0);
                prev = at;
        }
}

/* alloc_plan() chooses the reference's first candidate with room. Every
 * candidate is made to confirm a create of UUID2 (the mdev's directory and
 * mdev_type link exist beforehand), so that the planned create is the one
 * made and its record names the parent plan chose. */
static void plan_check(const Config *config, const AllocWant *w, const AllocCandidate *ref, size_t n_ref, int ledgerfd) {
        const AllocCandidate *first = NULL;
        LedgerEntry e = { .parent = "" };
        char path[1024];
        Alloc b;
        int r;

        for (size_t i = 0; i < n_ref; i++) {
                if (ref[i].verdict != ALLOC_OK)
                        continue;
                if (!first)
                        first = &ref[i];
                snprintf(path, sizeof path, "sys/class/mdev_bus/%.128s/" UUID2, ref[i].parent);
                check(mkdir_p_at(rootfd, path, 0755) == 0);
                snprintf(path, sizeof path, "sys/class/mdev_bus/%.128s/" UUID2 "/mdev_type", ref[i].parent);
                (void) unlinkat(rootfd, path, 0);
                check(symlinkat(ref[i].type, rootfd, path) == 0); /* link_type() takes the last component */
        }
        alloc_init(&b, rootfd, ledgerfd, config, "web2", NULL, BOOT);
        r = alloc_plan(&b, w, UUID2, LEDGER_ASSIGNED, &e);
        check(r == (first ? 1 : 0));
        if (first) {
                check(alloc_run_plans(&b) == 0);
                check(streq(e.parent, first->parent));
                check(streq(e.type, first->type));
        }
        check(alloc_rollback(&b) == 0);
        alloc_done(&b);
}

static void one_round(unsigned seed, int ledgerfd) {
        char tmpdir[] = "/dev/shm/test-alloc-order-XXXXXX", parents[MAX_PARENTS][16];
        char *addr35[2 * MAX_PARENTS + 1] = { NULL };
        ConfigType types[] = {
                { .name = (char *) "nvidia-35", .addresses = addr35, .mdev_class = (char *) "VGPU" },
                { .name = (char *) "nvidia-37", .addresses = NULL, .mdev_class = (char *) "VGPU" },
        };
        Config config = { .types = types, .n_types = 2, .default_type = &types[1] };
        char *want[3];
        AllocCandidate ref[2 * MAX_PARENTS];
        AllocWant w = { .uuid = UUID, .what = "nvidia-35 or nvidia-37" };
        size_t n_parents, n_addr = 0, n_ref;
        LedgerEntry e;
        Alloc a;
        int r, dirfd;

        srand(seed);
        check(mkdtemp(tmpdir));
        dirfd = open(tmpdir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        check(dirfd >= 0);
        rootfd = dirfd;
        n_parents = 2 + (size_t) rand() % (MAX_PARENTS - 1);
        for (size_t i = 0; i < n_parents; i++) {
                /* not in listing order: the listing's order must not matter */
                snprintf(parents[i], sizeof parents[i], "0000:%02x:00.0", (unsigned) (0x90 - 7 * i) & 0xff);
                if (rand() % 5)
                        fixture_mdev_type(rootfd, parents[i], "nvidia-35", (unsigned) rand() % 4);
                if (rand() % 5)
                        fixture_mdev_type(rootfd, parents[i], "nvidia-37", (unsigned) rand() % 4);
                if (rand() % 3 == 0) {
                        addr35[n_addr++] = parents[i];
                        if (rand() % 3 == 0)
                                addr35[n_addr++] = parents[i]; /* listed twice */
                }
        }
        if (n_addr == 0)
                addr35[0] = parents[0]; /* without addresses it would be a second default type */
        config.placement = rand() % 2 ? CONFIG_PLACEMENT_PACK : CONFIG_PLACEMENT_SPREAD;
        if (rand() % 2)
                want[0] = (char *) "nvidia-35", want[1] = (char *) "nvidia-37";
        else
                want[0] = (char *) "nvidia-37", want[1] = (char *) "nvidia-35";
        want[2] = NULL;
        w.types = want;

        n_ref = reference(&config, want, ref);
        alloc_init(&a, rootfd, ledgerfd, &config, "web1", NULL, BOOT);
        /* cold, then warm: the second call finds the first's readings cached */
        for (int k = 0; k < 2; k++) {
                r = alloc_create(&a, &w, UUID, LEDGER_ASSIGNED, &e);
                check(r == -ENOSPC || r == -ENOENT);
                if (r == -ENOSPC)
                        check_order(error_get(r), ref, n_ref);
                else
                        check(n_ref == 0);
        }
        check(alloc_rollback(&a) == 0);
        alloc_done(&a);
        plan_check(&config, &w, ref, n_ref, ledgerfd);
        close(dirfd);
        tmpdir_remove(tmpdir);
}

/* --- alloc_pack_certain() on random candidate lists ---------------------- */

#define PC_MAX 40

typedef struct Truth {
        AllocCandidate c[PC_MAX]; /* what reading each would give */
        unsigned reads[PC_MAX];
        size_t n;
} Truth;

static int truth_probe(AllocCandidate *c, void *userdata) {
        Truth *t = userdata;

        if (c->verdict == ALLOC_OTHER_TYPE)
                return 0; /* never read, as candidate_probe() */
        for (size_t i = 0; i < t->n; i++)
                if (streq(t->c[i].parent, c->parent)) {
                        t->reads[i]++;
                        c->available = t->c[i].available;
                        c->verdict = t->c[i].verdict;
                        return 0;
                }
        check(!"probed a candidate that is not one");
        return -EINVAL;
}

static void truth_random(Truth *t) {
        static const AllocVerdict other[] = { ALLOC_NOT_OFFERED, ALLOC_NOT_REGISTERED, ALLOC_OTHER_TYPE, ALLOC_CREATE_FAILED };
        unsigned ones = (unsigned) rand() % 4; /* how likely a 1 is: none at all, rarely, often */

        memset(t, 0, sizeof *t);
        t->n = (size_t) rand() % (PC_MAX + 1);
        for (size_t i = 0; i < t->n; i++) {
                AllocCandidate *c = &t->c[i];
                unsigned k = (unsigned) rand() % 10;

                /* distinct names, not in any order */
                snprintf(c->parent, sizeof c->parent, "0000:%02x:%02x.0", (unsigned) (i * 37 + 11) % 256, (unsigned) i);
                c->order = (unsigned) rand() % 3;
                if (k < 6) {
                        c->verdict = ALLOC_OK;
                        c->available = ones && (unsigned) rand() % (8 / ones) == 0 ? 1 : 2 + (unsigned) rand() % 3;
                } else if (k < 8)
                        c->verdict = ALLOC_FULL;
                else
                        c->verdict = other[rand() % 4];
        }
}

static void pack_certain_round(unsigned seed) {
        Truth t;
        AllocCandidate ref[PC_MAX], c[PC_MAX];
        const char *want = NULL;
        size_t at, pos = 0;
        bool one = false;

        srand(seed);
        truth_random(&t);
        /* the reference: every candidate read, sorted, the first with room */
        memcpy(ref, t.c, sizeof ref);
        alloc_candidates_sort(ref, t.n, CONFIG_PLACEMENT_PACK);
        for (size_t i = 0; i < t.n && !want; i++)
                if (ref[i].verdict == ALLOC_OK) {
                        want = ref[i].parent;
                        one = ref[i].available == 1;
                }
        /* as collected: names, type order, nothing read yet */
        for (size_t i = 0; i < t.n; i++) {
                c[i] = (AllocCandidate) { .order = t.c[i].order, .verdict = ALLOC_OK };
                snprintf(c[i].parent, sizeof c[i].parent, "%s", t.c[i].parent);
                if (t.c[i].verdict == ALLOC_OTHER_TYPE)
                        c[i].verdict = ALLOC_OTHER_TYPE;
        }
        alloc_candidates_sort_ties(c, t.n);
        check(alloc_pack_certain(c, t.n, truth_probe, &t, &at) == 0);
        check(at <= t.n);
        for (size_t i = 0; i < t.n; i++)
                check(t.reads[i] <= 1); /* each read once at most */
        if (at < t.n) {
                /* certain: pack's own choice, and nothing after it was read */
                check(want && streq(c[at].parent, want));
                for (size_t i = 0; i < t.n; i++)
                        if (streq(t.c[i].parent, c[at].parent))
                                pos = i;
                check(t.c[pos].available == 1);
                for (size_t i = 0; i < t.n; i++) {
                        bool later = false;

                        for (size_t k = at + 1; k < t.n; k++)
                                later = later || streq(c[k].parent, t.c[i].parent);
                        check(t.reads[i] == (later || t.c[i].verdict == ALLOC_OTHER_TYPE ? 0u : 1u));
                }
        } else {
                /* none certain: all read (but the other type's), sorted as before */
                check(!one);
                for (size_t i = 0; i < t.n; i++)
                        check(t.reads[i] == (t.c[i].verdict == ALLOC_OTHER_TYPE ? 0u : 1u));
                alloc_candidates_sort(c, t.n, CONFIG_PLACEMENT_PACK);
                for (size_t i = 0; i < t.n; i++)
                        if (c[i].verdict == ALLOC_OK) {
                                check(want && streq(c[i].parent, want));
                                break;
                        }
        }
}

/* --- alloc_probe_split() on random candidate lists ---------------------- */

/* Some candidates fail to read (fails[i]): the message names the parent. */
typedef struct Failing {
        Truth t;
        bool fails[PC_MAX];
} Failing;

static int failing_probe(AllocCandidate *c, void *userdata) {
        Failing *f = userdata;

        for (size_t i = 0; i < f->t.n; i++)
                if (f->fails[i] && streq(f->t.c[i].parent, c->parent)) {
                        f->t.reads[i]++; /* each index on one thread only */
                        return error_set(-EIO, "cannot read %s", c->parent);
                }
        return truth_probe(c, &f->t);
}

/* The reading in order: what one thread reads, up to where it stops. */
static int in_order(AllocCandidate *c, size_t n, bool certain, Failing *f, size_t *ret) {
        if (certain)
                return alloc_pack_certain(c, n, failing_probe, f, ret);
        for (size_t i = 0; i < n; i++) {
                int r = failing_probe(&c[i], f);

                if (r < 0)
                        return r;
        }
        *ret = n;
        return 0;
}

static void split_round(unsigned seed) {
        Failing f, g;
        AllocCandidate ref[PC_MAX], c[PC_MAX];
        char why[ERROR_MESSAGE_MAX] = "";
        bool certain = seed % 2;
        size_t at_ref = SIZE_MAX, at = SIZE_MAX, min_split;
        unsigned failing;
        int r_ref, r;

        srand(seed);
        min_split = 2 + (size_t) rand() % 3;
        failing = (unsigned) rand() % 3; /* none, rarely, often */
        memset(&f, 0, sizeof f);
        truth_random(&f.t);
        for (size_t i = 0; i < f.t.n; i++)
                f.fails[i] = failing && (unsigned) rand() % (40 / failing) == 0;
        g = f;
        for (size_t i = 0; i < f.t.n; i++) {
                c[i] = (AllocCandidate) { .order = f.t.c[i].order, .verdict = ALLOC_OK };
                snprintf(c[i].parent, sizeof c[i].parent, "%s", f.t.c[i].parent);
                if (f.t.c[i].verdict == ALLOC_OTHER_TYPE)
                        c[i].verdict = ALLOC_OTHER_TYPE;
        }
        alloc_candidates_sort_ties(c, f.t.n);
        memcpy(ref, c, sizeof ref);

        error_clear();
        r_ref = in_order(ref, f.t.n, certain, &f, &at_ref);
        if (r_ref < 0)
                snprintf(why, sizeof why, "%s", error_get(r_ref));
        error_clear();
        r = alloc_probe_split(c, g.t.n, min_split, certain, failing_probe, &g, &at);
        /* the same outcome: the same error and message, or the same stop */
        check(r == r_ref);
        if (r < 0) {
                check(streq(error_get(r), why));
                return;
        }
        check(at == at_ref);
        /* what the reading in order read, read alike */
        for (size_t i = 0; i < f.t.n && i <= at; i++) {
                check(c[i].verdict == ref[i].verdict);
                check(c[i].available == ref[i].available);
        }
        for (size_t i = 0; i < f.t.n; i++) {
                check(g.t.reads[i] <= 1);
                check(g.t.reads[i] >= f.t.reads[i]); /* it may read more, never less */
        }
}

int main(void) {
        char ldir[] = "/dev/shm/test-alloc-order-ledger-XXXXXX";
        int lroot, ledgerfd;

        check(mkdtemp(ldir));
        lroot = open(ldir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        check(lroot >= 0);
        check(ledger_open(lroot, &ledgerfd) == 0);
        for (unsigned seed = 1; seed <= ROUNDS; seed++)
                one_round(seed, ledgerfd);
        for (unsigned seed = 1; seed <= 20000; seed++)
                pack_certain_round(seed);
        for (unsigned seed = 1; seed <= 20000; seed++)
                split_round(seed);
        close(ledgerfd);
        close(lroot);
        tmpdir_remove(ldir);
        return 0;
}
