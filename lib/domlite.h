/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A strict, libc-only reader of the domain XML, for the hook's prepare
 * (hooks/mdev-hooks-qemu.c): when it accepts a document, prepare runs
 * without libxml2 ever being loaded (a good part of a prepare's time).
 *
 * It reads a subset of XML: the documents libvirt formats. For those it
 * fills a Domxml exactly as domxml_parse() does (domdata.h; the xmlNode and
 * xmlDoc pointers stay NULL, has_meta says what meta would). Everything it
 * is not certain to read exactly as libxml2 and domxml.c do it DECLINES,
 * and the caller then uses domxml_parse(), which gives the answer and the
 * message of today:
 *   - any byte sequence that is not UTF-8 of XML characters, a carriage
 *     return, a byte order mark, an XML declaration other than
 *     <?xml version="1.0" [encoding="UTF-8"] [standalone=...]?>;
 *   - a DOCTYPE, comments, processing instructions, CDATA sections;
 *   - references other than the five predefined entities and character
 *     references to XML characters;
 *   - names that are not ASCII ([A-Za-z_][A-Za-z0-9._-]*, one ':' at most),
 *     a default namespace (xmlns=), a prefix bound twice in one scope or
 *     re-bound inside, an unbound prefix, the prefixes xml and xmlns, a
 *     namespace URI other than scheme://host[/path] of plain characters,
 *     two attributes of one element with the same local name;
 *   - nesting deeper than 128, anything malformed;
 *   - anything domxml_parse() refuses (no <name>, a bad UUID, duplicates,
 *     too many hostdevs...): its message is the one to give.
 * It never accepts a document that domxml_parse() refuses, and never gives
 * another result (tests/fuzz/fuzz-domlite.c checks both).
 */
#pragma once

#include <stddef.h>

#include "domdata.h"

/* 0 and *ret (free it with domlite_free()); -EOPNOTSUPP when it declines,
 * with the reason in the error message (for tests: nobody shows it);
 * -ENOMEM. buf need not be NUL-terminated. The Domxml it returns is for
 * reading: domxml_set_*(), domxml_format(), domxml_write() and
 * domxml_has_orphan_meta() need domxml_parse()'s. */
int domlite_parse(const char *buf, size_t len, Domxml **ret);
void domlite_free(Domxml *d);
static inline void domlite_freep(Domxml **d) {
        domlite_free(*d);
}
#define _cleanup_domlite_free_ _cleanup_(domlite_freep)
