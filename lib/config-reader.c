/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The config's reader (config-internal.h): every raw line passes here
 * before inih sees it.
 *
 * Debian's inih (r55) reads lines of at most 200 bytes into a stack buffer
 * (INI_MAX_LINE; Debian builds it without INI_ALLOW_REALLOC and with
 * INI_USE_STACK), allows multi-line values (an indented line continues the
 * previous key: the handler is called again under the same name), strips
 * inline comments that start with " ;", truncates section names to 49 bytes
 * and reports only the first syntax error. So our reader, which sees every
 * raw line first (ini_parse_stream()), keeps its own line number, section
 * (from the raw "[...]" line) and continuation flag, rejects malformed lines
 * itself (handing inih a comment instead) and thus collects every error,
 * each with its line. inih still splits "key = value" and strips whitespace
 * and comments.
 *
 * A line longer than inih's buffer (a real nova.conf lists 16 to 64 SR-IOV
 * VFs on one device_addresses line, 1 to 2 KiB, and mdev_class may be 255
 * characters) still goes through inih: the reader hands it the key with a
 * one-byte stand-in value, and keeps the real value aside (Parser.long_value,
 * cut and stripped as inih would), which the handler then takes instead.
 * inih calls the handler for a line before it reads the next, so the value
 * aside always belongs to the line being handled. Only a key or a section
 * header that alone does not fit is refused.
 */
#include <ctype.h>
#include <stdio.h>

#include "config-internal.h"

/* A value after its '=' as inih cuts it: leading and trailing whitespace
 * and an inline comment (';' after whitespace) removed. */
static char *value_like_inih(const char *raw) {
        const char *v = raw, *e;
        bool was_space = false;

        while (isspace((unsigned char) *v))
                v++;
        for (e = v; *e && !(was_space && *e == ';'); e++)
                was_space = isspace((unsigned char) *e);
        while (e > v && isspace((unsigned char) e[-1]))
                e--;
        return strndup(v, (size_t) (e - v));
}

/* What config_reader() hands inih for a line: the line itself, or a
 * comment for a line it refused (inih then keeps its state). */
static char *reader_pass(char *str, int num, const char *line) {
        snprintf(str, (size_t) num, "%s\n", line);
        return str;
}

static char *reader_comment(char *str, int num) {
        snprintf(str, (size_t) num, ";\n");
        return str;
}

static char *reader_nomem(Parser *p, char *str, int num) {
        parser_error(p, p->line, "out of memory");
        return reader_comment(str, num);
}

/* The next line of the file, without its newline (and the BOM on line 1);
 * NULL at the end. */
static char *reader_next_line(Parser *p) {
        const char *start = p->text + p->text_pos, *nl;
        size_t n;
        char *line, *end;

        if (p->text_pos >= p->text_len)
                return NULL;
        nl = memchr(start, '\n', p->text_len - p->text_pos);
        n = nl ? (size_t) (nl - start) + 1 : p->text_len - p->text_pos;
        if (n + 1 > p->buf_size) {
                char *b = realloc(p->buf, n + 1);
                if (!b)
                        return NULL; /* parser_run() says out of memory */
                p->buf = b;
                p->buf_size = n + 1;
        }
        memcpy(p->buf, start, n);
        p->buf[n] = '\0';
        p->text_pos += n;
        p->line++;
        p->continuation = false;
        free(p->long_value);
        p->long_value = NULL;
        line = p->buf;
        if (p->line == 1 && strncmp(line, "\xEF\xBB\xBF", 3) == 0)
                line += 3;
        end = line + strlen(line);
        while (end > line && (end[-1] == '\n' || end[-1] == '\r'))
                end--;
        *end = '\0';
        return line;
}

/* "[name]" at s: the section is handled here; inih sees a header. */
static char *reader_header(Parser *p, char *s, char *str, int num) {
        char *close = strchr(s, ']');
        char *rest;

        if (!close) {
                parser_error(p, p->line, "section header without ']'");
                p->kind = SECTION_INVALID;
                free(p->last_key);
                p->last_key = NULL;
                return reader_comment(str, num);
        }
        rest = close + 1;
        while (isspace((unsigned char) *rest))
                rest++;
        if (*rest && *rest != ';' && *rest != '#')
                parser_error(p, p->line, "text after the section header: '%s'", rest);
        {
                _cleanup_free_ char *name = strndup(s + 1, (size_t) (close - s - 1));
                if (name)
                        parser_section(p, strip(name));
        }
        /* inih resets its previous key at a header; keep it seeing one. */
        snprintf(str, (size_t) num, "[section]\n");
        return str;
}

/* "key = value" at s (line is the whole line). */
static char *reader_key(Parser *p, char *line, char *s, bool fits, char *str, int num) {
        char *eq, *delim;

        if (!strpbrk(s, "=:")) {
                parser_error(p, p->line, "expected 'key = value', '[section]' or a comment");
                return reader_comment(str, num);
        }
        eq = strchr(s, '=');
        if (eq)
                for (char *c = s; c < eq; c++)
                        if (*c == ':')
                                *c = COLON_PLACEHOLDER;
        if (fits)
                return reader_pass(str, num, line);
        /* inih splits at the first '=' or ':' */
        delim = strpbrk(s, "=:");
        if (delim - line > num - 6) {
                parser_error(p, p->line, "key longer than %d characters", num - 6);
                p->last_key_bad = true;
                return reader_comment(str, num);
        }
        p->long_value = value_like_inih(delim + 1);
        if (!p->long_value)
                return reader_nomem(p, str, num);
        snprintf(str, (size_t) num, "%.*s= -\n", (int) (delim - line), line);
        return str;
}

/* inih's reader: hands it each line, or a stand-in where inih would get the
 * line wrong (too long for its buffer, a ':' in a key, a bad header). */
char *config_reader(char *str, int num, void *stream) {
        Parser *p = stream;
        char *line, *s;
        bool fits;

        line = reader_next_line(p);
        if (!line)
                return NULL;
        /* inih needs room for "\r\n\0" after the text. */
        fits = (long) strlen(line) <= num - 3;

        s = line;
        while (isspace((unsigned char) *s))
                s++;
        if (!*s || *s == ';' || *s == '#')
                return fits ? reader_pass(str, num, line) : reader_comment(str, num);
        if (s > line && p->last_key) {
                /* inih hands this to the handler under the previous key. */
                p->continuation = true;
                if (fits)
                        return reader_pass(str, num, line);
                p->long_value = strdup(s);
                if (!p->long_value)
                        return reader_nomem(p, str, num);
                snprintf(str, (size_t) num, " -\n");
                return str;
        }
        if (*s == '[')
                return reader_header(p, s, str, num);
        return reader_key(p, line, s, fits, str, num);
}
