/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <string.h>

#include "error.h"
#include "owner.h"

static bool held(const LedgerEntry *e) {
        return e->state == LEDGER_ASSIGNED || e->state == LEDGER_INCOMING;
}

OwnerState owner_of(const LedgerEntry *e, const char *boot_id, const char *guest) {
        bool ours;

        if (!e || !streq(e->boot_id, boot_id))
                return OWNER_NOBODY;
        ours = guest && streq(e->guest, guest);
        if (held(e) && !ours)
                return OWNER_OTHER;
        if (e->remove_pending)
                return OWNER_PENDING;
        if (held(e))
                return OWNER_THIS;
        return OWNER_NOBODY;
}

bool owner_may_give(OwnerState s, OwnerWay way) {
        switch (s) {
        case OWNER_NOBODY:
        case OWNER_THIS:
                return true;
        case OWNER_PENDING:
                return way == OWNER_NAMED;
        case OWNER_OTHER:
        default:
                return false;
        }
}

int owner_read(int ledgerfd, const char *key, const char *boot_id, const char *guest, OwnerState *ret,
               LedgerEntry *ret_entry) {
        LedgerEntry e;
        int r;

        if (ledgerfd < 0) {
                *ret = OWNER_NOBODY;
                return 0;
        }
        r = ledger_read(ledgerfd, key, &e);
        if (r == -ENOENT) {
                error_clear();
                *ret = OWNER_NOBODY;
                return 0;
        }
        if (r < 0)
                return r;
        *ret = owner_of(&e, boot_id, guest);
        if (ret_entry)
                *ret_entry = e;
        return 1;
}
