/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "domscan.h"
#include "macro.h"

static bool is_space(char c) {
        return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Does the start tag that begins at p (just after "<hostdev") mention mdev?
 * Quotes are honoured, so a '>' inside an attribute value does not end the tag. */
static bool tag_mentions_mdev(const char *p, const char *end) {
        char quote = 0;

        for (; p < end; p++) {
                if (quote) {
                        if (*p == quote)
                                quote = 0;
                } else if (*p == '\'' || *p == '"')
                        quote = *p;
                else if (*p == '>')
                        return false;
                if ((size_t) (end - p) >= 4 && memcmp(p, "mdev", 4) == 0)
                        return true;
        }
        return false;
}

bool domscan_has_mdev(const char *buf, size_t len) {
        static const char tag[] = "<hostdev";
        const size_t tlen = sizeof tag - 1;
        const char *p = buf, *end = buf + len;

        while ((size_t) (end - p) > tlen) {
                const char *hit = memmem(p, (size_t) (end - p), tag, tlen);
                if (!hit)
                        return false;
                p = hit + tlen;
                if (p < end && (is_space(*p) || *p == '>' || *p == '/') && tag_mentions_mdev(p, end))
                        return true;
        }
        return false;
}
