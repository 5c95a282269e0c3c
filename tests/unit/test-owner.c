/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The one ownership rule (owner.h), over every state of a record. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "fixture.h"
#include "ledger.h"
#include "owner.h"

#define BOOT "11111111-2222-3333-4444-555555555555"
#define OLD_BOOT "99999999-2222-3333-4444-555555555555"

static LedgerEntry entry(LedgerState state, const char *guest, const char *boot, bool pending) {
        LedgerEntry e = { .state = state, .origin = LEDGER_CREATED, .remove_pending = pending };

        snprintf(e.uuid, sizeof e.uuid, "b1ae8bf6-38b0-4c81-9d44-78ce2e5d2b9d");
        snprintf(e.parent, sizeof e.parent, "0000:84:00.0");
        snprintf(e.type, sizeof e.type, "nvidia-35");
        snprintf(e.guest, sizeof e.guest, "%s", guest);
        snprintf(e.boot_id, sizeof e.boot_id, "%s", boot);
        return e;
}

static void test_states(void) {
        LedgerEntry e;

        check(owner_of(NULL, BOOT, "web1") == OWNER_NOBODY);
        /* held by another guest, in this boot: whatever else the record says */
        e = entry(LEDGER_ASSIGNED, "web2", BOOT, false);
        check(owner_of(&e, BOOT, "web1") == OWNER_OTHER);
        e = entry(LEDGER_INCOMING, "web2", BOOT, true);
        check(owner_of(&e, BOOT, "web1") == OWNER_OTHER);
        /* no guest asking (pick): every holder is another */
        e = entry(LEDGER_ASSIGNED, "web1", BOOT, false);
        check(owner_of(&e, BOOT, NULL) == OWNER_OTHER);
        /* this guest's */
        check(owner_of(&e, BOOT, "web1") == OWNER_THIS);
        e = entry(LEDGER_INCOMING, "web1", BOOT, false);
        check(owner_of(&e, BOOT, "web1") == OWNER_THIS);
        /* a pending removal, held by nobody or by this guest */
        e = entry(LEDGER_FREE, "", BOOT, true);
        check(owner_of(&e, BOOT, "web1") == OWNER_PENDING);
        check(owner_of(&e, BOOT, NULL) == OWNER_PENDING);
        e = entry(LEDGER_ASSIGNED, "web1", BOOT, true);
        check(owner_of(&e, BOOT, "web1") == OWNER_PENDING);
        /* free, lost: nobody's */
        e = entry(LEDGER_FREE, "", BOOT, false);
        check(owner_of(&e, BOOT, "web1") == OWNER_NOBODY);
        e = entry(LEDGER_LOST, "web2", BOOT, false);
        check(owner_of(&e, BOOT, "web1") == OWNER_NOBODY);
        /* a record of an earlier boot describes a device that is gone */
        e = entry(LEDGER_ASSIGNED, "web2", OLD_BOOT, true);
        check(owner_of(&e, BOOT, "web1") == OWNER_NOBODY);
}

static void test_may_give(void) {
        check(owner_may_give(OWNER_NOBODY, OWNER_NAMED));
        check(owner_may_give(OWNER_NOBODY, OWNER_OFFERED));
        check(owner_may_give(OWNER_THIS, OWNER_NAMED));
        check(owner_may_give(OWNER_THIS, OWNER_OFFERED));
        /* a pending removal: a guest that names it may take it; never offered */
        check(owner_may_give(OWNER_PENDING, OWNER_NAMED));
        check(!owner_may_give(OWNER_PENDING, OWNER_OFFERED));
        check(!owner_may_give(OWNER_OTHER, OWNER_NAMED));
        check(!owner_may_give(OWNER_OTHER, OWNER_OFFERED));
}

static void test_read(int rootfd) {
        LedgerEntry e = entry(LEDGER_ASSIGNED, "web2", BOOT, false), got = { 0 };
        OwnerState s = OWNER_OTHER;
        int ledgerfd;

        check(ledger_open(rootfd, &ledgerfd) == 0);
        check(owner_read(ledgerfd, e.uuid, BOOT, "web1", &s, &got) == 0 && s == OWNER_NOBODY);
        check(got.uuid[0] == '\0'); /* untouched without a record */
        check(owner_read(-1, e.uuid, BOOT, "web1", &s, NULL) == 0 && s == OWNER_NOBODY);
        check(ledger_write(ledgerfd, &e) == 0);
        check(owner_read(ledgerfd, e.uuid, BOOT, "web1", &s, &got) == 1 && s == OWNER_OTHER);
        check(streq(got.guest, "web2"));
        check(owner_read(ledgerfd, e.uuid, BOOT, "web2", &s, NULL) == 1 && s == OWNER_THIS);
        /* a VF's record, keyed by its address: the same rule */
        e = entry(LEDGER_FREE, "", BOOT, true);
        snprintf(e.uuid, sizeof e.uuid, "0000:41:00.4");
        check(ledger_write(ledgerfd, &e) == 0);
        check(owner_read(ledgerfd, "0000:41:00.4", BOOT, "web1", &s, NULL) == 1 && s == OWNER_PENDING);
        close(ledgerfd);
}

int main(void) {
        char tmpdir[] = "/tmp/test-owner-XXXXXX";
        int rootfd;

        test_states();
        test_may_give();
        check(mkdtemp(tmpdir));
        rootfd = open(tmpdir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        check(rootfd >= 0);
        test_read(rootfd);
        close(rootfd);
        tmpdir_remove(tmpdir);
        return 0;
}
