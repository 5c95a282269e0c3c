/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Choosing, claiming and creating mdevs for one guest (doc/design.md §1, §4).
 * Used by prepare and reconnect (hook.c) and by migrate/restore (migrate.c).
 *
 * An Alloc is one hook call's transaction. It runs under the host-wide lock
 * (lock.h) and keeps an undo log of every mdev it created and every record it
 * changed, so that alloc_rollback() can put things back when one of the
 * guest's mdevs fails (all or nothing). alloc_commit() forgets the log.
 *
 * Typical use (prepare):
 *
 *     Alloc a;
 *     alloc_init(&a, rootfd, ledgerfd, config, guest, guest_uuid, boot_id);
 *     for each hostdev m:
 *             AllocWant w;
 *             r = alloc_want_resolve(&a, &m, existing_or_NULL, &w);
 *             r = exists ? alloc_claim(&a, &w, &existing, LEDGER_ASSIGNED, &e)
 *                        : alloc_create(&a, &w, m.uuid, LEDGER_ASSIGNED, &e);
 *             alloc_want_done(&w);
 *             if (r < 0) { alloc_rollback(&a); ... }
 *     r = ledger_sync(ledgerfd);          (then roll back if it failed)
 *     alloc_commit(&a);
 *     alloc_done(&a);
 *
 * Records are written without the fsync of their directory
 * (ledger_write_nosync()): each is visible at once, which is what the
 * crash-safety rule needs (alloc.c, doc/design.md §4.4); the caller makes
 * the whole call's changes durable with one ledger_sync() before it reports
 * success. alloc.c syncs by itself only before it lets the lock go to wait
 * for a parent.
 *
 * Every failing function sets a one-line reason with error_set() (util.h),
 * written so that it can follow "mdev-hooks: <guest>: ".
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "domxml.h"
#include "ledger.h"
#include "nodeset.h"
#include "sysfs.h"
#include "util.h"

/* What a hostdev needs, after type resolution (alloc_want_resolve()). */
typedef struct AllocWant {
        char uuid[UUID_STRING_MAX];      /* the hostdev's UUID, lower case */
        char **types;                    /* acceptable types, config order; one unless class= */
        char parent[NAME_STRING_MAX];    /* pinned parent (metadata parent=), "" for any */
        char what[MDEV_CLASS_MAX + 16];  /* for messages: "nvidia-35" or "class CUSTOM_X" */
} AllocWant;

void alloc_want_done(AllocWant *w);

/* One candidate parent for a type, as alloc_create() saw it. Exposed for the
 * unit tests and for messages. */
typedef enum AllocVerdict {
        ALLOC_OK,             /* has room */
        ALLOC_FULL,           /* available_instances is 0 */
        ALLOC_NOT_REGISTERED, /* configured, but not an mdev parent (now) */
        ALLOC_NOT_OFFERED,    /* registered, but does not offer the type */
        ALLOC_OTHER_TYPE,     /* configured for another type */
        ALLOC_CREATE_FAILED,  /* create returned an error (create_errno) */
        ALLOC_OVER_MAX,       /* the type's max_instances is reached on the host */
} AllocVerdict;

typedef struct AllocCandidate {
        char parent[NAME_STRING_MAX];
        char type[NAME_STRING_MAX];
        unsigned available; /* available_instances */
        unsigned count;     /* mdevs of the type this parent holds (read for messages only) */
        unsigned order;     /* position of the type in AllocWant.types */
        bool near;          /* on a NUMA node the guest wishes (Alloc.wish; candidates_order()) */
        AllocVerdict verdict;
        int create_errno;   /* ALLOC_CREATE_FAILED: the positive errno */
        char other_type[NAME_STRING_MAX]; /* ALLOC_OTHER_TYPE: what it is configured for */
} AllocCandidate;

/* Orders candidates for placement: pack puts the parent holding most mdevs of
 * the type first, spread the fewest; ties by type order, then by parent name.
 * "Holding most" is read as "fewest available_instances": the parents that
 * offer one type are GPUs of one model, with one total per type. Only the
 * order changes; verdicts are not looked at. */
void alloc_candidates_sort(AllocCandidate *c, size_t n, ConfigPlacement placement);
/* By type order, then parent name: the ties of alloc_candidates_sort(). */
void alloc_candidates_sort_ties(AllocCandidate *c, size_t n);
/* Reads one candidate: its available and verdict. */
typedef int (*AllocProbe)(AllocCandidate *c, void *userdata);
/* Pack's choice, read lazily: c in alloc_candidates_sort_ties() order is
 * read with probe() one by one until a candidate with room has exactly 1
 * left. That one is what alloc_candidates_sort() would put first among
 * those with room, whatever the unread ones hold: *ret is its index. *ret
 * = n: every candidate was read and none is certain; sort them. For
 * placement pack without max_instances (the cap needs every parent read)
 * and without a NUMA wish (a near candidate may lie anywhere). */
int alloc_pack_certain(AllocCandidate *c, size_t n, AllocProbe probe, void *userdata, size_t *ret);
/* The candidates alloc_plan() reads at once on two threads from this many on
 * (one thread reads c[0..n/2), the other c[n/2..n)). */
#define ALLOC_SPLIT_MIN 64
/* The candidates read from the directories of sys/devices that hold them
 * (SysfsDevDirs) once a call reads this many (those it read before and
 * those it is about to read): learning a directory costs two syscalls, and
 * saves a part of each read's path walk. */
#define ALLOC_DIRS_MIN 64
/* Reads c (n of them) with probe() as one thread reading them in order would,
 * on two threads when n >= min_split: certain = true reads as
 * alloc_pack_certain() does and gives the same *ret; certain = false reads
 * every one (*ret = n). An error is the one the reading in order would have
 * met first, and none when that reading would have stopped before it. The
 * second thread may read candidates after the one a reading in order stops
 * at; what they hold is not to be used. probe() must be safe to call on two
 * threads at once, for different candidates. */
int alloc_probe_split(AllocCandidate *c, size_t n, size_t min_split, bool certain,
                      AllocProbe probe, void *userdata, size_t *ret);
/* How many more mdevs of a type max_instances allows (UINT_MAX: no cap). */
unsigned alloc_max_left(unsigned max_instances, unsigned existing);
/* Appends "<parent> has 0 of 16 left" and the like for one candidate. */
int alloc_candidate_describe(const AllocCandidate *c, char *buf, size_t size);

/* A prepare's candidates' available_instances, opened while it waits for
 * the host-wide lock that another holds (alloc_preopen()). Under the lock
 * each is read with one pread() from its start, which kernfs answers anew
 * as for a new open, instead of an open, a read and a close: the value is
 * read under the lock as before, only the walk to the file is done ahead.
 * A file that cannot be read so (its parent went meanwhile: ENODEV) is
 * read as it was. */
typedef struct AllocOpenedFile {
        char parent[NAME_STRING_MAX];
        char type[NAME_STRING_MAX];
        int fd;
} AllocOpenedFile;
typedef struct AllocOpened {
        AllocOpenedFile *files;
        size_t n, allocated;
        uint32_t *slots; /* ALLOC_OPENED_SLOTS, each a file's position + 1, 0: empty */
} AllocOpened;
/* At most this many files (and a quarter of RLIMIT_NOFILE), so that the
 * index (twice as many slots) is never full. */
#define ALLOC_OPENED_MAX 512
#define ALLOC_OPENED_SLOTS (2 * ALLOC_OPENED_MAX)

typedef struct AllocUndo {
        char uuid[UUID_STRING_MAX];
        bool created;       /* this call created the mdev: remove it */
        bool had_record;    /* prev is the record before this call */
        LedgerEntry prev;
} AllocUndo;

typedef struct Alloc {
        int rootfd;
        int ledgerfd;
        const Config *config;
        const char *guest;
        const char *guest_uuid;            /* NULL or "" when unknown */
        /* The NUMA nodes the guest's memory is pinned to (Domxml.numa_nodes;
         * 0, the default: no wish): candidates there go first (place.h).
         * With a wish every candidate is read and sorted (no lazy pack). */
        NodeSet wish;
        char boot_id[UUID_STRING_MAX];
        /* CRASHPOINT (crash.h) passed right after a successful create, before
         * the caller goes on: "prepare-after-create" (the default) or
         * "migrate-after-create". */
        const char *crashpoint_create;
        /* The crash point after each planned mdev is made and confirmed
         * (alloc_run_plans()), or NULL: prepare's "prepare-after-record". */
        const char *crashpoint_made;
        /* When a parent refuses a planned create (alloc_run_plans()), the
         * mdev's own try from the start (alloc_create()) skips that parent,
         * as alloc_create() alone never tries a candidate twice: prepare.
         * false (the default): it tries it again, as migrate always did. */
        bool skip_refused_plan;
        /* The host-wide lock's fd, or -1 (the default). When set, the wait
         * for an unregistered parent (parent_wait) lets go of the lock and
         * takes it again afterwards, so that other guests can start. */
        int lockfd;
        /* sys/class/mdev_bus (O_PATH), opened on the first candidate read
         * (bus_tried), so that each read walks from there; -1: from the root. */
        int busfd;
        bool bus_tried;
        /* Set once this call reads ALLOC_DIRS_MIN candidates or more: they
         * are then read from the directories that hold them. */
        bool dirs_on;
        SysfsDevDirs dirs;
        /* Candidates' files opened while waiting for the lock
         * (alloc_preopen()), or NULL; read from there first. */
        const AllocOpened *opened;
        /* Set when the lock could not be taken back after that wait: nothing
         * may change any more, and alloc_rollback() leaves this call's work
         * to the guest's release (the same state a killed hook leaves). */
        bool lock_lost;

        AllocUndo *undo;
        size_t n_undo;

        /* What this call read of each candidate (available_instances and
         * verdict), so that a guest with many mdevs reads each candidate
         * once. Valid while the lock is held; forgotten for a parent this
         * call creates or removes on (its counts move, and NVIDIA's one-type
         * rule moves its other types'), and all of it when the lock was let
         * go (parent_wait). */
        AllocCandidate *probed;
        size_t n_probed, probed_allocated;
        /* Its index by (parent, type): open addressing, each slot the
         * entry's position + 1 (0: empty), the first entry of a key; NULL
         * before the first entry, or when it could not be allocated (then
         * searched in order). */
        uint32_t *probed_slots;
        size_t n_probed_slots;
        /* The registered parents (sysfs_parent_list()), listed once per call
         * for the default type's candidates; NULL until then, and again when
         * the probe cache is forgotten whole (the lock was let go). */
        char **parents;

        /* UUIDs this call claims or is about to claim (alloc_reserve()):
         * never removed to make room for a creation, even when their record
         * says free (a kept mdev of this very guest). */
        char (*reserved)[UUID_STRING_MAX];
        size_t n_reserved;

        /* Creations planned (alloc_plan()) and not yet made: counted as
         * taken by the plans and max_instances checks that follow. */
        struct AllocPlan *plans;
        size_t n_plans;
        size_t plan_next;   /* plans before this one are made or being made */
} Alloc;

/* Nothing is allocated here; the strings must outlive the Alloc. */
void alloc_init(Alloc *a, int rootfd, int ledgerfd, const Config *config,
                const char *guest, const char *guest_uuid, const char *boot_id);
/* Frees the undo log. Does NOT roll back: call alloc_rollback() or
 * alloc_commit() first. */
void alloc_done(Alloc *a);

/* Type resolution, in this order: the metadata entry's type=, its class=
 * (every enabled type of that mdev_class), the existing mdev's type (existing
 * may be NULL: migrate passes NULL, the UUID is the source host's), the
 * config's default type. parent= is copied as the pin. -ENOENT with a message
 * saying which metadata entry to add when nothing applies; -EINVAL for a
 * class that no enabled type has. */
int alloc_want_resolve(const Alloc *a, const DomxmlMdev *m, const SysfsMdev *existing, AllocWant *ret);

/* Marks an existing mdev as one this call will claim: alloc_create() never
 * removes it to make room, although its record may still say free (a free
 * mdev kept by release = keep, the guest's own). A caller that claims some
 * mdevs and creates others reserves every mdev it will claim before the
 * first create. -ENOMEM. */
int alloc_reserve(Alloc *a, const char *uuid);

/* Whether a record says another guest holds the UUID (assigned or incoming,
 * in this boot). Returns 1 and fills *ret_holder (may be NULL) if so, 0 if the
 * UUID is free for this guest, <0 on a record that cannot be read. */
int alloc_held_by_other(const Alloc *a, const char *uuid, LedgerEntry *ret_holder);

/* Claims an existing mdev for the guest with state (LEDGER_ASSIGNED or
 * LEDGER_INCOMING): its type must be one of w->types (and its parent w->parent
 * if pinned); another guest's hold is refused naming that guest (-EBUSY).
 * Keeps origin created if mdev-hooks created it (our record, this boot),
 * else records it borrowed. Logged in the undo log. */
int alloc_claim(Alloc *a, const AllocWant *w, const SysfsMdev *m, LedgerState state, LedgerEntry *ret);

/* Creates an mdev with this UUID (w->uuid, or another one for migrate) for
 * the guest and records it with state and origin created. Candidates: the
 * parents the config assigns to each of w->types (or only w->parent), waiting
 * up to parent_wait for configured parents whose device exists but that have
 * not registered, honouring max_instances across the host, ordered by
 * placement. A create that fails with EEXIST/ENOSPC/EUSERS/EINVAL, or that
 * does not show bus/mdev/devices/<uuid> with the right type, moves to the next
 * candidate. When all are full, a free mdev kept by mdev-hooks on a candidate
 * is removed and the create retried there (never one alloc_reserve() named). On failure (-ENOSPC, or -errno)
 * the message lists every candidate and why, e.g.
 *   "no capacity for nvidia-35: 0000:84:00.0 has 0 of 16 left, 0000:85:00.0 is configured for nvidia-36"
 * The creation is in the undo log. The UUID must not exist yet and must not
 * be held by another guest (check with alloc_held_by_other() first). */
int alloc_create(Alloc *a, const AllocWant *w, const char *uuid, LedgerState state, LedgerEntry *ret);

/* alloc_create() in two steps, for a guest with many mdevs: each intent
 * record costs an fsync, and n of them written together cost about one
 * (ledger_write_many_nosync()).
 *
 * alloc_plan() chooses the parent that alloc_create() would try first, from
 * what was read, and counts it as taken for the plans that follow; it writes
 * nothing. With pack and no max_instances on the wanted types it reads the
 * candidates only up to a certain choice (alloc_pack_certain()); otherwise
 * every one. Returns 1 when planned, 0 when it cannot plan (the type is not
 * enabled, or no candidate has room by what was read): then call
 * alloc_run_plans() and alloc_create(), which waits, makes room or explains.
 * w and ret must stay valid until alloc_run_plans().
 *
 * alloc_run_plans() writes the intent records of every plan in one batch,
 * then creates and checks each in order; a plan whose parent refuses goes
 * on as alloc_create() would, from the start. The records and creations are
 * in the undo log. On failure the caller rolls back, as after
 * alloc_create(). */
int alloc_plan(Alloc *a, const AllocWant *w, const char *uuid, LedgerState state, LedgerEntry *ret);
int alloc_run_plans(Alloc *a);

/* Read only, for `mdev-hooks attach`: whether count mdevs of w (UUIDs
 * uuids, none of which exists) could be created now, as alloc_plan() and
 * alloc_create() would see it; kept free mdevs that a create would remove to
 * make room count as room. Writes nothing; the Alloc's plans are forgotten.
 * 0, or -ENOSPC (-ENOENT: the type is not enabled) with alloc_create()'s
 * message: "no capacity for nvidia-35: 0000:84:00.0 has 0 of 16 left, ...". */
int alloc_check_room(Alloc *a, const AllocWant *w, char (*uuids)[UUID_STRING_MAX], size_t count);

/* Opens the available_instances of each candidate of each of the mdevs
 * (their types as alloc_want_resolve() gives them), but not of an mdev that
 * exists already: a prepare calls it while it waits for the lock
 * (lock_acquire_waiting()), and sets Alloc.opened to *o once it holds it.
 * Best effort and no message: a file that cannot be opened is read under
 * the lock as before. */
void alloc_preopen(int rootfd, const Config *config, const DomxmlMdev *mdevs, size_t n, AllocOpened *o);
void alloc_opened_done(AllocOpened *o);

/* Undoes this call's work, newest first: removes the mdevs it created (a busy
 * remove is retried briefly, then left marked remove_pending) and restores
 * the records it changed. Best effort; returns the first error. Clears the log. */
int alloc_rollback(Alloc *a);
/* Keeps this call's work: clears the undo log. */
void alloc_commit(Alloc *a);

/* Removes an mdev mdev-hooks created, retrying a busy remove with backoff for
 * up to timeout_msec. 0 when gone (also when it was gone already), -EBUSY when
 * still busy, -errno. Used by release and rollback. */
int alloc_remove_mdev(int rootfd, const char *uuid, unsigned timeout_msec);
