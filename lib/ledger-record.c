/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The record's text format (ledger.h): ledger_format() and ledger_parse(),
 * the state and origin names, and the record's key. No file system here;
 * the store (ledger.c) reads and writes the files.
 *
 * inih reads lines of at most 200 bytes (Debian's build) and treats " ;" as
 * the start of a comment, while a libvirt domain name may be 255 bytes of
 * almost anything. So the guest name is written percent-encoded (every byte
 * outside [A-Za-z0-9._:@+-]) and, when long, split over continuation lines,
 * which inih hands to the handler one by one under the same key:
 *
 *   guest = web%20server%3bfront...
 *     ...rest
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <ini.h>

#include "enumtable.h"
#include "ledger.h"
#include "ledger-internal.h"

ENUM_IMPL(ledger_state, LedgerState, _LEDGER_STATE_MAX,
          "assigned",
          "incoming",
          "free",
          "lost");

ENUM_IMPL(ledger_origin, LedgerOrigin, _LEDGER_ORIGIN_MAX,
          "created",
          "borrowed");

void ledger_entry_init(LedgerEntry *e, const char *key, const char *parent, const char *type, LedgerState state,
                       LedgerOrigin origin, const LedgerHolder *h) {
        memset(e, 0, sizeof *e);
        snprintf(e->uuid, sizeof e->uuid, "%s", key);
        snprintf(e->parent, sizeof e->parent, "%s", parent);
        snprintf(e->type, sizeof e->type, "%s", type);
        e->state = state;
        e->origin = origin;
        snprintf(e->guest, sizeof e->guest, "%s", strempty(h->guest));
        if (h->guest_uuid && uuid_is_valid(h->guest_uuid))
                uuid_normalize(h->guest_uuid, e->guest_uuid);
        snprintf(e->boot_id, sizeof e->boot_id, "%s", strempty(h->boot_id));
        e->since = h->since;
}

void ledger_entry_set_free(LedgerEntry *e, uint64_t since) {
        e->state = LEDGER_FREE;
        e->guest[0] = '\0';
        e->guest_uuid[0] = '\0';
        e->since = since;
}

/* --- guest name encoding ------------------------------------------------ */

static bool guest_char_is_plain(unsigned char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '.' || c == '_' || c == ':' || c == '@' || c == '+' || c == '-';
}

/* Percent-encodes s into out (at least 3 * strlen(s) + 1 bytes). */
void ledger_guest_encode(const char *s, char *out) {
        static const char hex[] = "0123456789abcdef";

        for (; *s; s++) {
                unsigned char c = (unsigned char) *s;
                if (guest_char_is_plain(c))
                        *out++ = (char) c;
                else {
                        *out++ = '%';
                        *out++ = hex[c >> 4];
                        *out++ = hex[c & 15];
                }
        }
        *out = '\0';
}

/* Decodes and appends to out (size GUEST_NAME_MAX). */
static int guest_decode_append(const char *s, char *out) {
        size_t len = strlen(out);

        while (*s) {
                unsigned char c;

                if (*s == '%') {
                        int hi = hex_digit_value(s[1]), lo = hi >= 0 ? hex_digit_value(s[2]) : -1;
                        if (lo < 0)
                                return -EINVAL;
                        c = (unsigned char) (hi << 4 | lo);
                        s += 3;
                } else if (guest_char_is_plain((unsigned char) *s)) {
                        c = (unsigned char) *s++;
                } else
                        return -EINVAL;
                if (c == '\0' || len + 1 >= GUEST_NAME_MAX)
                        return -EINVAL;
                out[len++] = (char) c;
                out[len] = '\0';
        }
        return 0;
}

/* The length of the first line of an encoded name: at most GUEST_CHUNK
 * bytes, never splitting a %xx escape (each line is decoded on its own). */
size_t ledger_guest_first_chunk(const char *enc) {
        size_t len = strlen(enc), n = len < GUEST_CHUNK ? len : GUEST_CHUNK;

        if (n < len && enc[n - 1] == '%')
                n -= 1;
        else if (n < len && enc[n - 2] == '%')
                n -= 2;
        return n;
}

/* --- reading ------------------------------------------------------------ */

enum {
        SEEN_UUID = 1 << 0,
        SEEN_PARENT = 1 << 1,
        SEEN_TYPE = 1 << 2,
        SEEN_STATE = 1 << 3,
        SEEN_ORIGIN = 1 << 4,
        SEEN_GUEST = 1 << 5,
        SEEN_GUEST_UUID = 1 << 6,
        SEEN_BOOT_ID = 1 << 7,
        SEEN_SINCE = 1 << 8,
        SEEN_REMOVE_PENDING = 1 << 9,
        SEEN_GPU_INSTANCE_ID = 1 << 10,
        SEEN_PLACEMENT_ID = 1 << 11,
        SEEN_REQUIRED = SEEN_UUID | SEEN_PARENT | SEEN_TYPE | SEEN_STATE | SEEN_ORIGIN | SEEN_BOOT_ID,
};

typedef struct ParseState {
        const char *pos;     /* the rest of the file's text */
        unsigned line;       /* of the line inih is handling */
        unsigned seen;
        unsigned bad_line;   /* first problem, 0 if none */
        char bad[160];
        LedgerEntry e;
} ParseState;

/* inih's reader over the file's text, counting lines for messages. */
static char *ledger_reader(char *str, int num, void *stream) {
        ParseState *p = stream;
        size_t n = 0;

        if (*p->pos == '\0' || num < 2)
                return NULL;
        while (p->pos[n] && n + 1 < (size_t) num) {
                if (p->pos[n++] == '\n')
                        break;
        }
        memcpy(str, p->pos, n);
        str[n] = '\0';
        p->pos += n;
        p->line++;
        return str;
}

_printf_(2, 3) static int parse_fail(ParseState *p, const char *fmt, ...) {
        va_list ap;

        if (p->bad_line == 0) {
                p->bad_line = p->line;
                va_start(ap, fmt);
                vsnprintf(p->bad, sizeof p->bad, fmt, ap);
                va_end(ap);
        }
        return 0;
}

static int copy_name(ParseState *p, const char *key, const char *value, char *dst) {
        if (!name_is_valid(value))
                return parse_fail(p, "%s is not a valid name", key);
        snprintf(dst, NAME_STRING_MAX, "%s", value);
        return 1;
}

static int copy_uuid(ParseState *p, const char *key, const char *value, char *dst) {
        if (!uuid_is_valid(value))
                return parse_fail(p, "%s is not a UUID", key);
        uuid_normalize(value, dst);
        return 1;
}

/* The SEEN_ bit of a key, 0 for a key that no record has. */
static unsigned key_bit(const char *name) {
        static const struct {
                const char *key;
                unsigned bit;
        } keys[] = {
                { "uuid", SEEN_UUID },       { "parent", SEEN_PARENT },
                { "type", SEEN_TYPE },       { "state", SEEN_STATE },
                { "origin", SEEN_ORIGIN },   { "guest", SEEN_GUEST },
                { "guest_uuid", SEEN_GUEST_UUID }, { "boot_id", SEEN_BOOT_ID },
                { "since", SEEN_SINCE },     { "remove_pending", SEEN_REMOVE_PENDING },
                { "gpu_instance_id", SEEN_GPU_INSTANCE_ID }, { "placement_id", SEEN_PLACEMENT_ID },
        };
        unsigned bit = 0;

        for (size_t i = 0; i < ELEMENTSOF(keys); i++)
                if (streq(keys[i].key, name))
                        bit = keys[i].bit;
        return bit;
}

static int parse_since(ParseState *p, const char *value) {
        char *end;
        unsigned long long v;

        if (value[0] < '0' || value[0] > '9')
                return parse_fail(p, "since is not a number");
        errno = 0;
        v = strtoull(value, &end, 10);
        if (errno != 0 || *end != '\0')
                return parse_fail(p, "since is not a number");
        p->e.since = (uint64_t) v;
        return 1;
}

/* One key's value into the entry. */
static int parse_value(ParseState *p, unsigned bit, const char *name, const char *value) {
        LedgerEntry *e = &p->e;

        switch (bit) {
        case SEEN_UUID:
                if (!ledger_key_is_valid(value))
                        return parse_fail(p, "uuid is not a UUID (nor a VF's PCI address)");
                uuid_normalize(value, e->uuid);
                return 1;
        case SEEN_PARENT:
                return copy_name(p, name, value, e->parent);
        case SEEN_TYPE:
                return copy_name(p, name, value, e->type);
        case SEEN_STATE:
                e->state = ledger_state_from_string(value);
                if (e->state < 0)
                        return parse_fail(p, "unknown state '%s'", value);
                return 1;
        case SEEN_ORIGIN:
                e->origin = ledger_origin_from_string(value);
                if (e->origin < 0)
                        return parse_fail(p, "unknown origin '%s'", value);
                return 1;
        case SEEN_GUEST:
                if (guest_decode_append(value, e->guest) < 0)
                        return parse_fail(p, "guest is not a valid encoded name");
                return 1;
        case SEEN_GUEST_UUID:
                if (value[0] == '\0')
                        return 1;
                return copy_uuid(p, name, value, e->guest_uuid);
        case SEEN_BOOT_ID:
                return copy_uuid(p, name, value, e->boot_id);
        case SEEN_SINCE:
                return parse_since(p, value);
        case SEEN_GPU_INSTANCE_ID:
        case SEEN_PLACEMENT_ID:
                if (safe_atou(value, bit == SEEN_GPU_INSTANCE_ID ? &e->gpu_instance_id : &e->placement_id) < 0)
                        return parse_fail(p, "%s is not a number", name);
                e->has_placement = true;
                return 1;
        case SEEN_REMOVE_PENDING:
                if (streq(value, "yes"))
                        e->remove_pending = true;
                else if (streq(value, "no"))
                        e->remove_pending = false;
                else
                        return parse_fail(p, "remove_pending must be yes or no");
                return 1;
        }
        return 1;
}

/* inih's handler, once per line: the section, the key, each key once, then
 * its value. */
static int ledger_handler(void *user, const char *section, const char *name, const char *value) {
        ParseState *p = user;
        unsigned bit;

        if (!streq(section, "mdev"))
                return parse_fail(p, "unknown section [%s]", section);
        bit = key_bit(name);
        if (bit == 0)
                return parse_fail(p, "unknown key '%s'", name);
        /* The guest name may continue over several lines: inih calls us once per line. */
        if ((p->seen & bit) && bit != SEEN_GUEST)
                return parse_fail(p, "duplicate key '%s'", name);
        p->seen |= bit;
        return parse_value(p, bit, name, value);
}

int ledger_parse(const char *uuid, const char *text, LedgerEntry *ret) {
        ParseState p = { .pos = text };
        int r;

        r = ini_parse_stream(ledger_reader, &p, ledger_handler, &p);
        if (r < 0)
                return error_set(-EIO, "cannot parse '/" LEDGER_DIR "/%s'", uuid);
        if (r > 0 && (p.bad_line == 0 || (unsigned) r < p.bad_line)) {
                p.bad_line = (unsigned) r;
                snprintf(p.bad, sizeof p.bad, "syntax error");
        }
        if (p.bad_line == 0 && (p.seen & SEEN_REQUIRED) != SEEN_REQUIRED) {
                p.bad_line = p.line ? p.line : 1;
                snprintf(p.bad, sizeof p.bad, "missing key(s): uuid, parent, type, state, origin and boot_id are required");
        }
        if (p.bad_line == 0 && !streq(p.e.uuid, uuid)) {
                p.bad_line = 1;
                snprintf(p.bad, sizeof p.bad, "uuid does not match the file name");
        }
        if (p.bad_line == 0 && p.e.guest[0] == '\0' &&
            (p.e.state == LEDGER_ASSIGNED || p.e.state == LEDGER_INCOMING)) {
                p.bad_line = p.line;
                snprintf(p.bad, sizeof p.bad, "state %s needs a guest", ledger_state_to_string(p.e.state));
        }
        if (p.bad_line != 0)
                return error_set(-EBADMSG, "'/" LEDGER_DIR "/%s' line %u: %s", uuid, p.bad_line, p.bad);
        /* a lost record's GPU instance was an earlier boot's (written so by
         * an older version): none */
        if (p.e.state == LEDGER_LOST)
                p.e.has_placement = false;
        *ret = p.e;
        return 0;
}

bool ledger_key_is_vf(const char *s) {
        /* dddd:bb:ss.f, lower-case hex: a file name, compared as is */
        if (!s || strlen(s) != 12)
                return false;
        for (int i = 0; i < 12; i++) {
                char c = s[i];
                if (i == 4 || i == 7) {
                        if (c != ':')
                                return false;
                } else if (i == 10) {
                        if (c != '.' || s[11] > '7')
                                return false;
                } else if (!isdigit((unsigned char) c) && !(c >= 'a' && c <= 'f'))
                        return false;
        }
        return true;
}

bool ledger_key_is_valid(const char *s) {
        return uuid_is_valid(s) || ledger_key_is_vf(s);
}

/* --- writing ------------------------------------------------------------ */

int ledger_format(const LedgerEntry *e, char **ret) {
        char placement[64] = "";
        char enc[GUEST_NAME_MAX * 3 + 1];
        char guest[GUEST_NAME_MAX * 3 + GUEST_NAME_MAX * 4 / GUEST_CHUNK + 16];
        size_t len, o = 0;

        if (!ledger_key_is_valid(e->uuid) || !name_is_valid(e->parent) || !name_is_valid(e->type) ||
            !ledger_state_to_string(e->state) || !ledger_origin_to_string(e->origin) ||
            !uuid_is_valid(e->boot_id) ||
            (e->guest_uuid[0] && !uuid_is_valid(e->guest_uuid)) ||
            strnlen(e->guest, GUEST_NAME_MAX) >= GUEST_NAME_MAX)
                return error_set(-EINVAL, "refusing to write an invalid record for '%s'", e->uuid);

        if (e->has_placement && e->state != LEDGER_LOST) /* a lost vGPU is nowhere */
                snprintf(placement, sizeof placement, "gpu_instance_id = %u\nplacement_id = %u\n", e->gpu_instance_id,
                         e->placement_id);
        ledger_guest_encode(e->guest, enc);
        len = strlen(enc);
        for (size_t i = 0, n; i < len; i += n) {
                n = ledger_guest_first_chunk(enc + i);
                if (i > 0) {
                        memcpy(guest + o, "\n  ", 3);
                        o += 3;
                }
                memcpy(guest + o, enc + i, n);
                o += n;
        }
        guest[o] = '\0';

        *ret = strdup_printf("[mdev]\n"
                             "uuid = %s\n"
                             "parent = %s\n"
                             "type = %s\n"
                             "state = %s\n"
                             "origin = %s\n"
                             "guest = %s\n"
                             "guest_uuid = %s\n"
                             "boot_id = %s\n"
                             "since = %" PRIu64 "\n"
                             "remove_pending = %s\n"
                             "%s",
                             e->uuid, e->parent, e->type, ledger_state_to_string(e->state),
                             ledger_origin_to_string(e->origin), guest, e->guest_uuid, e->boot_id,
                             e->since, e->remove_pending ? "yes" : "no", placement);
        return *ret ? 0 : -ENOMEM;
}
