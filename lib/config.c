/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * /etc/mdev-hooks/mdev-hooks.conf (config.h, doc/design.md §3), parsed with inih.
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
 *
 * Everything is collected first and validated at the end, because sections
 * may come in any order ([mdev_X] before [devices]).
 */
#include <ctype.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <strings.h>
#include <sys/stat.h>

#include <ini.h>

#include "config.h"
#include "pciaddr.h"
#include "nodedev.h"

#define CONFIG_DEFAULT_DISPLAY "/" CONFIG_DEFAULT_PATH
/* inih splits "key = value" at the first '=' or ':', so "0000:41:00.0 = 4"
 * would become key "0000". The reader swaps the ':' of such a key for this
 * byte and the handler swaps it back. */
#define COLON_PLACEHOLDER '\037'

typedef enum SectionKind {
        SECTION_NONE,     /* before the first section header */
        SECTION_INVALID,  /* already reported: its keys are skipped */
        SECTION_DEVICES,
        SECTION_TYPE,     /* [mdev_<type>] or [vgpu_<type>] */
        SECTION_HOOKS,
        SECTION_SRIOV,
        SECTION_PLACEMENT,
} SectionKind;

typedef struct ParseError {
        unsigned line;
        size_t seq;       /* order of detection, for a stable sort */
        char *msg;
} ParseError;

/* One [mdev_<type>]/[vgpu_<type>] (both spellings of one type merge). */
typedef struct TypeSection {
        char *type;
        unsigned line;            /* of its first header */
        char **addresses;         /* normalised, in file order */
        unsigned *address_lines;
        size_t n_addresses, addresses_allocated, lines_allocated;
        unsigned max_instances;
        char *mdev_class;
} TypeSection;

typedef struct Parser {
        const char *path;         /* for messages */
        char *text;               /* the whole file, read at once */
        size_t text_len, text_pos;

        /* the reader's view of the raw line inih is about to handle */
        unsigned line;
        bool continuation;
        char *long_value;         /* the value of a line too long for inih, or NULL */
        char *buf;
        size_t buf_size;

        SectionKind kind;
        TypeSection *section;     /* SECTION_TYPE */
        char *last_key;           /* canonical key of the last key line, for continuations */
        bool last_key_bad;        /* its first line was refused: skip its continuations */

        ParseError *errors;
        size_t n_errors;

        char **seen;              /* "<section>\037<key>" */
        unsigned *seen_lines;
        size_t n_seen;

        char **enabled;
        unsigned *enabled_lines;
        size_t n_enabled;

        TypeSection *sections;
        size_t n_sections;

        Config *config;           /* [hooks] and [sriov] go straight in */
} Parser;

ENUM_IMPL(config_release, ConfigRelease, _CONFIG_RELEASE_MAX, "remove", "keep");
ENUM_IMPL(config_placement, ConfigPlacement, _CONFIG_PLACEMENT_MAX, "pack", "spread");
ENUM_IMPL(config_recreate, ConfigRecreate, _CONFIG_RECREATE_MAX, "lazy", "eager");

/* --- errors ------------------------------------------------------------ */

_printf_(3, 4)
static void parser_error(Parser *p, unsigned line, const char *fmt, ...) {
        ParseError *e;
        va_list ap;
        char *msg = NULL;

        va_start(ap, fmt);
        if (vasprintf(&msg, fmt, ap) < 0)
                msg = NULL;
        va_end(ap);

        e = realloc(p->errors, (p->n_errors + 1) * sizeof *e);
        if (!e || !msg) {
                /* Out of memory: keep what we have; the count still refuses the config. */
                free(msg);
                if (e)
                        p->errors = e;
                return;
        }
        p->errors = e;
        p->errors[p->n_errors] = (ParseError) { .line = line, .seq = p->n_errors, .msg = msg };
        p->n_errors++;
}

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

/* --- small helpers ----------------------------------------------------- */

static char *strip(char *s) {
        char *e;

        while (isspace((unsigned char) *s))
                s++;
        e = s + strlen(s);
        while (e > s && isspace((unsigned char) e[-1]))
                *--e = '\0';
        return s;
}

/* Records a key of a section; a second one is an error naming the first. */
static bool parser_key_once(Parser *p, const char *section, const char *key, const char *shown) {
        _cleanup_free_ char *id = strdup_printf("%s\037%s", section, key);
        char **s;
        unsigned *l;

        if (!id)
                return true;
        for (size_t i = 0; i < p->n_seen; i++)
                if (streq(p->seen[i], id)) {
                        parser_error(p, p->line, "duplicate key '%s' (first set on line %u)", shown, p->seen_lines[i]);
                        return false;
                }
        s = realloc(p->seen, (p->n_seen + 1) * sizeof *s);
        if (!s)
                return true;
        p->seen = s;
        l = realloc(p->seen_lines, (p->n_seen + 1) * sizeof *l);
        if (!l)
                return true;
        p->seen_lines = l;
        p->seen[p->n_seen] = steal_pointer(&id);
        p->seen_lines[p->n_seen] = p->line;
        p->n_seen++;
        return true;
}

static TypeSection *parser_type_section(Parser *p, const char *type) {
        TypeSection *t;

        for (size_t i = 0; i < p->n_sections; i++)
                if (streq(p->sections[i].type, type))
                        return &p->sections[i];
        t = realloc(p->sections, (p->n_sections + 1) * sizeof *t);
        if (!t)
                return NULL;
        p->sections = t;
        t = &p->sections[p->n_sections];
        *t = (TypeSection) { .type = strdup(type), .line = p->line };
        if (!t->type)
                return NULL;
        p->n_sections++;
        return t;
}

/* A parent name: a PCI address (normalised to lower case) or a virtual
 * parent's name such as "mtty", by its sysfs name or by its libvirt
 * node-device name as Nova's own configs write it ("pci_0000_84_00_0",
 * "mtty_mtty", "css_0_0_0052", "ap_matrix": nodedev.h), which becomes the
 * sysfs name. Anything with a ':' must be a PCI address. */
static int parse_parent_name(const char *given, char **ret) {
        _cleanup_free_ char *sysname = NULL;
        const char *s = given;
        char *n;
        int r;

        r = nodedev_to_parent(given, &sysname);
        if (r < 0)
                return r;
        if (r > 0)
                s = sysname;
        if (strchr(s, ':')) {
                char pci[PCI_ADDRESS_STRING_MAX];

                if (!pci_address_normalize(s, pci))
                        return -EINVAL;
                n = strdup(pci);
        } else if (!name_is_valid(s))
                return -EINVAL;
        else
                n = strdup(s);
        if (!n)
                return -ENOMEM;
        *ret = n;
        return 0;
}

/* --- list values ------------------------------------------------------- */

static void parse_enabled(Parser *p, const char *value) {
        _cleanup_free_ char *copy = strdup(value);
        char *save = NULL;

        if (!copy)
                return;
        for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                char *t = strip(tok);
                unsigned *ln;

                if (!*t)
                        continue;
                if (!name_is_valid(t)) {
                        parser_error(p, p->line, "'%s' is not a valid mdev type name", t);
                        continue;
                }
                if (strv_contains(p->enabled, t)) {
                        parser_error(p, p->line, "type '%s' is enabled twice", t);
                        continue;
                }
                ln = realloc(p->enabled_lines, (p->n_enabled + 1) * sizeof *ln);
                if (!ln)
                        return;
                p->enabled_lines = ln;
                if (strv_extend(&p->enabled, t) < 0)
                        return;
                p->enabled_lines[p->n_enabled++] = p->line;
        }
}

static void parse_addresses(Parser *p, TypeSection *t, const char *value) {
        _cleanup_free_ char *copy = strdup(value);
        char *save = NULL;

        if (!copy)
                return;
        for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                char *a = strip(tok), *n = NULL;
                unsigned *ln;

                if (!*a)
                        continue;
                if (parse_parent_name(a, &n) < 0) {
                        if (strchr(a, ':'))
                                parser_error(p, p->line, "'%s' is not a PCI address of the form 0000:84:00.0", a);
                        else
                                parser_error(p, p->line, "'%s' is neither a PCI address nor a valid parent name", a);
                        continue;
                }
                if (t->n_addresses + 1 > t->lines_allocated) {
                        size_t want = t->lines_allocated ? 2 * t->lines_allocated : 16;

                        ln = reallocarray(t->address_lines, want, sizeof *ln);
                        if (!ln) {
                                free(n);
                                return;
                        }
                        t->address_lines = ln;
                        t->lines_allocated = want;
                }
                t->address_lines[t->n_addresses] = p->line;
                /* strv_push(): SR-IOV hosts list hundreds of VFs. */
                if (strv_push(&t->addresses, &t->n_addresses, &t->addresses_allocated, n) < 0)
                        return;
        }
}

/* --- one key ------------------------------------------------------------ */

static void handle_devices(Parser *p, const char *key, const char *value) {
        if (!streq(key, "enabled_mdev_types") && !streq(key, "enabled_vgpu_types")) {
                parser_error(p, p->line, "unknown key '%s' in [devices] (known: enabled_mdev_types, enabled_vgpu_types)", key);
                p->last_key_bad = true;
                return;
        }
        /* One option under two names (the old one deprecated), as in Nova. */
        if (!parser_key_once(p, "devices", "enabled_mdev_types", key)) {
                p->last_key_bad = true;
                return;
        }
        parse_enabled(p, value);
}

static void handle_type(Parser *p, const char *key, const char *value) {
        TypeSection *t = p->section;
        _cleanup_free_ char *sect = strdup_printf("type %s", t->type);
        unsigned u;

        if (!streq(key, "device_addresses") && !streq(key, "max_instances") && !streq(key, "mdev_class")) {
                parser_error(p, p->line, "unknown key '%s' in [mdev_%s] (known: device_addresses, max_instances, mdev_class)", key, t->type);
                p->last_key_bad = true;
                return;
        }
        if (!sect || !parser_key_once(p, sect, key, key)) {
                p->last_key_bad = true;
                return;
        }
        if (streq(key, "device_addresses"))
                parse_addresses(p, t, value);
        else if (streq(key, "max_instances")) {
                if (safe_atou(value, &u) < 0 || u < 1)
                        parser_error(p, p->line, "max_instances must be an integer >= 1, not '%s'", value);
                else
                        t->max_instances = u;
        } else {
                if (!mdev_class_is_valid(value))
                        parser_error(p, p->line, "mdev_class must be VGPU or CUSTOM_[A-Z0-9_]+ of at most %d characters, not '%s'",
                                     MDEV_CLASS_MAX, value);
                else {
                        free(t->mdev_class);
                        t->mdev_class = strdup(value);
                }
        }
}

static void handle_hooks(Parser *p, const char *key, const char *value) {
        Config *c = p->config;
        unsigned u;

        if (!streq(key, "release") && !streq(key, "placement") && !streq(key, "recreate") &&
            !streq(key, "lock_timeout") && !streq(key, "parent_wait")) {
                parser_error(p, p->line, "unknown key '%s' in [hooks] (known: release, placement, lock_timeout, parent_wait, recreate)", key);
                p->last_key_bad = true;
                return;
        }
        if (!parser_key_once(p, "hooks", key, key)) {
                p->last_key_bad = true;
                return;
        }
        if (streq(key, "release")) {
                ConfigRelease v = config_release_from_string(value);
                if (v < 0)
                        parser_error(p, p->line, "release must be remove or keep, not '%s'", value);
                else
                        c->release = v;
        } else if (streq(key, "placement")) {
                ConfigPlacement v = config_placement_from_string(value);
                if (v < 0)
                        parser_error(p, p->line, "placement must be pack or spread, not '%s'", value);
                else
                        c->placement = v;
        } else if (streq(key, "recreate")) {
                ConfigRecreate v = config_recreate_from_string(value);
                if (v < 0)
                        parser_error(p, p->line, "recreate must be lazy or eager, not '%s'", value);
                else
                        c->recreate = v;
        } else {
                if (safe_atou(value, &u) < 0)
                        parser_error(p, p->line, "%s must be a number of seconds, not '%s'", key, value);
                else if (streq(key, "lock_timeout"))
                        c->lock_timeout = u;
                else
                        c->parent_wait = u;
        }
}

static void handle_sriov(Parser *p, const char *key, const char *value) {
        Config *c = p->config;
        _cleanup_free_ char *pf = NULL;
        ConfigSriovPf *s;
        unsigned u = 0;
        bool max = false;

        if (streq(key, "command")) {
                if (!parser_key_once(p, "sriov", key, key)) {
                        p->last_key_bad = true;
                        return;
                }
                if (!*value) {
                        parser_error(p, p->line, "command is empty (remove it to write sriov_numvfs)");
                        return;
                }
                free(c->sriov_command);
                c->sriov_command = strdup(value);
                return;
        }
        if (!pci_address_is_valid(key)) {
                parser_error(p, p->line, "unknown key '%s' in [sriov] (a PF's PCI address such as 0000:41:00.0, or command)", key);
                p->last_key_bad = true;
                return;
        }
        if (parse_parent_name(key, &pf) < 0)
                return;
        if (!parser_key_once(p, "sriov", pf, key)) {
                p->last_key_bad = true;
                return;
        }
        if (streq(value, "max"))
                max = true;
        else if (safe_atou(value, &u) < 0 || u < 1) {
                parser_error(p, p->line, "the number of VFs for %s must be an integer >= 1 or max, not '%s'", pf, value);
                return;
        }
        s = realloc(c->sriov, (c->n_sriov + 1) * sizeof *s);
        if (!s)
                return;
        c->sriov = s;
        c->sriov[c->n_sriov++] = (ConfigSriovPf) { .address = steal_pointer(&pf), .numvfs = u, .max = max, .line = p->line };
}

/* [placement]: where `placement sync` publishes the host. */
static void handle_placement(Parser *p, const char *key, const char *value) {
        Config *c = p->config;
        char **slot;

        if (!streq(key, "url") && !streq(key, "token_file")) {
                parser_error(p, p->line, "unknown key '%s' in [placement] (known: url, token_file)", key);
                p->last_key_bad = true;
                return;
        }
        if (!parser_key_once(p, "placement", key, key)) {
                p->last_key_bad = true;
                return;
        }
        if (streq(key, "url")) {
                if (strncmp(value, "http://", 7) != 0 && strncmp(value, "https://", 8) != 0) {
                        parser_error(p, p->line, "url must start with http:// or https://, not '%s'", value);
                        return;
                }
                slot = &c->placement_url;
        } else {
                if (value[0] != '/') {
                        parser_error(p, p->line, "token_file must be an absolute path, not '%s'", value);
                        return;
                }
                slot = &c->placement_token_file;
        }
        free(*slot);
        *slot = strdup(value);
}

static void handle_continuation(Parser *p, const char *raw) {
        _cleanup_free_ char *buf = strdup(raw);
        const char *value = buf;

        if (!buf || p->last_key_bad || p->kind == SECTION_INVALID)
                return;
        /* Debian's inih strips inline comments (" ;") from key lines only. */
        for (char *c = buf; *c; c++)
                if (*c == ';' && (c == buf || isspace((unsigned char) c[-1]))) {
                        *c = '\0';
                        break;
                }
        value = strip(buf);
        if (p->kind == SECTION_DEVICES && p->last_key &&
            (streq(p->last_key, "enabled_mdev_types") || streq(p->last_key, "enabled_vgpu_types")))
                parse_enabled(p, value);
        else if (p->kind == SECTION_TYPE && p->last_key && streq(p->last_key, "device_addresses"))
                parse_addresses(p, p->section, value);
        else
                parser_error(p, p->line, "'%s' takes one value: an indented line continues only enabled_mdev_types or device_addresses",
                             strna(p->last_key));
}

static int config_handler(void *user, const char *section, const char *raw_name, const char *value) {
        _cleanup_free_ char *name_buf = strdup(raw_name);
        const char *name = name_buf ? name_buf : raw_name;
        Parser *p = user;

        /* Undo the reader's protection of ':' in keys such as "0000:41:00.0". */
        if (name_buf)
                for (char *c = name_buf; *c; c++)
                        if (*c == COLON_PLACEHOLDER)
                                *c = ':';

        if (p->long_value)
                value = p->long_value;
        if (p->continuation) {
                handle_continuation(p, value);
                return 1;
        }
        /* inih remembers a non-empty key for continuation lines; so do we. */
        free(p->last_key);
        p->last_key = *name ? strdup(name) : NULL;
        p->last_key_bad = false;

        if (!*name) {
                parser_error(p, p->line, "empty key");
                p->last_key_bad = true;
                return 1;
        }
        switch (p->kind) {
        case SECTION_NONE:
                parser_error(p, p->line, "key '%s' outside a section", name);
                p->last_key_bad = true;
                break;
        case SECTION_INVALID:
                p->last_key_bad = true;
                break;
        case SECTION_DEVICES:
                handle_devices(p, name, value);
                break;
        case SECTION_TYPE:
                handle_type(p, name, value);
                break;
        case SECTION_HOOKS:
                handle_hooks(p, name, value);
                break;
        case SECTION_SRIOV:
                handle_sriov(p, name, value);
                break;
        case SECTION_PLACEMENT:
                handle_placement(p, name, value);
                break;
        }
        return 1;
}

/* --- the reader: every raw line passes here before inih sees it --------- */

static void parser_section(Parser *p, const char *name) {
        const char *type = NULL;

        free(p->last_key);
        p->last_key = NULL;
        p->section = NULL;
        if (streq(name, "devices"))
                p->kind = SECTION_DEVICES;
        else if (streq(name, "hooks"))
                p->kind = SECTION_HOOKS;
        else if (streq(name, "sriov"))
                p->kind = SECTION_SRIOV;
        else if (streq(name, "placement"))
                p->kind = SECTION_PLACEMENT;
        else if (strncmp(name, "mdev_", 5) == 0 || strncmp(name, "vgpu_", 5) == 0) {
                type = name + 5;
                if (!name_is_valid(type)) {
                        parser_error(p, p->line, "'%s' in [%s] is not a valid mdev type name", type, name);
                        p->kind = SECTION_INVALID;
                        return;
                }
                p->section = parser_type_section(p, type);
                p->kind = p->section ? SECTION_TYPE : SECTION_INVALID;
        } else {
                parser_error(p, p->line, "unknown section [%s] (known: devices, mdev_<type>, vgpu_<type>, hooks, sriov, placement)", name);
                p->kind = SECTION_INVALID;
        }
}

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
static char *config_reader(char *str, int num, void *stream) {
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

/* --- after the whole file: cross-checks ------------------------------ */

static void config_type_done(ConfigType *t) {
        free(t->name);
        strv_free(t->addresses);
        free(t->mdev_class);
}

void config_free(Config *c) {
        if (!c)
                return;
        free(c->path);
        for (size_t i = 0; i < c->n_types; i++)
                config_type_done(&c->types[i]);
        free(c->types);
        for (size_t i = 0; i < c->n_sriov; i++)
                free(c->sriov[i].address);
        free(c->sriov);
        free(c->sriov_command);
        strv_free(c->warnings);
        free(c->placement_url);
        free(c->placement_token_file);
        free(c->text);
        free(c);
}

static TypeSection *parser_find_section(Parser *p, const char *type) {
        for (size_t i = 0; i < p->n_sections; i++)
                if (streq(p->sections[i].type, type))
                        return &p->sections[i];
        return NULL;
}

/* One listing of an address in a [mdev_*] section. */
typedef struct AddressRef {
        const char *address;
        unsigned line;
        size_t section, index;
} AddressRef;

/* By address, then in file order: line, then section and place. */
static int address_ref_cmp(const void *a, const void *b) {
        const AddressRef *x = a, *y = b;
        int r = strcmp(x->address, y->address);

        if (r != 0)
                return r;
        if (x->line != y->line)
                return x->line < y->line ? -1 : 1;
        if (x->section != y->section)
                return x->section < y->section ? -1 : 1;
        return (x->index > y->index) - (x->index < y->index);
}

/* A later listing and the one it repeats, reported in section order. */
typedef struct AddressDup {
        const AddressRef *later, *first;
} AddressDup;

static int address_dup_cmp(const void *a, const void *b) {
        const AddressRef *x = ((const AddressDup *) a)->later, *y = ((const AddressDup *) b)->later;

        if (x->section != y->section)
                return x->section < y->section ? -1 : 1;
        return (x->index > y->index) - (x->index < y->index);
}

/* Whether any address is listed twice, in one pass over a hash set: the
 * config every hook reads has none, and then needs no sort. When the set
 * cannot be had (no memory), true: the sort below decides. */
static bool parser_any_repeated(const Parser *p, size_t n) {
        _cleanup_free_ const char **set = NULL;
        size_t size = 16, mask;

        while (size < 2 * n)
                size *= 2;
        set = calloc(size, sizeof *set);
        if (!set)
                return true;
        mask = size - 1;
        for (size_t i = 0; i < p->n_sections; i++)
                for (size_t j = 0; j < p->sections[i].n_addresses; j++) {
                        const char *a = p->sections[i].addresses[j];
                        size_t k = fnv1a32(FNV1A32_INIT, a) & mask;

                        for (; set[k]; k = (k + 1) & mask)
                                if (streq(set[k], a))
                                        return true;
                        set[k] = a;
                }
        return false;
}

/* Each listing of an address that an earlier one (in file order) already
 * made is an error naming that earlier one: sorted, not compared pair by
 * pair, so that a host with hundreds of VFs does not pay a quadratic cost
 * in every hook. */
static int parser_check_duplicates(Parser *p) {
        _cleanup_free_ AddressRef *refs = NULL;
        _cleanup_free_ AddressDup *dups = NULL;
        size_t n = 0, n_dups = 0;

        for (size_t i = 0; i < p->n_sections; i++)
                n += p->sections[i].n_addresses;
        if (n < 2 || !parser_any_repeated(p, n))
                return 0;
        refs = calloc(n, sizeof *refs);
        dups = calloc(n, sizeof *dups);
        if (!refs || !dups)
                return -ENOMEM;
        n = 0;
        for (size_t i = 0; i < p->n_sections; i++)
                for (size_t j = 0; j < p->sections[i].n_addresses; j++)
                        refs[n++] = (AddressRef) {
                                .address = p->sections[i].addresses[j],
                                .line = p->sections[i].address_lines[j],
                                .section = i,
                                .index = j,
                        };
        qsort(refs, n, sizeof *refs, address_ref_cmp);
        for (size_t g = 0, e; g < n; g = e) {
                for (e = g + 1; e < n && streq(refs[e].address, refs[g].address); e++)
                        ;
                /* each later one names the earlier one that comes first in
                 * section order */
                for (size_t k = g + 1; k < e; k++) {
                        const AddressRef *first = &refs[g];

                        for (size_t m = g + 1; m < k; m++)
                                if (refs[m].section < first->section ||
                                    (refs[m].section == first->section && refs[m].index < first->index))
                                        first = &refs[m];
                        dups[n_dups++] = (AddressDup) { .later = &refs[k], .first = first };
                }
        }
        qsort(dups, n_dups, sizeof *dups, address_dup_cmp);
        for (size_t d = 0; d < n_dups; d++) {
                const TypeSection *t = &p->sections[dups[d].later->section];
                const TypeSection *u = &p->sections[dups[d].first->section];

                if (t == u)
                        parser_error(p, dups[d].later->line, "'%s' is listed twice in [mdev_%s] device_addresses",
                                     dups[d].later->address, t->type);
                else
                        parser_error(p, dups[d].later->line,
                                     "'%s' is listed under two types, %s (line %u) and %s: a parent serves one type",
                                     dups[d].later->address, u->type, dups[d].first->line, t->type);
        }
        return 0;
}

/* The section's addresses, sorted, each once (one listed twice is an error
 * reported above, yet the list must not carry it twice either): sorted and
 * then compared with the neighbour only, not with every other address.
 * The section's list itself is sorted and handed over (the checks that
 * need it in file order are done); the section is left without one. */
static char **addresses_sorted_unique(TypeSection *s) {
        char **l = steal_pointer(&s->addresses);
        size_t n = 0;

        s->n_addresses = s->addresses_allocated = 0;
        if (!l)
                return NULL;
        /* Listed in order, as a config usually is: nothing to sort or drop. */
        if (strv_is_sorted_unique(l))
                return l;
        strv_sort(l);
        for (size_t j = 0; l[j]; j++) {
                if (n > 0 && streq(l[j], l[n - 1])) {
                        free(l[j]);
                        continue;
                }
                l[n++] = l[j];
        }
        l[n] = NULL;
        return l;
}

static int parser_finish(Parser *p) {
        Config *c = p->config;
        const ConfigType *first_default = NULL;
        int r;

        for (size_t i = 0; i < p->n_sections; i++)
                if (!strv_contains(p->enabled, p->sections[i].type))
                        parser_error(p, p->sections[i].line,
                                     "[mdev_%s] configures a type that is not enabled: add it to [devices] enabled_mdev_types or remove the section",
                                     p->sections[i].type);

        /* The same parent under two types, or twice under one. */
        r = parser_check_duplicates(p);
        if (r < 0)
                return r;

        c->types = calloc(p->n_enabled ? p->n_enabled : 1, sizeof *c->types);
        if (!c->types)
                return -ENOMEM;
        for (size_t i = 0; i < p->n_enabled; i++) {
                TypeSection *s = parser_find_section(p, p->enabled[i]);
                ConfigType *t = &c->types[c->n_types++];

                t->name = strdup(p->enabled[i]);
                t->line = s ? s->line : p->enabled_lines[i];
                t->mdev_class = strdup(s && s->mdev_class ? s->mdev_class : "VGPU");
                if (!t->name || !t->mdev_class)
                        return -ENOMEM;
                if (s) {
                        t->max_instances = s->max_instances;
                        t->addresses = addresses_sorted_unique(s);
                }
                if (strv_length(t->addresses) > 0)
                        continue;
                if (!first_default) {
                        first_default = t;
                        continue;
                }
                /* Nova warns ("Mdev type default already set to ...") and
                 * drops the later type; so do we, and check-config refuses. */
                if (strv_consume(&c->warnings,
                                 strdup_printf("%s:%u: '%s' and '%s' (line %u) both have no device_addresses: as Nova does, "
                                               "'%s' is the default for every parent not listed and '%s' is not used; "
                                               "give it device_addresses or remove it from enabled_mdev_types",
                                               p->path, t->line, t->name, first_default->name, first_default->line,
                                               first_default->name, t->name)) < 0)
                        return -ENOMEM;
                config_type_done(t);
                *t = (ConfigType) { 0 };
                c->n_types--;
        }
        c->default_type = first_default;
        return 0;
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

/* --- queries ----------------------------------------------------------- */

const ConfigType *config_parent_type(const Config *c, const char *parent) {
        if (!c || !parent)
                return NULL;
        for (size_t i = 0; i < c->n_types; i++)
                for (char **a = c->types[i].addresses; a && *a; a++)
                        if (strcasecmp(*a, parent) == 0)
                                return &c->types[i];
        return c->default_type;
}

const ConfigType *config_find_type(const Config *c, const char *type) {
        if (!c || !type)
                return NULL;
        for (size_t i = 0; i < c->n_types; i++)
                if (streq(c->types[i].name, type))
                        return &c->types[i];
        return NULL;
}

bool config_parent_is_listed(const Config *c, const char *parent) {
        if (!c || !parent)
                return false;
        for (size_t i = 0; i < c->n_types; i++)
                for (char **a = c->types[i].addresses; a && *a; a++)
                        if (strcasecmp(*a, parent) == 0)
                                return true;
        return false;
}

void config_enabled_types_string(const Config *c, char *buf, size_t size) {
        _cleanup_free_ char **names = calloc(c->n_types + 1, sizeof *names);
        _cleanup_free_ char *joined = NULL;

        for (size_t i = 0; names && i < c->n_types; i++)
                names[i] = c->types[i].name;
        joined = names ? strv_join(names, ", ") : NULL;
        snprintf(buf, size, "%s", strempty(joined));
        if (c->n_types == 0) {
                /* Name the file to write: the refusal is all an operator sees. */
                const char *root = getenv("MDEV_HOOKS_ROOT");
                bool rooted = root && *root && !streq(root, "/") && c->path[0] == '/' && streq(c->path, CONFIG_DEFAULT_DISPLAY);

                if (c->missing)
                        snprintf(buf, size, "none (%s%s does not exist: copy %s%s.example there and enable types in [devices] enabled_mdev_types)",
                                 rooted ? root : "", c->path, rooted ? root : "", c->path);
                else
                        snprintf(buf, size, "none (%s%s enables no type: set [devices] enabled_mdev_types)",
                                 rooted ? root : "", c->path);
        }
}
