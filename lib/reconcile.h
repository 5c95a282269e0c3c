/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * reconcile's decisions and actions (doc/design.md §3): compare what
 * libvirt's guests use with the record (ledger.h) and with sysfs (sysfs.h),
 * decide every disagreement with the action that fixes it, and carry the
 * actions out (the caller holds the host-wide lock, lock.h).
 *
 * No libvirt here: the mdev-hooks-reconcile program (helpers/) reads the
 * guests through libvirt's API, fills ReconcileInput, and prints. The
 * library, which the hook links, never calls libvirt (a hook that does
 * deadlocks). reconcile_plan() decides from three lists, reconcile_apply()
 * acts.
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "enumtable.h"
#include "ledger.h"
#include "sysfs.h"
#include "util.h"

/* An `incoming` claim (migrate/restore on this host) becomes `assigned` at the
 * guest's prepare, seconds later. One older than this whose guest is not
 * running here belongs to a migration that failed without a release. */
#define RECONCILE_INCOMING_MAX_AGE_SEC (10u * 60u)

/* One libvirt guest, running or only defined. */
typedef struct ReconcileGuest {
        char *name;
        char uuid[UUID_STRING_MAX];
        bool active;       /* running (or paused): holds its live mdevs */
        bool persistent;   /* defined */
        char **live;       /* mdev UUIDs of the running guest (live XML), sorted */
        char **config;     /* mdev UUIDs of its definition (inactive XML), sorted */
        char *error;       /* its XML could not be read: why (then live/config are empty) */
} ReconcileGuest;

typedef enum ReconcileAction {
        RECONCILE_ACTION_NONE,       /* report only */
        RECONCILE_ACTION_DROP,       /* remove the record, leave sysfs alone */
        RECONCILE_ACTION_MARK_LOST,  /* record it as lost for a defined guest */
        RECONCILE_ACTION_RECORD,     /* (re)write the record as assigned to a running guest */
        RECONCILE_ACTION_KEEP_FREE,  /* record it as free (release = keep) */
        RECONCILE_ACTION_REMOVE,     /* remove the mdev mdev-hooks created, then its record */
        _RECONCILE_ACTION_MAX,
        _RECONCILE_ACTION_INVALID = -EINVAL,
} ReconcileAction;

typedef enum ReconcileResult {
        RECONCILE_PLANNED,  /* not applied (no --apply) */
        RECONCILE_DONE,
        RECONCILE_FAILED,
        RECONCILE_SKIPPED,  /* --apply, but the action is report-only */
        _RECONCILE_RESULT_MAX,
        _RECONCILE_RESULT_INVALID = -EINVAL,
} ReconcileResult;

typedef struct ReconcileFinding {
        char uuid[UUID_STRING_MAX]; /* "" for findings about a guest or the record directory */
        const char *kind;     /* stable name: "unused", "foreign", ... (reconcile.c lists them) */
        char *guest;          /* the guest concerned, or NULL */
        char *message;        /* what disagrees, one line */
        ReconcileAction action;
        bool counts;          /* false for what is only informative (a foreign mdev) */
        LedgerEntry entry;    /* RECORD, MARK_LOST, KEEP_FREE: the record to write;
                                 REMOVE: the record as it is (rewritten with
                                 remove_pending when the remove is busy) */
        ReconcileResult result;
        char *error;          /* FAILED: why */
} ReconcileFinding;

typedef struct ReconcilePlan {
        ReconcileFinding *findings; /* sorted by UUID, then kind */
        size_t n_findings;
} ReconcilePlan;

/* What reconcile_plan() decides from. */
typedef struct ReconcileInput {
        const ReconcileGuest *guests;
        size_t n_guests;
        const LedgerEntry *records;
        size_t n_records;
        size_t n_bad_records;   /* record files that do not parse */
        /* NULL, or the sorted, NULL-terminated UUIDs of those files: each is
         * planned for ("unreadable-record"), the rest only counted. */
        char * const *bad_records;
        const SysfsMdev *mdevs;
        size_t n_mdevs;
        ConfigRelease release;
        const char *boot_id;    /* this boot */
        uint64_t now;           /* unix time */
} ReconcileInput;

/* The names --json prints ("drop-record", "report-only", ...). */
ENUM_DECL(reconcile_action, ReconcileAction);
ENUM_DECL(reconcile_result, ReconcileResult);

/* Frees what one guest holds and empties it. */
void reconcile_guest_done(ReconcileGuest *g);
void reconcile_guests_free(ReconcileGuest *g, size_t n);

/* Decides. Pure: reads nothing but its input. */
int reconcile_plan(const ReconcileInput *in, ReconcilePlan *ret);
/* Carries out the plan's actions (the caller holds the lock), setting each
 * finding's result. Returns the number of findings that count and are not
 * fixed now. */
size_t reconcile_apply(ReconcilePlan *p, int rootfd, int ledgerfd);
/* The number of findings that count (what the exit status looks at). */
size_t reconcile_plan_count(const ReconcilePlan *p);
void reconcile_plan_done(ReconcilePlan *p);
