/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mdev-sysfs-sim: NVIDIA's vendor-specific VFIO framework (VFs carrying
 * one vGPU each) and SR-IOV (sriov_numvfs).
 */
#include "sim.h"

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

/* Whether the VF can take a vGPU of this type now, and in which GPU
 * instance (MIG; sim-nvmodes.c). In heterogeneous mode sizes may mix. */
static bool vf_can_create(const Vf *v, const TypeDef *d, unsigned *ret_gi) {
        unsigned size;
        unsigned used = pf_fb_used(v->pf, &size);
        if (v->cur)
                return false;
        if (v->pf->mig || d->gi_slices)
                return nvmode_can_create(v, d, ret_gi);
        if (size && d->fb != size && !v->pf->het)
                return false;
        return used + d->fb <= v->pf->fb;
}

/* creatable_vgpu_types as the shipped driver prints it: a header, then
 * "%-5d : %s" per type this VF can create now; only the header otherwise. */
char *vf_creatable_text(const Vf *v) {
        char *buf;
        size_t size;
        FILE *f = xopen_memstream(&buf, &size);
        fprintf(f, "ID    : vGPU Name\n");
        for (size_t i = 0; i < v->pf->vf_set->n; i++) {
                const TypeDef *d = &v->pf->vf_set->types[i];
                if (vf_can_create(v, d, NULL))
                        fprintf(f, "%-5d : %s\n", atoi(d->id), d->name ? d->name : d->id);
        }
        fclose(f);
        return buf;
}

char *vf_info_text(const Node *n) {
        const Vf *v = n->obj;
        if (!v->cur)
                return NULL;
        if (streq(n->name, "vgpu_params"))
                return xasprintf("frame_rate_limiter=1\n");
        if (streq(n->name, "placement_id"))
                return xasprintf("%u\n", v->placement);
        return xasprintf("%u\n", v->gi); /* gpu_instance_id: 0 time-sliced */
}

/* current_vgpu_type's store, with the shipped driver's errnos
 * (VENDOR-VFIO: EINVAL not a number; EPERM an ID on a VF with a vGPU, 0 on a
 * VF without one, 0 while a guest has it open; EIO not creatable now). */
int vf_write_current(Vf *v, const char *buf, size_t len) {
        char tmp[WRITE_TEXT_MAX];
        if (write_text(buf, len, tmp) < 0)
                return -EINVAL;
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
                        unsigned gi = 0;
                        if (!vf_can_create(v, d, &gi))
                                return -EIO;
                        v->cur = d;
                        nvmode_created(v, d, gi);
                        return 0;
                }
        }
        return -EIO; /* unknown to this GPU */
}

/* "../" times the depth of devices/<devpath>, to reach the root. */
char *up_to_root(const char *devpath) {
        size_t depth = 2; /* devices/ and the device's own directory */
        for (const char *c = devpath; *c; c++)
                depth += *c == '/';
        char *s = xmalloc(depth * 3 + 1);
        for (size_t i = 0; i < depth; i++)
                memcpy(s + 3 * i, "../", 3);
        s[depth * 3] = 0;
        return s;
}

const VfModel vf_model_nvidia = {
        .statement = "vfio",
        .driver = "nvidia",
        .vendor = "0x10de",
        .dir = "nvidia",
        .creatable = "creatable_vgpu_types",
        .current = "current_vgpu_type",
        .info = true,
        .pf_driver = "nvidia",
        .pf_vendor = "0x10de",
};

static void vfio_vf_add(Pf *pf, unsigned i, const char *addr, const char *devpath) {
        Vf *v = xcalloc(1, sizeof(Vf));
        _cleanup_free_ char *up = up_to_root(devpath);
        _cleanup_free_ char *vfio = xasprintf("vfio%u", model.n_vfio_dev++);
        v->name = xstrdup(addr);
        v->pf = pf;
        v->index = i;
        v->dev = device_add_on(addr, devpath, pf->name);
        node_link(v->dev, "physfn", xasprintf("../%s", pf->name));
        if (pf->vfm->driver)
                node_link(v->dev, "driver", xasprintf("%sbus/pci/drivers/%s", up, pf->vfm->driver));
        node_link(v->dev, "iommu_group", xasprintf("%skernel/iommu_groups/%u", up, 100 + model.n_vfio_dev));
        node_text(v->dev, "vendor", pf->vfm->vendor);
        node_dir(node_dir(v->dev, "vfio-dev"), vfio);
        if (pf->device || pf->vfm->device)
                node_text(v->dev, "device", pf->device ? pf->device : pf->vfm->device);
        pf->vvfs[i] = v;
        if (!pf->vfm->dir)
                return; /* its VFs have no attribute of their own */
        Node *nv = node_dir(v->dev, pf->vfm->dir);
        node_attr(nv, pf->vfm->creatable, K_CREATABLE, 0444, v);
        node_attr(nv, pf->vfm->current, K_CURRENT, 0644, v);
        if (pf->vfm->info) {
                node_attr(nv, "gpu_instance_id", K_VFINFO, 0444, v);
                node_attr(nv, "placement_id", K_VFINFO, 0444, v);
                node_attr(nv, "vgpu_params", K_VFINFO, 0444, v);
                node_text(nv, "warm_update", "0");
        }
}

Vf *vf_find(const char *name) {
        for (size_t i = 0; i < model.n_pfs; i++) {
                Pf *pf = model.pfs[i];
                for (unsigned j = 0; pf->vfio && j < pf->num; j++)
                        if (streq(pf->vvfs[j]->name, name))
                                return pf->vvfs[j];
        }
        return NULL;
}

void pf_enable(Pf *pf, unsigned n) {
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
                p->dev = device_add_on(addr, devpath, pf->name);
                node_link(p->dev, "physfn", xasprintf("../%s", pf->name));
                node_link(pf->dev, virtfn, xasprintf("../%s", addr));
                parent_register(p);
                pf->vfs[i] = p;
        }
        pf->num = n;
}

void vf_free(Vf *v) {
        free(v->name);
        free(v);
}

void pf_disable(Pf *pf) {
        for (unsigned i = 0; i < pf->num; i++) {
                _cleanup_free_ char *virtfn = xasprintf("virtfn%u", i);
                Parent *p = pf->vfio ? NULL : pf->vfs[i];
                if (p)
                        parent_unregister(p);
                node_free(node_child(pf->dev, virtfn, strlen(virtfn)));
                if (p) {
                        device_del(p->name, p->dev);
                        parent_forget(p);
                } else {
                        device_del(pf->vvfs[i]->name, pf->vvfs[i]->dev);
                        vf_free(pf->vvfs[i]);
                }
        }
        free(pf->vvfs);
        free(pf->vfs);
        pf->vvfs = NULL;
        pf->vfs = NULL;
        pf->num = 0;
}

/* drivers/pci/pci-sysfs.c sriov_numvfs_store() */
int pf_write_numvfs(Pf *pf, const char *buf) {
        char *end;
        errno = 0;
        unsigned long n = strtoul(buf, &end, 0);
        if (errno || end == buf || (*end && !(end[0] == '\n' && end[1] == 0)))
                return -EINVAL;
        if (pf->vfm && pf->vfm->numvfs_errno)
                return -pf->vfm->numvfs_errno;
        if (pf->vfm && pf->vfm->numvfs_check && pf->vfm->numvfs_check(pf, n))
                return -pf->vfm->numvfs_check(pf, n);
        if (n > pf->total)
                return -ERANGE;
        if (n == pf->num)
                return 0;
        if (n == 0) {
                for (unsigned i = 0; pf->vfio && i < pf->num; i++)
                        if (pf->vvfs[i]->cur)
                                return -EBUSY; /* a VF carries a vGPU */
                if (pf->vfm && pf->vfm->disabling)
                        pf->vfm->disabling(pf);
                pf_disable(pf);
                return 0;
        }
        if (pf->num)
                return -EBUSY;
        pf_enable(pf, (unsigned) n);
        if (pf->vfm && pf->vfm->enabled)
                pf->vfm->enabled(pf);
        return 0;
}
