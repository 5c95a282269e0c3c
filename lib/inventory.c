/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Nova's inventory arithmetic (inventory.h). */
#include <ctype.h>
#include <limits.h>

#include "config.h"
#include "inventory.h"
#include "sysfs.h"

static const char * const reason_table[_INVENTORY_REASON_MAX] = {
        [INVENTORY_OK] = "ok",
        [INVENTORY_NO_TYPE] = "no type configured",
        [INVENTORY_NOT_OFFERED] = "does not offer its configured type",
        [INVENTORY_CAPPED] = "over max_instances",
};

const char *inventory_reason_to_string(InventoryReason r) {
        return (unsigned) r < _INVENTORY_REASON_MAX ? reason_table[r] : NULL;
}

static int cmp_parent(const void *a, const void *b) {
        return strcmp(((const InventoryParent *) a)->parent, ((const InventoryParent *) b)->parent);
}

void inventory_compute(InventoryParent *parents, size_t n) {
        if (n > 1)
                qsort(parents, n, sizeof *parents, cmp_parent);

        for (size_t i = 0; i < n; i++) {
                InventoryParent *p = &parents[i];
                unsigned long long counted = 0, total;

                p->total = p->used = p->free = 0;
                if (!p->type) {
                        p->reason = INVENTORY_NO_TYPE;
                        continue;
                }
                if (!p->offered) {
                        p->reason = INVENTORY_NOT_OFFERED;
                        continue;
                }
                p->used = p->existing;
                total = (unsigned long long) p->existing + p->available;
                p->reason = INVENTORY_OK;

                if (p->max_instances > 0) {
                        /* What the earlier parents of the same type already count. */
                        for (size_t j = 0; j < i; j++)
                                if (parents[j].type && streq(parents[j].type, p->type))
                                        counted += parents[j].total;
                        if (counted + total > p->max_instances) {
                                p->reason = INVENTORY_CAPPED;
                                total = 0;
                        }
                }
                p->total = total > UINT_MAX ? UINT_MAX : (unsigned) total;
                p->free = p->total > p->used ? p->total - p->used : 0;
        }
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

char *inventory_nodedev_name(const char *parent) {
        if (config_pci_address_is_valid(parent)) {
                char *r = underscored("pci_", parent, false);

                if (r)
                        for (char *c = r; *c; c++)
                                *c = (char) tolower((unsigned char) *c);
                return r;
        }
        /* vfio-ccw subchannels "0.0.0023" and vfio-ap's "matrix", as libvirt names them. */
        if (strlen(parent) == 8 && parent[1] == '.' && parent[3] == '.' &&
            strspn(parent, "0123456789abcdef.") == 8)
                return underscored("css_", parent, false);
        if (streq(parent, "matrix"))
                return strdup("ap_matrix");
        return underscored("", parent, false);
}

char *inventory_type_trait(const char *type) {
        return underscored("CUSTOM_MDEV_", type, true);
}

/* --- the host ---------------------------------------------------------- */

int inventory_read(int rootfd, const Config *c, InventoryParent **ret, size_t *ret_n) {
        _cleanup_strv_free_ char **parents = NULL;
        InventoryParent *p;
        size_t n = 0;
        int r;

        r = sysfs_parent_list(rootfd, &parents);
        if (r < 0)
                return r;
        p = calloc(strv_length(parents) + 1, sizeof *p);
        if (!p)
                return -ENOMEM;
        for (char **q = parents; *q; q++) {
                const ConfigType *t = config_parent_type(c, *q);
                InventoryParent *ip = &p[n++];

                *ip = (InventoryParent) { .parent = *q };
                if (!t)
                        continue;
                ip->type = t->name;
                ip->max_instances = t->max_instances;
                r = sysfs_type_available(rootfd, *q, t->name, &ip->available);
                if (r == -ENOENT)
                        continue;
                if (r >= 0)
                        r = sysfs_type_count(rootfd, *q, t->name, &ip->existing);
                if (r < 0) {
                        free(p);
                        return r;
                }
                ip->offered = true;
        }
        inventory_compute(p, n);
        /* the names belong to parents: hand both out together */
        for (size_t i = 0; i < n; i++) {
                p[i].parent = strdup(p[i].parent);
                if (!p[i].parent) {
                        for (size_t j = 0; j < i; j++)
                                free((char *) p[j].parent);
                        free(p);
                        return -ENOMEM;
                }
        }
        *ret = p;
        *ret_n = n;
        return 0;
}

void inventory_free(InventoryParent *p, size_t n) {
        for (size_t i = 0; i < n; i++)
                free((char *) p[i].parent);
        free(p);
}
