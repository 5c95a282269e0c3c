/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The hook front end's quick filter (lib/domscan.c) against the full parser
 * (lib/domxml.c): whenever domxml_parse() accepts a document and finds an
 * mdev hostdev in it, domscan_has_mdev() must say yes, or the front end
 * exits 0 and the guest starts without its mdev being prepared.
 */
#include <string.h>

#include "domscan.h"
#include "domxml.h"
#include "fuzz-common.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
        _cleanup_domxml_free_ Domxml *d = NULL;
        const char *buf = (const char *) data;
        bool filter;

        filter = domscan_has_mdev(buf, size);
        if (domxml_parse(buf, size, &d) < 0)
                return 0;
        FUZZ_CHECK(filter || d->n_mdevs == 0,
                   "the front end's filter says no mdev, the parser finds %zu (first %s)",
                   d->n_mdevs, d->mdevs[0].uuid);
        return 0;
}
