/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mdev-sysfs-sim: what each attribute file reads, and a write to an mdev's
 * remove.
 */
#include "sim.h"

/* The text of a readable attribute, or NULL (and *err) when unreadable. */
char *node_content(const Node *n) {
        switch (n->kind) {
        case K_TEXT:
                return xasprintf("%s\n", n->text);
        case K_AVAIL:
                return xasprintf("%u\n", type_available(n->obj));
        case K_NUMVFS:
                return xasprintf("%u\n", ((const Pf *) n->obj)->num);
        case K_STATE:
                return state_text();
        case K_CREATABLE:
                return vf_creatable_text(n->obj);
        case K_CURRENT: {
                const Vf *v = n->obj;
                return xasprintf("%d\n", v->cur ? atoi(v->cur->id) : 0);
        }
        case K_VFINFO:
                return vf_info_text(n);
        case K_XEADMIN:
                return xe_admin_text(n);
        case K_PARTITION:
                return xasprintf("%s\n", n->text);
        case K_COUNTERS:
                return counters_text();
        default:
                return NULL;
        }
}

bool node_readable(const Node *n) {
        return n->kind == K_TEXT || n->kind == K_AVAIL || n->kind == K_NUMVFS || n->kind == K_STATE ||
               n->kind == K_COUNTERS || n->kind == K_CREATABLE || n->kind == K_CURRENT || n->kind == K_VFINFO ||
               n->kind == K_PARTITION || (n->kind == K_XEADMIN && (n->mode & 0444));
}

bool node_writable(const Node *n) {
        return n->kind == K_CREATE || n->kind == K_REMOVE || n->kind == K_NUMVFS || n->kind == K_CTL ||
               n->kind == K_CURRENT || n->kind == K_PARTITION || n->kind == K_XEADMIN;
}

/* mdev_sysfs.c remove_store(): kstrtoul(buf, 0): "1" removes, "0" does
 * nothing. Called with the write lock held; may drop it to block. */
int mdev_write_remove(Mdev *m, const char *buf, size_t len) {
        char tmp[WRITE_TEXT_MAX];
        char uuid[UUID_LEN + 1];
        if (write_text(buf, len, tmp) < 0)
                return -EINVAL;
        char *end;
        errno = 0;
        unsigned long v = strtoul(tmp, &end, 0);
        /* kstrtoul(): an optional '+', no sign, no blanks */
        if (errno || end == tmp || *end || tmp[0] == '-' || isspace((unsigned char) tmp[0]))
                return -EINVAL;
        if (v == 0)
                return 0;
        if (m->removing)
                return -ENOENT;
        if (fault.remove_busy_count > 0 && (!fault.remove_busy_uuid || streq(fault.remove_busy_uuid, m->uuid))) {
                fault.remove_busy_count--;
                return -EBUSY;
        }
        /* device_remove_file_self(): the "remove" file goes first */
        m->removing = true;
        node_free(node_child(m->dir, "remove", strlen("remove")));
        unsigned ms = 0;
        if (fault.remove_block_ms && (!fault.remove_block_uuid || streq(fault.remove_block_uuid, m->uuid)))
                ms = fault.remove_block_ms;
        if (ms) {
                memcpy(uuid, m->uuid, sizeof(uuid));
                pthread_rwlock_unlock(&model_lock);
                sim_sleep(ms);
                pthread_rwlock_wrlock(&model_lock);
                m = mdev_find(uuid); /* a parent may have unregistered meanwhile */
                if (!m || !m->removing)
                        return 0;
        }
        mdev_destroy(m);
        return 0;
}
