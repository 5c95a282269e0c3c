/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mdev-sysfs-sim: the mdev model: parents, types and mdevs, create and
 * remove, registration, PCI devices.
 */
#include "sim.h"

struct Model model;
struct Fault fault;

pthread_rwlock_t model_lock;

unsigned type_available(const Type *t) {
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

Parent *parent_find(const char *name) {
        for (size_t i = 0; i < model.n_parents; i++)
                if (streq(model.parents[i]->name, name))
                        return model.parents[i];
        return NULL;
}

Mdev *mdev_find(const char *uuid) {
        Node *n = node_child(model.bus_mdev_devices, uuid, strlen(uuid));
        return n ? n->obj : NULL;
}

void mdev_destroy(Mdev *m) {
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

int mdev_create(Type *t, const char *buf, size_t len) {
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

/* A virtual parent (mtty) is a device its module creates just before it
 * registers and deletes just after it unregisters; a PCI device stays. */
bool parent_device_follows_registration(const Parent *p) {
        return !name_is_pci(p->name);
}

void parent_register(Parent *p) {
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

void parent_unregister(Parent *p) {
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

bool name_is_pci(const char *s) {
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

char *pci_devpath(const char *addr) {
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

int numa_of(const char *name) {
        for (size_t i = 0; i < model.n_numa; i++)
                if (streq(model.numa[i].dev, name))
                        return model.numa[i].node;
        return -1;
}

/* Creates the device directory (and bus/pci/devices link and numa_node, as
 * the kernel shows it: -1 without a node, for PCI). */
Node *device_add_on(const char *name, const char *devpath, const char *node_of) {
        Node *dev = node_mkdir_p(model.devices, devpath);
        if (name_is_pci(name)) {
                node_link(model.bus_pci_devices, name, xasprintf("../../../devices/%s", devpath));
                if (!node_child(dev, "numa_node", strlen("numa_node"))) {
                        _cleanup_free_ char *node = xasprintf("%d", numa_of(node_of));
                        node_text(dev, "numa_node", node);
                }
        }
        if (!node_child(dev, "subsystem", strlen("subsystem")))
                device_subsystem_link(dev, name, devpath);
        return dev;
}

Node *device_add(const char *name, const char *devpath) {
        return device_add_on(name, devpath, name);
}

void device_del(const char *name, Node *dev) {
        if (name_is_pci(name))
                node_free(node_child(model.bus_pci_devices, name, strlen(name)));
        node_free(dev);
}

Parent *parent_new(const char *name, const char *devpath, const TypeSet *set) {
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

void parent_free(Parent *p) {
        free(p->name);
        free(p->devpath);
        free(p->types);
        free(p);
}

void parent_forget(Parent *p) {
        for (size_t i = 0; i < model.n_parents; i++)
                if (model.parents[i] == p) {
                        memmove(&model.parents[i], &model.parents[i + 1],
                                (model.n_parents - i - 1) * sizeof(Parent *));
                        model.n_parents--;
                        break;
                }
        parent_free(p);
}

char *vf_address(const Pf *pf, unsigned i) {
        unsigned dom, bus, slot, fn;
        if (sscanf(pf->name, "%4x:%2x:%2x.%1x", &dom, &bus, &slot, &fn) != 4)
                return NULL;
        /* First VF offset 4, stride 1, as on NVIDIA's SR-IOV GPUs. */
        unsigned devfn = (slot << 3 | fn) + 4 + i;
        bus += devfn >> 8;
        devfn &= 0xff;
        return xasprintf("%04x:%02x:%02x.%x", dom, bus & 0xff, devfn >> 3, devfn & 7);
}
