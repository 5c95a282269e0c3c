/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mdev-sysfs-sim: a FUSE file system that plays the mdev part of /sys, so
 * that the programs can be tested end to end on a kernel without mdev.
 *
 *   mdev-sysfs-sim [-f] TOPOLOGY MOUNTPOINT   mount; returns once mounted
 *   mdev-sysfs-sim --ctl MOUNTPOINT COMMAND... send a control command
 *   mdev-sysfs-sim --counters MOUNTPOINT      print the access counters
 *   mdev-sysfs-sim --check TOPOLOGY           parse a topology and exit
 *
 * It reproduces drivers/vfio/mdev/ of Linux 6.1 (mdev_sysfs.c, mdev_core.c)
 * and samples/vfio-mdev/mtty.c: the layout and link targets, "create" and
 * "remove" with the kernel's errno values, available_instances, mtty's
 * shared pool of ports, NVIDIA's one-type-per-GPU rule and SR-IOV virtual
 * functions. Faults are injected through the hidden directory ".sim" at the
 * top of the mount (see tests/sim/README.md).
 *
 * The tree is kept in memory: every node sits in one hash table keyed by
 * (parent, name), so resolving a path costs one hash lookup per component.
 * One read-write lock guards the tree and the model; a "remove" that is
 * told to block sleeps without holding it.
 */
#define FUSE_USE_VERSION 312

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "macro.h"

#define CTL_DIR "/.sim"
#define UUID_LEN 36

/* ---------------------------------------------------------------- memory */

static void *xmalloc(size_t n) {
        void *p = malloc(n ? n : 1);
        if (!p) {
                fputs("mdev-sysfs-sim: out of memory\n", stderr);
                abort();
        }
        return p;
}

static void *xcalloc(size_t n, size_t size) {
        void *p = calloc(n ? n : 1, size ? size : 1);
        if (!p) {
                fputs("mdev-sysfs-sim: out of memory\n", stderr);
                abort();
        }
        return p;
}

static void *xrealloc(void *p, size_t n) {
        p = realloc(p, n ? n : 1);
        if (!p) {
                fputs("mdev-sysfs-sim: out of memory\n", stderr);
                abort();
        }
        return p;
}

static char *xstrdup(const char *s) {
        return s ? strcpy(xmalloc(strlen(s) + 1), s) : NULL;
}

_printf_(1, 2) static char *xasprintf(const char *fmt, ...) {
        va_list ap;
        char *s;

        va_start(ap, fmt);
        if (vasprintf(&s, fmt, ap) < 0)
                s = NULL;
        va_end(ap);
        if (!s) {
                fputs("mdev-sysfs-sim: out of memory\n", stderr);
                abort();
        }
        return s;
}

/* ----------------------------------------------------------------- errno */

static const struct {
        const char *name;
        int value;
} errno_table[] = {
        { "EPERM", EPERM },     { "ENOENT", ENOENT },   { "EIO", EIO },
        { "ENXIO", ENXIO },     { "E2BIG", E2BIG },     { "EAGAIN", EAGAIN },
        { "ENOMEM", ENOMEM },   { "EACCES", EACCES },   { "EFAULT", EFAULT },
        { "EBUSY", EBUSY },     { "EEXIST", EEXIST },   { "ENODEV", ENODEV },
        { "EINVAL", EINVAL },   { "ENOSPC", ENOSPC },   { "ERANGE", ERANGE },
        { "EUSERS", EUSERS },   { "ETIMEDOUT", ETIMEDOUT },
        { "EOPNOTSUPP", EOPNOTSUPP }, { "EDQUOT", EDQUOT },
        { "ENOTSUP", ENOTSUP }, { "EINTR", EINTR },
};

/* "ENOSPC" or "28" -> 28; 0 if unknown. */
static int errno_from_name(const char *s) {
        for (size_t i = 0; i < ELEMENTSOF(errno_table); i++)
                if (streq(errno_table[i].name, s))
                        return errno_table[i].value;
        char *end;
        errno = 0;
        unsigned long v = strtoul(s, &end, 10);
        if (errno || end == s || *end || v == 0 || v > 4095)
                return 0;
        return (int) v;
}

static int parse_uint(const char *s, unsigned *ret) {
        char *end;
        if (!s || !isdigit((unsigned char) s[0]))
                return -EINVAL;
        errno = 0;
        unsigned long v = strtoul(s, &end, 10);
        if (errno || *end || v > UINT_MAX)
                return -EINVAL;
        *ret = (unsigned) v;
        return 0;
}

/* A canonical lower-case UUID from the first 36 bytes of buf, like the
 * kernel's uuid_is_valid()/guid_parse(). */
static bool uuid_parse36(const char *buf, char out[UUID_LEN + 1]) {
        for (int i = 0; i < UUID_LEN; i++) {
                char c = buf[i];
                if (i == 8 || i == 13 || i == 18 || i == 23) {
                        if (c != '-')
                                return false;
                } else if (!isxdigit((unsigned char) c))
                        return false;
                out[i] = (char) tolower((unsigned char) c);
        }
        out[UUID_LEN] = 0;
        return true;
}

/* ------------------------------------------------------------------ tree */

typedef enum NodeKind {
        K_DIR,
        K_LINK,
        K_TEXT,     /* fixed text */
        K_AVAIL,    /* available_instances of a Type */
        K_CREATE,   /* create of a Type */
        K_REMOVE,   /* remove of an Mdev */
        K_NUMVFS,   /* sriov_numvfs of a Pf */
        K_CTL,      /* .sim/ctl */
        K_COUNTERS, /* .sim/counters */
        K_STATE,    /* .sim/state */
        K_CREATABLE, /* nvidia/creatable_vgpu_types of a Vf */
        K_CURRENT,   /* nvidia/current_vgpu_type of a Vf */
        K_VFINFO,    /* nvidia/gpu_instance_id, placement_id, vgpu_params of a Vf (ENXIO without a vGPU) */
} NodeKind;

typedef struct Node Node;
struct Node {
        char *name;
        Node *parent;
        Node *first, *last; /* children, in creation order */
        Node *prev, *next;  /* siblings */
        Node *hnext;        /* hash chain */
        uint64_t ino;
        mode_t mode;
        NodeKind kind;
        char *text; /* K_TEXT content (without newline), K_LINK target */
        void *obj;
        bool hidden;   /* not listed by readdir */
        bool dynamic;  /* an mdev's node: never cached by the kernel */
        bool detached; /* out of the tree, waiting for the kernel's forget */
        uint64_t vmtime;  /* -c: the mtime of a volatile file (volatile_text()) */
        uint64_t nlookup; /* the kernel's references (life_lock) */
        uint32_t magic;   /* NODE_ALIVE, or NODE_DEAD once released */
};

#define NODE_ALIVE 0x6d646576u
#define NODE_DEAD 0xdeadd0d0u

static struct {
        Node **buckets;
        size_t size; /* power of two */
        size_t count;
        uint64_t next_ino;
        Node *root;
} tree;

static size_t node_hash(const Node *parent, const char *name, size_t len) {
        uint64_t h = 1469598103934665603ULL ^ (uint64_t) (uintptr_t) parent;
        for (size_t i = 0; i < len; i++) {
                h ^= (unsigned char) name[i];
                h *= 1099511628211ULL;
        }
        h ^= h >> 29;
        return (size_t) h;
}

static Node *node_child(const Node *dir, const char *name, size_t len) {
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

static Node *node_add(Node *dir, const char *name, NodeKind kind, mode_t mode) {
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

static Node *node_dir(Node *dir, const char *name) {
        Node *n = node_child(dir, name, strlen(name));
        return n ? n : node_add(dir, name, K_DIR, S_IFDIR | 0755);
}

static Node *node_link(Node *dir, const char *name, char *target_owned) {
        Node *n = node_add(dir, name, K_LINK, S_IFLNK | 0777);
        n->text = target_owned;
        return n;
}

static Node *node_text(Node *dir, const char *name, const char *text) {
        Node *n = node_add(dir, name, K_TEXT, S_IFREG | 0444);
        n->text = xstrdup(text);
        return n;
}

static Node *node_attr(Node *dir, const char *name, NodeKind kind, mode_t perm, void *obj) {
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
static pthread_mutex_t life_lock = PTHREAD_MUTEX_INITIALIZER;
static Node *limbo;

typedef struct Inval {
        uint64_t parent;
        char *name;
} Inval;

typedef struct InvalList {
        Inval *v;
        size_t n;
} InvalList;

static __thread InvalList *inval_pending;

/* -c (see content_cache below): an mdev's own entries may be cached too. */
static bool cache_content = false;

static uint64_t node_id(const Node *n) {
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
static void node_free(Node *n) {
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
static void node_forget(Node *n, uint64_t k) {
        pthread_mutex_lock(&life_lock);
        if (n->magic != NODE_ALIVE) {
                pthread_mutex_unlock(&life_lock);
                return;
        }
        n->nlookup = n->nlookup > k ? n->nlookup - k : 0;
        if (n->nlookup == 0 && n->detached) {
                if (n->prev)
                        n->prev->next = n->next;
                else
                        limbo = n->next;
                if (n->next)
                        n->next->prev = n->prev;
                node_release(n);
        }
        pthread_mutex_unlock(&life_lock);
}

static void limbo_free(void) {
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
static Node *node_mkdir_p(Node *dir, const char *path) {
        _cleanup_free_ char *copy = xstrdup(path);
        char *save = NULL;
        for (char *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save))
                dir = node_dir(dir, c);
        return dir;
}

/* ----------------------------------------------------------------- model */

typedef struct TypeDef {
        char *id;
        char *name;        /* NULL: no "name" file */
        char *description; /* NULL: no "description" file */
        char *device_api;
        unsigned instances; /* 0: limited by the pool only */
        unsigned ports;     /* cost against the parent's pool */
        unsigned fb;        /* VFIO vGPU types: framebuffer in MiB (framebuffer=) */
} TypeDef;

typedef struct TypeSet {
        char *name;
        TypeDef *types;
        size_t n;
} TypeSet;

typedef struct Parent Parent;
typedef struct Pf Pf;
typedef struct Vf Vf;

typedef struct Type {
        const TypeDef *def;
        Parent *parent;
        unsigned used;
        Node *dir;
        Node *devices;
} Type;

struct Parent {
        char *name;
        char *devpath; /* below devices/ */
        Node *dev;     /* the device directory, present while registered or not */
        const TypeSet *set;
        Type *types;
        unsigned pool, pool_used;
        unsigned used; /* mdevs held, all types */
        bool onetype;  /* NVIDIA: one type per physical GPU */
        bool registered;
        bool start_registered; /* from the topology */
        int nospace_errno;
        Pf *pf; /* the physical function, for a VF */
};

struct Pf {
        char *name;
        char *devpath;
        Node *dev;
        unsigned total, num;
        unsigned start_num; /* from the topology */
        const TypeSet *vf_set;
        int vf_errno;
        bool vf_onetype;
        Parent **vfs; /* num entries (mdev VFs) */
        /* NVIDIA's vendor-specific VFIO framework (a "vfio" statement): the
         * VFs are no mdev parents but carry nvidia/ with current_vgpu_type. */
        bool vfio;
        unsigned fb; /* the GPU's framebuffer in MiB */
        Vf **vvfs;   /* num entries */
};

/* A VF of a vfio PF: one vGPU at most, programmed through current_vgpu_type. */
struct Vf {
        char *name;
        Pf *pf;
        Node *dev;
        unsigned index;      /* N of virtfnN */
        const TypeDef *cur;  /* the vGPU type it carries, NULL: none */
        bool open;           /* a guest (QEMU) holds it open: "vf-open" */
};

typedef struct Mdev {
        char uuid[UUID_LEN + 1];
        Type *type;
        Node *dir, *bus_link, *type_link;
        bool removing;
} Mdev;

static struct {
        TypeSet **sets;
        size_t n_sets;
        Parent **parents;
        size_t n_parents;
        Pf **pfs;
        size_t n_pfs;
        Node *class_mdev_bus, *bus_mdev_devices, *bus_pci_devices, *devices;
        unsigned n_mdevs;
        bool no_mdev_bus;   /* "mdev_bus absent": no class/mdev_bus, no bus/mdev */
        unsigned n_vfio_dev; /* vfio-dev/vfioN numbers handed out */
} model;

/* Faults, guarded by the model lock. */
static struct {
        int create_errno;
        unsigned create_count;
        char *create_parent; /* NULL: any */
        unsigned remove_block_ms;
        char *remove_block_uuid; /* NULL: any */
        unsigned remove_busy_count;
        char *remove_busy_uuid;
} fault;

static pthread_rwlock_t model_lock;

static unsigned type_available(const Type *t) {
        const Parent *p = t->parent;
        unsigned a = UINT_MAX;

        if (p->onetype && p->used > t->used)
                return 0;
        if (t->def->instances)
                a = t->def->instances > t->used ? t->def->instances - t->used : 0;
        if (p->pool) {
                unsigned free_ports = p->pool > p->pool_used ? p->pool - p->pool_used : 0;
                unsigned b = free_ports / (t->def->ports ? t->def->ports : 1);
                if (b < a)
                        a = b;
        }
        return a == UINT_MAX ? 0 : a;
}

static Parent *parent_find(const char *name) {
        for (size_t i = 0; i < model.n_parents; i++)
                if (streq(model.parents[i]->name, name))
                        return model.parents[i];
        return NULL;
}

static Mdev *mdev_find(const char *uuid) {
        Node *n = node_child(model.bus_mdev_devices, uuid, strlen(uuid));
        return n ? n->obj : NULL;
}

static void mdev_destroy(Mdev *m) {
        Type *t = m->type;
        t->used--;
        t->parent->used--;
        if (t->parent->pool)
                t->parent->pool_used -= t->def->ports;
        model.n_mdevs--;
        node_free(m->type_link);
        node_free(m->bus_link);
        node_free(m->dir);
        free(m);
}

static int mdev_create(Type *t, const char *buf, size_t len) {
        char uuid[UUID_LEN + 1];
        Parent *p = t->parent;

        /* mdev_sysfs.c create_store(): 36 or 37 bytes (a trailing newline) */
        if (len < UUID_LEN || len > UUID_LEN + 1 || !uuid_parse36(buf, uuid))
                return -EINVAL;
        if (mdev_find(uuid))
                return -EEXIST;
        if (fault.create_count > 0 && (!fault.create_parent || streq(fault.create_parent, p->name))) {
                fault.create_count--;
                return -fault.create_errno;
        }
        if (type_available(t) == 0)
                return -p->nospace_errno;

        Mdev *m = xcalloc(1, sizeof(Mdev));
        memcpy(m->uuid, uuid, sizeof(uuid));
        m->type = t;
        m->dir = node_add(p->dev, uuid, K_DIR, S_IFDIR | 0755);
        m->dir->dynamic = true;
        node_link(m->dir, "mdev_type", xasprintf("../mdev_supported_types/%s", t->def->id))->dynamic = true;
        node_attr(m->dir, "remove", K_REMOVE, 0200, m)->dynamic = true;
        m->bus_link = node_link(model.bus_mdev_devices, uuid,
                                xasprintf("../../../devices/%s/%s", p->devpath, uuid));
        m->bus_link->obj = m;
        m->bus_link->dynamic = true;
        m->type_link = node_link(t->devices, uuid, xasprintf("../../../%s", uuid));
        m->type_link->obj = m;
        m->type_link->dynamic = true;
        t->used++;
        p->used++;
        if (p->pool)
                p->pool_used += t->def->ports;
        model.n_mdevs++;
        return 0;
}

static bool name_is_pci(const char *s);
static Node *device_add(const char *name, const char *devpath);
static void device_del(const char *name, Node *dev);

/* A virtual parent (mtty) is a device its module creates just before it
 * registers and deletes just after it unregisters; a PCI device stays. */
static bool parent_device_follows_registration(const Parent *p) {
        return !name_is_pci(p->name);
}

static void parent_register(Parent *p) {
        if (p->registered)
                return;
        if (!p->dev)
                p->dev = device_add(p->name, p->devpath);
        Node *mst = node_dir(p->dev, "mdev_supported_types");
        for (size_t i = 0; i < p->set->n; i++) {
                const TypeDef *d = &p->set->types[i];
                Type *t = &p->types[i];
                t->def = d;
                t->parent = p;
                t->used = 0;
                t->dir = node_dir(mst, d->id);
                node_attr(t->dir, "available_instances", K_AVAIL, 0444, t);
                node_attr(t->dir, "create", K_CREATE, 0200, t);
                node_text(t->dir, "device_api", d->device_api);
                if (d->name)
                        node_text(t->dir, "name", d->name);
                if (d->description)
                        node_text(t->dir, "description", d->description);
                t->devices = node_dir(t->dir, "devices");
        }
        node_link(model.class_mdev_bus, p->name, xasprintf("../../devices/%s", p->devpath));
        p->registered = true;
}

static void parent_unregister(Parent *p) {
        if (!p->registered)
                return;
        for (size_t i = 0; i < p->set->n; i++) {
                Type *t = &p->types[i];
                while (t->devices->first)
                        mdev_destroy(t->devices->first->obj);
        }
        node_free(node_child(p->dev, "mdev_supported_types", strlen("mdev_supported_types")));
        node_free(node_child(model.class_mdev_bus, p->name, strlen(p->name)));
        p->registered = false;
        if (parent_device_follows_registration(p)) {
                device_del(p->name, p->dev);
                p->dev = NULL;
        }
}

static bool name_is_pci(const char *s) {
        /* dddd:bb:ss.f */
        if (strlen(s) != 12)
                return false;
        for (int i = 0; i < 12; i++) {
                if (i == 4 || i == 7) {
                        if (s[i] != ':')
                                return false;
                } else if (i == 10) {
                        if (s[i] != '.')
                                return false;
                } else if (!isxdigit((unsigned char) s[i]))
                        return false;
        }
        return true;
}

static char *pci_devpath(const char *addr) {
        return xasprintf("pci%.4s:00/%s", addr, addr);
}

/* The device's "subsystem" link, as the kernel makes it: bus/pci for a PCI
 * device, class/<class> for a class device under devices/virtual/<class>/
 * (the mtty sample: class/mtty), else none. libvirt names a parent's node
 * device after it (<subsystem>_<name>). */
static void device_subsystem_link(Node *dev, const char *name, const char *devpath) {
        _cleanup_free_ char *up = NULL;
        const char *slash;
        size_t depth = 2, len; /* "devices" and the last component */

        for (const char *c = devpath; *c; c++)
                depth += *c == '/';
        up = xcalloc(depth, 3 + 1);
        for (size_t i = 0; i < depth; i++)
                strcat(up, "../");
        if (name_is_pci(name))
                node_link(dev, "subsystem", xasprintf("%sbus/pci", up));
        else if (strncmp(devpath, "virtual/", 8) == 0 && (slash = strchr(devpath + 8, '/'))) {
                len = (size_t) (slash - (devpath + 8));
                node_link(dev, "subsystem", xasprintf("%sclass/%.*s", up, (int) len, devpath + 8));
        }
}

/* Creates the device directory (and bus/pci/devices link for PCI). */
static Node *device_add(const char *name, const char *devpath) {
        Node *dev = node_mkdir_p(model.devices, devpath);
        if (name_is_pci(name))
                node_link(model.bus_pci_devices, name, xasprintf("../../../devices/%s", devpath));
        if (!node_child(dev, "subsystem", strlen("subsystem")))
                device_subsystem_link(dev, name, devpath);
        return dev;
}

static void device_del(const char *name, Node *dev) {
        if (name_is_pci(name))
                node_free(node_child(model.bus_pci_devices, name, strlen(name)));
        node_free(dev);
}

static Parent *parent_new(const char *name, const char *devpath, const TypeSet *set) {
        Parent *p = xcalloc(1, sizeof(Parent));
        p->name = xstrdup(name);
        p->devpath = devpath ? xstrdup(devpath) : pci_devpath(name);
        p->set = set;
        p->types = xcalloc(set->n, sizeof(Type));
        p->nospace_errno = ENOSPC;
        model.parents = xrealloc(model.parents, (model.n_parents + 1) * sizeof(Parent *));
        model.parents[model.n_parents++] = p;
        return p;
}

static void parent_free(Parent *p) {
        free(p->name);
        free(p->devpath);
        free(p->types);
        free(p);
}

static void parent_forget(Parent *p) {
        for (size_t i = 0; i < model.n_parents; i++)
                if (model.parents[i] == p) {
                        memmove(&model.parents[i], &model.parents[i + 1],
                                (model.n_parents - i - 1) * sizeof(Parent *));
                        model.n_parents--;
                        break;
                }
        parent_free(p);
}

static char *vf_address(const Pf *pf, unsigned i) {
        unsigned dom, bus, slot, fn;
        if (sscanf(pf->name, "%4x:%2x:%2x.%1x", &dom, &bus, &slot, &fn) != 4)
                return NULL;
        /* First VF offset 4, stride 1, as on NVIDIA's SR-IOV GPUs. */
        unsigned devfn = (slot << 3 | fn) + 4 + i;
        bus += devfn >> 8;
        devfn &= 0xff;
        return xasprintf("%04x:%02x:%02x.%x", dom, bus & 0xff, devfn >> 3, devfn & 7);
}

/* ------------------------------------------------ NVIDIA VFIO framework */

/* Framebuffer used on a vfio PF's GPU, and the size of its vGPUs (0: none).
 * A time-sliced GPU holds vGPUs of one framebuffer size only. */
static unsigned pf_fb_used(const Pf *pf, unsigned *ret_size) {
        unsigned used = 0, size = 0;
        for (unsigned i = 0; i < pf->num; i++)
                if (pf->vvfs[i]->cur) {
                        used += pf->vvfs[i]->cur->fb;
                        size = pf->vvfs[i]->cur->fb;
                }
        *ret_size = size;
        return used;
}

/* Whether the VF can take a vGPU of this type now. */
static bool vf_can_create(const Vf *v, const TypeDef *d) {
        unsigned size;
        unsigned used = pf_fb_used(v->pf, &size);
        if (v->cur)
                return false;
        if (size && d->fb != size)
                return false;
        return used + d->fb <= v->pf->fb;
}

/* creatable_vgpu_types as the shipped driver prints it: a header, then
 * "%-5d : %s" per type this VF can create now; only the header otherwise. */
static char *vf_creatable_text(const Vf *v) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);
        if (!f)
                return xstrdup("");
        fprintf(f, "ID    : vGPU Name\n");
        for (size_t i = 0; i < v->pf->vf_set->n; i++) {
                const TypeDef *d = &v->pf->vf_set->types[i];
                if (vf_can_create(v, d))
                        fprintf(f, "%-5d : %s\n", atoi(d->id), d->name ? d->name : d->id);
        }
        fclose(f);
        return buf;
}

static char *vf_info_text(const Node *n) {
        const Vf *v = n->obj;
        if (!v->cur)
                return NULL;
        if (streq(n->name, "vgpu_params"))
                return xasprintf("frame_rate_limiter=1\n");
        if (streq(n->name, "placement_id"))
                return xasprintf("%u\n", v->index);
        return xasprintf("%u\n", 0u); /* gpu_instance_id: time-sliced */
}

/* current_vgpu_type's store, with the shipped driver's errnos
 * (VENDOR-VFIO: EINVAL not a number; EPERM an ID on a VF with a vGPU, 0 on a
 * VF without one, 0 while a guest has it open; EIO not creatable now). */
static int vf_write_current(Vf *v, const char *buf, size_t len) {
        char tmp[32];
        if (len == 0 || len >= sizeof(tmp))
                return -EINVAL;
        memcpy(tmp, buf, len);
        tmp[len] = 0;
        if (tmp[len - 1] == '\n')
                tmp[len - 1] = 0;
        char *end;
        errno = 0;
        long id = strtol(tmp, &end, 10);
        if (errno || end == tmp || *end || !isdigit((unsigned char) tmp[0]) || id > INT_MAX)
                return -EINVAL;
        if (id == 0) {
                if (!v->cur || v->open)
                        return -EPERM;
                v->cur = NULL;
                return 0;
        }
        if (v->cur)
                return -EPERM;
        if (fault.create_count > 0 && (!fault.create_parent || streq(fault.create_parent, v->name))) {
                fault.create_count--;
                return -fault.create_errno;
        }
        for (size_t i = 0; i < v->pf->vf_set->n; i++) {
                const TypeDef *d = &v->pf->vf_set->types[i];
                if (atoi(d->id) == id) {
                        if (!vf_can_create(v, d))
                                return -EIO;
                        v->cur = d;
                        return 0;
                }
        }
        return -EIO; /* unknown to this GPU */
}

/* "../" times the depth of devices/<devpath>, to reach the root. */
static char *up_to_root(const char *devpath) {
        size_t depth = 2; /* devices/ and the device's own directory */
        for (const char *c = devpath; *c; c++)
                depth += *c == '/';
        char *s = xmalloc(depth * 3 + 1);
        for (size_t i = 0; i < depth; i++)
                memcpy(s + 3 * i, "../", 3);
        s[depth * 3] = 0;
        return s;
}

static void vfio_vf_add(Pf *pf, unsigned i, const char *addr, const char *devpath) {
        Vf *v = xcalloc(1, sizeof(Vf));
        _cleanup_free_ char *up = up_to_root(devpath);
        _cleanup_free_ char *vfio = xasprintf("vfio%u", model.n_vfio_dev++);
        v->name = xstrdup(addr);
        v->pf = pf;
        v->index = i;
        v->dev = device_add(addr, devpath);
        node_link(v->dev, "physfn", xasprintf("../%s", pf->name));
        node_link(v->dev, "driver", xasprintf("%sbus/pci/drivers/nvidia", up));
        node_link(v->dev, "iommu_group", xasprintf("%skernel/iommu_groups/%u", up, 100 + model.n_vfio_dev));
        node_text(v->dev, "vendor", "0x10de");
        node_dir(node_dir(v->dev, "vfio-dev"), vfio);
        Node *nv = node_dir(v->dev, "nvidia");
        node_attr(nv, "creatable_vgpu_types", K_CREATABLE, 0444, v);
        node_attr(nv, "current_vgpu_type", K_CURRENT, 0644, v);
        node_attr(nv, "gpu_instance_id", K_VFINFO, 0444, v);
        node_attr(nv, "placement_id", K_VFINFO, 0444, v);
        node_attr(nv, "vgpu_params", K_VFINFO, 0444, v);
        node_text(nv, "warm_update", "0");
        pf->vvfs[i] = v;
}

static Vf *vf_find(const char *name) {
        for (size_t i = 0; i < model.n_pfs; i++) {
                Pf *pf = model.pfs[i];
                for (unsigned j = 0; pf->vfio && j < pf->num; j++)
                        if (streq(pf->vvfs[j]->name, name))
                                return pf->vvfs[j];
        }
        return NULL;
}

static void pf_enable(Pf *pf, unsigned n) {
        if (pf->vfio) {
                char *pfdir = strrchr(pf->devpath, '/');
                size_t prefix = pfdir ? (size_t) (pfdir - pf->devpath) : 0;
                pf->vvfs = xcalloc(n, sizeof(Vf *));
                for (unsigned i = 0; i < n; i++) {
                        _cleanup_free_ char *addr = vf_address(pf, i);
                        _cleanup_free_ char *devpath = prefix ? xasprintf("%.*s/%s", (int) prefix, pf->devpath, addr)
                                                              : xstrdup(addr);
                        _cleanup_free_ char *virtfn = xasprintf("virtfn%u", i);
                        vfio_vf_add(pf, i, addr, devpath);
                        node_link(pf->dev, virtfn, xasprintf("../%s", addr));
                }
                pf->num = n;
                return;
        }
        pf->vfs = xcalloc(n, sizeof(Parent *));
        char *pfdir = strrchr(pf->devpath, '/');
        size_t prefix = pfdir ? (size_t) (pfdir - pf->devpath) : 0;
        for (unsigned i = 0; i < n; i++) {
                _cleanup_free_ char *addr = vf_address(pf, i);
                _cleanup_free_ char *devpath = prefix ? xasprintf("%.*s/%s", (int) prefix, pf->devpath, addr)
                                                      : xstrdup(addr);
                _cleanup_free_ char *virtfn = xasprintf("virtfn%u", i);
                Parent *p = parent_new(addr, devpath, pf->vf_set);
                p->pf = pf;
                p->nospace_errno = pf->vf_errno;
                p->onetype = pf->vf_onetype;
                p->dev = device_add(addr, devpath);
                node_link(p->dev, "physfn", xasprintf("../%s", pf->name));
                node_link(pf->dev, virtfn, xasprintf("../%s", addr));
                parent_register(p);
                pf->vfs[i] = p;
        }
        pf->num = n;
}

static void vf_free(Vf *v) {
        free(v->name);
        free(v);
}

static void pf_disable(Pf *pf) {
        if (pf->vfio) {
                for (unsigned i = 0; i < pf->num; i++) {
                        Vf *v = pf->vvfs[i];
                        _cleanup_free_ char *virtfn = xasprintf("virtfn%u", i);
                        node_free(node_child(pf->dev, virtfn, strlen(virtfn)));
                        device_del(v->name, v->dev);
                        vf_free(v);
                }
                free(pf->vvfs);
                pf->vvfs = NULL;
                pf->num = 0;
                return;
        }
        for (unsigned i = 0; i < pf->num; i++) {
                Parent *p = pf->vfs[i];
                _cleanup_free_ char *virtfn = xasprintf("virtfn%u", i);
                parent_unregister(p);
                node_free(node_child(pf->dev, virtfn, strlen(virtfn)));
                device_del(p->name, p->dev);
                parent_forget(p);
        }
        free(pf->vfs);
        pf->vfs = NULL;
        pf->num = 0;
}

/* drivers/pci/pci-sysfs.c sriov_numvfs_store() */
static int pf_write_numvfs(Pf *pf, const char *buf) {
        char *end;
        errno = 0;
        unsigned long n = strtoul(buf, &end, 0);
        if (errno || end == buf || (*end && !(end[0] == '\n' && end[1] == 0)))
                return -EINVAL;
        if (n > pf->total)
                return -ERANGE;
        if (n == pf->num)
                return 0;
        if (n == 0) {
                for (unsigned i = 0; pf->vfio && i < pf->num; i++)
                        if (pf->vvfs[i]->cur)
                                return -EBUSY; /* a VF carries a vGPU */
                pf_disable(pf);
                return 0;
        }
        if (pf->num)
                return -EBUSY;
        pf_enable(pf, (unsigned) n);
        return 0;
}

/* -------------------------------------------------------------- counters */

typedef struct Counter {
        char *path;
        struct Counter *next;
        unsigned long opens, reads, writes, readdirs, getattrs, readlinks;
} Counter;

enum { C_OPEN, C_READ, C_WRITE, C_READDIR, C_GETATTR, C_READLINK };

#define COUNTER_BUCKETS 4096
static struct {
        pthread_mutex_t lock;
        Counter *buckets[COUNTER_BUCKETS];
        size_t n;
} counters = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void count(const char *path, int what) {
        if (!path || strncmp(path, CTL_DIR, strlen(CTL_DIR)) == 0)
                return;
        size_t h = node_hash(NULL, path, strlen(path)) % COUNTER_BUCKETS;
        pthread_mutex_lock(&counters.lock);
        Counter *c = counters.buckets[h];
        while (c && !streq(c->path, path))
                c = c->next;
        if (!c) {
                c = xcalloc(1, sizeof(Counter));
                c->path = xstrdup(path);
                c->next = counters.buckets[h];
                counters.buckets[h] = c;
                counters.n++;
        }
        switch (what) {
        case C_OPEN: c->opens++; break;
        case C_READ: c->reads++; break;
        case C_WRITE: c->writes++; break;
        case C_READDIR: c->readdirs++; break;
        case C_GETATTR: c->getattrs++; break;
        case C_READLINK: c->readlinks++; break;
        }
        pthread_mutex_unlock(&counters.lock);
}

static void counters_reset(void) {
        pthread_mutex_lock(&counters.lock);
        for (size_t i = 0; i < COUNTER_BUCKETS; i++) {
                for (Counter *c = counters.buckets[i], *next; c; c = next) {
                        next = c->next;
                        free(c->path);
                        free(c);
                }
                counters.buckets[i] = NULL;
        }
        counters.n = 0;
        pthread_mutex_unlock(&counters.lock);
}

static int counter_cmp(const void *a, const void *b) {
        return strcmp((*(Counter *const *) a)->path, (*(Counter *const *) b)->path);
}

/* "# opens reads writes readdirs getattrs readlinks path" then one line per
 * path, sorted by path. */
static char *counters_text(void) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);
        if (!f)
                return xstrdup("");
        pthread_mutex_lock(&counters.lock);
        Counter **v = xcalloc(counters.n, sizeof(Counter *));
        size_t n = 0;
        for (size_t i = 0; i < COUNTER_BUCKETS; i++)
                for (Counter *c = counters.buckets[i]; c; c = c->next)
                        v[n++] = c;
        qsort(v, n, sizeof(Counter *), counter_cmp);
        fputs("# opens reads writes readdirs getattrs readlinks path\n", f);
        for (size_t i = 0; i < n; i++)
                fprintf(f, "%lu %lu %lu %lu %lu %lu %s\n", v[i]->opens, v[i]->reads, v[i]->writes,
                        v[i]->readdirs, v[i]->getattrs, v[i]->readlinks, v[i]->path);
        pthread_mutex_unlock(&counters.lock);
        free(v);
        fclose(f);
        return buf;
}

/* --------------------------------------------------------------- timers */

static struct {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        bool stopping;
        pthread_t *threads;
        size_t n;
} timers = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* Sleeps ms milliseconds; returns false early when the simulator stops. */
static bool sim_sleep(unsigned ms) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_sec += ms / 1000;
        ts.tv_nsec += (long) (ms % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
        }
        pthread_mutex_lock(&timers.lock);
        while (!timers.stopping && pthread_cond_timedwait(&timers.cond, &timers.lock, &ts) != ETIMEDOUT)
                ;
        bool ok = !timers.stopping;
        pthread_mutex_unlock(&timers.lock);
        return ok;
}

static void content_cache_flush(const void *parent);

typedef struct DelayedRegister {
        char *parent;
        unsigned ms;
} DelayedRegister;

static void *delayed_register(void *arg) {
        DelayedRegister *d = arg;
        if (sim_sleep(d->ms)) {
                pthread_rwlock_wrlock(&model_lock);
                Parent *p = parent_find(d->parent);
                if (p)
                        parent_register(p);
                pthread_rwlock_unlock(&model_lock);
                content_cache_flush(NULL);
        }
        free(d->parent);
        free(d);
        return NULL;
}

static int timer_start(const char *parent, unsigned ms) {
        DelayedRegister *d = xcalloc(1, sizeof(DelayedRegister));
        d->parent = xstrdup(parent);
        d->ms = ms;
        pthread_mutex_lock(&timers.lock);
        timers.threads = xrealloc(timers.threads, (timers.n + 1) * sizeof(pthread_t));
        int r = pthread_create(&timers.threads[timers.n], NULL, delayed_register, d);
        if (r == 0)
                timers.n++;
        pthread_mutex_unlock(&timers.lock);
        if (r != 0) {
                free(d->parent);
                free(d);
                return -r;
        }
        return 0;
}

static void timers_stop(void) {
        pthread_mutex_lock(&timers.lock);
        timers.stopping = true;
        pthread_cond_broadcast(&timers.cond);
        pthread_mutex_unlock(&timers.lock);
        for (size_t i = 0; i < timers.n; i++)
                pthread_join(timers.threads[i], NULL);
        free(timers.threads);
}

/* ------------------------------------------------------- control commands */

#define MAX_WORDS 16

/* Splits a line into words; "key=value" words stay whole. */
static size_t split_words(char *line, char *words[MAX_WORDS]) {
        size_t n = 0;
        char *save = NULL;
        for (char *w = strtok_r(line, " \t\r\n", &save); w && n < MAX_WORDS; w = strtok_r(NULL, " \t\r\n", &save))
                words[n++] = w;
        return n;
}

/* Finds "key=value" among words[from..]; NULL if absent. */
static const char *word_opt(char **words, size_t n, size_t from, const char *key) {
        size_t kl = strlen(key);
        for (size_t i = from; i < n; i++)
                if (strncmp(words[i], key, kl) == 0 && words[i][kl] == '=')
                        return words[i] + kl + 1;
        return NULL;
}

static bool words_known(char **words, size_t n, size_t from, const char *const *keys) {
        for (size_t i = from; i < n; i++) {
                bool ok = false;
                for (const char *const *k = keys; *k; k++)
                        if (strncmp(words[i], *k, strlen(*k)) == 0 && words[i][strlen(*k)] == '=')
                                ok = true;
                if (!ok)
                        return false;
        }
        return true;
}

static void set_str(char **dst, const char *src) {
        free(*dst);
        *dst = src ? xstrdup(src) : NULL;
}

static int ctl_one(char *line) {
        char *w[MAX_WORDS];
        size_t n = split_words(line, w);
        unsigned u;

        if (n == 0)
                return 0;
        if (streq(w[0], "create-fail")) {
                /* create-fail ERRNO [parent=P] [count=N] */
                static const char *const keys[] = { "parent", "count", NULL };
                const char *c = word_opt(w, n, 2, "count");
                int e = n >= 2 ? errno_from_name(w[1]) : 0;
                if (e == 0 || !words_known(w, n, 2, keys))
                        return -EINVAL;
                u = 1;
                if (c && parse_uint(c, &u) < 0)
                        return -EINVAL;
                fault.create_errno = e;
                fault.create_count = u;
                set_str(&fault.create_parent, word_opt(w, n, 2, "parent"));
                return 0;
        }
        if (streq(w[0], "remove-block")) {
                /* remove-block MS [uuid=U]: every remove blocks MS ms; 0 ends it */
                static const char *const keys[] = { "uuid", NULL };
                if (n < 2 || parse_uint(w[1], &u) < 0 || !words_known(w, n, 2, keys))
                        return -EINVAL;
                fault.remove_block_ms = u;
                set_str(&fault.remove_block_uuid, word_opt(w, n, 2, "uuid"));
                return 0;
        }
        if (streq(w[0], "remove-busy")) {
                /* remove-busy N [uuid=U]: the next N removes fail with EBUSY */
                static const char *const keys[] = { "uuid", NULL };
                if (n < 2 || parse_uint(w[1], &u) < 0 || !words_known(w, n, 2, keys))
                        return -EINVAL;
                fault.remove_busy_count = u;
                set_str(&fault.remove_busy_uuid, word_opt(w, n, 2, "uuid"));
                return 0;
        }
        if (streq(w[0], "unregister") && n == 2) {
                Parent *p = parent_find(w[1]);
                if (!p)
                        return -ENOENT;
                parent_unregister(p);
                return 0;
        }
        if (streq(w[0], "register") && (n == 2 || n == 3)) {
                static const char *const keys[] = { "after", NULL };
                const char *after = word_opt(w, n, 2, "after");
                Parent *p = parent_find(w[1]);
                if (!p)
                        return -ENOENT;
                if (!words_known(w, n, 2, keys))
                        return -EINVAL;
                if (after) {
                        if (parse_uint(after, &u) < 0)
                                return -EINVAL;
                        return timer_start(p->name, u);
                }
                parent_register(p);
                return 0;
        }
        if ((streq(w[0], "vf-open") || streq(w[0], "vf-close")) && n == 2) {
                /* a guest (QEMU) opens or closes a VF of the VFIO framework */
                Vf *v = vf_find(w[1]);
                if (!v)
                        return -ENOENT;
                v->open = streq(w[0], "vf-open");
                return 0;
        }
        if (streq(w[0], "counters-reset") && n == 1) {
                counters_reset();
                return 0;
        }
        if (streq(w[0], "faults-reset") && n == 1) {
                fault.create_count = 0;
                fault.remove_block_ms = 0;
                fault.remove_busy_count = 0;
                set_str(&fault.create_parent, NULL);
                set_str(&fault.remove_block_uuid, NULL);
                set_str(&fault.remove_busy_uuid, NULL);
                return 0;
        }
        return -EINVAL;
}

static int ctl_write(const char *buf, size_t len) {
        _cleanup_free_ char *copy = xmalloc(len + 1);
        memcpy(copy, buf, len);
        copy[len] = 0;
        char *save = NULL;
        for (char *line = strtok_r(copy, "\n;", &save); line; line = strtok_r(NULL, "\n;", &save)) {
                int r = ctl_one(line);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* .sim/state: the model in a stable form, for tests and debugging. */
static char *state_text(void) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);
        if (!f)
                return xstrdup("");
        fprintf(f, "pid %ld\n", (long) getpid());
        fprintf(f, "mdevs %u\n", model.n_mdevs);
        for (size_t i = 0; i < model.n_parents; i++) {
                Parent *p = model.parents[i];
                fprintf(f, "parent %s %s used=%u", p->name, p->registered ? "registered" : "unregistered", p->used);
                if (p->pool)
                        fprintf(f, " pool=%u/%u", p->pool_used, p->pool);
                fputc('\n', f);
        }
        for (size_t i = 0; i < model.n_pfs; i++) {
                const Pf *pf = model.pfs[i];
                for (unsigned j = 0; pf->vfio && j < pf->num; j++) {
                        const Vf *v = pf->vvfs[j];
                        fprintf(f, "vf %s pf=%s type=%s open=%d\n", v->name, pf->name, v->cur ? v->cur->id : "0",
                                v->open);
                }
        }
        fprintf(f, "fault create-fail count=%u errno=%d parent=%s\n", fault.create_count, fault.create_errno,
                strna(fault.create_parent));
        fprintf(f, "fault remove-block ms=%u uuid=%s\n", fault.remove_block_ms, strna(fault.remove_block_uuid));
        fprintf(f, "fault remove-busy count=%u uuid=%s\n", fault.remove_busy_count, strna(fault.remove_busy_uuid));
        fclose(f);
        return buf;
}

/* --------------------------------------------------------- file contents */

/* The text of a readable attribute, or NULL (and *err) when unreadable. */
static char *node_content(const Node *n) {
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
        case K_COUNTERS:
                return counters_text();
        default:
                return NULL;
        }
}

static bool node_readable(const Node *n) {
        return n->kind == K_TEXT || n->kind == K_AVAIL || n->kind == K_NUMVFS || n->kind == K_STATE ||
               n->kind == K_COUNTERS || n->kind == K_CREATABLE || n->kind == K_CURRENT || n->kind == K_VFINFO;
}

static bool node_writable(const Node *n) {
        return n->kind == K_CREATE || n->kind == K_REMOVE || n->kind == K_NUMVFS || n->kind == K_CTL ||
               n->kind == K_CURRENT;
}

/* mdev_sysfs.c remove_store(): kstrtoul(buf, 0): "1" removes, "0" does
 * nothing. Called with the write lock held; may drop it to block. */
static int mdev_write_remove(Mdev *m, const char *buf, size_t len) {
        char tmp[32];
        char uuid[UUID_LEN + 1];
        if (len == 0 || len >= sizeof(tmp))
                return -EINVAL;
        memcpy(tmp, buf, len);
        tmp[len] = 0;
        if (tmp[len - 1] == '\n')
                tmp[len - 1] = 0;
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

/* ------------------------------------------------------------ operations */

/* Entry and attribute timeouts of stable nodes; 0 with -n (no caching). */
static double stable_timeout = 86400.0;

/*
 * -c: the kernel keeps the text of attribute files in its page cache and
 * sends no open or release, so that reading an attribute costs about what
 * it costs on kernfs (a few microseconds, no daemon to ask) instead of two
 * round trips to this process. What that takes:
 *  - fixed text of stable nodes (name, description, ...) stays cached;
 *  - each available_instances whose text was sent is listed here with its
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
typedef struct CachedText {
        uint64_t ino; /* 0: a free slot */
        const void *parent;
} CachedText;
static struct {
        pthread_mutex_t lock;  /* guards the table */
        pthread_mutex_t flush; /* one flush at a time, see content_cache_flush() */
        CachedText *v;
        size_t size, n; /* open addressing, size a power of two, n < size / 2 */
} content_cache = {
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

static struct fuse_session *session;
static struct timespec start_time;

/* After a change of the model, without the model lock: the kernel waits
 * for a read in flight on a page it drops, and that read needs the lock.
 * parent: the one whose texts changed, NULL for all. Holding .flush across
 * the whole flush makes a second writer whose entries the first one took
 * wait until the kernel has dropped them. */
static void content_cache_flush(const void *parent) {
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
        if (h->prev)
                h->prev->next = h->next;
        else
                handles = h->next;
        if (h->next)
                h->next->prev = h->prev;
        pthread_mutex_unlock(&handles_lock);
        free(h->text);
        dirsnap_free(h->dir);
        free(h);
}

static void handles_free_all(void) {
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

static const struct fuse_lowlevel_ops sim_ops = {
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

/* -------------------------------------------------------------- topology */

/* Splits a topology line into words. A word may be quoted ("a b") or
 * key="a b"; quotes are removed. Returns -1 on an unterminated quote. */
static int topo_words(char *line, char *words[MAX_WORDS], size_t *ret_n) {
        size_t n = 0;
        char *p = line;
        for (;;) {
                while (*p == ' ' || *p == '\t')
                        p++;
                if (!*p || *p == '\n' || *p == '#')
                        break;
                if (n == MAX_WORDS)
                        return -1;
                words[n++] = p;
                char *out = p;
                bool quoted = false;
                while (*p && (quoted || (*p != ' ' && *p != '\t' && *p != '\n'))) {
                        if (*p == '"')
                                quoted = !quoted;
                        else
                                *out++ = *p;
                        p++;
                }
                if (quoted)
                        return -1;
                bool end = !*p;
                if (!end)
                        p++;
                *out = 0;
                if (end)
                        break;
        }
        *ret_n = n;
        return 0;
}

static bool name_ok(const char *s) {
        return *s && !strchr(s, '/') && !streq(s, ".") && !streq(s, "..") && strlen(s) < 128;
}

static TypeSet *set_find(const char *name) {
        for (size_t i = 0; i < model.n_sets; i++)
                if (streq(model.sets[i]->name, name))
                        return model.sets[i];
        return NULL;
}

static int topo_fail(const char *file, unsigned line, const char *what) {
        fprintf(stderr, "mdev-sysfs-sim: %s:%u: %s\n", file, line, what);
        return -EINVAL;
}

static int topo_load(const char *file) {
        _cleanup_fclose_ FILE *f = fopen(file, "re");
        _cleanup_free_ char *line = NULL;
        size_t cap = 0;
        unsigned lineno = 0;
        TypeSet *cur = NULL;

        if (!f) {
                fprintf(stderr, "mdev-sysfs-sim: cannot open topology '%s': %s\n", file, strerror(errno));
                return -errno;
        }
        while (getline(&line, &cap, f) >= 0) {
                char *w[MAX_WORDS];
                size_t n;
                unsigned u;

                lineno++;
                if (topo_words(line, w, &n) < 0)
                        return topo_fail(file, lineno, "unterminated quote or too many words");
                if (n == 0)
                        continue;
                if (streq(w[0], "types")) {
                        if (cur || n != 2 || !name_ok(w[1]) || set_find(w[1]))
                                return topo_fail(file, lineno, "expected: types NAME (new, outside another types block)");
                        cur = xcalloc(1, sizeof(TypeSet));
                        cur->name = xstrdup(w[1]);
                        model.sets = xrealloc(model.sets, (model.n_sets + 1) * sizeof(TypeSet *));
                        model.sets[model.n_sets++] = cur;
                } else if (streq(w[0], "end")) {
                        if (!cur || n != 1)
                                return topo_fail(file, lineno, "'end' without 'types'");
                        if (cur->n == 0)
                                return topo_fail(file, lineno, "a types block needs at least one type");
                        cur = NULL;
                } else if (streq(w[0], "type")) {
                        static const char *const keys[] = { "instances", "ports", "device_api", "name",
                                                            "description", "framebuffer", NULL };
                        if (!cur || n < 2 || !name_ok(w[1]))
                                return topo_fail(file, lineno, "expected: type ID key=value... inside a types block");
                        if (!words_known(w, n, 2, keys))
                                return topo_fail(file, lineno, "unknown key for type");
                        for (size_t i = 0; i < cur->n; i++)
                                if (streq(cur->types[i].id, w[1]))
                                        return topo_fail(file, lineno, "duplicate type");
                        cur->types = xrealloc(cur->types, (cur->n + 1) * sizeof(TypeDef));
                        TypeDef *d = &cur->types[cur->n++];
                        memset(d, 0, sizeof(*d));
                        d->id = xstrdup(w[1]);
                        d->name = xstrdup(word_opt(w, n, 2, "name"));
                        d->description = xstrdup(word_opt(w, n, 2, "description"));
                        const char *api = word_opt(w, n, 2, "device_api");
                        d->device_api = xstrdup(api ? api : "vfio-pci");
                        const char *v = word_opt(w, n, 2, "instances");
                        if (v && parse_uint(v, &d->instances) < 0)
                                return topo_fail(file, lineno, "instances: not a number");
                        v = word_opt(w, n, 2, "framebuffer");
                        if (v && (parse_uint(v, &d->fb) < 0 || d->fb == 0))
                                return topo_fail(file, lineno, "framebuffer: MiB, a positive number");
                        d->ports = 1;
                        v = word_opt(w, n, 2, "ports");
                        if (v && (parse_uint(v, &d->ports) < 0 || d->ports == 0))
                                return topo_fail(file, lineno, "ports: not a positive number");
                } else if (streq(w[0], "parent")) {
                        static const char *const keys[] = { "types", "devpath", "pool", "onetype", "errno",
                                                            "registered", NULL };
                        if (cur || n < 2 || !name_ok(w[1]))
                                return topo_fail(file, lineno, "expected: parent NAME types=SET key=value...");
                        if (!words_known(w, n, 2, keys))
                                return topo_fail(file, lineno, "unknown key for parent");
                        if (parent_find(w[1]))
                                return topo_fail(file, lineno, "duplicate parent");
                        const char *sn = word_opt(w, n, 2, "types");
                        const TypeSet *set = sn ? set_find(sn) : NULL;
                        if (!set)
                                return topo_fail(file, lineno, "types=SET names no types block defined above");
                        const char *devpath = word_opt(w, n, 2, "devpath");
                        if (!devpath && !name_is_pci(w[1]))
                                return topo_fail(file, lineno, "a parent that is not a PCI address needs devpath=");
                        if (devpath && (!*devpath || devpath[0] == '/' || strstr(devpath, "..")))
                                return topo_fail(file, lineno, "devpath must be relative to devices/");
                        Parent *p = parent_new(w[1], devpath, set);
                        const char *v = word_opt(w, n, 2, "pool");
                        if (v && parse_uint(v, &p->pool) < 0)
                                return topo_fail(file, lineno, "pool: not a number");
                        v = word_opt(w, n, 2, "onetype");
                        if (v && parse_uint(v, &u) < 0)
                                return topo_fail(file, lineno, "onetype: 0 or 1");
                        p->onetype = v && u;
                        v = word_opt(w, n, 2, "errno");
                        if (v && (p->nospace_errno = errno_from_name(v)) == 0)
                                return topo_fail(file, lineno, "errno: unknown errno name");
                        v = word_opt(w, n, 2, "registered");
                        u = 1;
                        if (v && parse_uint(v, &u) < 0)
                                return topo_fail(file, lineno, "registered: 0 or 1");
                        p->start_registered = u;
                } else if (streq(w[0], "sriov")) {
                        static const char *const keys[] = { "types", "devpath", "totalvfs", "numvfs", "errno",
                                                            "onetype", NULL };
                        if (cur || n < 2 || !name_is_pci(w[1]))
                                return topo_fail(file, lineno, "expected: sriov PCI-ADDRESS totalvfs=N types=SET ...");
                        if (!words_known(w, n, 2, keys))
                                return topo_fail(file, lineno, "unknown key for sriov");
                        const char *sn = word_opt(w, n, 2, "types");
                        const TypeSet *set = sn ? set_find(sn) : NULL;
                        if (!set)
                                return topo_fail(file, lineno, "types=SET names no types block defined above");
                        Pf *pf = xcalloc(1, sizeof(Pf));
                        model.pfs = xrealloc(model.pfs, (model.n_pfs + 1) * sizeof(Pf *));
                        model.pfs[model.n_pfs++] = pf;
                        pf->name = xstrdup(w[1]);
                        const char *devpath = word_opt(w, n, 2, "devpath");
                        pf->devpath = devpath ? xstrdup(devpath) : pci_devpath(w[1]);
                        pf->vf_set = set;
                        pf->vf_errno = ENOSPC;
                        pf->vf_onetype = true;
                        const char *v = word_opt(w, n, 2, "totalvfs");
                        if (!v || parse_uint(v, &pf->total) < 0 || pf->total == 0 || pf->total > 252)
                                return topo_fail(file, lineno, "totalvfs: 1..252 required");
                        v = word_opt(w, n, 2, "numvfs");
                        pf->num = 0;
                        if (v && (parse_uint(v, &u) < 0 || u > pf->total))
                                return topo_fail(file, lineno, "numvfs: 0..totalvfs");
                        pf->start_num = v ? u : 0;
                        v = word_opt(w, n, 2, "errno");
                        if (v && (pf->vf_errno = errno_from_name(v)) == 0)
                                return topo_fail(file, lineno, "errno: unknown errno name");
                        v = word_opt(w, n, 2, "onetype");
                        if (v && parse_uint(v, &u) < 0)
                                return topo_fail(file, lineno, "onetype: 0 or 1");
                        if (v)
                                pf->vf_onetype = u;
                } else if (streq(w[0], "vfio")) {
                        /* vfio PF-ADDRESS totalvfs=N [numvfs=N] types=SET framebuffer=MiB [devpath=] */
                        static const char *const keys[] = { "types", "devpath", "totalvfs", "numvfs",
                                                            "framebuffer", NULL };
                        if (cur || n < 2 || !name_is_pci(w[1]))
                                return topo_fail(file, lineno, "expected: vfio PCI-ADDRESS totalvfs=N types=SET framebuffer=MiB ...");
                        if (!words_known(w, n, 2, keys))
                                return topo_fail(file, lineno, "unknown key for vfio");
                        const char *sn = word_opt(w, n, 2, "types");
                        const TypeSet *set = sn ? set_find(sn) : NULL;
                        if (!set)
                                return topo_fail(file, lineno, "types=SET names no types block defined above");
                        for (size_t i = 0; i < set->n; i++) {
                                const char *id = set->types[i].id;
                                if (set->types[i].fb == 0 || strspn(id, "0123456789") != strlen(id) || atoi(id) <= 0)
                                        return topo_fail(file, lineno, "vfio: every type needs a numeric ID and framebuffer=");
                        }
                        Pf *pf = xcalloc(1, sizeof(Pf));
                        model.pfs = xrealloc(model.pfs, (model.n_pfs + 1) * sizeof(Pf *));
                        model.pfs[model.n_pfs++] = pf;
                        pf->name = xstrdup(w[1]);
                        pf->vfio = true;
                        const char *devpath = word_opt(w, n, 2, "devpath");
                        pf->devpath = devpath ? xstrdup(devpath) : pci_devpath(w[1]);
                        pf->vf_set = set;
                        const char *v = word_opt(w, n, 2, "totalvfs");
                        if (!v || parse_uint(v, &pf->total) < 0 || pf->total == 0 || pf->total > 252)
                                return topo_fail(file, lineno, "totalvfs: 1..252 required");
                        v = word_opt(w, n, 2, "numvfs");
                        if (v && (parse_uint(v, &u) < 0 || u > pf->total))
                                return topo_fail(file, lineno, "numvfs: 0..totalvfs");
                        pf->start_num = v ? u : 0;
                        v = word_opt(w, n, 2, "framebuffer");
                        if (!v || parse_uint(v, &pf->fb) < 0 || pf->fb == 0)
                                return topo_fail(file, lineno, "framebuffer: the GPU's MiB, required");
                } else if (streq(w[0], "mdev_bus")) {
                        /* mdev_bus absent: no class/mdev_bus and no bus/mdev (a VFIO-only host) */
                        if (n != 2 || !streq(w[1], "absent"))
                                return topo_fail(file, lineno, "expected: mdev_bus absent");
                        model.no_mdev_bus = true;
                } else
                        return topo_fail(file, lineno, "unknown statement (types, type, end, parent, sriov, vfio, mdev_bus)");
        }
        if (cur)
                return topo_fail(file, lineno, "types block without 'end'");
        if (model.n_parents == 0 && model.n_pfs == 0)
                return topo_fail(file, lineno, "no parent and no sriov statement");
        if (model.no_mdev_bus && model.n_parents > 0)
                return topo_fail(file, lineno, "mdev_bus absent, but the topology has mdev parents");
        for (size_t i = 0; i < model.n_pfs; i++)
                if (model.no_mdev_bus && !model.pfs[i]->vfio)
                        return topo_fail(file, lineno, "mdev_bus absent, but an sriov PF has mdev VFs");
        return 0;
}

static void topo_build(void) {
        tree.size = 1024;
        tree.buckets = xcalloc(tree.size, sizeof(Node *));
        tree.root = node_add(NULL, "", K_DIR, S_IFDIR | 0755);
        model.devices = node_dir(tree.root, "devices");
        if (!model.no_mdev_bus) {
                model.class_mdev_bus = node_mkdir_p(tree.root, "class/mdev_bus");
                model.bus_mdev_devices = node_mkdir_p(tree.root, "bus/mdev/devices");
        }
        model.bus_pci_devices = node_mkdir_p(tree.root, "bus/pci/devices");
        Node *ctl = node_dir(tree.root, ".sim");
        ctl->hidden = true;
        node_attr(ctl, "ctl", K_CTL, 0200, NULL);
        node_attr(ctl, "counters", K_COUNTERS, 0444, NULL);
        node_attr(ctl, "state", K_STATE, 0444, NULL);

        size_t n = model.n_parents;
        for (size_t i = 0; i < n; i++) {
                Parent *p = model.parents[i];
                if (p->start_registered || !parent_device_follows_registration(p))
                        p->dev = device_add(p->name, p->devpath);
                if (p->start_registered)
                        parent_register(p);
        }
        for (size_t i = 0; i < model.n_pfs; i++) {
                Pf *pf = model.pfs[i];
                pf->dev = device_add(pf->name, pf->devpath);
                if (pf->vfio) {
                        _cleanup_free_ char *up = up_to_root(pf->devpath);
                        node_mkdir_p(tree.root, "bus/pci/drivers/nvidia");
                        node_link(pf->dev, "driver", xasprintf("%sbus/pci/drivers/nvidia", up));
                        node_text(pf->dev, "vendor", "0x10de");
                }
                _cleanup_free_ char *total = xasprintf("%u", pf->total);
                node_text(pf->dev, "sriov_totalvfs", total);
                node_attr(pf->dev, "sriov_numvfs", K_NUMVFS, 0644, pf);
                if (pf->start_num)
                        pf_enable(pf, pf->start_num);
        }
}

static void model_free(void) {
        for (size_t i = 0; i < model.n_pfs; i++) {
                Pf *pf = model.pfs[i];
                for (unsigned j = 0; pf->vfio && j < pf->num; j++)
                        vf_free(pf->vvfs[j]);
                free(pf->vvfs);
                free(pf->vfs);
                free(pf->name);
                free(pf->devpath);
                free(pf);
        }
        for (size_t i = 0; i < model.n_parents; i++)
                parent_free(model.parents[i]);
        for (size_t i = 0; i < model.n_sets; i++) {
                TypeSet *s = model.sets[i];
                for (size_t j = 0; j < s->n; j++) {
                        free(s->types[j].id);
                        free(s->types[j].name);
                        free(s->types[j].description);
                        free(s->types[j].device_api);
                }
                free(s->types);
                free(s->name);
                free(s);
        }
        free(model.pfs);
        free(model.parents);
        free(model.sets);
        /* mdevs are owned by the tree's nodes: free them through it */
        if (model.bus_mdev_devices)
                for (Node *c = model.bus_mdev_devices->first; c; c = c->next)
                        free(c->obj);
        node_free(tree.root);
        limbo_free();
        handles_free_all();
        free(tree.buckets);
        set_str(&fault.create_parent, NULL);
        set_str(&fault.remove_block_uuid, NULL);
        set_str(&fault.remove_busy_uuid, NULL);
        counters_reset();
}

/* ------------------------------------------------------------------ main */

static int client_ctl(const char *mountpoint, int argc, char **argv) {
        _cleanup_free_ char *path = xasprintf("%s/.sim/ctl", mountpoint);
        size_t len = 0;
        for (int i = 0; i < argc; i++)
                len += strlen(argv[i]) + 1;
        _cleanup_free_ char *cmd = xcalloc(1, len + 1);
        for (int i = 0; i < argc; i++) {
                strcat(cmd, argv[i]);
                strcat(cmd, i + 1 < argc ? " " : "\n");
        }
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0 || write(fd, cmd, strlen(cmd)) < 0) {
                fprintf(stderr, "mdev-sysfs-sim: %s: %s: %s\n", path, cmd, strerror(errno));
                return 1;
        }
        return 0;
}

static int client_cat(const char *mountpoint, const char *file) {
        _cleanup_free_ char *path = xasprintf("%s/.sim/%s", mountpoint, file);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        char buf[65536];
        ssize_t k;
        if (fd < 0) {
                fprintf(stderr, "mdev-sysfs-sim: %s: %s\n", path, strerror(errno));
                return 1;
        }
        while ((k = read(fd, buf, sizeof(buf))) > 0)
                if (fwrite(buf, 1, (size_t) k, stdout) != (size_t) k)
                        return 1;
        return k < 0 ? 1 : 0;
}

static void usage(FILE *f) {
        fputs("usage: mdev-sysfs-sim [-f] [-d] [-n | -c] TOPOLOGY MOUNTPOINT\n"
              "       mdev-sysfs-sim --ctl MOUNTPOINT COMMAND [ARGS...]\n"
              "       mdev-sysfs-sim --counters MOUNTPOINT\n"
              "       mdev-sysfs-sim --state MOUNTPOINT\n"
              "       mdev-sysfs-sim --check TOPOLOGY\n"
              "-f stays in the foreground, -d also prints FUSE debug output,\n"
              "-n lets the kernel cache nothing (by default it may cache the stable\n"
              "entries, and is told to forget each one that goes away),\n"
              "-c lets it cache the text of attribute files too and sends no open,\n"
              "like kernfs' cost (dropped on each change; opens and reads served\n"
              "from that cache are not counted).\n"
              "Commands: see tests/sim/README.md.\n",
              f);
}

int main(int argc, char **argv) {
        bool foreground = false, debug = false;
        int i = 1;

        if (argc >= 3 && streq(argv[1], "--ctl") && argc >= 4)
                return client_ctl(argv[2], argc - 3, argv + 3);
        if (argc == 3 && streq(argv[1], "--counters"))
                return client_cat(argv[2], "counters");
        if (argc == 3 && streq(argv[1], "--state"))
                return client_cat(argv[2], "state");
        if (argc == 3 && streq(argv[1], "--check")) {
                int r = topo_load(argv[2]);
                if (r >= 0) {
                        topo_build();
                        printf("%s: %zu parents, %zu nodes\n", argv[2], model.n_parents, tree.count);
                }
                model_free();
                return r < 0 ? 2 : 0;
        }
        if (argc == 2 && (streq(argv[1], "--help") || streq(argv[1], "-h"))) {
                usage(stdout);
                return 0;
        }
        for (; i < argc && argv[i][0] == '-'; i++) {
                if (streq(argv[i], "-f"))
                        foreground = true;
                else if (streq(argv[i], "-d"))
                        foreground = debug = true;
                else if (streq(argv[i], "-n"))
                        stable_timeout = 0.0;
                else if (streq(argv[i], "-c"))
                        cache_content = true;
                else {
                        usage(stderr);
                        return 2;
                }
        }
        if (argc - i != 2 || (cache_content && stable_timeout == 0.0)) {
                usage(stderr);
                return 2;
        }
        const char *topology = argv[i];
        /* absolute: fuse_daemonize() changes to / and the unmount at exit
         * must still find the mount point */
        _cleanup_free_ char *mountpoint = realpath(argv[i + 1], NULL);
        if (!mountpoint) {
                fprintf(stderr, "mdev-sysfs-sim: mount point '%s': %s\n", argv[i + 1], strerror(errno));
                return 1;
        }

        pthread_rwlockattr_t rwa;
        pthread_rwlockattr_init(&rwa);
        /* 32 hooks read in parallel: do not let them starve a create */
        pthread_rwlockattr_setkind_np(&rwa, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
        pthread_rwlock_init(&model_lock, &rwa);
        pthread_rwlockattr_destroy(&rwa);
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&timers.cond, &ca);
        pthread_condattr_destroy(&ca);

        if (topo_load(topology) < 0) {
                model_free();
                return 2;
        }
        topo_build();

        clock_gettime(CLOCK_REALTIME, &start_time);
        /* The daemon outlives its caller: keep none of the caller's file
         * descriptors (bats waits for EOF on its fd 3). */
        if (!foreground)
                (void) close_range(3, ~0U, 0);

        struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
        fuse_opt_add_arg(&args, argv[0]);
        fuse_opt_add_arg(&args, "-o");
        fuse_opt_add_arg(&args, geteuid() == 0 ? "fsname=mdev-sysfs-sim,subtype=mdev-sysfs-sim,allow_other"
                                               : "fsname=mdev-sysfs-sim,subtype=mdev-sysfs-sim");
        if (debug)
                fuse_opt_add_arg(&args, "-d");
        struct fuse_session *se = fuse_session_new(&args, &sim_ops, sizeof(sim_ops), NULL);
        fuse_opt_free_args(&args);
        if (!se) {
                model_free();
                return 1;
        }
        if (fuse_session_mount(se, mountpoint) != 0) {
                fuse_session_destroy(se);
                model_free();
                return 1;
        }
        /* The mount exists now; the parent returns once the child is set up. */
        if (fuse_daemonize(foreground) != 0) {
                fuse_session_unmount(se);
                fuse_session_destroy(se);
                model_free();
                return 1;
        }
        session = se;
        fuse_set_signal_handlers(se);
        struct fuse_loop_config *lc = fuse_loop_cfg_create();
        fuse_loop_cfg_set_max_threads(lc, 256);
        fuse_loop_cfg_set_idle_threads(lc, 8);
        /* Ends on unmount (or on SIGTERM/SIGINT, e.g. when a copy of the
         * mount in another mount namespace keeps it alive). Either way the
         * simulator is done: its status is not an error. */
        (void) fuse_session_loop_mt(se, lc);
        fuse_loop_cfg_destroy(lc);
        timers_stop();
        session = NULL;
        fuse_remove_signal_handlers(se);
        fuse_session_unmount(se);
        fuse_session_destroy(se);
        model_free();
        free(content_cache.v);
        pthread_rwlock_destroy(&model_lock);
        pthread_cond_destroy(&timers.cond);
        return 0;
}
