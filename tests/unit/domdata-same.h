/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Whether two parses of a domain XML (domxml_parse() and domlite_parse(),
 * lib/domdata.h) read the same: every public field but the libxml2 node
 * pointers, which only domxml_parse() sets (has_meta says what meta says).
 * Shared by tests/unit/test-domlite.c and tests/fuzz/fuzz-domlite.c.
 */
#pragma once

#include <stdio.h>
#include <string.h>

#include "domdata.h"

/* NULL when a and b read the same, else what differs (in a static buffer). */
static inline const char *domdata_differs(const Domxml *a, const Domxml *b) {
        static char why[1024];

#define DIFFERS(cond, ...) do { if (cond) { snprintf(why, sizeof why, __VA_ARGS__); return why; } } while (0)
        DIFFERS(strcmp(a->name, b->name) != 0, "name '%s' / '%s'", a->name, b->name);
        DIFFERS(strcmp(a->uuid, b->uuid) != 0, "uuid '%s' / '%s'", a->uuid, b->uuid);
        DIFFERS(a->n_mdevs != b->n_mdevs, "%zu / %zu mdevs", a->n_mdevs, b->n_mdevs);
        DIFFERS(a->n_vgpus != b->n_vgpus, "%zu / %zu PCI hostdevs", a->n_vgpus, b->n_vgpus);
        for (size_t i = 0; i < a->n_mdevs; i++) {
                const DomxmlMdev *x = &a->mdevs[i], *y = &b->mdevs[i];
                DIFFERS(strcmp(x->uuid, y->uuid) != 0, "mdev %zu uuid '%s' / '%s'", i, x->uuid, y->uuid);
                DIFFERS(strcmp(x->type, y->type) != 0, "mdev %zu type '%s' / '%s'", i, x->type, y->type);
                DIFFERS(strcmp(x->mdev_class, y->mdev_class) != 0, "mdev %zu class", i);
                DIFFERS(strcmp(x->parent, y->parent) != 0, "mdev %zu parent '%s' / '%s'", i, x->parent, y->parent);
                DIFFERS(x->has_meta != y->has_meta, "mdev %zu has_meta %d / %d", i, x->has_meta, y->has_meta);
                DIFFERS(x->has_meta != (x->meta != NULL) && a->doc, "mdev %zu has_meta without meta", i);
        }
        for (size_t i = 0; i < a->n_vgpus; i++) {
                const DomxmlVgpu *x = &a->vgpus[i], *y = &b->vgpus[i];
                DIFFERS(strcmp(x->pci, y->pci) != 0, "PCI hostdev %zu '%s' / '%s'", i, x->pci, y->pci);
                DIFFERS(strcmp(x->orig_pci, y->orig_pci) != 0, "PCI hostdev %zu orig_pci", i);
                DIFFERS(strcmp(x->type, y->type) != 0, "PCI hostdev %zu type '%s' / '%s'", i, x->type, y->type);
                DIFFERS(strcmp(x->mdev_class, y->mdev_class) != 0, "PCI hostdev %zu class", i);
                DIFFERS(x->managed != y->managed, "PCI hostdev %zu managed %d / %d", i, x->managed, y->managed);
                DIFFERS(x->has_meta != y->has_meta, "PCI hostdev %zu has_meta %d / %d", i, x->has_meta, y->has_meta);
        }
#undef DIFFERS
        return NULL;
}
