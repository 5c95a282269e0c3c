/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A record's GPU instance and placement (ledger-record.c): written only
 * when set, read back as written, and a record without them (every record
 * before them) still parses, as unset; a lost record has none, whether it is
 * written or read with them.
 */
#include "check.h"
#include "ledger.h"

static const char old_record[] =
        "[mdev]\n"
        "uuid = 0000:c1:00.4\n"
        "parent = 0000:c1:00.0\n"
        "type = nvidia-1301\n"
        "state = assigned\n"
        "origin = created\n"
        "guest = m1\n"
        "guest_uuid = \n"
        "boot_id = 6f1c1d3e-8c1b-4f0e-9a57-0c1e6a0e2b11\n"
        "since = 1700000000\n"
        "remove_pending = no\n";

static const char lost_record[] =
        "[mdev]\n"
        "uuid = 0000:c1:00.4\n"
        "parent = 0000:c1:00.0\n"
        "type = nvidia-1301\n"
        "state = lost\n"
        "origin = created\n"
        "guest = m1\n"
        "guest_uuid = \n"
        "boot_id = 6f1c1d3e-8c1b-4f0e-9a57-0c1e6a0e2b11\n"
        "since = 1700000000\n"
        "remove_pending = no\n"
        "gpu_instance_id = 3\n"
        "placement_id = 2\n";

int main(void) {
        LedgerEntry e, again;
        _cleanup_free_ char *text = NULL, *text2 = NULL;

        check(ledger_parse("0000:c1:00.4", old_record, &e) == 0);
        check(!e.has_placement);
        check(ledger_format(&e, &text) == 0);
        check(streq(text, old_record)); /* unset: the old form, byte for byte */

        e.has_placement = true;
        e.gpu_instance_id = 3;
        e.placement_id = 0;
        check(ledger_format(&e, &text2) == 0);
        check(strstr(text2, "gpu_instance_id = 3\nplacement_id = 0\n"));
        check(ledger_parse("0000:c1:00.4", text2, &again) == 0);
        check(again.has_placement && again.gpu_instance_id == 3 && again.placement_id == 0);
        check(streq(again.type, "nvidia-1301") && streq(again.guest, "m1"));

        /* lost after a reboot: the GPU instance was the earlier boot's */
        again.state = LEDGER_LOST;
        free(text);
        text = NULL;
        check(ledger_format(&again, &text) == 0);
        check(!strstr(text, "gpu_instance_id") && !strstr(text, "placement_id"));
        /* a lost record written with them (by an older version) reads without */
        check(ledger_parse("0000:c1:00.4", lost_record, &e) == 0);
        check(e.state == LEDGER_LOST && !e.has_placement);
        return 0;
}
