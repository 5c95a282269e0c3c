/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <time.h>

#include "error.h"
#include "gpurecreate.h"
#include "ledger.h"
#include "lock.h"
#include "log.h"
#include "util.h"
#include "vfio.h"
#include "vgpu.h"

/* One record: 1 programmed again, 0 left as it is. */
static int recreate_one(int rootfd, int dirfd, const Config *c, const char *boot_id, LedgerEntry *e) {
        unsigned id, cur;
        int r;

        if (!ledger_key_is_vf(e->uuid) || !e->guest[0] || e->state == LEDGER_FREE ||
            (e->state != LEDGER_LOST && streq(e->boot_id, boot_id)))
                return 0; /* not a guest's, or true in this boot */
        if (vfio_type_id(e->type, &id) < 0 || vfio_vf_current(&vfio_nvidia, rootfd, e->uuid, &cur) < 0 || cur != 0) {
                error_clear();
                return 0;
        }
        r = vfio_vf_program(&vfio_nvidia, rootfd, e->uuid, id);
        if (r < 0) {
                log_msg(LOG_WARNING, "cannot program VF %s of guest '%s' with %s again: %s; it is programmed when the guest starts",
                        e->uuid, e->guest, e->type, strerror(-r));
                return 0;
        }
        e->state = LEDGER_ASSIGNED;
        e->origin = LEDGER_CREATED;
        e->remove_pending = false;
        e->has_placement = false;
        vgpu_record_placement(c, rootfd, &vfio_nvidia, e->uuid, e->parent, e);
        snprintf(e->boot_id, sizeof e->boot_id, "%s", boot_id);
        e->since = (uint64_t) time(NULL);
        r = ledger_write(dirfd, e);
        if (r < 0)
                return r;
        log_msg(LOG_NOTICE, "programmed VF %s of guest '%s' with %s again (recreate = eager)", e->uuid, e->guest, e->type);
        return 1;
}

int gpu_recreate(int rootfd, const Config *c, const char *pf, unsigned *ret_made) {
        _cleanup_close_ int lockfd = -1, dirfd = -1;
        _cleanup_free_ LedgerEntry *l = NULL;
        char boot_id[UUID_STRING_MAX];
        size_t n = 0, bad = 0;
        unsigned made = 0;
        int r;

        *ret_made = 0;
        if (c->recreate != CONFIG_RECREATE_EAGER)
                return 0;
        r = boot_id_read(rootfd, boot_id);
        if (r < 0)
                return r;
        r = ledger_open_existing(rootfd, &dirfd);
        if (r == -ENOENT) {
                error_clear();
                return 0; /* no record: nothing to make again */
        }
        if (r < 0)
                return r;
        r = lock_acquire(rootfd, c->lock_timeout, "gpu plan (recreate = eager)", &lockfd);
        if (r < 0)
                return r;
        r = ledger_list_parent(dirfd, pf, &l, &n, &bad);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                r = recreate_one(rootfd, dirfd, c, boot_id, &l[i]);
                if (r < 0)
                        return r;
                made += (unsigned) r;
        }
        *ret_made = made;
        return 0;
}
