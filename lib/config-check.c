/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The config's checks once the whole file is read (config-internal.h): an
 * address listed twice, a section of a type not enabled, two types that
 * are both the default; and the types of the Config they leave. */
#include "config-internal.h"

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

                const ConfigGpu *g = config_gpu(p->config, dups[d].later->address);

                if (t == u)
                        parser_error(p, dups[d].later->line, "'%s' is listed twice in [mdev_%s] device_addresses",
                                     dups[d].later->address, t->type);
                else if (g && g->mode != CONFIG_GPU_MODE_EQUAL)
                        continue; /* a mixed-size or MIG GPU serves several types */
                else if (g && g->vfs && g->vram_quota.n > 0)
                        continue; /* an Intel GPU with VFs of several quotas: parser_check_gpus() checks each type */
                else if (g && g->vfs)
                        parser_error(p, dups[d].later->line,
                                     "'%s' is listed under two types, %s (line %u) and %s, but [gpu_%s] (line %u) declares no vram_quota, so the driver gives its VFs one size: declare a quota per VF (vram_quota = 8G, 4G, ...) or list it under one type",
                                     dups[d].later->address, u->type, dups[d].first->line, t->type, g->address, g->line);
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

int parser_finish(Parser *p) {
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
        parser_check_gpus(p);

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
