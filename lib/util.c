/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

#include "util.h"

int safe_atou(const char *s, unsigned *ret) {
        unsigned long v;
        char *end;

        if (!s || !isdigit((unsigned char) s[0]))
                return -EINVAL;
        errno = 0;
        v = strtoul(s, &end, 10);
        if (errno == ERANGE || v > UINT_MAX)
                return -ERANGE;
        if (*end == '\n')
                end++;
        if (*end != '\0')
                return -EINVAL;
        *ret = (unsigned) v;
        return 0;
}

int hex_digit_value(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

bool uuid_is_valid(const char *s) {
        static const unsigned groups[] = { 8, 4, 4, 4, 12 };

        if (!s)
                return false;
        for (size_t g = 0; g < ELEMENTSOF(groups); g++) {
                for (unsigned i = 0; i < groups[g]; i++, s++)
                        if (!isxdigit((unsigned char) *s))
                                return false;
                if (g + 1 < ELEMENTSOF(groups) && *s++ != '-')
                        return false;
        }
        return *s == '\0';
}

void uuid_normalize(const char *s, char out[UUID_STRING_MAX]) {
        size_t i;

        for (i = 0; i < UUID_STRING_MAX - 1 && s[i]; i++)
                out[i] = (char) tolower((unsigned char) s[i]);
        out[i] = '\0';
}

bool name_is_valid(const char *s) {
        size_t n;

        if (!s || streq(s, ".") || streq(s, ".."))
                return false;
        for (n = 0; s[n]; n++) {
                unsigned char c = (unsigned char) s[n];
                if (!isalnum(c) && !strchr("._:+-", c))
                        return false;
        }
        return n > 0 && n < NAME_STRING_MAX;
}

bool mdev_class_is_valid(const char *s) {
        if (!s)
                return false;
        if (streq(s, "VGPU"))
                return true;
        if (strncmp(s, "CUSTOM_", 7) != 0 || !s[7] || strlen(s) > MDEV_CLASS_MAX)
                return false;
        for (s += 7; *s; s++)
                if (!(isupper((unsigned char) *s) || isdigit((unsigned char) *s) || *s == '_'))
                        return false;
        return true;
}

int array_grow(void *array, size_t n, size_t *allocated, size_t size) {
        void **a = array, *p;
        size_t k;

        if (n < *allocated)
                return 0;
        k = *allocated ? *allocated * 2 : 4;
        p = reallocarray(*a, k, size);
        if (!p)
                return -ENOMEM;
        *a = p;
        *allocated = k;
        return 0;
}

ssize_t read_eintr(int fd, void *buf, size_t size) {
        for (;;) {
                ssize_t n = read(fd, buf, size);

                if (n >= 0)
                        return n;
                if (errno != EINTR)
                        return -errno;
        }
}

int write_full(int fd, const void *buf, size_t size) {
        const char *p = buf;

        while (size > 0) {
                ssize_t n = write(fd, p, size);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return n < 0 ? -errno : -EIO;
                p += n;
                size -= (size_t) n;
        }
        return 0;
}

int read_fd_small(int fd, char *buf, size_t size, size_t *ret_len) {
        size_t len = 0;

        for (;;) {
                size_t want = size - len;
                ssize_t n = read_eintr(fd, buf + len, want);

                if (n < 0)
                        return (int) n;
                if (n == 0)
                        break;
                len += (size_t) n;
                if (len >= size)
                        return -EFBIG;
                if ((size_t) n < want)
                        break; /* a short read is the end (util.h) */
        }
        buf[len] = '\0';
        if (ret_len)
                *ret_len = len;
        return 0;
}

int read_fd_upto(int fd, size_t max, char **ret_buf, size_t *ret_len) {
        size_t size = 16384, len = 0;
        _cleanup_free_ char *buf = NULL;

        if (max >= SIZE_MAX - 2)
                return -EINVAL;
        buf = malloc(size);
        if (!buf)
                return -ENOMEM;
        /* At most max + 1 bytes in buf: one more than max says "larger". */
        while (len <= max) {
                ssize_t n;

                if (len + 1 >= size) {
                        size_t k = size * 2 > max + 2 ? max + 2 : size * 2;
                        char *t = realloc(buf, k);

                        if (!t)
                                return -ENOMEM;
                        buf = t;
                        size = k;
                }
                n = read_eintr(fd, buf + len, size - len - 1);
                if (n < 0)
                        return (int) n;
                if (n == 0)
                        break;
                len += (size_t) n;
        }
        buf[len] = '\0';
        *ret_buf = steal_pointer(&buf);
        *ret_len = len;
        return 0;
}

int read_fd_full(int fd, size_t max, char **ret_buf, size_t *ret_len) {
        _cleanup_free_ char *buf = NULL;
        size_t len;
        int r;

        r = read_fd_upto(fd, max, &buf, &len);
        if (r < 0)
                return r;
        if (len > max)
                return -EFBIG;
        *ret_buf = steal_pointer(&buf);
        *ret_len = len;
        return 0;
}

int read_small_at(int dirfd, const char *path, char *buf, size_t size) {
        _cleanup_close_ int fd = -1;
        size_t len;
        int r;

        fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        r = read_fd_small(fd, buf, size, &len);
        if (r < 0)
                return r;
        if (len > 0 && buf[len - 1] == '\n')
                buf[len - 1] = '\0';
        return 0;
}

int read_line_at(int dirfd, const char *path, char **ret) {
        char buf[4096];
        char *s;
        int r;

        r = read_small_at(dirfd, path, buf, sizeof buf);
        if (r < 0)
                return r;
        s = strdup(buf);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

int write_string_at(int dirfd, const char *path, const char *s) {
        _cleanup_close_ int fd = -1;
        size_t len = strlen(s);
        ssize_t n;

        fd = openat(dirfd, path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        do
                n = write(fd, s, len);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        if ((size_t) n != len)
                return -EIO;
        return 0;
}

int mkdir_p_at(int dirfd, const char *path, unsigned mode) {
        char buf[PATH_MAX];
        size_t len = strlen(path);

        if (len == 0 || len >= sizeof buf)
                return -EINVAL;
        memcpy(buf, path, len + 1);
        for (char *p = buf + 1;; p++) {
                if (*p == '/' || *p == '\0') {
                        char saved = *p;
                        *p = '\0';
                        if (mkdirat(dirfd, buf, (mode_t) mode) < 0 && errno != EEXIST)
                                return -errno;
                        *p = saved;
                        if (saved == '\0')
                                break;
                }
        }
        return 0;
}

int root_open(int *ret_fd) {
        const char *root = getenv("MDEV_HOOKS_ROOT");
        int fd;

        if (!root || !*root)
                root = "/";
        fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return error_set(-errno, "cannot open root directory '%s': %s", root, strerror(errno));
        *ret_fd = fd;
        return 0;
}

int boot_id_read(int rootfd, char ret[UUID_STRING_MAX]) {
        char buf[64];
        int r;

        r = read_small_at(rootfd, "proc/sys/kernel/random/boot_id", buf, sizeof buf);
        if (r < 0)
                return error_set(r, "cannot read '/proc/sys/kernel/random/boot_id': %s", strerror(-r));
        if (!uuid_is_valid(buf))
                return error_set(-EINVAL, "'/proc/sys/kernel/random/boot_id' does not hold a UUID");
        uuid_normalize(buf, ret);
        return 0;
}

void strv_free(char **l) {
        if (!l)
                return;
        for (char **p = l; *p; p++)
                free(*p);
        free(l);
}

size_t strv_length(char * const *l) {
        size_t n = 0;

        if (l)
                while (l[n])
                        n++;
        return n;
}

int strv_consume(char ***l, char *s) {
        size_t n = strv_length(*l);
        char **t;

        if (!s)
                return -ENOMEM;
        t = realloc(*l, (n + 2) * sizeof(char *));
        if (!t) {
                free(s);
                return -ENOMEM;
        }
        t[n] = s;
        t[n + 1] = NULL;
        *l = t;
        return 0;
}

int strv_ensure(char ***l) {
        if (!*l)
                *l = calloc(1, sizeof(char *));
        return *l ? 0 : -ENOMEM;
}

int strv_push(char ***l, size_t *n, size_t *allocated, char *s) {
        if (!s)
                return -ENOMEM;
        if (*n + 2 > *allocated) {
                size_t a = *allocated ? 2 * *allocated : 16;
                char **t = reallocarray(*l, a, sizeof *t);

                if (!t) {
                        free(s);
                        return -ENOMEM;
                }
                *l = t;
                *allocated = a;
        }
        (*l)[*n] = s;
        (*l)[++*n] = NULL;
        return 0;
}

int strv_extend(char ***l, const char *s) {
        return strv_consume(l, strdup(s));
}

bool strv_contains(char * const *l, const char *s) {
        if (l)
                for (; *l; l++)
                        if (streq(*l, s))
                                return true;
        return false;
}

char *strv_join(char * const *l, const char *sep) {
        size_t len = 1, seplen = strlen(sep);
        char *s, *p;

        for (char * const *i = l; i && *i; i++)
                len += strlen(*i) + seplen;
        s = p = malloc(len);
        if (!s)
                return NULL;
        *p = '\0';
        for (char * const *i = l; i && *i; i++) {
                if (i != l)
                        p = stpcpy(p, sep);
                p = stpcpy(p, *i);
        }
        return s;
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char * const *) a, *(char * const *) b);
}

bool strv_is_sorted_unique(char * const *l) {
        for (size_t i = 1; l && l[0] && l[i]; i++)
                if (strcmp(l[i - 1], l[i]) >= 0)
                        return false;
        return true;
}

void strv_sort(char **l) {
        size_t n = strv_length(l);

        if (n > 1)
                qsort(l, n, sizeof(char *), cmp_str);
}

int dir_list_at(int dirfd, const char *path, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        size_t n = 0, allocated = 0;
        DIR *d;
        int fd, r;

        fd = openat(dirfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        d = fdopendir(fd);
        if (!d) {
                r = -errno;
                close(fd);
                return r;
        }
        for (;;) {
                struct dirent *de;

                errno = 0;
                de = readdir(d);
                if (!de) {
                        r = -errno;
                        break;
                }
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                /* A directory of a thousand records or mdevs is listed on
                 * every hook call that needs it: no strv_extend(). */
                r = strv_push(&l, &n, &allocated, strdup(de->d_name));
                if (r < 0)
                        break;
        }
        closedir(d);
        if (r >= 0)
                r = strv_ensure(&l);
        if (r < 0)
                return r;
        strv_sort(l);
        *ret = steal_pointer(&l);
        return 0;
}

char *strdup_printf(const char *fmt, ...) {
        va_list ap;
        char *s;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&s, fmt, ap);
        va_end(ap);
        return r < 0 ? NULL : s;
}

int program_dir(char *buf, size_t size) {
        char *slash;
        ssize_t n;

        n = readlink("/proc/self/exe", buf, size - 1);
        if (n < 0)
                return error_set(-errno, "cannot find my own path in /proc/self/exe: %s", strerror(errno));
        if ((size_t) n >= size - 1)
                return error_set(-ENAMETOOLONG, "cannot find my own directory: its path is too long");
        buf[n] = '\0';
        slash = strrchr(buf, '/');
        if (!slash)
                return error_set(-ENOENT, "cannot find my own directory in '%s'", buf);
        *slash = '\0';
        return 0;
}

unsigned long long now_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (unsigned long long) ts.tv_sec * 1000000ULL + (unsigned long long) ts.tv_nsec / 1000ULL;
}
