/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The desired tree and the plan of `placement sync` (placement.h). */
#include <uuid/uuid.h>

#include "inventory.h"
#include "placement.h"

static const char * const op_kind_table[_PLACEMENT_OP_KIND_MAX] = {
        [PLACEMENT_OP_ENSURE_CLASS] = "ensure-class",
        [PLACEMENT_OP_ENSURE_TRAIT] = "ensure-trait",
        [PLACEMENT_OP_CREATE_PROVIDER] = "create-provider",
        [PLACEMENT_OP_SET_INVENTORIES] = "set-inventories",
        [PLACEMENT_OP_SET_TRAITS] = "set-traits",
        [PLACEMENT_OP_SET_ALLOCATIONS] = "set-allocations",
        [PLACEMENT_OP_DELETE_PROVIDER] = "delete-provider",
};

const char *placement_op_kind_to_string(PlacementOpKind k) {
        return (unsigned) k < _PLACEMENT_OP_KIND_MAX ? op_kind_table[k] : NULL;
}

void placement_uuid_for_name(const char *name, char ret[UUID_STRING_MAX]) {
        static const uuid_t ns = {
                0x41, 0xac, 0x9b, 0x5c, 0xee, 0x88, 0x4d, 0xb0,
                0xb5, 0x5a, 0xb4, 0x34, 0xda, 0x73, 0xdc, 0x36,
        };
        uuid_t u;

        uuid_generate_sha1(u, ns, name, strlen(name));
        uuid_unparse_lower(u, ret);
}

/* --- providers and states ---------------------------------------------- */

void placement_usages_free(PlacementUsage *u, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(u[i].resource_class);
        free(u);
}

void placement_provider_done(PlacementProvider *p) {
        free(p->name);
        for (size_t i = 0; i < p->n_inventories; i++)
                free(p->inventories[i].resource_class);
        free(p->inventories);
        strv_free(p->traits);
        placement_usages_free(p->usages, p->n_usages);
        *p = (PlacementProvider) { .generation = -1 };
}

void placement_state_done(PlacementState *s) {
        for (size_t i = 0; i < s->n_providers; i++)
                placement_provider_done(&s->providers[i]);
        free(s->providers);
        *s = (PlacementState) { 0 };
}

int placement_provider_copy(const PlacementProvider *p, PlacementProvider *ret) {
        PlacementProvider c = *p;

        c.name = NULL;
        c.inventories = NULL;
        c.traits = NULL;
        c.usages = NULL;
        c.n_inventories = c.n_usages = 0;
        c.name = strdup(p->name);
        if (!c.name)
                goto oom;
        if (p->n_inventories > 0) {
                c.inventories = calloc(p->n_inventories, sizeof *c.inventories);
                if (!c.inventories)
                        goto oom;
                for (; c.n_inventories < p->n_inventories; c.n_inventories++) {
                        c.inventories[c.n_inventories] = p->inventories[c.n_inventories];
                        c.inventories[c.n_inventories].resource_class = strdup(p->inventories[c.n_inventories].resource_class);
                        if (!c.inventories[c.n_inventories].resource_class)
                                goto oom;
                }
        }
        for (char **t = p->traits; t && *t; t++)
                if (strv_extend(&c.traits, *t) < 0)
                        goto oom;
        if (p->n_usages > 0) {
                c.usages = calloc(p->n_usages, sizeof *c.usages);
                if (!c.usages)
                        goto oom;
                for (; c.n_usages < p->n_usages; c.n_usages++) {
                        c.usages[c.n_usages] = p->usages[c.n_usages];
                        c.usages[c.n_usages].resource_class = strdup(p->usages[c.n_usages].resource_class);
                        if (!c.usages[c.n_usages].resource_class)
                                goto oom;
                }
        }
        *ret = c;
        return 0;
oom:
        placement_provider_done(&c);
        return -ENOMEM;
}

int placement_state_add(PlacementState *s, const PlacementProvider *p, PlacementProvider **ret) {
        PlacementProvider *a = realloc(s->providers, (s->n_providers + 1) * sizeof *a);
        int r;

        if (!a)
                return -ENOMEM;
        s->providers = a;
        r = placement_provider_copy(p, &a[s->n_providers]);
        if (r < 0)
                return r;
        if (ret)
                *ret = &a[s->n_providers];
        s->n_providers++;
        return 0;
}

PlacementProvider *placement_state_find_uuid(const PlacementState *s, const char *uuid) {
        for (size_t i = 0; i < s->n_providers; i++)
                if (streq(s->providers[i].uuid, uuid))
                        return &s->providers[i];
        return NULL;
}

PlacementProvider *placement_state_find_name(const PlacementState *s, const char *name) {
        for (size_t i = 0; i < s->n_providers; i++)
                if (streq(s->providers[i].name, name))
                        return &s->providers[i];
        return NULL;
}

static int cmp_inventory(const void *a, const void *b) {
        return strcmp(((const PlacementInventory *) a)->resource_class, ((const PlacementInventory *) b)->resource_class);
}

static int cmp_usage(const void *a, const void *b) {
        const PlacementUsage *x = a, *y = b;
        int r = strcmp(x->consumer, y->consumer);

        return r != 0 ? r : strcmp(x->resource_class, y->resource_class);
}

void placement_provider_normalize(PlacementProvider *p) {
        if (p->n_inventories > 1)
                qsort(p->inventories, p->n_inventories, sizeof *p->inventories, cmp_inventory);
        if (p->traits)
                strv_sort(p->traits);
        if (p->n_usages > 1)
                qsort(p->usages, p->n_usages, sizeof *p->usages, cmp_usage);
}

/* --- the desired tree -------------------------------------------------- */

static int add_usage(PlacementProvider *p, const char *consumer, const char *rc) {
        PlacementUsage *u;

        for (size_t i = 0; i < p->n_usages; i++)
                if (streq(p->usages[i].consumer, consumer) && streq(p->usages[i].resource_class, rc)) {
                        p->usages[i].used++;
                        return 0;
                }
        u = realloc(p->usages, (p->n_usages + 1) * sizeof *u);
        if (!u)
                return -ENOMEM;
        p->usages = u;
        u = &p->usages[p->n_usages];
        *u = (PlacementUsage) { .used = 1 };
        uuid_normalize(consumer, u->consumer);
        u->resource_class = strdup(rc);
        if (!u->resource_class)
                return -ENOMEM;
        p->n_usages++;
        return 0;
}

static int cmp_provider_name(const void *a, const void *b) {
        return strcmp(((const PlacementProvider *) a)->name, ((const PlacementProvider *) b)->name);
}

/* A parent's provider's one inventory, as Nova records a vGPU inventory;
 * none for a parent of total 0. */
static int provider_set_inventory(PlacementProvider *c, const PlacementParent *parent) {
        if (parent->total == 0)
                return 0;
        c->inventories = calloc(1, sizeof *c->inventories);
        if (!c->inventories)
                return -ENOMEM;
        c->inventories[0] = (PlacementInventory) {
                .resource_class = strdup(parent->resource_class),
                .total = parent->total,
                .reserved = 0,
                .min_unit = 1,
                .max_unit = parent->total,
                .step_size = 1,
                .allocation_ratio = 1.0,
        };
        if (!c->inventories[0].resource_class)
                return -ENOMEM;
        c->n_inventories = 1;
        return 0;
}

/* The provider of a holding: its parent's, or with several types on the
 * parent, the one of its type. */
static PlacementProvider *holding_provider(PlacementState *s, const PlacementParent **parent_of,
                                           const PlacementHolding *h) {
        for (size_t i = 1; i < s->n_providers; i++)
                if (streq(parent_of[i]->parent, h->parent) &&
                    (!parent_of[i]->per_type || streq_ptr(parent_of[i]->type, h->type)))
                        return &s->providers[i];
        return NULL;
}

int placement_desired(const char *host, const PlacementParent *parents, size_t n_parents,
                      const PlacementHolding *holdings, size_t n_holdings,
                      PlacementState *ret, size_t *ret_skipped) {
        _cleanup_(placement_state_done) PlacementState s = { 0 };
        _cleanup_free_ const PlacementParent **parent_of = NULL; /* the parent of each child, by index */
        size_t skipped = 0;
        PlacementProvider *root;
        int r;

        s.providers = calloc(n_parents + 1, sizeof *s.providers);
        parent_of = calloc(n_parents + 1, sizeof *parent_of);
        if (!s.providers || !parent_of)
                return -ENOMEM;
        root = &s.providers[s.n_providers++];
        *root = (PlacementProvider) { .generation = -1, .name = strdup(host) };
        if (!root->name)
                return -ENOMEM;
        placement_uuid_for_name(host, root->uuid);

        for (size_t i = 0; i < n_parents; i++) {
                _cleanup_free_ char *trait = inventory_type_trait(parents[i].type);
                PlacementProvider *c = &s.providers[s.n_providers];

                if (!trait)
                        return -ENOMEM;
                *c = (PlacementProvider) {
                        .generation = -1,
                        .name = inventory_provider_name(host, parents[i].nodedev, parents[i].type, parents[i].per_type),
                };
                if (!c->name)
                        return -ENOMEM;
                s.n_providers++;
                placement_uuid_for_name(c->name, c->uuid);
                memcpy(c->parent_uuid, root->uuid, sizeof c->parent_uuid);
                if (strv_consume(&c->traits, steal_pointer(&trait)) < 0)
                        return -ENOMEM;
                r = provider_set_inventory(c, &parents[i]);
                if (r < 0)
                        return r;
                parent_of[s.n_providers - 1] = &parents[i];
        }

        for (size_t h = 0; h < n_holdings; h++) {
                PlacementProvider *c = holding_provider(&s, parent_of, &holdings[h]);

                if (!c || c->n_inventories == 0 || !holdings[h].guest_uuid ||
                    !uuid_is_valid(holdings[h].guest_uuid)) {
                        skipped++;
                        continue;
                }
                r = add_usage(c, holdings[h].guest_uuid, c->inventories[0].resource_class);
                if (r < 0)
                        return r;
        }

        for (size_t i = 0; i < s.n_providers; i++)
                placement_provider_normalize(&s.providers[i]);
        if (s.n_providers > 2)
                qsort(s.providers + 1, s.n_providers - 1, sizeof *s.providers, cmp_provider_name);
        if (ret_skipped)
                *ret_skipped = skipped;
        *ret = s;
        s = (PlacementState) { 0 };
        return 0;
}

/* --- the plan ---------------------------------------------------------- */

void placement_plan_done(PlacementPlan *p) {
        free(p->ops);
        *p = (PlacementPlan) { 0 };
}

static int plan_add(PlacementPlan *p, PlacementOpKind kind, const char *name, const char *uuid,
                    const PlacementProvider *desired) {
        PlacementOp *o = realloc(p->ops, (p->n_ops + 1) * sizeof *o);

        if (!o)
                return -ENOMEM;
        p->ops = o;
        o = &p->ops[p->n_ops++];
        *o = (PlacementOp) { .kind = kind, .name = name, .desired = desired };
        if (uuid)
                memcpy(o->uuid, uuid, sizeof o->uuid);
        return 0;
}

static bool inventories_equal(const PlacementProvider *a, const PlacementProvider *b) {
        if (a->n_inventories != b->n_inventories)
                return false;
        for (size_t i = 0; i < a->n_inventories; i++) {
                const PlacementInventory *x = &a->inventories[i], *y = &b->inventories[i];

                if (!streq(x->resource_class, y->resource_class) || x->total != y->total ||
                    x->reserved != y->reserved || x->min_unit != y->min_unit || x->max_unit != y->max_unit ||
                    x->step_size != y->step_size || x->allocation_ratio != y->allocation_ratio)
                        return false;
        }
        return true;
}

static bool traits_equal(char * const *a, char * const *b) {
        size_t n = strv_length(a);

        if (n != strv_length(b))
                return false;
        for (size_t i = 0; i < n; i++)
                if (!streq(a[i], b[i]))
                        return false;
        return true;
}

static int cmp_usage_provider(const void *a, const void *b) {
        return cmp_usage(a, b); /* consumer holds the provider's UUID here */
}

bool placement_provider_is_ours(const PlacementProvider *p) {
        char u[UUID_STRING_MAX];

        placement_uuid_for_name(p->name, u);
        if (streq(u, p->uuid))
                return true;
        for (char **t = p->traits; t && *t; t++)
                if (strncmp(*t, "CUSTOM_MDEV_", 12) == 0)
                        return true;
        return false;
}

bool placement_managed(const PlacementState *desired, const PlacementProvider *p) {
        if (!p->parent_uuid[0])
                return false;
        return placement_state_find_uuid(desired, p->uuid) || placement_provider_is_ours(p);
}

int placement_consumer_usages(const PlacementState *s, const PlacementState *desired, const char *consumer,
                              PlacementUsage **ret, size_t *ret_n) {
        PlacementUsage *l = NULL;
        size_t n = 0;

        for (size_t i = 0; i < s->n_providers; i++)
                for (size_t j = 0; placement_managed(desired, &s->providers[i]) && j < s->providers[i].n_usages; j++) {
                        const PlacementUsage *u = &s->providers[i].usages[j];
                        PlacementUsage *a;

                        if (!streq(u->consumer, consumer))
                                continue;
                        a = realloc(l, (n + 1) * sizeof *a);
                        if (!a) {
                                placement_usages_free(l, n);
                                return -ENOMEM;
                        }
                        l = a;
                        l[n] = (PlacementUsage) { .used = u->used, .resource_class = strdup(u->resource_class) };
                        memcpy(l[n].consumer, s->providers[i].uuid, sizeof l[n].consumer);
                        if (!l[n].resource_class) {
                                placement_usages_free(l, n);
                                return -ENOMEM;
                        }
                        n++;
                }
        if (n > 1)
                qsort(l, n, sizeof *l, cmp_usage_provider);
        *ret = l;
        *ret_n = n;
        return 0;
}

static int consumer_differs(const PlacementState *desired, const PlacementState *fetched, const char *consumer) {
        PlacementUsage *a = NULL, *b = NULL;
        size_t na = 0, nb = 0;
        bool differs = false;
        int r;

        r = placement_consumer_usages(desired, desired, consumer, &a, &na);
        if (r < 0)
                return r;
        r = placement_consumer_usages(fetched, desired, consumer, &b, &nb);
        if (r < 0) {
                placement_usages_free(a, na);
                return r;
        }
        if (na != nb)
                differs = true;
        for (size_t i = 0; !differs && i < na; i++)
                differs = !streq(a[i].consumer, b[i].consumer) ||
                          !streq(a[i].resource_class, b[i].resource_class) || a[i].used != b[i].used;
        placement_usages_free(a, na);
        placement_usages_free(b, nb);
        return differs;
}

/* Every class or trait that a provider to be written needs, once. */
static int plan_ensure(PlacementPlan *plan, char ***seen, PlacementOpKind kind, const char *name) {
        if (strv_contains(*seen, name))
                return 0;
        if (strv_extend(seen, name) < 0)
                return -ENOMEM;
        return plan_add(plan, kind, name, NULL, NULL);
}

/* Adopts the UUIDs of what exists under our names (the root's is every
 * child's parent). */
static void plan_adopt_uuids(PlacementState *desired, const PlacementState *fetched) {
        size_t n = desired->n_providers;

        for (size_t i = 0; i < n; i++) {
                PlacementProvider *d = &desired->providers[i];
                const PlacementProvider *f = placement_state_find_name(fetched, d->name);

                if (f && !streq(f->uuid, d->uuid)) {
                        memcpy(d->uuid, f->uuid, sizeof d->uuid);
                        if (i == 0)
                                for (size_t j = 1; j < n; j++)
                                        memcpy(desired->providers[j].parent_uuid, f->uuid, sizeof f->uuid);
                }
        }
}

/* Which providers to create, whose inventories and traits to write, and the
 * custom classes and traits those need, ensured first. */
static int plan_changes(PlacementPlan *plan, const PlacementState *desired, const PlacementState *fetched,
                        bool *create, bool *write_inv, bool *write_traits) {
        _cleanup_strv_free_ char **ensured = NULL;
        size_t n = desired->n_providers;
        int r;

        for (size_t i = 0; i < n; i++) {
                const PlacementProvider *d = &desired->providers[i];
                const PlacementProvider *f = placement_state_find_uuid(fetched, d->uuid);

                create[i] = !f;
                if (i == 0)
                        continue; /* the root: created, never changed */
                write_inv[i] = f ? !inventories_equal(d, f) : d->n_inventories > 0;
                write_traits[i] = f ? !traits_equal(d->traits, f->traits) : strv_length(d->traits) > 0;
                for (size_t k = 0; write_inv[i] && k < d->n_inventories; k++)
                        if (strncmp(d->inventories[k].resource_class, "CUSTOM_", 7) == 0) {
                                r = plan_ensure(plan, &ensured, PLACEMENT_OP_ENSURE_CLASS, d->inventories[k].resource_class);
                                if (r < 0)
                                        return r;
                        }
        }
        for (size_t i = 0; i < n; i++)
                for (char **t = desired->providers[i].traits; write_traits[i] && t && *t; t++)
                        if (strncmp(*t, "CUSTOM_", 7) == 0) {
                                r = plan_ensure(plan, &ensured, PLACEMENT_OP_ENSURE_TRAIT, *t);
                                if (r < 0)
                                        return r;
                        }
        return 0;
}

/* One operation of KIND for each desired provider that WHICH marks and
 * whose inventory count passes the filter (ANY, or only the empty or only
 * the non-empty ones). */
typedef enum InventoryFilter { INVENTORIES_ANY, INVENTORIES_EMPTY, INVENTORIES_SOME } InventoryFilter;

static int plan_add_marked(PlacementPlan *plan, PlacementState *desired, const bool *which,
                           PlacementOpKind kind, InventoryFilter filter) {
        for (size_t i = 0; i < desired->n_providers; i++) {
                PlacementProvider *d = &desired->providers[i];
                int r;

                if (!which[i] || (filter == INVENTORIES_EMPTY && d->n_inventories > 0) ||
                    (filter == INVENTORIES_SOME && d->n_inventories == 0))
                        continue;
                r = plan_add(plan, kind, d->name, d->uuid, d);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The first usage of CONSUMER in the providers of S that mdev-hooks manages:
 * a name that outlives the plan's making. */
static const char *consumer_in(const PlacementState *s, const PlacementState *desired, const char *consumer) {
        for (size_t i = 0; i < s->n_providers; i++)
                for (size_t j = 0; placement_managed(desired, &s->providers[i]) && j < s->providers[i].n_usages; j++)
                        if (streq(s->providers[i].usages[j].consumer, consumer))
                                return s->providers[i].usages[j].consumer;
        return NULL;
}

/* Every consumer on either side whose allocations in the tree differ. */
static int plan_allocations(PlacementPlan *plan, const PlacementState *desired, const PlacementState *fetched) {
        _cleanup_strv_free_ char **consumers = NULL;
        int r;

        for (int side = 0; side < 2; side++) {
                const PlacementState *s = side == 0 ? desired : fetched;

                for (size_t i = 0; i < s->n_providers; i++)
                        for (size_t j = 0; placement_managed(desired, &s->providers[i]) && j < s->providers[i].n_usages; j++) {
                                const char *c = s->providers[i].usages[j].consumer;

                                if (strv_contains(consumers, c))
                                        continue;
                                if (strv_extend(&consumers, c) < 0)
                                        return -ENOMEM;
                        }
        }
        strv_sort(consumers);
        for (char **c = consumers; c && *c; c++) {
                const char *keep;

                r = consumer_differs(desired, fetched, *c);
                if (r <= 0) {
                        if (r < 0)
                                return r;
                        continue;
                }
                keep = consumer_in(desired, desired, *c);
                if (!keep)
                        keep = consumer_in(fetched, desired, *c);
                r = plan_add(plan, PLACEMENT_OP_SET_ALLOCATIONS, keep, NULL, NULL);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Providers mdev-hooks made that are gone (a parent unregistered or no
 * longer configured), the deepest first; never the root, never one made by
 * another (Nova's own children of its compute node). */
static int plan_deletions(PlacementPlan *plan, const PlacementState *desired, const PlacementState *fetched) {
        for (size_t i = fetched->n_providers; i-- > 0;) {
                const PlacementProvider *f = &fetched->providers[i];
                int r;

                if (!placement_managed(desired, f) || placement_state_find_uuid(desired, f->uuid))
                        continue;
                r = plan_add(plan, PLACEMENT_OP_DELETE_PROVIDER, f->name, f->uuid, NULL);
                if (r < 0)
                        return r;
        }
        return 0;
}

int placement_plan(PlacementState *desired, const PlacementState *fetched, PlacementPlan *ret) {
        _cleanup_(placement_plan_done) PlacementPlan plan = { 0 };
        _cleanup_free_ bool *write_inv = NULL, *write_traits = NULL, *create = NULL;
        size_t n = desired->n_providers;
        int r;

        if (n == 0)
                return -EINVAL;
        write_inv = calloc(n, sizeof *write_inv);
        write_traits = calloc(n, sizeof *write_traits);
        create = calloc(n, sizeof *create);
        if (!write_inv || !write_traits || !create)
                return -ENOMEM;

        plan_adopt_uuids(desired, fetched);
        r = plan_changes(&plan, desired, fetched, create, write_inv, write_traits);
        if (r < 0)
                return r;
        /* New providers, the root first (it comes first in desired); then
         * inventories that stay or grow, before the allocations that need
         * them; traits; the allocations; inventories emptied (a parent
         * capped to 0) after the allocations left; deletions last. */
        r = plan_add_marked(&plan, desired, create, PLACEMENT_OP_CREATE_PROVIDER, INVENTORIES_ANY);
        if (r >= 0)
                r = plan_add_marked(&plan, desired, write_inv, PLACEMENT_OP_SET_INVENTORIES, INVENTORIES_SOME);
        if (r >= 0)
                r = plan_add_marked(&plan, desired, write_traits, PLACEMENT_OP_SET_TRAITS, INVENTORIES_ANY);
        if (r >= 0)
                r = plan_allocations(&plan, desired, fetched);
        if (r >= 0)
                r = plan_add_marked(&plan, desired, write_inv, PLACEMENT_OP_SET_INVENTORIES, INVENTORIES_EMPTY);
        if (r >= 0)
                r = plan_deletions(&plan, desired, fetched);
        if (r < 0)
                return r;

        *ret = plan;
        plan = (PlacementPlan) { 0 };
        return 0;
}
