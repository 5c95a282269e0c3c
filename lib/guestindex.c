/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <stdio.h>

#include "guestindex.h"

void guest_index_hash(const char *guest, char out[GUEST_INDEX_HASH_MAX]) {
        uint64_t h = 1469598103934665603ULL; /* FNV-1a */

        for (const unsigned char *p = (const unsigned char *) guest; *p; p++) {
                h ^= *p;
                h *= 1099511628211ULL;
        }
        snprintf(out, GUEST_INDEX_HASH_MAX, "%016" PRIx64, h);
}

void guest_index_path(const char *guest, char out[GUEST_INDEX_PATH_MAX]) {
        char hash[GUEST_INDEX_HASH_MAX];

        guest_index_hash(guest, hash);
        snprintf(out, GUEST_INDEX_PATH_MAX, GUEST_INDEX_DIR "/%s", hash);
}
