/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `mdev-hooks attach` for mdevs (backend.h, attach_serves and
 * attach_choose): a new random UUID per mdev, checked against the room its
 * type has now as the hook's prepare would read it (alloc_check_room()).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "backend-mdev.h"
#include "error.h"
#include "sysfs.h"

/* A new random (version 4) UUID. */
static int uuid_random(char out[UUID_STRING_MAX]) {
        uint8_t b[16];

        if (getrandom(b, sizeof b, 0) != (ssize_t) sizeof b)
                return error_set(-errno, "cannot make a UUID: %s", strerror(errno));
        b[6] = (uint8_t) ((b[6] & 0x0f) | 0x40);
        b[8] = (uint8_t) ((b[8] & 0x3f) | 0x80);
        snprintf(out, UUID_STRING_MAX, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
        return 0;
}

static bool dom_names_uuid(const Domxml *d, const char *uuid) {
        return d && (domxml_find_mdev(d, uuid) >= 0 || domxml_has_orphan_meta(d, uuid));
}

/* A UUID no mdev here, no hostdev or entry of the guest and no earlier
 * choice of this call has. */
static int uuid_new(const AttachChoosing *ch, const AttachDevice *chosen, size_t n_chosen, char out[UUID_STRING_MAX]) {
        for (unsigned tries = 0; tries < 16; tries++) {
                bool used = false;
                SysfsMdev m;
                int r;

                r = uuid_random(out);
                if (r < 0)
                        return r;
                for (size_t i = 0; i < n_chosen; i++)
                        used = used || streq(chosen[i].key, out);
                if (used || dom_names_uuid(ch->def, out) || dom_names_uuid(ch->live, out))
                        continue;
                r = sysfs_mdev_get(ch->rootfd, out, &m);
                if (r == -ENOENT) {
                        error_clear();
                        return 0;
                }
                if (r < 0)
                        return error_prefix(r, "cannot look up mdev %s", out);
        }
        return error_set(-EEXIST, "cannot find an unused UUID");
}

/* The types the request names, as the hook reads the metadata entry attach
 * writes, in w (an Alloc on a, to be done with by the caller). */
static int want_resolve(const AttachChoosing *ch, Alloc *a, AllocWant *w) {
        const AttachRequest *req = ch->req;
        DomxmlMdev m = { .has_meta = true };

        snprintf(m.type, sizeof m.type, "%s", strempty(req->type));
        snprintf(m.mdev_class, sizeof m.mdev_class, "%s", strempty(req->mdev_class));
        snprintf(m.parent, sizeof m.parent, "%s", strempty(req->parent));
        alloc_init(a, ch->rootfd, ch->ledgerfd, ch->config, ch->guest, NULL, ch->boot_id);
        return alloc_want_resolve(a, &m, NULL, w);
}

/* Whether an mdev parent here offers one of the types asked for. */
bool mdev_attach_serves(const AttachChoosing *ch) {
        _cleanup_strv_free_ char **parents = NULL;
        AllocWant w = { 0 };
        bool serves = false;
        unsigned avail;
        Alloc a;

        if (want_resolve(ch, &a, &w) >= 0 && sysfs_parent_list(ch->rootfd, &parents) >= 0)
                for (char **p = parents; p && *p && !serves; p++)
                        for (size_t t = 0; w.types[t] && !serves; t++)
                                serves = sysfs_type_available(ch->rootfd, *p, w.types[t], &avail) >= 0;
        error_clear();
        alloc_want_done(&w);
        alloc_done(&a);
        return serves;
}

int mdev_attach_choose(const AttachChoosing *ch, AttachDevice *out) {
        const AttachRequest *req = ch->req;
        _cleanup_free_ char (*uuids)[UUID_STRING_MAX] = calloc(req->count, sizeof *uuids);
        AllocWant w = { 0 };
        Alloc a;
        int r;

        if (!uuids)
                return -ENOMEM;
        r = want_resolve(ch, &a, &w);
        for (unsigned i = 0; r >= 0 && i < req->count; i++) {
                r = uuid_new(ch, out, i, uuids[i]);
                if (r >= 0)
                        attach_device_fill(&out[i], ATTACH_MDEV, uuids[i], req, w.what);
        }
        if (r >= 0)
                r = alloc_check_room(&a, &w, uuids, req->count);
        alloc_want_done(&w);
        alloc_done(&a);
        return r;
}
