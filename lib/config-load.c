/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Loading the config (config-internal.h): the file opened under the root,
 * checked and read whole, parsed, and its errors reported sorted by line. */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>

#include <ini.h>

#include "config-internal.h"

/* --- errors ------------------------------------------------------------ */

static bool parser_has_error_at(const Parser *p, unsigned line) {
        for (size_t i = 0; i < p->n_errors; i++)
                if (p->errors[i].line == line)
                        return true;
        return false;
}

static int cmp_error(const void *a, const void *b) {
        const ParseError *x = a, *y = b;

        if (x->line != y->line)
                return x->line < y->line ? -1 : 1;
        return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* --- loading ----------------------------------------------------------- */

static void parser_done(Parser *p) {
        free(p->text);
        free(p->buf);
        free(p->long_value);
        free(p->last_key);
        for (size_t i = 0; i < p->n_errors; i++)
                free(p->errors[i].msg);
        free(p->errors);
        for (size_t i = 0; i < p->n_seen; i++)
                free(p->seen[i]);
        free(p->seen);
        free(p->seen_lines);
        strv_free(p->enabled);
        free(p->enabled_lines);
        for (size_t i = 0; i < p->n_sections; i++) {
                free(p->sections[i].type);
                strv_free(p->sections[i].addresses);
                free(p->sections[i].address_lines);
                free(p->sections[i].mdev_class);
        }
        free(p->sections);
        config_free(p->config);
}

static Config *config_new(const char *path) {
        Config *c = calloc(1, sizeof *c);

        if (!c)
                return NULL;
        c->path = strdup(path);
        if (!c->path) {
                free(c);
                return NULL;
        }
        c->release = CONFIG_RELEASE_REMOVE;
        c->placement = CONFIG_PLACEMENT_PACK;
        c->recreate = CONFIG_RECREATE_LAZY;
        c->lock_timeout = 30;
        c->gpu_unbind_retries = 5;
        c->gpu_unbind_retry_ms = 1000;
        c->parent_wait = 0;
        return c;
}

/* A one-line failure that is not about a line: "<file>: <reason>". */
_printf_(4, 5)
static int config_fail(int r, const char *path, char ***ret_errors, const char *fmt, ...) {
        _cleanup_free_ char *reason = NULL;
        _cleanup_free_ char *line = NULL;
        va_list ap;

        va_start(ap, fmt);
        if (vasprintf(&reason, fmt, ap) < 0)
                reason = NULL;
        va_end(ap);
        line = strdup_printf("%s: %s", path, strna(reason));
        if (!line)
                return -ENOMEM;
        if (ret_errors) {
                char **l = NULL;

                if (strv_extend(&l, line) < 0)
                        return -ENOMEM;
                *ret_errors = l;
        }
        return error_set(r, "%s", line);
}

static int config_check_file(int fd, const char *path, size_t *ret_size, char ***ret_errors) {
        struct stat st;

        if (fstat(fd, &st) < 0)
                return config_fail(-errno, path, ret_errors, "cannot stat: %s", strerror(errno));
        if (!S_ISREG(st.st_mode))
                return config_fail(-EINVAL, path, ret_errors, "not a regular file");
        if (st.st_mode & S_IWOTH)
                return config_fail(-EPERM, path, ret_errors,
                                   "is world-writable (mode %04o); refusing it: chmod o-w '%s'",
                                   (unsigned) (st.st_mode & 07777), path);
        if (geteuid() == 0 && st.st_uid != 0)
                return config_fail(-EPERM, path, ret_errors,
                                   "is owned by uid %u, not root; refusing it: chown root '%s'",
                                   (unsigned) st.st_uid, path);
        *ret_size = (size_t) st.st_size;
        return 0;
}

/* No config is this large; a file that is (or grows to it while being
 * read) is refused rather than read into memory whole. */
#define CONFIG_MAX_SIZE (16u << 20)

/* The whole of the file on fd, whose size was size when it was checked, in
 * as few reads as it takes: one, unless it grew since. A read of a regular
 * file that returns less than it asked for is at the end. */
static int config_read_text(int fd, size_t size, char **ret, size_t *ret_len) {
        _cleanup_free_ char *text = NULL;
        size_t len = 0, cap = size + 1;
        ssize_t n;

        if (size > CONFIG_MAX_SIZE)
                return -EFBIG;
        text = malloc(cap);
        if (!text)
                return -ENOMEM;
        for (;;) {
                n = read(fd, text + len, cap - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                len += (size_t) n;
                if (len < cap)
                        break;
                if (cap > CONFIG_MAX_SIZE)
                        return -EFBIG;
                char *t = realloc(text, cap * 2);
                if (!t)
                        return -ENOMEM;
                text = t;
                cap *= 2;
        }
        text[len] = '\0'; /* len < cap */
        *ret = steal_pointer(&text);
        *ret_len = len;
        return 0;
}

/* The file's errors, sorted by line: the first (and how many more) as the
 * error message, all of them as *ret_errors (may be NULL). -EINVAL. */
static int parser_report(Parser *p, char ***ret_errors) {
        _cleanup_strv_free_ char **lines = NULL;

        qsort(p->errors, p->n_errors, sizeof *p->errors, cmp_error);
        for (size_t i = 0; i < p->n_errors; i++)
                if (strv_consume(&lines, strdup_printf("%s:%u: %s", p->path, p->errors[i].line, p->errors[i].msg)) < 0)
                        return -ENOMEM;
        if (p->n_errors > 1)
                error_set(-EINVAL, "%s (and %zu more errors)", lines[0], p->n_errors - 1);
        else
                error_set(-EINVAL, "%s", lines[0]);
        if (ret_errors)
                *ret_errors = steal_pointer(&lines);
        return -EINVAL;
}

/* Parses p->text line by line, then cross-checks the whole. The errors of
 * the text are in p->errors; <0 only when memory ran out. */
static int parser_run(Parser *p, char ***ret_errors) {
        int r;

        r = ini_parse_stream(config_reader, p, config_handler, p);
        if (r == 0 && p->text_pos < p->text_len) /* the reader found no memory */
                r = -1;
        if (r > 0 && !parser_has_error_at(p, (unsigned) r))
                parser_error(p, (unsigned) r, "syntax error");
        else if (r < 0)
                return config_fail(-ENOMEM, p->path, ret_errors, "out of memory");
        return parser_finish(p);
}

/* Opens the config (path, or the default under the root) and checks who may
 * write it. 0 and *ret_fd = -1 when the default is missing. */
static int config_open(int rootfd, const char *path, const char *shown, int *ret_fd, size_t *ret_size, char ***ret_errors) {
        _cleanup_close_ int fd = -1;
        int r;

        if (path)
                fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        else
                fd = openat(rootfd, CONFIG_DEFAULT_PATH, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0) {
                r = -errno;
                if (!path && r == -ENOENT) {
                        *ret_fd = -1;
                        return 0;
                }
                return config_fail(r, shown, ret_errors, "cannot open: %s", strerror(-r));
        }
        r = config_check_file(fd, shown, ret_size, ret_errors);
        if (r < 0)
                return r;
        *ret_fd = steal_fd(&fd);
        return 0;
}

/* The config parsed from text (len bytes and a '\0'), which it takes over
 * and keeps; NULL: there is no file, so no types enabled and defaults for
 * the rest. */
static int config_from_text(const char *shown, char *text, size_t len, Config **ret, char ***ret_errors) {
        _cleanup_(parser_done) Parser p = { .path = shown, .text = text, .text_len = len };
        int r;

        p.config = config_new(shown);
        if (!p.config)
                return -ENOMEM;
        if (!text)
                p.config->missing = true;
        else {
                r = parser_run(&p, ret_errors);
                if (r < 0)
                        return r;
                if (p.n_errors > 0)
                        return parser_report(&p, ret_errors);
                p.config->text = steal_pointer(&p.text);
                p.config->text_len = len;
        }
        *ret = steal_pointer(&p.config);
        return 0;
}

int config_load(int rootfd, const char *path, Config **ret, char ***ret_errors) {
        const char *shown = path ? path : CONFIG_DEFAULT_DISPLAY;
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *text = NULL;
        size_t size = 0, len = 0;
        int r;

        r = config_open(rootfd, path, shown, &fd, &size, ret_errors);
        if (r < 0)
                return r;
        if (fd >= 0) {
                r = config_read_text(fd, size, &text, &len);
                if (r < 0)
                        return config_fail(r, shown, ret_errors, "cannot read: %s", strerror(-r));
        }
        return config_from_text(shown, steal_pointer(&text), len, ret, ret_errors);
}

int config_parse_text(const char *path, const char *text, size_t len, Config **ret) {
        char *copy = NULL;

        if (text) {
                copy = malloc(len + 1);
                if (!copy)
                        return -ENOMEM;
                memcpy(copy, text, len);
                copy[len] = '\0';
        }
        return config_from_text(path ? path : CONFIG_DEFAULT_DISPLAY, copy, len, ret, NULL);
}
