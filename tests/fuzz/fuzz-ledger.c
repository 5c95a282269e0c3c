/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The record's text (lib/ledger.c): format -> parse round trips.
 *
 * The first input byte chooses the direction:
 *   even: the rest is a record file named RECORD_UUID. If ledger_parse()
 *         accepts it, ledger_format() of the entry must parse back to the
 *         same entry and format to the same text again;
 *   odd:  the rest builds an entry (the next byte: state, origin,
 *         remove_pending, guest_uuid set or not; the next 8: since; the rest:
 *         the guest name, any bytes but NUL). ledger_format() must accept it,
 *         the text must fit in a record file (ledger_read() refuses 4095
 *         bytes or more) and parse back to the same entry.
 */
#include <errno.h>
#include <string.h>

#include "fuzz-common.h"
#include "ledger.h"
#include "macro.h"

#define RECORD_UUID "b1ae8bf6-38b0-4c81-9d44-78ce2e5d2b9d"
#define RECORD_FILE_MAX 4095 /* ledger.c LEDGER_FILE_MAX - 1 */

static void check_same(const LedgerEntry *a, const LedgerEntry *b) {
        FUZZ_CHECK(strcmp(a->uuid, b->uuid) == 0, "uuid '%s' != '%s'", a->uuid, b->uuid);
        FUZZ_CHECK(strcmp(a->parent, b->parent) == 0, "parent '%s' != '%s'", a->parent, b->parent);
        FUZZ_CHECK(strcmp(a->type, b->type) == 0, "type '%s' != '%s'", a->type, b->type);
        FUZZ_CHECK(a->state == b->state, "state %d != %d", (int) a->state, (int) b->state);
        FUZZ_CHECK(a->origin == b->origin, "origin %d != %d", (int) a->origin, (int) b->origin);
        FUZZ_CHECK(strcmp(a->guest, b->guest) == 0, "guest '%s' != '%s'", a->guest, b->guest);
        FUZZ_CHECK(strcmp(a->guest_uuid, b->guest_uuid) == 0, "guest_uuid '%s' != '%s'", a->guest_uuid, b->guest_uuid);
        FUZZ_CHECK(strcmp(a->boot_id, b->boot_id) == 0, "boot_id '%s' != '%s'", a->boot_id, b->boot_id);
        FUZZ_CHECK(a->since == b->since, "since differs");
        FUZZ_CHECK(a->remove_pending == b->remove_pending, "remove_pending differs");
}

static void round_trip(const LedgerEntry *e) {
        _cleanup_free_ char *text = NULL, *again = NULL;
        LedgerEntry back;
        int r;

        r = ledger_format(e, &text);
        FUZZ_CHECK(r == 0, "ledger_format() refused an entry: %s", error_get(r));
        FUZZ_CHECK(strlen(text) < RECORD_FILE_MAX, "a record of %zu bytes, too large for ledger_read()", strlen(text));
        memset(&back, 0x5a, sizeof back);
        r = ledger_parse(e->uuid, text, &back);
        FUZZ_CHECK(r == 0, "ledger_parse() refused what ledger_format() wrote: %s\n%s", error_get(r), text);
        check_same(e, &back);
        r = ledger_format(&back, &again);
        FUZZ_CHECK(r == 0 && strcmp(text, again) == 0, "formatting twice differs:\n%s\n---\n%s", text, again ? again : "");
}

static void from_text(const unsigned char *data, size_t size) {
        _cleanup_free_ char *text = malloc(size + 1);
        LedgerEntry e;

        if (!text)
                return;
        memcpy(text, data, size);
        text[size] = '\0';
        memset(&e, 0, sizeof e);
        if (ledger_parse(RECORD_UUID, text, &e) < 0)
                return;
        round_trip(&e);
}

static void from_fields(const unsigned char *data, size_t size) {
        LedgerEntry e = {
                .uuid = RECORD_UUID,
                .parent = "0000:84:00.0",
                .type = "nvidia-35",
                .boot_id = "1a2b3c4d-0000-4000-8000-00000000b007",
        };
        unsigned char bits;
        size_t n = 0;

        if (size < 1)
                return;
        bits = data[0];
        e.state = (LedgerState) (bits % _LEDGER_STATE_MAX);
        e.origin = (LedgerOrigin) ((bits >> 2) & 1);
        e.remove_pending = (bits >> 3) & 1;
        if (bits & 0x10)
                memcpy(e.guest_uuid, "8d5e0000-1111-4222-8333-444455556666", UUID_STRING_MAX);
        data++, size--;
        for (size_t i = 0; i < 8 && size > 0; i++, data++, size--)
                e.since = e.since << 8 | *data;
        while (n < size && n < GUEST_NAME_MAX - 1 && data[n] != '\0') {
                e.guest[n] = (char) data[n];
                n++;
        }
        e.guest[n] = '\0';
        if (n == 0 && (e.state == LEDGER_ASSIGNED || e.state == LEDGER_INCOMING))
                e.state = LEDGER_FREE; /* a held record needs a guest */
        round_trip(&e);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
        if (size < 1)
                return 0;
        if (data[0] & 1)
                from_fields(data + 1, size - 1);
        else
                from_text(data + 1, size - 1);
        return 0;
}
