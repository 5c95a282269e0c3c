/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* mdev-sysfs-sim: what its files share (tests/sim/README.md lists them). */
#pragma once

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
#define WRITE_TEXT_MAX 32

/* Takes x out of a doubly linked list (prev, next) that starts at head. */
#define LIST_UNLINK(head, x)                            \
        do {                                            \
                if ((x)->prev)                          \
                        (x)->prev->next = (x)->next;    \
                else                                    \
                        (head) = (x)->next;             \
                if ((x)->next)                          \
                        (x)->next->prev = (x)->prev;    \
        } while (0)

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
        K_PARTITION, /* a GIM PF's partition attribute: a write "succeeds" and changes nothing (sim-amd.c) */
        K_XEADMIN,   /* an xe PF's sriov_admin/vfN/ attribute: profile/... or stop (sim-xe.c) */
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

struct Tree {
        Node **buckets;
        size_t size; /* power of two */
        size_t count;
        uint64_t next_ino;
        Node *root;
};

typedef struct Inval {
        uint64_t parent;
        char *name;
} Inval;

typedef struct InvalList {
        Inval *v;
        size_t n;
} InvalList;

typedef struct TypeDef {
        char *id;
        char *name;        /* NULL: no "name" file */
        char *description; /* NULL: no "description" file */
        char *device_api;
        unsigned instances; /* 0: limited by the pool only */
        unsigned ports;     /* cost against the parent's pool */
        unsigned fb;        /* VFIO vGPU types: framebuffer in MiB (framebuffer=) */
        unsigned gi_slices; /* MIG-backed: the slices of the GPU instance it sits in (gi=); 0: time-sliced */
        unsigned per_gi;    /* MIG-backed: vGPUs of this type one GPU instance holds (per_gi=, default 1) */
} TypeDef;

typedef struct TypeSet {
        char *name;
        TypeDef *types;
        size_t n;
} TypeSet;

typedef struct Parent Parent;
typedef struct Pf Pf;

#define MAX_GIS 8
#define GI_PROFILE_MAX 16
/* A MIG GPU instance: its ID and the profile it was made with ("1g.24gb"). */
typedef struct GpuInstance {
        unsigned id;
        unsigned slices;
        char profile[GI_PROFILE_MAX];
} GpuInstance;
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

/* A kind of VF that carries a vGPU through attributes of its own: the
 * names its driver gives them (sim-vfio.c: NVIDIA's; sim-fake.c: the fake
 * kind the tests' fake backend drives, lib/backend-fake.c). */
typedef struct VfModel {
        const char *statement;  /* the topology's: "vfio" */
        const char *driver;     /* bus/pci/drivers/<driver> */
        const char *vendor;     /* "0x10de" */
        const char *dir;        /* <VF>/<dir>/ */
        const char *creatable;  /* "creatable_vgpu_types" */
        const char *current;    /* "current_vgpu_type" */
        bool info;              /* gpu_instance_id, placement_id, vgpu_params, warm_update */
        const char *pf_driver;  /* the PF's driver: "nvidia" */
        const char *pf_vendor;  /* the PF's vendor: "0x10de" */
        const char *device;     /* the VFs' PCI device ID, NULL: no device file */
        int numvfs_errno;       /* a write to sriov_numvfs fails so (GIM: ENOENT), 0: the PCI core's */
        void (*pf_build)(Pf *pf); /* adds the PF's own attributes, NULL: none */
        int (*numvfs_check)(const Pf *pf, unsigned long n); /* an errno for the write, 0: go on */
        void (*enabled)(Pf *pf);  /* after the VFs appear */
        void (*disabling)(Pf *pf); /* before they go */
        void (*pf_free)(Pf *pf);
} VfModel;
extern const VfModel vf_model_nvidia, vf_model_fake, vf_model_amdgim, vf_model_xe;

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
        const VfModel *vfm; /* vfio: whose VFs (NVIDIA's, or the fake kind's) */
        unsigned fb; /* the GPU's framebuffer in MiB */
        Vf **vvfs;   /* num entries */
        /* NVIDIA's modes (sim-nvmodes.c): what the GPU can (topology) and
         * what it is in now; all lost at a "reboot". */
        bool mig_cap, het_cap;  /* mig=1, heterogeneous=1 */
        unsigned mig_slices;    /* slices=N: the GPU's MIG slices */
        bool mig, het;          /* MIG mode, heterogeneous (mixed-size) mode */
        unsigned unbind_busy;   /* the next N sriov-manage runs find the unbind lock held */
        GpuInstance gis[MAX_GIS];
        unsigned n_gis, next_gi;
        char *partition; /* amdgim: the spatial partition mode ("CPX") */
        struct XeAdmin *xe; /* xe: sriov_admin/ (sim-xe.c) */
        char *device; /* its PCI device ID and its VFs' (xe device=), NULL: the model's */
};

/* A VF of a vfio PF: one vGPU at most, programmed through current_vgpu_type. */
struct Vf {
        char *name;
        Pf *pf;
        Node *dev;
        unsigned index;      /* N of virtfnN */
        const TypeDef *cur;  /* the vGPU type it carries, NULL: none */
        bool open;           /* a guest (QEMU) holds it open: "vf-open" */
        unsigned gi;         /* MIG: the GPU instance its vGPU sits in */
        unsigned placement;  /* where the driver put its vGPU */
};

typedef struct Mdev {
        char uuid[UUID_LEN + 1];
        Type *type;
        Node *dir, *bus_link, *type_link;
        bool removing;
} Mdev;

struct Model {
        TypeSet **sets;
        size_t n_sets;
        Parent **parents;
        size_t n_parents;
        Pf **pfs;
        size_t n_pfs;
        Node *class_mdev_bus, *bus_mdev_devices, *bus_pci_devices, *devices;
        unsigned n_mdevs;
        bool no_mdev_bus;   /* "mdev_bus absent": no class/mdev_bus, no bus/mdev */
        struct SimNuma { char *dev; int node; } *numa; /* "numa DEVICE N" statements */
        size_t n_numa;
        unsigned n_vfio_dev; /* vfio-dev/vfioN numbers handed out */
};

/* Faults, guarded by the model lock. */
struct Fault {
        int create_errno;
        unsigned create_count;
        char *create_parent; /* NULL: any */
        unsigned remove_block_ms;
        char *remove_block_uuid; /* NULL: any */
        unsigned remove_busy_count;
        char *remove_busy_uuid;
};

enum { C_OPEN, C_READ, C_WRITE, C_READDIR, C_GETATTR, C_READLINK };

struct Timers {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        bool stopping;
        pthread_t *threads;
        size_t n;
};

#define MAX_WORDS 16

typedef struct CachedText {
        uint64_t ino; /* 0: a free slot */
        const void *parent;
} CachedText;
struct ContentCache {
        pthread_mutex_t lock;  /* guards the table */
        pthread_mutex_t flush; /* one flush at a time, see content_cache_flush() */
        CachedText *v;
        size_t size, n; /* open addressing, size a power of two, n < size / 2 */
};

/* sim-util.c */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
FILE *xopen_memstream(char **buf, size_t *size);
char *xstrdup(const char *s);
_printf_(1, 2) char *xasprintf(const char *fmt, ...);
int errno_from_name(const char *s);
int write_text(const char *buf, size_t len, char tmp[static WRITE_TEXT_MAX]);
int parse_uint(const char *s, unsigned *ret);
bool uuid_parse36(const char *buf, char out[UUID_LEN + 1]);

/* sim-tree.c */
extern struct Tree tree;
extern pthread_mutex_t life_lock;
extern __thread InvalList *inval_pending;
extern bool cache_content;
size_t node_hash(const Node *parent, const char *name, size_t len);
Node *node_child(const Node *dir, const char *name, size_t len);
Node *node_add(Node *dir, const char *name, NodeKind kind, mode_t mode);
Node *node_dir(Node *dir, const char *name);
Node *node_link(Node *dir, const char *name, char *target_owned);
Node *node_text(Node *dir, const char *name, const char *text);
Node *node_attr(Node *dir, const char *name, NodeKind kind, mode_t perm, void *obj);
uint64_t node_id(const Node *n);
void node_free(Node *n);
void node_forget(Node *n, uint64_t k);
void limbo_free(void);
Node *node_mkdir_p(Node *dir, const char *path);

/* sim-model.c */
extern struct Model model;
extern struct Fault fault;
extern pthread_rwlock_t model_lock;
unsigned type_available(const Type *t);
Parent *parent_find(const char *name);
Mdev *mdev_find(const char *uuid);
void mdev_destroy(Mdev *m);
int mdev_create(Type *t, const char *buf, size_t len);
bool parent_device_follows_registration(const Parent *p);
void parent_register(Parent *p);
void parent_unregister(Parent *p);
bool name_is_pci(const char *s);
char *pci_devpath(const char *addr);
Node *device_add(const char *name, const char *devpath);
/* device_add() of a device on the NUMA node of node_of (a VF: its PF's). */
Node *device_add_on(const char *name, const char *devpath, const char *node_of);
/* The node a "numa" statement gives the PCI device name, -1 when none does. */
int numa_of(const char *name);
void device_del(const char *name, Node *dev);
Parent *parent_new(const char *name, const char *devpath, const TypeSet *set);
void parent_free(Parent *p);
void parent_forget(Parent *p);
char *vf_address(const Pf *pf, unsigned i);

/* sim-vfio.c */
char *vf_creatable_text(const Vf *v);
char *vf_info_text(const Node *n);
int vf_write_current(Vf *v, const char *buf, size_t len);
char *up_to_root(const char *devpath);
Vf *vf_find(const char *name);
void pf_enable(Pf *pf, unsigned n);
void vf_free(Vf *v);
int pf_write_numvfs(Pf *pf, const char *buf);
void pf_disable(Pf *pf);

/* sim-nvmodes.c */
bool nvmode_can_create(const Vf *v, const TypeDef *d, unsigned *ret_gi);
void nvmode_created(Vf *v, const TypeDef *d, unsigned gi);
int nvmode_ctl(char **w, size_t n);
int xe_ctl(char **w, size_t n);
void nvmode_state(FILE *f);
const char *nvmode_topology(Pf *pf, char **w, size_t n);

/* sim-amd.c */
const char *stmt_amdgim(char **w, size_t n, const TypeSet *cur);
int partition_write(Pf *pf, const char *buf, size_t len);

/* sim-xe.c */
const char *stmt_xe(char **w, size_t n, const TypeSet *cur);
char *xe_admin_text(const Node *n);
int xe_admin_write(const Node *n, const char *buf, size_t len);

/* sim-counters.c */
void count(const char *path, int what);
void counters_reset(void);
char *counters_text(void);

/* sim-timers.c */
extern struct Timers timers;
bool sim_sleep(unsigned ms);
int timer_start(const char *parent, unsigned ms);
void timers_stop(void);

/* sim-ctl.c */
const char *word_opt(char **words, size_t n, size_t from, const char *key);
bool words_known(char **words, size_t n, size_t from, const char *const *keys);
void set_str(char **dst, const char *src);
int ctl_write(const char *buf, size_t len);
char *state_text(void);

/* sim-content.c */
char *node_content(const Node *n);
bool node_readable(const Node *n);
bool node_writable(const Node *n);
int mdev_write_remove(Mdev *m, const char *buf, size_t len);

/* sim-fuse.c */
extern double stable_timeout;
extern struct ContentCache content_cache;
extern struct fuse_session *session;
extern struct timespec start_time;
extern const struct fuse_lowlevel_ops sim_ops;
void content_cache_flush(const void *parent);
void handles_free_all(void);

/* sim-topology.c */
int topo_load(const char *file);
void topo_build(void);
void model_free(void);
