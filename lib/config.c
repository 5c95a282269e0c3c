/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * /etc/mdev-hooks/mdev-hooks.conf (config.h, doc/design.md §3), parsed with inih.
 *
 * Everything is collected first and validated at the end, because sections
 * may come in any order ([mdev_X] before [devices]).
 *
 * Split as kmod splits a large concept, behind config-internal.h: this file
 * says what each section and key means and answers the queries;
 * config-gpu.c reads the values of a [gpu_<PF>] section's keys;
 * config-reader.c hands inih each line, config-check.c checks the whole
 * once every section is read, config-load.c reads the file and reports its
 * errors.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <strings.h>

#include "config-internal.h"
#include "pciaddr.h"
#include "nodedev.h"

ENUM_IMPL(config_release, ConfigRelease, _CONFIG_RELEASE_MAX, "remove", "keep");
ENUM_IMPL(config_placement, ConfigPlacement, _CONFIG_PLACEMENT_MAX, "pack", "spread");
ENUM_IMPL(config_recreate, ConfigRecreate, _CONFIG_RECREATE_MAX, "lazy", "eager");
ENUM_IMPL(config_gpu_mode, ConfigGpuMode, _CONFIG_GPU_MODE_MAX, "equal", "mixed", "mig");

/* --- errors ------------------------------------------------------------ */

_printf_(3, 4)
void parser_error(Parser *p, unsigned line, const char *fmt, ...) {
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

/* --- small helpers ----------------------------------------------------- */

char *strip(char *s) {
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

/* [gpu]: the vendor tools the boot plan runs, and its retries. */
static void handle_gpu(Parser *p, const char *key, const char *value) {
        Config *c = p->config;

        if (!streq(key, "sriov_manage") && !streq(key, "nvidia_smi") && !streq(key, "unbind_retries") &&
            !streq(key, "unbind_retry_ms")) {
                parser_error(p, p->line, "unknown key '%s' in [gpu] (known: sriov_manage, nvidia_smi, unbind_retries, unbind_retry_ms)", key);
                p->last_key_bad = true;
                return;
        }
        if (!parser_key_once(p, "gpu", key, key)) {
                p->last_key_bad = true;
                return;
        }
        if (streq(key, "unbind_retries") || streq(key, "unbind_retry_ms")) {
                unsigned *u = streq(key, "unbind_retries") ? &c->gpu_unbind_retries : &c->gpu_unbind_retry_ms;
                if (safe_atou(value, u) < 0 || *u > 3600000)
                        parser_error(p, p->line, "%s must be an integer from 0 to 3600000, not '%s'", key, value);
                return;
        }
        if (value[0] != '/') {
                parser_error(p, p->line, "%s must be an absolute path, not '%s'", key, value);
                return;
        }
        char **slot = streq(key, "sriov_manage") ? &c->gpu_sriov_manage : &c->gpu_nvidia_smi;
        free(*slot);
        *slot = strdup(value);
}

/* [gpu_<PF>]: NVIDIA's mode and mig_instances, AMD's spatial_partition,
 * Intel xe's vfs and its VFs' profile; which keys and their values in
 * config-gpu.c. */
static void handle_gpu_pf(Parser *p, const char *key, const char *value) {
        ConfigGpu *g = &p->config->gpus[p->gpu];
        _cleanup_free_ char *section = strdup_printf("gpu_%s", g->address);

        if (!parser_gpu_key_known(key)) {
                parser_error(p, p->line, "unknown key '%s' in [gpu_%s] (known: " PARSER_GPU_KEYS ")", key, g->address);
                p->last_key_bad = true;
                return;
        }
        if (!parser_key_once(p, section ? section : "gpu_", key, key)) {
                p->last_key_bad = true;
                return;
        }
        parser_gpu_value(p, g, key, value);
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

int config_handler(void *user, const char *section, const char *raw_name, const char *value) {
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
        case SECTION_GPU:
                handle_gpu(p, name, value);
                break;
        case SECTION_GPU_PF:
                handle_gpu_pf(p, name, value);
                break;
        }
        return 1;
}

/* --- a section header (config-reader.c reads its line) ---------------- */

static void parser_gpu_section(Parser *p, const char *pf) {
        Config *c = p->config;
        char pci[PCI_ADDRESS_STRING_MAX];
        ConfigGpu *g;

        p->kind = SECTION_INVALID;
        if (!pci_address_normalize(pf, pci)) {
                parser_error(p, p->line, "'%s' in [gpu_%s] is not a PF's PCI address such as 0000:41:00.0", pf, pf);
                return;
        }
        for (size_t i = 0; i < c->n_gpus; i++)
                if (streq(c->gpus[i].address, pci)) {
                        parser_error(p, p->line, "duplicate section [gpu_%s] (first on line %u)", pci, c->gpus[i].line);
                        return;
                }
        g = realloc(c->gpus, (c->n_gpus + 1) * sizeof *g);
        if (!g)
                return;
        c->gpus = g;
        c->gpus[c->n_gpus] = (ConfigGpu) { .address = strdup(pci), .line = p->line };
        if (!c->gpus[c->n_gpus].address)
                return;
        p->gpu = c->n_gpus++;
        p->kind = SECTION_GPU_PF;
}

void parser_section(Parser *p, const char *name) {
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
        else if (streq(name, "gpu"))
                p->kind = SECTION_GPU;
        else if (strncmp(name, "gpu_", 4) == 0)
                parser_gpu_section(p, name + 4);
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

/* --- the config -------------------------------------------------------- */

void config_type_done(ConfigType *t) {
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
        for (size_t i = 0; i < c->n_gpus; i++) {
                free(c->gpus[i].address);
                strv_free(c->gpus[i].mig_instances);
                free(c->gpus[i].spatial_partition);
                free(c->gpus[i].vram_quota.v);
                free(c->gpus[i].exec_quantum_ms.v);
                free(c->gpus[i].preempt_timeout_us.v);
        }
        free(c->gpus);
        free(c->gpu_sriov_manage);
        free(c->gpu_nvidia_smi);
        strv_free(c->warnings);
        free(c->placement_url);
        free(c->placement_token_file);
        free(c->text);
        free(c);
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

size_t config_parent_types(const Config *c, const char *parent, const ConfigType **ret, size_t size) {
        size_t n = 0;

        if (!c || !parent)
                return 0;
        for (size_t i = 0; i < c->n_types; i++)
                for (char **a = c->types[i].addresses; a && *a; a++)
                        if (strcasecmp(*a, parent) == 0) {
                                if (n < size)
                                        ret[n] = &c->types[i];
                                n++;
                                break;
                        }
        if (n > 0 || !c->default_type)
                return n;
        if (size > 0)
                ret[0] = c->default_type;
        return 1;
}

const ConfigType *config_find_type(const Config *c, const char *type) {
        if (!c || !type)
                return NULL;
        for (size_t i = 0; i < c->n_types; i++)
                if (streq(c->types[i].name, type))
                        return &c->types[i];
        return NULL;
}

const ConfigGpu *config_gpu(const Config *c, const char *pf) {
        for (size_t i = 0; i < c->n_gpus; i++)
                if (streq(c->gpus[i].address, pf))
                        return &c->gpus[i];
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
