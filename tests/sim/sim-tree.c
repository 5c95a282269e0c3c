/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mdev-sysfs-sim: the in-memory tree: nodes in one hash table keyed by
 * (parent, name), and their life while the kernel still holds references.
 */
#include "sim.h"

struct Tree tree;

size_t node_hash(const Node *parent, const char *name, size_t len) {
        uint64_t h = 1469598103934665603ULL ^ (uint64_t) (uintptr_t) parent;
        for (size_t i = 0; i < len; i++) {
                h ^= (unsigned char) name[i];
                h *= 1099511628211ULL;
        }
        h ^= h >> 29;
        return (size_t) h;
}

Node *node_child(const Node *dir, const char *name, size_t len) {
        for (Node *n = tree.buckets[node_hash(dir, name, len) & (tree.size - 1)]; n; n = n->hnext)
                if (n->parent == dir && strlen(n->name) == len && memcmp(n->name, name, len) == 0)
                        return n;
        return NULL;
}

static void tree_grow(void) {
        size_t size = tree.size * 2;
        Node **b = xcalloc(size, sizeof(Node *));
        for (size_t i = 0; i < tree.size; i++)
                for (Node *n = tree.buckets[i], *next; n; n = next) {
                        next = n->hnext;
                        size_t k = node_hash(n->parent, n->name, strlen(n->name)) & (size - 1);
                        n->hnext = b[k];
                        b[k] = n;
                }
        free(tree.buckets);
        tree.buckets = b;
        tree.size = size;
}

Node *node_add(Node *dir, const char *name, NodeKind kind, mode_t mode) {
        Node *n = xcalloc(1, sizeof(Node));
        n->name = xstrdup(name);
        n->parent = dir;
        n->kind = kind;
        n->mode = mode;
        n->ino = ++tree.next_ino;
        n->magic = NODE_ALIVE;
        if (dir) {
                n->prev = dir->last;
                if (dir->last)
                        dir->last->next = n;
                else
                        dir->first = n;
                dir->last = n;
                if (tree.count >= tree.size)
                        tree_grow();
                size_t k = node_hash(dir, name, strlen(name)) & (tree.size - 1);
                n->hnext = tree.buckets[k];
                tree.buckets[k] = n;
                tree.count++;
        }
        return n;
}

Node *node_dir(Node *dir, const char *name) {
        Node *n = node_child(dir, name, strlen(name));
        return n ? n : node_add(dir, name, K_DIR, S_IFDIR | 0755);
}

Node *node_link(Node *dir, const char *name, char *target_owned) {
        Node *n = node_add(dir, name, K_LINK, S_IFLNK | 0777);
        n->text = target_owned;
        return n;
}

Node *node_text(Node *dir, const char *name, const char *text) {
        Node *n = node_add(dir, name, K_TEXT, S_IFREG | 0444);
        n->text = xstrdup(text);
        return n;
}

Node *node_attr(Node *dir, const char *name, NodeKind kind, mode_t perm, void *obj) {
        Node *n = node_add(dir, name, kind, S_IFREG | perm);
        n->obj = obj;
        return n;
}

/*
 * Node lifetime. The kernel refers to nodes by their address (the FUSE node
 * id) and counts its references (lookup/forget). A node taken out of the
 * tree while the kernel still knows it waits in "limbo" until its last
 * forget; every access through a node id checks "detached" under the model
 * lock before it touches the model.
 *
 * Stable nodes (everything but an mdev's own nodes) may be cached by the
 * kernel. When one leaves the tree, the write that removed it records it in
 * the calling thread's invalidation list, and the write replies only after
 * the kernel has forgotten the entry (see inval_flush()): a change shows at
 * once, like sysfs.
 */
pthread_mutex_t life_lock = PTHREAD_MUTEX_INITIALIZER;
static Node *limbo;

__thread InvalList *inval_pending;

/* -c (see content_cache below): an mdev's own entries may be cached too. */
bool cache_content = false;

uint64_t node_id(const Node *n) {
        return n == tree.root ? FUSE_ROOT_ID : (uint64_t) (uintptr_t) n;
}

static void node_destroy(Node *n) {
        free(n->name);
        free(n->text);
        free(n);
}

/* Released nodes wait in a quarantine before their memory is reused, so a
 * node id the kernel might still send by mistake never names another node
 * soon after; ino_node() reports such a use. Called with life_lock held
 * (or single-threaded at exit). */
#define QUARANTINE 65536
static Node *quarantine[QUARANTINE];
static size_t quarantine_next;

static void node_release(Node *n) {
        n->magic = NODE_DEAD;
        n->detached = true;
        Node *old = quarantine[quarantine_next];
        quarantine[quarantine_next] = n;
        quarantine_next = (quarantine_next + 1) % QUARANTINE;
        if (old)
                node_destroy(old);
}

static void quarantine_free(void) {
        for (size_t i = 0; i < QUARANTINE; i++) {
                if (quarantine[i])
                        node_destroy(quarantine[i]);
                quarantine[i] = NULL;
        }
}

static void node_detach(Node *n) {
        while (n->first)
                node_detach(n->first);
        if (n->parent) {
                Node **pp = &tree.buckets[node_hash(n->parent, n->name, strlen(n->name)) & (tree.size - 1)];
                while (*pp != n)
                        pp = &(*pp)->hnext;
                *pp = n->hnext;
                tree.count--;
                if (n->prev)
                        n->prev->next = n->next;
                else
                        n->parent->first = n->next;
                if (n->next)
                        n->next->prev = n->prev;
                else
                        n->parent->last = n->prev;
        }
        n->parent = NULL;
        n->hnext = NULL;
        pthread_mutex_lock(&life_lock);
        n->detached = true;
        if (n->nlookup == 0)
                node_release(n);
        else {
                n->prev = NULL;
                n->next = limbo;
                if (limbo)
                        limbo->prev = n;
                limbo = n;
        }
        pthread_mutex_unlock(&life_lock);
}

/* Takes n and everything below it out of the tree. */
void node_free(Node *n) {
        if (!n)
                return;
        if (n->parent && (!n->dynamic || cache_content) && inval_pending) {
                pthread_mutex_lock(&life_lock);
                bool known = n->nlookup > 0;
                pthread_mutex_unlock(&life_lock);
                if (known) {
                        InvalList *l = inval_pending;
                        l->v = xrealloc(l->v, (l->n + 1) * sizeof(Inval));
                        l->v[l->n].parent = node_id(n->parent);
                        l->v[l->n].name = xstrdup(n->name);
                        l->n++;
                }
        }
        node_detach(n);
}

/* The kernel forgot k references to n. */
void node_forget(Node *n, uint64_t k) {
        pthread_mutex_lock(&life_lock);
        if (n->magic != NODE_ALIVE) {
                pthread_mutex_unlock(&life_lock);
                return;
        }
        n->nlookup = n->nlookup > k ? n->nlookup - k : 0;
        if (n->nlookup == 0 && n->detached) {
                LIST_UNLINK(limbo, n);
                node_release(n);
        }
        pthread_mutex_unlock(&life_lock);
}

void limbo_free(void) {
        pthread_mutex_lock(&life_lock);
        while (limbo) {
                Node *n = limbo;
                limbo = n->next;
                node_destroy(n);
        }
        quarantine_free();
        pthread_mutex_unlock(&life_lock);
}

/* "a/b/c" below dir, creating directories as needed. */
Node *node_mkdir_p(Node *dir, const char *path) {
        _cleanup_free_ char *copy = xstrdup(path);
        char *save = NULL;
        for (char *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save))
                dir = node_dir(dir, c);
        return dir;
}
