/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Who holds a device, and whether it may be given to a guest: the one rule
 * of doc/design.md §4.1, for every kind of device (an mdev's record, keyed
 * by its UUID; a VF's, keyed by its PCI address).
 *
 * From the record alone, in this order:
 *
 *   no record, or one of an earlier boot          OWNER_NOBODY  (the device
 *                                                  it names is gone)
 *   assigned or incoming, to another guest        OWNER_OTHER
 *   a remove (or clear) that failed, pending      OWNER_PENDING
 *   assigned or incoming, to this guest           OWNER_THIS
 *   anything else (free, lost)                    OWNER_NOBODY
 *
 * A pending removal means what release left it as: held by no guest, on its
 * way out (something still had it open). It is never offered: placement,
 * `pick` and migrate's choice of a device for a guest pass it by. A guest
 * whose definition names it (prepare, reconnect: the UUID or VF in its own
 * XML) may take it, and its claim ends the removal: the guest's definition
 * is the operator's word, and the removal was only release's wish.
 * A device held by another guest is never given, either way.
 */
#pragma once

#include <stdbool.h>

#include "ledger.h"

typedef enum OwnerState {
        OWNER_NOBODY,
        OWNER_PENDING,
        OWNER_THIS,
        OWNER_OTHER,
} OwnerState;

/* How the device would come to the guest. */
typedef enum OwnerWay {
        OWNER_NAMED,   /* the guest's own definition names it */
        OWNER_OFFERED, /* chosen for the guest: placement, pick, migrate */
} OwnerWay;

/* The state of the device that record e (NULL: none) describes, for guest
 * (NULL: no guest, as `pick` asks: every holder is another) in boot_id. */
OwnerState owner_of(const LedgerEntry *e, const char *boot_id, const char *guest);
/* Whether a device in state s may be given to the guest that way. */
bool owner_may_give(OwnerState s, OwnerWay way);
/* owner_of() of the record of key in the record directory ledgerfd (< 0: no
 * record directory, OWNER_NOBODY). *ret_entry (may be NULL) gets the record
 * when there is one. -errno when a record exists but cannot be read. */
int owner_read(int ledgerfd, const char *key, const char *boot_id, const char *guest, OwnerState *ret,
               LedgerEntry *ret_entry);
