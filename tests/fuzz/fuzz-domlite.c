/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The strict libc-only reader (lib/domlite.c) against the full parser
 * (lib/domxml.c, libxml2), on the same input: whenever domlite_parse()
 * accepts a document, domxml_parse() must accept it too and read the same
 * (every field of lib/domdata.h, tests/unit/domdata-same.h). Declining
 * (-EOPNOTSUPP) is always allowed: the hook then uses domxml_parse().
 * A prepare that the strict reader got wrong would create other mdevs, or
 * start a guest whose XML libvirt... and every other hook refuses.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "../unit/domdata-same.h"
#include "domlite.h"
#include "domxml.h"
#include "fuzz-common.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
        _cleanup_domlite_free_ Domxml *lite = NULL;
        _cleanup_domxml_free_ Domxml *full = NULL;
        const char *buf = (const char *) data, *why;
        int r, rf;

        rf = domxml_parse(buf, size, &full);
        error_clear();
        r = domlite_parse(buf, size, &lite);
        FUZZ_CHECK(r == 0 || r == -EOPNOTSUPP || r == -ENOMEM, "domlite_parse() returned %d", r);
        if (r == 0) {
                FUZZ_CHECK(rf == 0, "domlite_parse() accepts what domxml_parse() refuses (%s):\n%.*s",
                           error_get(rf), (int) size, buf);
                why = domdata_differs(full, lite);
                FUZZ_CHECK(!why, "domlite_parse() reads differently: %s:\n%.*s", why, (int) size, buf);
        }
        error_clear();
        return 0;
}
