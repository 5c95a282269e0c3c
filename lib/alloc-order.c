/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Ordering and reading candidates: the pure helpers of alloc.c (alloc.h),
 * unit-tested (test-alloc-order.c). The order is the placement engine's
 * (place.h), with an mdev parent's available_instances as its room.
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

/* --- small pure helpers (unit-tested) ----------------------------------- */

void alloc_want_done(AllocWant *w) {
        strv_free(w->types);
        w->types = NULL;
}

static PlaceKey candidate_key(const AllocCandidate *c) {
        return (PlaceKey) { .parent = c->parent, .order = c->order, .room = c->available, .near = c->near };
}

/* The parents offering one type are GPUs of one model, with the same total
 * per type (and with the one-type rule, a parent holding other types offers
 * 0): so fewer available means more of the type held. Ordering by
 * available_instances gives pack and spread without listing every
 * candidate's devices/ directory. */
static int candidate_cmp(const void *x, const void *y, void *userdata) {
        PlaceKey a = candidate_key(x), b = candidate_key(y);

        return place_cmp(&a, &b, *(const ConfigPlacement *) userdata);
}

void alloc_candidates_sort(AllocCandidate *c, size_t n, ConfigPlacement placement) {
        if (n > 1)
                qsort_r(c, n, sizeof *c, candidate_cmp, &placement);
}

static int tie_cmp(const void *x, const void *y) {
        PlaceKey a = candidate_key(x), b = candidate_key(y);

        return place_cmp_ties(&a, &b);
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
