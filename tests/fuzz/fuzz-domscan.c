/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The hook's quick filter (lib/domscan.c) against the full parser
 * (lib/domxml.c): whenever domxml_parse() accepts a document and finds an
 * mdev hostdev in it, domscan_has_mdev() must say yes, or the hook
 * exits 0 and the guest starts without its mdev being prepared.
 *
 * Besides the input itself, the harness checks a respelling of it that XML
 * says is the same document: characters inside the quoted attribute values
 * of each <hostdev ...> start tag written as character references (&#109;,
 * &#x6d;), chosen by a hash of the input. Random mutation rarely finds such
 * a spelling on its own, and one (type="&#109;dev") did hide an mdev from
 * the hook before its filter (doc/design.md §4.2) handed such tags to
 * the worker.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "domscan.h"
#include "domxml.h"
#include "fuzz-common.h"

static void check(const char *buf, size_t size, const char *what) {
        _cleanup_domxml_free_ Domxml *d = NULL;
        bool filter;

        filter = domscan_has_mdev(buf, size);
        if (domxml_parse(buf, size, &d) < 0)
                return;
        FUZZ_CHECK(filter || d->n_mdevs == 0,
                   "the hook's filter says no mdev, the parser finds %zu (first %s) in %s:\n%.*s",
                   d->n_mdevs, d->mdevs[0].uuid, what, (int) size, buf);
}

/* The input with some characters of the hostdev tags' attribute values as
 * character references; NULL when it has no such character. */
static char *respell(const unsigned char *data, size_t size, size_t *ret_len) {
        uint64_t h = 1469598103934665603ULL;
        size_t cap = size * 7 + 1, o = 0;
        char *out;
        bool changed = false;

        for (size_t i = 0; i < size; i++)
                h = (h ^ data[i]) * 1099511628211ULL;
        out = malloc(cap);
        if (!out)
                return NULL;
        for (size_t i = 0; i < size;) {
                if (size - i > 8 && memcmp(data + i, "<hostdev", 8) == 0) {
                        char quote = 0;

                        memcpy(out + o, data + i, 8);
                        o += 8, i += 8;
                        for (; i < size; i++) {
                                unsigned char c = data[i];

                                if (!quote && c == '>')
                                        break;
                                if (quote && c == (unsigned char) quote)
                                        quote = 0;
                                else if (!quote && (c == '\'' || c == '"'))
                                        quote = (char) c;
                                else if (quote && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) {
                                        h = h * 6364136223846793005ULL + 1442695040888963407ULL;
                                        if ((h >> 33) % 3 == 0) {
                                                o += (size_t) snprintf(out + o, cap - o, (h >> 40) & 1 ? "&#x%x;" : "&#%u;", c);
                                                changed = true;
                                                continue;
                                        }
                                }
                                out[o++] = (char) c;
                        }
                        continue;
                }
                out[o++] = (char) data[i++];
        }
        if (!changed) {
                free(out);
                return NULL;
        }
        *ret_len = o;
        return out;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
        _cleanup_free_ char *variant = NULL;
        size_t vlen = 0;

        check((const char *) data, size, "the input");
        variant = respell(data, size, &vlen);
        if (variant)
                check(variant, vlen, "a respelling of the input with character references");
        return 0;
}
