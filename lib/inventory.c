/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Nova's inventory arithmetic (inventory.h). */
#include <ctype.h>
#include <limits.h>

#include "config.h"
#include "error.h"
#include "gpustate.h"
#include "inventory.h"
#include "sysfs.h"
#include "util.h"
#include "backend.h"

ENUM_IMPL(inventory_reason, InventoryReason, _INVENTORY_REASON_MAX,
          "ok",
          "no type configured",
          "does not offer its configured type",
          "over max_instances");

static int cmp_parent(const void *a, const void *b) {
        return strcmp(((const InventoryParent *) a)->parent, ((const InventoryParent *) b)->parent);
}

/* By parent, then a parent's rows by type (a row without a type first). */
static int cmp_row(const void *a, const void *b) {
        const InventoryParent *x = a, *y = b;
        int r = cmp_parent(a, b);

        if (r != 0 || x->type == y->type)
                return r;
        return !x->type ? -1 : !y->type ? 1 : strcmp(x->type, y->type);
}

/* max_instances for the parents of one type (Nova's _get_gpu_inventories):
 * the mdevs that exist are counted first, on every parent, before any free
 * capacity is handed out; then each parent, in name order, gets all of its
 * available_instances if they fit under the cap, or none (reason capped;
 * a later, smaller parent may still fit). A parent never shows fewer than
 * the mdevs it holds while the cap allows them; when the mdevs that exist
 * are already more than the cap (it was lowered), they are counted in name
 * order up to the cap. The sum of the totals never passes the cap. */
static void compute_capped(InventoryParent *parents, size_t n, size_t first) {
        const char *type = parents[first].type;
        unsigned max = parents[first].max_instances;
        unsigned long long existing = 0, room, counted;

        for (size_t i = first; i < n; i++)
                if (parents[i].reason == INVENTORY_OK && streq(parents[i].type, type))
                        existing += parents[i].existing;
        room = existing < max ? max - existing : 0;
        counted = 0;
        for (size_t i = first; i < n; i++) {
                InventoryParent *p = &parents[i];
                unsigned long long total = p->existing;

                if (p->reason != INVENTORY_OK || !streq(p->type, type))
                        continue;
                if (existing > max) {
                        /* the existing mdevs alone pass the cap */
                        if (total > max - counted)
                                total = max - counted;
                        if (total < p->existing || p->available > 0)
                                p->reason = INVENTORY_CAPPED;
                } else if (p->available <= room) {
                        total += p->available;
                        room -= p->available;
                } else
                        p->reason = INVENTORY_CAPPED;
                counted += total;
                p->total = (unsigned) total;
        }
}

void inventory_sort(InventoryParent *parents, size_t n) {
        if (n > 1)
                qsort(parents, n, sizeof *parents, cmp_row);
}

InventoryParent *inventory_find(InventoryParent *parents, size_t n, const char *parent) {
        InventoryParent key = { .parent = parent };

        return n > 0 ? bsearch(&key, parents, n, sizeof *parents, cmp_parent) : NULL;
}

void inventory_compute(InventoryParent *parents, size_t n) {
        inventory_sort(parents, n);

        for (size_t i = 0; i < n; i++) {
                InventoryParent *p = &parents[i];
                unsigned long long total = (unsigned long long) p->existing + p->available;

                p->total = p->used = p->free = 0;
                if (!p->type)
                        p->reason = INVENTORY_NO_TYPE;
                else if (!p->offered)
                        p->reason = INVENTORY_NOT_OFFERED;
                else {
                        p->reason = INVENTORY_OK;
                        p->used = p->existing;
                        p->total = total > UINT_MAX ? UINT_MAX : (unsigned) total;
                }
        }
        /* each capped type once, from its first parent */
        for (size_t i = 0; i < n; i++) {
                bool seen = false;

                if (parents[i].reason != INVENTORY_OK || parents[i].max_instances == 0)
                        continue;
                for (size_t j = 0; j < i && !seen; j++)
                        seen = parents[j].type && parents[j].offered && streq(parents[j].type, parents[i].type);
                if (!seen)
                        compute_capped(parents, n, i);
        }
        for (size_t i = 0; i < n; i++)
                parents[i].free = parents[i].total > parents[i].used ? parents[i].total - parents[i].used : 0;
}

static char *underscored(const char *prefix, const char *s, bool upper) {
        char *r = strdup_printf("%s%s", prefix, s);

        if (!r)
                return NULL;
        for (char *c = r + strlen(prefix); *c; c++) {
                if (!isalnum((unsigned char) *c))
                        *c = '_';
                else if (upper)
                        *c = (char) toupper((unsigned char) *c);
        }
        return r;
}

char *inventory_type_trait(const char *type) {
        return underscored("CUSTOM_MDEV_", type, true);
}

char *inventory_provider_name(const char *host, const char *nodedev, const char *type, bool several) {
        return several ? strdup_printf("%s_%s_%s", host, nodedev, type) : strdup_printf("%s_%s", host, nodedev);
}

/* --- the host ---------------------------------------------------------- */

/* A GPU with [gpu_<PF>] (NVIDIA): how many more of each of its types fit
 * by its mode (gpucapacity.h), in place of the VFs' upper bound; the GPU is
 * read once for all its rows. A row is left as it is when the GPU cannot be
 * read or its type's name gives no size. */
static int declared_available(int rootfd, const Config *c, const char *pf, InventoryParent *rows, size_t n_rows) {
        _cleanup_(gpu_state_done) GpuState s = { 0 };
        _cleanup_free_ GpuOffer *o = NULL;
        size_t n = 0;
        int r;

        if (!config_gpu_is_nvidia(config_gpu(c, pf)))
                return 0;
        if (gpu_state_read(rootfd, c, pf, &s) < 0) {
                error_clear();
                return 0;
        }
        r = gpu_state_offers(rootfd, pf, &s, &o, &n);
        if (r < 0)
                return r;
        for (size_t k = 0; k < n_rows; k++)
                for (size_t i = 0; i < n; i++)
                        if (streq(o[i].type, rows[k].type) && o[i].sized)
                                rows[k].available = o[i].free;
        return 0;
}

/* A parent's rows, one per type it serves (none configured: one row
 * without a type), at rows[*n] onwards (room for them was made). */
static int read_parent(int rootfd, const Config *c, const char *parent, InventoryParent *rows, size_t *n) {
        const ConfigType *types[INVENTORY_TYPES_MAX];
        size_t n_types = config_parent_types(c, parent, types, ELEMENTSOF(types)), first = *n;
        const Backend *b = n_types > 0 ? backend_of_parent(rootfd, parent) : NULL;
        int r;

        if (n_types > ELEMENTSOF(types))
                n_types = ELEMENTSOF(types);
        if (n_types == 0) {
                rows[(*n)++] = (InventoryParent) { .parent = parent };
                return 0;
        }
        for (size_t i = 0; i < n_types; i++) {
                InventoryParent *ip = &rows[(*n)++];
                BackendOffer o;
                bool offered;

                *ip = (InventoryParent) {
                        .parent = parent, .type = types[i]->name, .max_instances = types[i]->max_instances,
                        .several = n_types > 1,
                };
                if (!b)
                        continue; /* gone meanwhile: offers nothing */
                r = b->parent_offer(rootfd, parent, types[i]->name, &o, &offered);
                if (r < 0)
                        return r;
                ip->offered = offered;
                ip->existing = o.existing;
                ip->available = o.available;
        }
        return b ? declared_available(rootfd, c, parent, rows + first, n_types) : 0;
}

int inventory_read(int rootfd, const Config *c, InventoryParent **ret, size_t *ret_n) {
        _cleanup_strv_free_ char **parents = NULL;
        _cleanup_free_ InventoryParent *p = NULL;
        size_t n = 0;
        int r;

        r = backend_parent_list(rootfd, &parents);
        if (r < 0)
                return r;
        /* at most INVENTORY_TYPES_MAX rows per parent */
        p = calloc(strv_length(parents) * INVENTORY_TYPES_MAX + 1, sizeof *p);
        if (!p)
                return -ENOMEM;
        for (char **q = parents; *q; q++) {
                r = read_parent(rootfd, c, *q, p, &n);
                if (r < 0)
                        return r;
        }
        inventory_compute(p, n);
        /* the names belong to parents: hand both out together */
        for (size_t i = 0; i < n; i++) {
                p[i].parent = strdup(p[i].parent);
                if (!p[i].parent) {
                        inventory_free(steal_pointer(&p), i);
                        return -ENOMEM;
                }
        }
        *ret = steal_pointer(&p);
        *ret_n = n;
        return 0;
}

void inventory_free(InventoryParent *p, size_t n) {
        for (size_t i = 0; i < n; i++)
                free((char *) p[i].parent);
        free(p);
}
