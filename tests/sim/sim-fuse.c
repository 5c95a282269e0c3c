/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mdev-sysfs-sim: the FUSE low-level operations, with the kernel's caching
 * and its invalidation.
 */
#include "sim.h"

/* Entry and attribute timeouts of stable nodes; 0 with -n (no caching). */
double stable_timeout = 86400.0;
/*
 * -c: the kernel keeps the text of attribute files in its page cache and
 * sends no open or release, so that reading an attribute costs about what
 * it costs on kernfs (a few microseconds, no daemon to ask) instead of two
 * round trips to this process. What that takes:
 *  - fixed text of stable nodes (name, description, ...) stays cached;
 *  - each available_instances whose text was sent is listed in content_cache with its
 *    parent, and a change on that parent (create, remove) drops those from
 *    the kernel's cache before the write that made the change returns
 *    (content_cache_flush()); any other change (.sim/ctl, sriov_numvfs, a
 *    delayed register) drops them all. A reader never sees a value older
 *    than the last completed write;
 *  - every other readable file (sriov_numvfs, an mdev's files, the .sim files) gets
 *    a new mtime and no attribute timeout, so the kernel asks for its
 *    attributes on each read and drops the cached text (auto_inval_data);
 *  - an mdev's own entries (its directory and links) may be cached like the
 *    stable ones: the write that removes them tells the kernel to forget
 *    them before it returns.
 * What differs from the default: open() never fails (kernfs' EACCES for a
 * file without read or write permission comes from read() or write()), a
 * cached file's size is its text's length (kernfs says
 * 4096), and opens and reads served from the cache are not counted.
 */
struct ContentCache content_cache = {
        .lock = PTHREAD_MUTEX_INITIALIZER,
        .flush = PTHREAD_MUTEX_INITIALIZER,
};
static uint64_t volatile_mtime; /* a new mtime for each getattr of a volatile file */

/* A file whose text the kernel may keep until told: fixed text, or an
 * available_instances (listed by content_cache_note()). */
static bool content_cacheable(const Node *n) {
        return cache_content && !n->dynamic && (n->kind == K_TEXT || n->kind == K_AVAIL);
}

/* Adds or updates ino in a table with room for it; true if it was new. */
static bool content_cache_insert(CachedText *v, size_t size, uint64_t ino, const void *parent) {
        size_t k = (size_t) (ino * 0x9e3779b97f4a7c15ULL) & (size - 1);
        bool added;

        while (v[k].ino && v[k].ino != ino)
                k = (k + 1) & (size - 1);
        added = v[k].ino == 0;
        v[k].ino = ino;
        v[k].parent = parent;
        return added;
}

/* Called by the read that sends the text of an available_instances, under
 * the model lock: from now on the kernel may hold it. */
static void content_cache_note(uint64_t ino, const void *parent) {
        pthread_mutex_lock(&content_cache.lock);
        if ((content_cache.n + 1) * 2 > content_cache.size) {
                size_t size = content_cache.size ? 2 * content_cache.size : 1024;
                CachedText *v = xcalloc(size, sizeof(CachedText));
                for (size_t i = 0; i < content_cache.size; i++)
                        if (content_cache.v[i].ino)
                                content_cache_insert(v, size, content_cache.v[i].ino, content_cache.v[i].parent);
                free(content_cache.v);
                content_cache.v = v;
                content_cache.size = size;
        }
        if (content_cache_insert(content_cache.v, content_cache.size, ino, parent))
                content_cache.n++;
        pthread_mutex_unlock(&content_cache.lock);
}

struct fuse_session *session;
struct timespec start_time;

/* After a change of the model, without the model lock: the kernel waits
 * for a read in flight on a page it drops, and that read needs the lock.
 * parent: the one whose texts changed, NULL for all. Holding .flush across
 * the whole flush makes a second writer whose entries the first one took
 * wait until the kernel has dropped them. */
void content_cache_flush(const void *parent) {
        uint64_t *drop;
        size_t n = 0;

        if (!cache_content)
                return;
        pthread_mutex_lock(&content_cache.flush);
        pthread_mutex_lock(&content_cache.lock);
        drop = xmalloc((content_cache.n + 1) * sizeof(uint64_t));
        if (content_cache.n > 0) {
                /* take out what goes and put the rest back */
                CachedText *old = content_cache.v;
                content_cache.v = xcalloc(content_cache.size, sizeof(CachedText));
                content_cache.n = 0;
                for (size_t i = 0; i < content_cache.size; i++) {
                        if (!old[i].ino)
                                continue;
                        if (!parent || old[i].parent == parent)
                                drop[n++] = old[i].ino;
                        else if (content_cache_insert(content_cache.v, content_cache.size, old[i].ino, old[i].parent))
                                content_cache.n++;
                }
                free(old);
        }
        pthread_mutex_unlock(&content_cache.lock);
        for (size_t i = 0; i < n; i++)
                if (session) /* -ENOENT: the kernel has forgotten it already */
                        (void) fuse_lowlevel_notify_inval_inode(session, drop[i], 0, 0);
        free(drop);
        pthread_mutex_unlock(&content_cache.flush);
}

/* -c: readable text the kernel must not keep (see cache_content): its
 * mtime changes with each getattr, and the kernel drops the text it holds
 * when it sees that. Only there: a lookup replies under its directory's
 * lock, and dropping text waits for a page that a write in flight holds,
 * while that write may wait to tell the kernel (under the same directory's
 * lock) what it removed. So a lookup or setattr repeats the last mtime, and
 * a write-only file (create, remove) has no text to drop at all. */
static bool volatile_text(const Node *n) {
        return cache_content && node_readable(n) && !content_cacheable(n);
}

static void node_stat(Node *n, struct stat *st, bool fresh) {
        memset(st, 0, sizeof(*st));
        st->st_ino = n->ino;
        st->st_mode = n->mode;
        st->st_nlink = n->kind == K_DIR ? 2 : 1;
        st->st_size = n->kind == K_LINK ? (off_t) strlen(n->text) : n->kind == K_DIR ? 0 : 4096;
        st->st_blksize = 4096;
        st->st_atim = st->st_mtim = st->st_ctim = start_time;
        if (content_cacheable(n)) {
                /* the text's own length: the kernel drops cached text whose
                 * size differs from the one it is told */
                _cleanup_free_ char *text = node_content(n);
                st->st_size = text ? (off_t) strlen(text) : 0;
        } else if (volatile_text(n)) {
                /* read through the page cache, a read stops at the size:
                 * more than any text here (the counters grow), and the
                 * kernel learns the true end from the short read */
                st->st_size = (off_t) 1 << 30;
                uint64_t t = __atomic_load_n(&n->vmtime, __ATOMIC_RELAXED);
                if (fresh) {
                        t = __atomic_add_fetch(&volatile_mtime, 1, __ATOMIC_RELAXED);
                        __atomic_store_n(&n->vmtime, t, __ATOMIC_RELAXED);
                }
                st->st_mtim.tv_sec += (time_t) (t / 1000000000ULL);
                st->st_mtim.tv_nsec = (long) (t % 1000000000ULL);
        }
}

/* How long the kernel may keep a node's entry (its name -> node). */
static double entry_timeout(const Node *n) {
        /* -c: an mdev's directory and links too, not its remove file: that
         * one goes first when a remove starts (device_remove_file_self()) and
         * must show gone while the remove still runs */
        if (n->dynamic && !(cache_content && (n->kind == K_DIR || n->kind == K_LINK)))
                return 0.0;
        return stable_timeout;
}

/* How long the kernel may keep a node's attributes: a volatile file's (-c)
 * not at all, so that each read asks (see volatile_text()). */
static double node_timeout(const Node *n) {
        if (n->dynamic && !(cache_content && (n->kind == K_DIR || n->kind == K_LINK)))
                return 0.0;
        if (volatile_text(n))
                return 0.0;
        return stable_timeout;
}

/* The node behind a FUSE node id. The kernel only sends ids it holds a
 * reference to, so the node is allocated; check ->detached (under the
 * model lock) before using it. */
static Node *ino_node(fuse_ino_t ino) {
        Node *n = ino == FUSE_ROOT_ID ? tree.root : (Node *) (uintptr_t) ino;
        if (n->magic != NODE_ALIVE)
                fprintf(stderr, "mdev-sysfs-sim: the kernel used node %" PRIu64 " after its last forget\n", n->ino);
        return n;
}

/* "/a/b/c" of a node (plus "/name" if given), for the counters. */
static void node_path(const Node *n, const char *name, char *buf, size_t size) {
        const Node *v[64];
        size_t k = 0, len = 0;
        for (; n && n != tree.root && k < ELEMENTSOF(v); n = n->parent)
                v[k++] = n;
        buf[0] = 0;
        if (n != tree.root) {
                snprintf(buf, size, "(removed)");
                len = strlen(buf);
        }
        while (k > 0 && len < size) {
                int w = snprintf(buf + len, size - len, "/%s", v[--k]->name);
                len += w > 0 ? (size_t) w : 0;
        }
        if (name && len < size)
                snprintf(buf + len, size - len, "/%s", name);
        else if (len == 0)
                snprintf(buf, size, "/");
}

static void count_node(const Node *n, const char *name, int what) {
        char path[PATH_MAX];
        node_path(n, name, path, sizeof(path));
        count(path, what);
}

static void sim_lookup(fuse_req_t req, fuse_ino_t parent, const char *name) {
        struct fuse_entry_param e;
        Node *d, *n = NULL;

        pthread_rwlock_rdlock(&model_lock);
        d = ino_node(parent);
        count_node(d, name, C_GETATTR);
        if (!d->detached && d->kind == K_DIR)
                n = node_child(d, name, strlen(name));
        if (n) {
                memset(&e, 0, sizeof(e));
                e.ino = node_id(n);
                e.generation = n->ino;
                node_stat(n, &e.attr, false);
                e.entry_timeout = entry_timeout(n);
                e.attr_timeout = node_timeout(n);
                pthread_mutex_lock(&life_lock);
                n->nlookup++;
                pthread_mutex_unlock(&life_lock);
        }
        pthread_rwlock_unlock(&model_lock);
        if (!n)
                fuse_reply_err(req, ENOENT); /* never cached: it may appear any time */
        else if (fuse_reply_entry(req, &e) != 0)
                node_forget(n, 1);
}

static void sim_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup) {
        if (ino != FUSE_ROOT_ID)
                node_forget(ino_node(ino), nlookup);
        fuse_reply_none(req);
}

static void sim_forget_multi(fuse_req_t req, size_t count_, struct fuse_forget_data *forgets) {
        for (size_t i = 0; i < count_; i++)
                if (forgets[i].ino != FUSE_ROOT_ID)
                        node_forget(ino_node(forgets[i].ino), forgets[i].nlookup);
        fuse_reply_none(req);
}

static void sim_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
        struct stat st;
        double timeout;
        pthread_rwlock_rdlock(&model_lock);
        Node *n = ino_node(ino);
        count_node(n, NULL, C_GETATTR);
        node_stat(n, &st, true);
        timeout = n->detached ? 0.0 : node_timeout(n);
        pthread_rwlock_unlock(&model_lock);
        fuse_reply_attr(req, &st, timeout);
}

static void sim_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set, struct fuse_file_info *fi) {
        struct stat st;
        int r = 0;
        pthread_rwlock_rdlock(&model_lock);
        Node *n = ino_node(ino);
        /* sysfs lets a writer truncate (O_TRUNC) an attribute and ignores it */
        if (n->detached)
                r = ENOENT;
        else if ((to_set & ~(FUSE_SET_ATTR_SIZE | FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_ATIME_NOW |
                             FUSE_SET_ATTR_MTIME_NOW | FUSE_SET_ATTR_CTIME)) != 0)
                r = EPERM;
        else if ((to_set & FUSE_SET_ATTR_SIZE) && !node_writable(n))
                r = EACCES;
        node_stat(n, &st, false);
        pthread_rwlock_unlock(&model_lock);
        if (r)
                fuse_reply_err(req, r);
        else
                fuse_reply_attr(req, &st, 0.0);
}

static void sim_readlink(fuse_req_t req, fuse_ino_t ino) {
        _cleanup_free_ char *target = NULL;
        pthread_rwlock_rdlock(&model_lock);
        Node *n = ino_node(ino);
        count_node(n, NULL, C_READLINK);
        if (!n->detached && n->kind == K_LINK)
                target = xstrdup(n->text);
        pthread_rwlock_unlock(&model_lock);
        if (target)
                fuse_reply_readlink(req, target);
        else
                fuse_reply_err(req, EINVAL);
}

/* A directory is read from a snapshot taken at opendir. */
typedef struct DirEnt {
        char *name;
        uint64_t ino;
        mode_t mode;
} DirEnt;

typedef struct DirSnap {
        DirEnt *v;
        size_t n;
} DirSnap;

static void dirsnap_add(DirSnap *d, const char *name, const Node *n) {
        d->v = xrealloc(d->v, (d->n + 1) * sizeof(DirEnt));
        d->v[d->n].name = xstrdup(name);
        d->v[d->n].ino = n->ino;
        d->v[d->n].mode = n->mode;
        d->n++;
}

static void dirsnap_free(DirSnap *d) {
        if (!d)
                return;
        for (size_t i = 0; i < d->n; i++)
                free(d->v[i].name);
        free(d->v);
        free(d);
}

/* What an open file or directory holds (a snapshot). Registered, so that
 * what the kernel never released (a file still open at unmount) is freed
 * at exit. */
typedef struct Handle {
        struct Handle *prev, *next;
        char *text;
        DirSnap *dir;
} Handle;

static pthread_mutex_t handles_lock = PTHREAD_MUTEX_INITIALIZER;
static Handle *handles;

static Handle *handle_new(char *text, DirSnap *dir) {
        Handle *h = xcalloc(1, sizeof(Handle));
        h->text = text;
        h->dir = dir;
        pthread_mutex_lock(&handles_lock);
        h->next = handles;
        if (handles)
                handles->prev = h;
        handles = h;
        pthread_mutex_unlock(&handles_lock);
        return h;
}

static void handle_free(Handle *h) {
        if (!h)
                return;
        pthread_mutex_lock(&handles_lock);
        LIST_UNLINK(handles, h);
        pthread_mutex_unlock(&handles_lock);
        free(h->text);
        dirsnap_free(h->dir);
        free(h);
}

void handles_free_all(void) {
        while (handles)
                handle_free(handles);
}

static void sim_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
        DirSnap *d = NULL;
        int r = 0;
        pthread_rwlock_rdlock(&model_lock);
        Node *n = ino_node(ino);
        count_node(n, NULL, C_READDIR);
        if (n->detached)
                r = ENOENT;
        else if (n->kind != K_DIR)
                r = ENOTDIR;
        else {
                d = xcalloc(1, sizeof(DirSnap));
                dirsnap_add(d, ".", n);
                dirsnap_add(d, "..", n->parent ? n->parent : n);
                for (const Node *c = n->first; c; c = c->next)
                        if (!c->hidden)
                                dirsnap_add(d, c->name, c);
        }
        pthread_rwlock_unlock(&model_lock);
        if (r) {
                fuse_reply_err(req, r);
                return;
        }
        Handle *h = handle_new(NULL, d);
        fi->fh = (uint64_t) (uintptr_t) h;
        if (fuse_reply_open(req, fi) != 0)
                handle_free(h);
}

static void sim_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi) {
        DirSnap *d = ((Handle *) (uintptr_t) fi->fh)->dir;
        _cleanup_free_ char *buf = xmalloc(size);
        size_t used = 0;
        struct stat st;

        memset(&st, 0, sizeof(st));
        for (size_t i = off < 0 ? 0 : (size_t) off; i < d->n; i++) {
                st.st_ino = d->v[i].ino;
                st.st_mode = d->v[i].mode;
                size_t need = fuse_add_direntry(req, buf + used, size - used, d->v[i].name, &st, (off_t) i + 1);
                if (need > size - used)
                        break;
                used += need;
        }
        fuse_reply_buf(req, buf, used);
}

static void sim_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
        handle_free((Handle *) (uintptr_t) fi->fh);
        fuse_reply_err(req, 0);
}

static void sim_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
        int r = 0;
        if (cache_content) {
                /* the kernel sends no open from now on (FUSE_CAP_NO_OPEN_SUPPORT) */
                fuse_reply_err(req, ENOSYS);
                return;
        }
        char *snap = NULL;
        int acc = fi->flags & O_ACCMODE;
        pthread_rwlock_rdlock(&model_lock);
        Node *n = ino_node(ino);
        count_node(n, NULL, C_OPEN);
        if (n->detached)
                r = ENOENT;
        else if (n->kind == K_DIR)
                r = EISDIR;
        /* kernfs: open fails with EACCES, even for root, when the file has
         * no read (write) permission or no show (store) method */
        else if ((acc == O_RDONLY || acc == O_RDWR) && !node_readable(n))
                r = EACCES;
        else if ((acc == O_WRONLY || acc == O_RDWR) && !node_writable(n))
                r = EACCES;
        else if (n->kind == K_COUNTERS || n->kind == K_STATE)
                snap = node_content(n); /* a snapshot: long output reads consistently */
        pthread_rwlock_unlock(&model_lock);
        if (r) {
                fuse_reply_err(req, r);
                return;
        }
        Handle *h = snap ? handle_new(snap, NULL) : NULL;
        fi->fh = (uint64_t) (uintptr_t) h;
        fi->direct_io = 1;
        fi->keep_cache = 0;
        if (fuse_reply_open(req, fi) != 0)
                handle_free(h);
}

static void sim_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
        handle_free((Handle *) (uintptr_t) fi->fh);
        fuse_reply_err(req, 0);
}

static void sim_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi) {
        _cleanup_free_ char *text = NULL;
        const Handle *h = (const Handle *) (uintptr_t) fi->fh;
        const char *content = h ? h->text : NULL;
        int r = 0;
        if (!content) {
                pthread_rwlock_rdlock(&model_lock);
                Node *n = ino_node(ino);
                count_node(n, NULL, C_READ);
                if (n->detached)
                        r = ENODEV; /* kernfs: a removed attribute */
                else if (!node_readable(n))
                        r = EACCES; /* -c: the open did not ask */
                else if (!(text = node_content(n)))
                        r = n->kind == K_VFINFO ? ENXIO : EIO; /* nvidia: no vGPU on the VF */
                else if (cache_content && n->kind == K_AVAIL && !n->dynamic)
                        content_cache_note(ino, ((const Type *) n->obj)->parent);
                pthread_rwlock_unlock(&model_lock);
                content = text;
        }
        if (r) {
                fuse_reply_err(req, r);
                return;
        }
        size_t len = strlen(content);
        if (off < 0 || (size_t) off >= len)
                size = 0;
        else if (size > len - (size_t) off)
                size = len - (size_t) off;
        /* Reply from this thread's own copy: once the kernel has the data,
         * the reader may close the file and its release free the snapshot
         * while fuse_reply_buf() is still returning (ASan checks the buffer
         * after writev() returns). */
        _cleanup_free_ char *chunk = NULL;
        if (size && h) {
                chunk = xmalloc(size);
                memcpy(chunk, content + off, size);
                content = chunk;
                off = 0;
        }
        fuse_reply_buf(req, size ? content + off : NULL, size);
}

/* Tells the kernel to forget the entries that this thread's change took
 * out of the tree. Called without the model lock: the kernel may need to
 * wait for a lookup in the same directory, which needs it. */
static void inval_flush(InvalList *l) {
        for (size_t i = 0; i < l->n; i++) {
                if (session)
                        (void) fuse_lowlevel_notify_inval_entry(session, l->v[i].parent, l->v[i].name,
                                                                strlen(l->v[i].name));
                free(l->v[i].name);
        }
        free(l->v);
        l->v = NULL;
        l->n = 0;
}

static void sim_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
                      struct fuse_file_info *fi) {
        InvalList inval = { 0 };
        const void *changed = NULL; /* the parent whose texts change, NULL: any */
        int r;
        pthread_rwlock_wrlock(&model_lock);
        inval_pending = &inval;
        Node *n = ino_node(ino);
        count_node(n, NULL, C_WRITE);
        if (!n->detached && n->kind == K_CREATE)
                changed = ((const Type *) n->obj)->parent;
        else if (!n->detached && n->kind == K_REMOVE)
                changed = ((const Mdev *) n->obj)->type->parent;
        if (n->detached)
                r = -ENODEV;
        else if (n->kind == K_CREATE)
                r = mdev_create(n->obj, buf, size);
        else if (n->kind == K_REMOVE)
                r = mdev_write_remove(n->obj, buf, size);
        else if (n->kind == K_CURRENT)
                r = vf_write_current(n->obj, buf, size);
        else if (n->kind == K_PARTITION)
                r = partition_write(n->obj, buf, size);
        else if (n->kind == K_XEADMIN)
                r = xe_admin_write(n, buf, size);
        else if (n->kind == K_NUMVFS) {
                char tmp[32];
                if (size >= sizeof(tmp))
                        r = -EINVAL;
                else {
                        memcpy(tmp, buf, size);
                        tmp[size] = 0;
                        r = pf_write_numvfs(n->obj, tmp);
                }
        } else if (n->kind == K_CTL)
                r = ctl_write(buf, size);
        else
                r = -EACCES;
        inval_pending = NULL;
        pthread_rwlock_unlock(&model_lock);
        inval_flush(&inval);
        content_cache_flush(changed);
        if (r < 0)
                fuse_reply_err(req, -r);
        else
                fuse_reply_write(req, size);
}

static void sim_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, struct fuse_file_info *fi) {
        fuse_reply_err(req, EACCES);
}

static void sim_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev) {
        fuse_reply_err(req, EACCES);
}

static void sim_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode) {
        fuse_reply_err(req, EPERM);
}

static void sim_unlink(fuse_req_t req, fuse_ino_t parent, const char *name) {
        fuse_reply_err(req, EPERM);
}

static void sim_init(void *userdata, struct fuse_conn_info *conn) {
        /* a link's target never changes while it exists: let the kernel keep it */
        if (stable_timeout > 0 && (conn->capable & FUSE_CAP_CACHE_SYMLINKS))
                conn->want |= FUSE_CAP_CACHE_SYMLINKS;
        /* O_TRUNC arrives with open() instead of as a separate setattr */
        if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
                conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
        conn->want &= ~(unsigned) FUSE_CAP_WRITEBACK_CACHE;
        /* -c: see cache_content */
        if (cache_content) {
                conn->want |= FUSE_CAP_AUTO_INVAL_DATA;
                if (conn->capable & FUSE_CAP_NO_OPEN_SUPPORT)
                        conn->want |= FUSE_CAP_NO_OPEN_SUPPORT;
        }
}

const struct fuse_lowlevel_ops sim_ops = {
        .init = sim_init,
        .lookup = sim_lookup,
        .forget = sim_forget,
        .forget_multi = sim_forget_multi,
        .getattr = sim_getattr,
        .setattr = sim_setattr,
        .readlink = sim_readlink,
        .opendir = sim_opendir,
        .readdir = sim_readdir,
        .releasedir = sim_releasedir,
        .open = sim_open,
        .release = sim_release,
        .read = sim_read,
        .write = sim_write,
        .create = sim_create,
        .mknod = sim_mknod,
        .mkdir = sim_mkdir,
        .unlink = sim_unlink,
        .rmdir = sim_unlink,
};
