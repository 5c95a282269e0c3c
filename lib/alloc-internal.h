/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * alloc.c's inside, shared by the files it is split into (as kmod's
 * libkmod-internal.h): alloc.c (the transaction: undo log, what a call
 * read, type resolution and claims), alloc-order.c (the pure helpers that
 * order and read candidates), alloc-candidates.c (which parents are
 * candidates and what each holds, the files opened while waiting for the
 * lock) and alloc-create.c (creating one mdev, and planning and making
 * many). Nothing outside them includes it.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alloc.h"

#define ROLLBACK_REMOVE_MSEC 2000
#define RECLAIM_REMOVE_MSEC 1000

typedef struct AllocPlan {
        const AllocWant *want;
        char uuid[UUID_STRING_MAX];
        char parent[NAME_STRING_MAX];
        char type[NAME_STRING_MAX];
        LedgerState state;
        LedgerEntry *ret;
} AllocPlan;

typedef struct CandidateList {
        AllocCandidate *c;
        size_t n, allocated;
} CandidateList;

void entry_fill(const Alloc *a, LedgerEntry *e, const char *uuid, const char *parent, const char *type, LedgerState state, LedgerOrigin origin);
bool is_reserved(const Alloc *a, const char *uuid);
void plans_clear(Alloc *a);
void probe_forget(Alloc *a, const char *parent);
uint32_t probe_key_hash(const char *parent, const char *type);
size_t probe_slot(const Alloc *a, const char *parent, const char *type);
void probed_append(Alloc *a, const AllocCandidate *c);
void probed_reserve(Alloc *a, size_t more);
int undo_push(Alloc *a, const char *uuid, bool created);
int bus_fd(Alloc *a);
int candidate_probe(Alloc *a, AllocCandidate *c);
int candidate_probe_cached_upto(Alloc *a, size_t known, AllocCandidate *c);
int candidates_apply_max(Alloc *a, const AllocWant *w, CandidateList *l);
int candidates_collect(Alloc *a, const AllocWant *w, CandidateList *l, bool *ret_any_enabled);
int candidates_order(Alloc *a, const AllocWant *w, CandidateList *l);
int candidates_read(Alloc *a, const AllocWant *w, CandidateList *l, bool *ret_any_enabled);
int candidates_wait_unlocked(Alloc *a, CandidateList *l);
void dirs_consider(Alloc *a, size_t read);
bool probe_cache_find(const Alloc *a, size_t known, AllocCandidate *c);
