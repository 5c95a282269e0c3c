/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "domscan.h"
#include "macro.h"
#include "util.h"

static bool is_space(char c) {
        return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* The start tag whose name ends at p (just after "<hostdev"): 1 if it may
 * make an mdev hostdev, 0 if it ends ('>') without, -1 if buf ends first.
 * Quotes are honoured, so a '>' inside an attribute value does not end the
 * tag. "May": it mentions "mdev" anywhere (type='mdev', in any attribute
 * order, quoting or spacing), or it holds an '&': a character reference
 * such as type="&#109;dev" spells mdev in a way no byte match sees, and
 * libxml2 reads it as mdev. libvirt writes neither in a hostdev tag. */
static int tag_verdict(const char *p, const char *end) {
        char quote = 0;

        for (; p < end; p++) {
                if (quote) {
                        if (*p == quote)
                                quote = 0;
                } else if (*p == '\'' || *p == '"')
                        quote = *p;
                else if (*p == '>')
                        return 0;
                if (*p == '&')
                        return 1;
                if ((size_t) (end - p) >= 4 && memcmp(p, "mdev", 4) == 0)
                        return 1;
        }
        return -1;
}

#define HOSTDEV_TAG "<hostdev"
#define HOSTDEV_TAG_LEN (sizeof HOSTDEV_TAG - 1)

/* Scans buf for a hostdev start tag that may make an mdev hostdev: 1 if
 * there is one. Else 0, and *ret_keep is where a scan of what follows buf
 * must start again, in buf: at a hostdev start tag that buf ends inside of,
 * or at the last bytes, which may begin "<hostdev". */
static int scan_block(const char *buf, size_t len, size_t *ret_keep) {
        const char *p = buf, *end = buf + len;

        for (;;) {
                const char *hit = memmem(p, (size_t) (end - p), HOSTDEV_TAG, HOSTDEV_TAG_LEN);
                const char *q;
                int v;

                if (!hit) {
                        size_t tail = HOSTDEV_TAG_LEN - 1;
                        size_t from = (size_t) (p - buf);

                        *ret_keep = len - from > tail ? len - tail : from;
                        return 0;
                }
                q = hit + HOSTDEV_TAG_LEN;
                if (q == end) {
                        *ret_keep = (size_t) (hit - buf);
                        return 0;
                }
                if (is_space(*q) || *q == '>' || *q == '/') {
                        v = tag_verdict(q, end);
                        if (v > 0)
                                return 1;
                        if (v < 0) {
                                *ret_keep = (size_t) (hit - buf);
                                return 0;
                        }
                }
                p = q;
        }
}

/* Whether libxml2 reads the document in an encoding where the bytes of
 * "<hostdev" and "mdev" need not be those of ASCII: what it detects from
 * the first bytes (UTF-16 and UCS-4 with or without a byte order mark,
 * EBCDIC), or an XML declaration naming an encoding other than UTF-8,
 * ASCII or ISO-8859-*. libvirt writes UTF-8 without a declaration. */
static bool encoding_is_doubtful(const char *buf, size_t len) {
        static const char *const plain[] = { "UTF-8", "UTF8", "US-ASCII", "ASCII", "LATIN1" };
        const unsigned char *u = (const unsigned char *) buf;
        const char *decl, *decl_end, *enc;
        char quote;
        size_t n;

        if (!buf)
                return false;
        if (len >= 2 && ((u[0] == 0xfe && u[1] == 0xff) || (u[0] == 0xff && u[1] == 0xfe)))
                return true;
        if (len >= 4 && (memchr(buf, '\0', 4) || memcmp(buf, "\x4c\x6f\xa7\x94", 4) == 0))
                return true;
        /* The declaration, after a UTF-8 byte order mark if any. */
        decl = len >= 3 && memcmp(buf, "\xef\xbb\xbf", 3) == 0 ? buf + 3 : buf;
        len -= (size_t) (decl - buf);
        if (len < 5 || memcmp(decl, "<?xml", 5) != 0)
                return false;
        decl_end = memmem(decl, len < 1024 ? len : 1024, "?>", 2);
        if (!decl_end)
                return true; /* a declaration that long is nothing libvirt wrote */
        enc = memmem(decl, (size_t) (decl_end - decl), "encoding", 8);
        if (!enc)
                return false;
        for (enc += 8; enc < decl_end && (is_space(*enc) || *enc == '='); enc++)
                ;
        if (enc >= decl_end || (*enc != '"' && *enc != '\''))
                return true;
        quote = *enc++;
        for (n = 0; enc + n < decl_end && enc[n] != quote; n++)
                ;
        if (n > 9 && strncasecmp(enc, "ISO-8859-", 9) == 0)
                return false;
        for (size_t i = 0; i < ELEMENTSOF(plain); i++)
                if (n == strlen(plain[i]) && strncasecmp(enc, plain[i], n) == 0)
                        return false;
        return true;
}

bool domscan_has_mdev(const char *buf, size_t len) {
        size_t keep;

        return encoding_is_doubtful(buf, len) || scan_block(buf, len, &keep) > 0;
}

/* domscan_read_all() past the first max + 1 bytes: reads fd to its end in a
 * window, scanning on from buf[keep..len) (what the head's scan left
 * unfinished) unless found already. Returns whether any of it may make an
 * mdev hostdev or a VFIO-framework vGPU, or -errno. (The carried tail holds
 * at least the last 7 bytes, so a "<mh:vgpu" cut by a window is seen whole
 * in the next.) */
#define SCAN_WINDOW (1024u * 1024u)
static int scan_rest(int fd, const char *buf, size_t len, size_t keep, bool found) {
        _cleanup_free_ char *win = NULL;
        size_t carry = found ? 0 : len - keep;

        win = malloc(SCAN_WINDOW);
        if (!win)
                return -ENOMEM;
        /* A start tag that does not end within half a window is nothing
         * libvirt wrote: taken as one that may be an mdev hostdev. */
        if (carry > SCAN_WINDOW / 2)
                found = true;
        else
                memcpy(win, buf + keep, carry);
        for (;;) {
                ssize_t n;

                if (found)
                        carry = 0; /* only draining now */
                n = read_eintr(fd, win + carry, SCAN_WINDOW - carry);
                if (n < 0)
                        return (int) n;
                if (n == 0)
                        return found; /* a tag unfinished at the end: malformed, not an mdev */
                if (found)
                        continue;
                if (scan_block(win, carry + (size_t) n, &keep) > 0 || domscan_has_vgpu(win, carry + (size_t) n)) {
                        found = true;
                        continue;
                }
                carry = carry + (size_t) n - keep;
                if (carry > SCAN_WINDOW / 2)
                        found = true;
                else
                        memmove(win, win + keep, carry);
        }
}

int domscan_read_all(int fd, size_t max, char **ret_buf, size_t *ret_len, bool *ret_may_hold) {
        size_t len, keep;
        _cleanup_free_ char *buf = NULL;
        int r;

        r = read_fd_upto(fd, max, &buf, &len);
        if (r < 0)
                return r;
        if (len <= max) {
                *ret_may_hold = domscan_has_mdev(buf, len) || domscan_has_vgpu(buf, len);
                *ret_buf = steal_pointer(&buf);
                *ret_len = len;
                return 0;
        }

        /* Larger than max: read on to the end, scanning, so that a guest
         * without mdevs is never held up by its size. */
        keep = len;
        r = encoding_is_doubtful(buf, len) || scan_block(buf, len, &keep) > 0 || domscan_has_vgpu(buf, len);
        r = scan_rest(fd, buf, len, keep, r > 0);
        if (r < 0)
                return r;
        *ret_may_hold = r > 0;
        *ret_buf = steal_pointer(&buf);
        *ret_len = len;
        return -EFBIG;
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
