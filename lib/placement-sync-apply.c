/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Apply for `placement sync` (placement-sync-internal.h): the plan's
 * requests sent, each with the generation Placement last gave, and what
 * Placement holds once they are done. */
#include "crash.h"
#include "placement-sync-internal.h"

/* json-c's json_object_object_foreach() is a GNU statement expression,
 * which clang's -Wpedantic flags (the fuzz build uses clang). */
#ifdef __clang__
#pragma clang diagnostic ignored "-Wgnu-statement-expression"
#endif

void placement_sync_result_done(PlacementSyncResult *r) {
        for (size_t i = 0; i < r->n_changes; i++) {
                free(r->changes[i].path);
                free(r->changes[i].body);
                free(r->changes[i].what);
        }
        free(r->changes);
        *r = (PlacementSyncResult) { 0 };
}

static int record_change(Sync *s, const char *method, const char *path, json_object *body, const char *what) {
        PlacementChange *c = realloc(s->result->changes, (s->result->n_changes + 1) * sizeof *c);
        const char *text = body ? json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE) : NULL;

        if (!c)
                return -ENOMEM;
        s->result->changes = c;
        c = &c[s->result->n_changes];
        *c = (PlacementChange) { .method = method, .path = strdup(path), .body = text ? strdup(text) : NULL, .what = strdup(what) };
        if (!c->path || !c->what || (text && !c->body)) {
                free(c->path);
                free(c->body);
                free(c->what);
                return -ENOMEM;
        }
        s->result->n_changes++;
        return 0;
}

/* A generation this round lost track of (an allocation moved it): read it. */
static int refresh_generation(Sync *s, PlacementProvider *p) {
        _cleanup_free_ char *path = strdup_printf("/resource_providers/%s", p->uuid);
        json_object *body = NULL;
        int r;

        if (!path)
                return -ENOMEM;
        if (s->o->dry_run) {
                p->generation = 0;
                return 0;
        }
        r = sync_get_json(s, path, &body);
        if (r < 0)
                return r;
        if (!sync_json_get_generation(body, "generation", &p->generation))
                r = error_set(-EBADMSG, "Placement at %s answered GET %s without a generation", placement_http_url(s->h), path);
        json_object_put(body);
        return r;
}

/* Sends one write (or in a dry run records it). Returns the status, with
 * 409 as -EAGAIN and a message. */
static int send_write(Sync *s, const char *method, const char *path, json_object *body, const char *what,
                      json_object **ret_body) {
        json_object *answer = NULL;
        int r;

        r = record_change(s, method, path, body, what);
        if (r < 0 || s->o->dry_run)
                return r < 0 ? r : 200;
        PAUSEPOINT("placement-write");
        r = placement_http_request(s->h, method, path, body, &answer);
        if (r == 409) {
                const char *code = placement_http_error_code(answer);

                r = error_set(-EAGAIN, "Placement at %s refused %s %s (409 %s): %s", placement_http_url(s->h), method, path,
                              *code ? code : "conflict", placement_http_error_detail(answer));
                json_object_put(answer);
                return r;
        }
        if (ret_body)
                *ret_body = answer;
        else
                json_object_put(answer);
        return r;
}

static int apply_ensure(Sync *s, const PlacementOp *op) {
        bool trait = op->kind == PLACEMENT_OP_ENSURE_TRAIT;
        _cleanup_free_ char *path = strdup_printf("/%s/%s", trait ? "traits" : "resource_classes", op->name);
        _cleanup_free_ char *what = strdup_printf("%s %s", trait ? "trait" : "resource class", op->name);
        int r;

        if (!path || !what)
                return -ENOMEM;
        r = send_write(s, "PUT", path, NULL, what, NULL);
        if (r >= 0 && r != 200 && r != 201 && r != 204)
                r = sync_unexpected(s, "PUT", path, r, NULL);
        return r < 0 ? r : 0;
}

static int apply_create(Sync *s, const PlacementOp *op, PlacementState *after) {
        const PlacementProvider *d = op->desired;
        _cleanup_free_ char *what = strdup_printf("create provider %s", d->name);
        json_object *body = json_object_new_object(), *answer = NULL;
        PlacementProvider *p;
        int64_t gen = 0;
        int r;

        if (!what)
                return -ENOMEM;
        json_object_object_add(body, "name", json_object_new_string(d->name));
        json_object_object_add(body, "uuid", json_object_new_string(d->uuid));
        if (d->parent_uuid[0])
                json_object_object_add(body, "parent_provider_uuid", json_object_new_string(d->parent_uuid));
        r = send_write(s, "POST", "/resource_providers", body, what, &answer);
        json_object_put(body);
        if (r >= 0 && r != 200 && r != 201)
                r = sync_unexpected(s, "POST", "/resource_providers", r, answer);
        if (r >= 0 && !s->o->dry_run && !sync_json_get_generation(answer, "generation", &gen))
                gen = -1;
        json_object_put(answer);
        if (r < 0)
                return r;
        /* A new provider: nothing on it yet. */
        r = placement_state_add(after, &(PlacementProvider) { .name = d->name, .generation = gen }, &p);
        if (r < 0)
                return r;
        memcpy(p->uuid, d->uuid, sizeof p->uuid);
        memcpy(p->parent_uuid, d->parent_uuid, sizeof p->parent_uuid);
        return 0;
}

static int apply_provider_put(Sync *s, const PlacementOp *op, PlacementState *after) {
        bool inv = op->kind == PLACEMENT_OP_SET_INVENTORIES;
        const PlacementProvider *d = op->desired;
        PlacementProvider *p = placement_state_find_uuid(after, d->uuid);
        _cleanup_free_ char *path = strdup_printf("/resource_providers/%s/%s", d->uuid, inv ? "inventories" : "traits");
        _cleanup_free_ char *what = strdup_printf("%s of %s", inv ? "inventories" : "traits", d->name);
        json_object *body, *answer = NULL;
        int64_t gen = -1;
        int r;

        if (!path || !what)
                return -ENOMEM;
        if (!p)
                return error_set(-EAGAIN, "provider %s is not known in this round", d->name);
        if (p->generation < 0) {
                r = refresh_generation(s, p);
                if (r < 0)
                        return r;
        }
        body = json_object_new_object();
        json_object_object_add(body, inv ? "inventories" : "traits", inv ? inventories_to_json(d) : traits_to_json(d));
        json_object_object_add(body, "resource_provider_generation", json_object_new_int64(p->generation));
        r = send_write(s, "PUT", path, body, what, &answer);
        json_object_put(body);
        if (r >= 0 && r != 200)
                r = sync_unexpected(s, "PUT", path, r, answer);
        if (r >= 0 && !s->o->dry_run && !sync_json_get_generation(answer, "resource_provider_generation", &gen))
                gen = -1;
        json_object_put(answer);
        if (r < 0)
                return r;
        p->generation = s->o->dry_run ? p->generation + 1 : gen;
        /* What it holds now is what was written. */
        if (inv) {
                for (size_t i = 0; i < p->n_inventories; i++)
                        free(p->inventories[i].resource_class);
                free(p->inventories);
                p->inventories = NULL;
                p->n_inventories = 0;
                if (d->n_inventories > 0) {
                        p->inventories = calloc(d->n_inventories, sizeof *p->inventories);
                        if (!p->inventories)
                                return -ENOMEM;
                        for (; p->n_inventories < d->n_inventories; p->n_inventories++) {
                                p->inventories[p->n_inventories] = d->inventories[p->n_inventories];
                                p->inventories[p->n_inventories].resource_class = strdup(d->inventories[p->n_inventories].resource_class);
                                if (!p->inventories[p->n_inventories].resource_class)
                                        return -ENOMEM;
                        }
                }
        } else {
                strv_free(p->traits);
                p->traits = NULL;
                for (char **t = d->traits; t && *t; t++)
                        if (strv_extend(&p->traits, *t) < 0)
                                return -ENOMEM;
        }
        return 0;
}

/* Replaces the consumer's usages on the providers of `after` with desired's,
 * and forgets the generation of every provider whose allocations moved (a
 * PUT /allocations answers 204 without them). */
static int track_allocations(PlacementState *after, const PlacementState *desired, const char *consumer, bool dry_run) {
        for (size_t i = 0; i < after->n_providers; i++) {
                PlacementProvider *p = &after->providers[i];
                const PlacementProvider *d = placement_state_find_uuid(desired, p->uuid);
                bool moved = false;
                size_t k = 0;

                if (!placement_managed(desired, p))
                        continue; /* the consumer's allocation there was kept */
                for (size_t j = 0; j < p->n_usages; j++) {
                        if (streq(p->usages[j].consumer, consumer)) {
                                free(p->usages[j].resource_class);
                                moved = true;
                                continue;
                        }
                        p->usages[k++] = p->usages[j];
                }
                p->n_usages = k;
                for (size_t j = 0; d && j < d->n_usages; j++) {
                        PlacementUsage *u;

                        if (!streq(d->usages[j].consumer, consumer))
                                continue;
                        u = realloc(p->usages, (p->n_usages + 1) * sizeof *u);
                        if (!u)
                                return -ENOMEM;
                        p->usages = u;
                        p->usages[p->n_usages] = d->usages[j];
                        p->usages[p->n_usages].resource_class = strdup(d->usages[j].resource_class);
                        if (!p->usages[p->n_usages].resource_class)
                                return -ENOMEM;
                        p->n_usages++;
                        moved = true;
                }
                if (moved) {
                        placement_provider_normalize(p);
                        p->generation = dry_run ? p->generation + 1 : -1;
                }
        }
        return 0;
}

static int apply_allocations(Sync *s, const PlacementOp *op, const PlacementState *desired, PlacementState *after) {
        _cleanup_free_ char *path = strdup_printf("/allocations/%s", op->name);
        _cleanup_free_ char *what = strdup_printf("allocations of guest %s", op->name);
        json_object *current = NULL, *allocs, *body, *mine, *x;
        PlacementUsage *want = NULL;
        size_t n_want = 0;
        int r;

        if (!path || !what)
                return -ENOMEM;
        if (!s->o->dry_run) {
                r = sync_get_json(s, path, &current);
                if (r < 0)
                        return r;
                PAUSEPOINT("placement-allocations-read");
        }
        r = placement_consumer_usages(desired, desired, op->name, &want, &n_want);
        if (r < 0) {
                json_object_put(current);
                return r;
        }

        body = json_object_new_object();
        allocs = json_object_new_object();
        json_object_object_add(body, "allocations", allocs);
        /* The consumer's allocations outside this host's tree stay. */
        x = sync_json_get(current, "allocations", json_type_object);
        if (x) {
                json_object_object_foreach(x, rp, v) {
                        json_object *res = sync_json_get(v, "resources", json_type_object), *keep;

                        const PlacementProvider *p = placement_state_find_uuid(&s->fetched, rp);

                        if (!p)
                                p = placement_state_find_uuid(after, rp);
                        if (!p)
                                p = placement_state_find_uuid(desired, rp);
                        if (!res || (p && placement_managed(desired, p)))
                                continue;
                        keep = json_object_new_object();
                        json_object_object_add(keep, "resources", json_object_get(res));
                        json_object_object_add(allocs, rp, keep);
                }
        }
        for (size_t i = 0; i < n_want; i++) {
                json_object *res;

                if (!json_object_object_get_ex(allocs, want[i].consumer, &mine)) {
                        mine = json_object_new_object();
                        json_object_object_add(mine, "resources", json_object_new_object());
                        json_object_object_add(allocs, want[i].consumer, mine);
                }
                res = sync_json_get(mine, "resources", json_type_object);
                json_object_object_add(res, want[i].resource_class, json_object_new_int64(want[i].used));
        }
        placement_usages_free(want, n_want);
        if ((x = sync_json_get(current, "consumer_generation", json_type_int)))
                json_object_object_add(body, "consumer_generation", json_object_new_int64(json_object_get_int64(x)));
        else
                json_object_object_add(body, "consumer_generation", NULL);
        x = sync_json_get(current, "project_id", json_type_string);
        json_object_object_add(body, "project_id", json_object_new_string(x ? json_object_get_string(x) : PLACEMENT_PROJECT_ID));
        x = sync_json_get(current, "user_id", json_type_string);
        json_object_object_add(body, "user_id", json_object_new_string(x ? json_object_get_string(x) : PLACEMENT_USER_ID));
        x = sync_json_get(current, "consumer_type", json_type_string);
        json_object_object_add(body, "consumer_type", json_object_new_string(x ? json_object_get_string(x) : PLACEMENT_CONSUMER_TYPE));
        json_object_put(current);

        r = send_write(s, "PUT", path, body, what, NULL);
        json_object_put(body);
        if (r >= 0 && r != 200 && r != 204)
                r = sync_unexpected(s, "PUT", path, r, NULL);
        if (r < 0)
                return r;
        return track_allocations(after, desired, op->name, s->o->dry_run);
}

static int apply_delete(Sync *s, const PlacementOp *op, PlacementState *after) {
        _cleanup_free_ char *path = strdup_printf("/resource_providers/%s", op->uuid);
        _cleanup_free_ char *what = strdup_printf("delete provider %s", op->name);
        PlacementProvider *p;
        int r;

        if (!path || !what)
                return -ENOMEM;
        r = send_write(s, "DELETE", path, NULL, what, NULL);
        if (r >= 0 && r != 204 && r != 200 && r != 404)
                r = sync_unexpected(s, "DELETE", path, r, NULL);
        if (r < 0)
                return r;
        p = placement_state_find_uuid(after, op->uuid);
        if (p) {
                /* gone: never cached */
                p->generation = -1;
                p->name[0] = '\0';
        }
        return 0;
}

int sync_apply(Sync *s, const PlacementPlan *plan, const PlacementState *desired, PlacementState *after) {
        for (size_t i = 0; i < plan->n_ops; i++) {
                const PlacementOp *op = &plan->ops[i];
                int r;

                switch (op->kind) {
                case PLACEMENT_OP_ENSURE_CLASS:
                case PLACEMENT_OP_ENSURE_TRAIT:
                        r = apply_ensure(s, op);
                        break;
                case PLACEMENT_OP_CREATE_PROVIDER:
                        r = apply_create(s, op, after);
                        break;
                case PLACEMENT_OP_SET_INVENTORIES:
                case PLACEMENT_OP_SET_TRAITS:
                        r = apply_provider_put(s, op, after);
                        break;
                case PLACEMENT_OP_SET_ALLOCATIONS:
                        r = apply_allocations(s, op, desired, after);
                        break;
                case PLACEMENT_OP_DELETE_PROVIDER:
                        r = apply_delete(s, op, after);
                        break;
                default:
                        r = -EINVAL;
                }
                if (r < 0)
                        return r;
        }
        return 0;
}
