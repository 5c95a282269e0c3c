/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The domain XML (lib/domxml.c) as migrate/restore use it: parse, find each
 * mdev hostdev, point every one at a new UUID (domxml_set_mdev_uuid(), as
 * migrate.c's rewrite() does), format, and parse the output again.
 *
 * The new UUIDs are ones the document does not use anywhere: not a hostdev's,
 * not a metadata entry's (leftovers included), not any other uuid= attribute
 * (what migrate must also respect: a leftover metadata entry names a UUID
 * that another guest may hold; it is migrate.c, not
 * this harness, that chooses them in the program). The first input byte picks
 * which hostdevs are rewritten (bit i: hostdev i, all when 0) and seeds the
 * UUIDs; the rest is the XML.
 *
 * Properties of the output:
 *   - domxml_parse() (the check every later hook makes) accepts it;
 *   - same guest name and UUID, same number of mdev hostdevs, each carrying
 *     exactly its new UUID (or its old one when not rewritten), with the same
 *     metadata type/class/parent;
 *   - domxml_find_mdev() finds each new UUID at its index, none of the
 *     replaced ones;
 *   - the hook's filter (domscan_has_mdev()) still sees an mdev;
 *   - domxml_write() writes the same bytes as domxml_format().
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <libxml/tree.h>

#include "domscan.h"
#include "domxml.h"
#include "fuzz-common.h"
#include "macro.h"

#define MAX_USED 256

typedef struct Used {
        char uuid[MAX_USED][UUID_STRING_MAX];
        size_t n;
        bool overflow;
} Used;

/* Every uuid= attribute value in the document (any element, any namespace),
 * normalised when it is a UUID. */
static void collect_uuids(xmlNode *node, Used *u) {
        for (; node; node = node->next) {
                if (node->type != XML_ELEMENT_NODE)
                        continue;
                for (xmlAttr *a = node->properties; a; a = a->next) {
                        xmlChar *v;

                        if (!a->name || strcmp((const char *) a->name, "uuid") != 0)
                                continue;
                        v = xmlNodeGetContent((xmlNode *) a);
                        if (v && uuid_is_valid((const char *) v)) {
                                if (u->n < MAX_USED)
                                        uuid_normalize((const char *) v, u->uuid[u->n++]);
                                else
                                        u->overflow = true;
                        }
                        xmlFree(v);
                }
                collect_uuids(node->children, u);
        }
}

static bool used(const Used *u, const char *uuid) {
        for (size_t i = 0; i < u->n; i++)
                if (strcmp(u->uuid[i], uuid) == 0)
                        return true;
        return false;
}

static void new_uuid(unsigned seed, size_t i, unsigned attempt, char out[UUID_STRING_MAX]) {
        snprintf(out, UUID_STRING_MAX, "f0221500-%04x-4%03x-8%03x-%012x",
                 seed & 0xffffu, (unsigned) (i & 0xfffu), attempt & 0xfffu, 0x5eedu + (unsigned) i);
}

/* domxml_write() (migrate's stdout) writes the bytes domxml_format() gave. */
static void check_write_matches(Domxml *d, const char *out, size_t out_len) {
        _cleanup_close_ int fd = memfd_create("fuzz-domxml", MFD_CLOEXEC);
        _cleanup_free_ char *written = NULL;
        off_t n;
        int r;

        FUZZ_CHECK(fd >= 0, "memfd_create: %m");
        r = domxml_write(d, fd);
        FUZZ_CHECK(r == 0, "domxml_write() failed: %s", error_get(r));
        n = lseek(fd, 0, SEEK_END);
        FUZZ_CHECK(n == (off_t) out_len, "domxml_write() wrote %lld bytes, domxml_format() %zu",
                   (long long) n, out_len);
        written = malloc(out_len + 1);
        FUZZ_CHECK(written && pread(fd, written, out_len, 0) == (ssize_t) out_len, "pread: %m");
        FUZZ_CHECK(memcmp(written, out, out_len) == 0, "domxml_write() and domxml_format() differ");
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
        _cleanup_domxml_free_ Domxml *d = NULL, *d2 = NULL;
        _cleanup_free_ char *out = NULL;
        char (*want)[UUID_STRING_MAX] = NULL;
        const char *xml;
        size_t len, out_len = 0;
        unsigned sel;
        Used u = { .n = 0 };
        int r;

        if (size < 1)
                return 0;
        sel = data[0];
        xml = (const char *) data + 1;
        len = size - 1;

        if (domxml_parse(xml, len, &d) < 0 || d->n_mdevs == 0)
                return 0;

        collect_uuids(xmlDocGetRootElement(d->doc), &u);
        if (u.overflow)
                return 0;
        want = calloc(d->n_mdevs, sizeof *want);
        if (!want)
                return 0;

        for (size_t i = 0; i < d->n_mdevs; i++) {
                FUZZ_CHECK(domxml_find_mdev(d, d->mdevs[i].uuid) == (int) i,
                           "hostdev %zu (%s) not found at its index", i, d->mdevs[i].uuid);
                if (sel != 0 && (i >= 8 || !(sel & (1u << i)))) {
                        memcpy(want[i], d->mdevs[i].uuid, UUID_STRING_MAX);
                        continue;
                }
                for (unsigned attempt = 0;; attempt++) {
                        new_uuid(sel, i, attempt, want[i]);
                        if (!used(&u, want[i]))
                                break;
                }
                r = domxml_set_mdev_uuid(d, i, want[i]);
                FUZZ_CHECK(r == 0, "domxml_set_mdev_uuid(%zu) failed: %s", i, error_get(r));
        }

        r = domxml_format(d, &out, &out_len);
        FUZZ_CHECK(r == 0, "domxml_format() failed: %s", error_get(r));

        check_write_matches(d, out, out_len);

        r = domxml_parse(out, out_len, &d2);
        FUZZ_CHECK(r == 0, "the rewritten XML is refused by the next hook: %s\n--- input\n%.*s\n--- output\n%.*s",
                   error_get(r), (int) len, xml, (int) out_len, out);
        FUZZ_CHECK(strcmp(d->name, d2->name) == 0, "name '%s' became '%s'", d->name, d2->name);
        FUZZ_CHECK(strcmp(d->uuid, d2->uuid) == 0, "uuid '%s' became '%s'", d->uuid, d2->uuid);
        FUZZ_CHECK(d2->n_mdevs == d->n_mdevs, "%zu mdev hostdevs became %zu", d->n_mdevs, d2->n_mdevs);
        for (size_t i = 0; i < d->n_mdevs; i++) {
                const DomxmlMdev *a = &d->mdevs[i], *b = &d2->mdevs[i];

                FUZZ_CHECK(strcmp(b->uuid, want[i]) == 0, "hostdev %zu carries %s, not %s", i, b->uuid, want[i]);
                FUZZ_CHECK(domxml_find_mdev(d2, want[i]) == (int) i, "%s not found at %zu", want[i], i);
                FUZZ_CHECK(strcmp(a->type, b->type) == 0 && strcmp(a->mdev_class, b->mdev_class) == 0 &&
                           strcmp(a->parent, b->parent) == 0,
                           "metadata of hostdev %zu changed: type '%s'->'%s' class '%s'->'%s' parent '%s'->'%s'",
                           i, a->type, b->type, a->mdev_class, b->mdev_class, a->parent, b->parent);
        }
        FUZZ_CHECK(domscan_has_mdev(out, out_len), "the hook's filter sees no mdev in the rewritten XML");
        free(want);
        return 0;
}
