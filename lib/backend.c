/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "error.h"
#include "log.h"

/* One line per backend. */
const Backend *const backends[] = {
        &backend_mdev,
        &backend_nvidia_vfio,
        &backend_amd,
        &backend_xe,
#if MDEV_HOOKS_CRASHPOINTS
        &backend_fake, /* the tests' (backend-fake.c) */
#endif
        NULL,
};

_Static_assert(sizeof backends / sizeof backends[0] <= BACKENDS_MAX + 1, "raise BACKENDS_MAX");

int backend_parent_list(int rootfd, char ***ret) {
        _cleanup_strv_free_ char **all = NULL;
        const Backend *b;

        BACKEND_FOREACH(b) {
                _cleanup_strv_free_ char **l = NULL;
                int r = b->parent_list(rootfd, &l);

                if (r < 0)
                        return r;
                for (char **q = l; q && *q; q++) {
                        r = strv_extend(&all, *q);
                        if (r < 0)
                                return r;
                }
        }
        if (!all) {
                all = calloc(1, sizeof *all);
                if (!all)
                        return -ENOMEM;
        }
        *ret = steal_pointer(&all);
        return 0;
}

const Backend *backend_of_parent(int rootfd, const char *parent) {
        size_t n = 0;

        while (backends[n])
                n++;
        while (n-- > 0)
                if (backends[n]->parent_is(rootfd, parent) > 0)
                        return backends[n];
        return NULL;
}

const Backend *backend_of_record(const char *key, const char *type) {
        const Backend *b, *first = NULL;

        BACKEND_FOREACH(b) {
                if (!b->key_is_mine(key))
                        continue;
                if (type && b->type_is_mine && b->type_is_mine(type))
                        return b;
                if (!first)
                        first = b;
        }
        return first;
}

const Backend *backend_of_device(int rootfd, const char *name) {
        const Backend *b;

        BACKEND_FOREACH(b)
                if (b->device_is(rootfd, name) > 0)
                        return b;
        return NULL;
}

bool backend_dom_has_any(const Domxml *d) {
        const Backend *b;

        BACKEND_FOREACH(b)
                if (b->dom_has(d))
                        return true;
        return false;
}

int backend_device_list(int rootfd, SysfsMdev **ret, size_t *ret_n) {
        SysfsMdev *l = NULL;
        size_t n = 0;
        const Backend *b;

        BACKEND_FOREACH(b) {
                int r = b->device_append(rootfd, &l, &n);
                if (r < 0) {
                        free(l);
                        return r;
                }
        }
        *ret = l;
        *ret_n = n;
        return 0;
}

int backend_device_remove(int rootfd, const LedgerEntry *e, unsigned timeout_msec) {
        const Backend *b = backend_of_record(e->uuid, e->type);
        int r;

        if (!b)
                return error_set(-EINVAL, "'%s' names no device (neither a UUID nor a PCI address)", e->uuid);
        r = b->release->remove(rootfd, e->uuid, timeout_msec);
        if (r == -EPERM && b->eperm_is_busy)
                r = -EBUSY;
        return r;
}

int backend_run_check(BackendRun *run, HookContext *ctx, HookOp op) {
        size_t i = 0;
        const Backend *b;

        BACKEND_FOREACH(b) {
                int r = b->txn_new(ctx, op, &run->txn[i]);
                if (r >= 0)
                        r = b->txn_check(run->txn[i]);
                if (r < 0)
                        return r;
                i++;
        }
        return 0;
}

int backend_run_apply(BackendRun *run) {
        size_t i = 0;
        const Backend *b;

        BACKEND_FOREACH(b) {
                int r = b->txn_apply(run->txn[i++]);
                if (r < 0)
                        return r;
        }
        return 0;
}

void backend_run_rollback(BackendRun *run) {
        size_t n = 0;

        while (backends[n])
                n++;
        while (n-- > 0) {
                int r;

                if (!run->txn[n])
                        continue;
                error_clear();
                r = backends[n]->txn_rollback(run->txn[n]);
                if (r < 0)
                        log_warning("rollback left something behind: %s", error_get(r));
        }
}

void backend_run_commit(BackendRun *run) {
        for (size_t i = 0; backends[i]; i++)
                if (run->txn[i])
                        backends[i]->txn_commit(run->txn[i]);
}

void backend_run_done(BackendRun *run) {
        for (size_t i = 0; backends[i]; i++)
                if (run->txn[i]) {
                        backends[i]->txn_free(run->txn[i]);
                        run->txn[i] = NULL;
                }
}
