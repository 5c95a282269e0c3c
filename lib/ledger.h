/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The record of who holds which mdev (doc/design.md §2, §4.1): one small INI file per
 * mdev UUID under var/lib/mdev-hooks/ (relative to the root), replaced
 * atomically (how, and what a crash leaves: lib/ledger.c, above
 * record_stage()). Parsed with inih.
 *
 *   [mdev]
 *   uuid = b1ae8bf6-38b0-4c81-9d44-78ce2e5d2b9d
 *   parent = 0000:84:00.0
 *   type = nvidia-35
 *   state = assigned
 *   origin = created
 *   guest = web1
 *   guest_uuid = 8d5e...            (empty when unknown)
 *   boot_id = 1a2b...               (the boot in which the mdev was seen to exist)
 *   since = 1732245600              (unix time of the last state change)
 *   remove_pending = no             (a remove that failed busy; retried later)
 *
 * Changes happen only under the host-wide lock (lock.h). Readers without the
 * lock (the CLI's list) may see the old or the new file, never a torn one.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "enumtable.h"
#include "util.h"

#define LEDGER_DIR "var/lib/mdev-hooks" /* under the root */

typedef enum LedgerState {
        LEDGER_ASSIGNED, /* a guest holds it (prepare, reconnect) */
        LEDGER_INCOMING, /* claimed by migrate/restore for a guest that is arriving */
        LEDGER_FREE,     /* created by mdev-hooks, kept by release = keep, held by nobody */
        LEDGER_LOST,     /* a guest's mdev that no longer exists (reboot, parent gone, removed by hand) */
        _LEDGER_STATE_MAX,
        _LEDGER_STATE_INVALID = -EINVAL,
} LedgerState;

typedef enum LedgerOrigin {
        LEDGER_CREATED,  /* mdev-hooks created it: it may remove it */
        LEDGER_BORROWED, /* it existed before: never removed by mdev-hooks */
        _LEDGER_ORIGIN_MAX,
        _LEDGER_ORIGIN_INVALID = -EINVAL,
} LedgerOrigin;

typedef struct LedgerEntry {
        char uuid[UUID_STRING_MAX];
        char parent[NAME_STRING_MAX];
        char type[NAME_STRING_MAX];
        LedgerState state;
        LedgerOrigin origin;
        char guest[GUEST_NAME_MAX];       /* empty for free */
        char guest_uuid[UUID_STRING_MAX]; /* empty when unknown */
        char boot_id[UUID_STRING_MAX];
        uint64_t since;
        bool remove_pending;
        /* A MIG-backed vGPU of NVIDIA's VFIO framework: where the driver put
         * it (the VF's gpu_instance_id and placement_id, read back after
         * programming). Written only when set, so other records are as
         * before; a record without them reads as unset. Never on a lost
         * record: the vGPU is gone, and where the driver puts it when it is
         * made again is read back then (written without them, read as
         * unset). */
        bool has_placement;
        unsigned gpu_instance_id, placement_id;
} LedgerEntry;

/* A record's key (LedgerEntry.uuid, the file name): an mdev's UUID, or for
 * a vGPU of NVIDIA's vendor-specific VFIO framework the VF's PCI address
 * in lower case ("0000:41:00.4"; its parent is then the PF). */
bool ledger_key_is_valid(const char *s);
/* Whether a key names a VF (a PCI address), not an mdev. */
bool ledger_key_is_vf(const char *s);

ENUM_DECL(ledger_state, LedgerState);
ENUM_DECL(ledger_origin, LedgerOrigin);

/* Who a new record is for and since when: a guest (its name, its UUID or
 * NULL; a UUID that is not valid is left out) in this boot. */
typedef struct LedgerHolder {
        const char *guest;
        const char *guest_uuid;
        const char *boot_id;
        uint64_t since;
} LedgerHolder;

/* The one record filler of every backend: e as a new record of the device
 * key (an mdev's UUID, a VF's address) on parent, of type, in state, of
 * origin, held by h. */
void ledger_entry_init(LedgerEntry *e, const char *key, const char *parent, const char *type, LedgerState state,
                       LedgerOrigin origin, const LedgerHolder *h);

/* Makes e a free record, held by no guest since the given time (release =
 * keep, or a remove that failed). Its origin and remove_pending stay. */
void ledger_entry_set_free(LedgerEntry *e, uint64_t since);

/* Opens (creating it, mode 0700) the record directory under the root. */
int ledger_open(int rootfd, int *ret_dirfd);
/* Opens it only if it exists: -ENOENT otherwise (readers such as the CLI). */
int ledger_open_existing(int rootfd, int *ret_dirfd);

/* -ENOENT: no record for this UUID. A record that does not parse is -EBADMSG
 * with a message naming the file and line. */
int ledger_read(int dirfd, const char *uuid, LedgerEntry *ret);
/* Atomically replaces the record of e->uuid, durable when it returns. */
int ledger_write(int dirfd, const LedgerEntry *e);
/* Removes the record (and fsyncs the directory). -ENOENT is not an error: returns 0. */
int ledger_remove(int dirfd, const char *uuid);
/* As ledger_write() and ledger_remove(), but without the fsync of the
 * directory, for a batch of changes under one lock: each change is visible at
 * once (the rename or unlink is done), and durable once ledger_sync() has
 * returned. Call ledger_sync() before any of the changes is reported as done
 * (it needs no lock: it changes nothing others see). */
int ledger_write_nosync(int dirfd, const LedgerEntry *e);
int ledger_remove_nosync(int dirfd, const char *uuid);
/* ledger_write_nosync() of n records of n distinct UUIDs, each still
 * written to a temp file, fsynced and renamed into place, but all n temp
 * files are written before the first fsync and the fsyncs overlap (on up to
 * four threads; BENCHMARKS.md, "Records written together"). On failure
 * the records before the one that failed are in place (as after that many
 * ledger_write_nosync()), the others are not. */
int ledger_write_many_nosync(int dirfd, const LedgerEntry *entries, size_t n);
/* fsyncs the record directory: the batch's renames and unlinks are durable. */
int ledger_sync(int dirfd);
/* Every record, sorted by UUID. Files that do not parse are skipped and
 * counted in *ret_bad (may be NULL); stray temporary files are ignored. */
int ledger_list(int dirfd, LedgerEntry **ret, size_t *ret_n, size_t *ret_bad);
/* The records of one parent, sorted by UUID; as ledger_list() otherwise.
 * Found through an index that ledger_write() keeps
 * (var/lib/mdev-hooks.by-parent/<parent>/<uuid>), so that this reads only the
 * parent's own records; every record ledger_write() wrote for the parent is
 * found, and stale entries are pruned. Safe without the lock. Without an
 * index (records written by other means) it reads them all. *ret_bad counts
 * the indexed files that do not parse. */
int ledger_list_parent(int dirfd, const char *parent, LedgerEntry **ret, size_t *ret_n, size_t *ret_bad);
/* Puts back the parent index's missing entries of records that ledger_list()
 * found (after a power loss, or written by hand). Never creates the index
 * itself; safe without the lock. */
int ledger_index_parent_check(int dirfd, const LedgerEntry *list, size_t n);
/* The records of one guest (by name), sorted by UUID. Found through an index
 * that ledger_write() keeps (var/lib/mdev-hooks.by-guest/), so that this reads
 * only the guest's own records; every record ledger_write() gave the guest is
 * found. Without an index (records written by other means) it reads them all. */
int ledger_list_guest(int dirfd, const char *guest, LedgerEntry **ret, size_t *ret_n);
/* As ledger_list_guest(), and the UUIDs of the records that the guest's
 * index names but that do not parse (truncated, garbage), in
 * *ret_unreadable (NULL when there are none; free with strv_free()). Without
 * an index: every record file that does not parse (it may be the guest's).
 * release reports them: it cannot tell whose mdev such a record kept. */
int ledger_list_guest_checked(int dirfd, const char *guest, LedgerEntry **ret, size_t *ret_n,
                              char ***ret_unreadable);
/* The UUIDs of every record file that does not parse, sorted (NULL when
 * there are none): what reconcile repairs. */
int ledger_list_unreadable(int dirfd, char ***ret);
/* The records that name no guest (free mdevs kept by mdev-hooks, and the
 * like), sorted by UUID. Found through an index that ledger_write() keeps
 * (var/lib/mdev-hooks.by-guest/@free/), so that this reads only those; every
 * such record ledger_write() wrote is found, stale entries are pruned.
 * Without the index it builds it, from every record: call it with the
 * host-wide lock held, as a writer. */
int ledger_list_free(int dirfd, LedgerEntry **ret, size_t *ret_n);

/* The text of a record and back, without the file system (ledger_read() and
 * ledger_write() use these; exported for the fuzzer, tests/fuzz/).
 * ledger_format(): a fresh string, -EINVAL for an entry it would not write.
 * ledger_parse(): text is the whole file, NUL-terminated; uuid is its file
 * name, which the record must name. -EBADMSG with a message otherwise. */
int ledger_format(const LedgerEntry *e, char **ret);
int ledger_parse(const char *uuid, const char *text, LedgerEntry *ret);
