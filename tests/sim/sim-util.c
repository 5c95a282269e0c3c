/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mdev-sysfs-sim: allocation that aborts when out of memory, errno names,
 * number and UUID parsing.
 */
#include "sim.h"

void *xmalloc(size_t n) {
        void *p = malloc(n ? n : 1);
        if (!p) {
                fputs("mdev-sysfs-sim: out of memory\n", stderr);
                abort();
        }
        return p;
}

void *xcalloc(size_t n, size_t size) {
        void *p = calloc(n ? n : 1, size ? size : 1);
        if (!p) {
                fputs("mdev-sysfs-sim: out of memory\n", stderr);
                abort();
        }
        return p;
}

void *xrealloc(void *p, size_t n) {
        p = realloc(p, n ? n : 1);
        if (!p) {
                fputs("mdev-sysfs-sim: out of memory\n", stderr);
                abort();
        }
        return p;
}

/* open_memstream() into *buf, aborting when out of memory like xmalloc(). */
FILE *xopen_memstream(char **buf, size_t *size) {
        *buf = NULL;
        *size = 0;
        FILE *f = open_memstream(buf, size);
        if (!f) {
                fputs("mdev-sysfs-sim: out of memory\n", stderr);
                abort();
        }
        return f;
}

char *xstrdup(const char *s) {
        return s ? strcpy(xmalloc(strlen(s) + 1), s) : NULL;
}

_printf_(1, 2) char *xasprintf(const char *fmt, ...) {
        va_list ap;
        char *s;

        va_start(ap, fmt);
        if (vasprintf(&s, fmt, ap) < 0)
                s = NULL;
        va_end(ap);
        if (!s) {
                fputs("mdev-sysfs-sim: out of memory\n", stderr);
                abort();
        }
        return s;
}


static const struct {
        const char *name;
        int value;
} errno_table[] = {
        { "EPERM", EPERM },     { "ENOENT", ENOENT },   { "EIO", EIO },
        { "ENXIO", ENXIO },     { "E2BIG", E2BIG },     { "EAGAIN", EAGAIN },
        { "ENOMEM", ENOMEM },   { "EACCES", EACCES },   { "EFAULT", EFAULT },
        { "EBUSY", EBUSY },     { "EEXIST", EEXIST },   { "ENODEV", ENODEV },
        { "EINVAL", EINVAL },   { "ENOSPC", ENOSPC },   { "ERANGE", ERANGE },
        { "EUSERS", EUSERS },   { "ETIMEDOUT", ETIMEDOUT },
        { "EOPNOTSUPP", EOPNOTSUPP }, { "EDQUOT", EDQUOT },
        { "ENOTSUP", ENOTSUP }, { "EINTR", EINTR },
};

/* "ENOSPC" or "28" -> 28; 0 if unknown. */
int errno_from_name(const char *s) {
        for (size_t i = 0; i < ELEMENTSOF(errno_table); i++)
                if (streq(errno_table[i].name, s))
                        return errno_table[i].value;
        char *end;
        errno = 0;
        unsigned long v = strtoul(s, &end, 10);
        if (errno || end == s || *end || v == 0 || v > 4095)
                return 0;
        return (int) v;
}

/* The text of a write to an attribute, as a string without its one trailing
 * newline: sysfs hands a store() the bytes written (0 < len < 32 here). */
int write_text(const char *buf, size_t len, char tmp[static WRITE_TEXT_MAX]) {
        if (len == 0 || len >= WRITE_TEXT_MAX)
                return -EINVAL;
        memcpy(tmp, buf, len);
        tmp[len] = 0;
        if (tmp[len - 1] == '\n')
                tmp[len - 1] = 0;
        return 0;
}

int parse_uint(const char *s, unsigned *ret) {
        char *end;
        if (!s || !isdigit((unsigned char) s[0]))
                return -EINVAL;
        errno = 0;
        unsigned long v = strtoul(s, &end, 10);
        if (errno || *end || v > UINT_MAX)
                return -EINVAL;
        *ret = (unsigned) v;
        return 0;
}

/* A canonical lower-case UUID from the first 36 bytes of buf, like the
 * kernel's uuid_is_valid()/guid_parse(). */
bool uuid_parse36(const char *buf, char out[UUID_LEN + 1]) {
        for (int i = 0; i < UUID_LEN; i++) {
                char c = buf[i];
                if (i == 8 || i == 13 || i == 18 || i == 23) {
                        if (c != '-')
                                return false;
                } else if (!isxdigit((unsigned char) c))
                        return false;
                out[i] = (char) tolower((unsigned char) c);
        }
        out[UUID_LEN] = 0;
        return true;
}
