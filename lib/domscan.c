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

/* Does the start tag at p (just after "<hostdev") have managed='no'? */
static bool tag_unmanaged(const char *p, const char *end) {
        static const char key[] = "managed";
        char quote = 0;

        for (; p < end; p++) {
                if (quote) {
                        if (*p == quote)
                                quote = 0;
                        continue;
                }
                if (*p == '\'' || *p == '"') {
                        quote = *p;
                        continue;
                }
                if (*p == '>')
                        return false;
                if ((size_t) (end - p) > sizeof key && memcmp(p, key, sizeof key - 1) == 0) {
                        const char *q = p + sizeof key - 1;
                        while (q < end && is_space(*q))
                                q++;
                        if (q >= end || *q != '=')
                                continue;
                        q++;
                        while (q < end && is_space(*q))
                                q++;
                        if (q + 3 < end && (*q == '\'' || *q == '"') && q[1] == 'n' && q[2] == 'o' && q[3] == *q)
                                return true;
                }
        }
        return false;
}

bool domscan_has_vgpu(const char *buf, size_t len) {
        static const char tag[] = "<hostdev", el[] = "vgpu";
        const size_t tlen = sizeof tag - 1;
        const char *p = buf, *end = buf + len;

        /* <mh:vgpu or <vgpu (any prefix) */
        for (const char *q = buf; (size_t) (end - q) > sizeof el;) {
                const char *hit = memmem(q, (size_t) (end - q), el, sizeof el - 1);
                if (!hit)
                        break;
                if (hit > buf && (hit[-1] == ':' || hit[-1] == '<') && hit + 4 < end &&
                    (is_space(hit[4]) || hit[4] == '/' || hit[4] == '>'))
                        return true;
                q = hit + 1;
        }
        while ((size_t) (end - p) > tlen) {
                const char *hit = memmem(p, (size_t) (end - p), tag, tlen);
                if (!hit)
                        return false;
                p = hit + tlen;
                if (p < end && (is_space(*p) || *p == '>' || *p == '/') && tag_unmanaged(p, end))
                        return true;
        }
        return false;
}
