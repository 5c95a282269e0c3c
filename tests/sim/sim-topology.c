/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mdev-sysfs-sim: reading a topology file, and building the tree and model
 * from it.
 */
#include "sim.h"

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

/* Each statement: NULL when it is right, else what is wrong with it.
 * "types NAME" opens a block of types. */
static const char *stmt_types(char **w, size_t n, TypeSet **cur) {
        if (*cur || n != 2 || !name_ok(w[1]) || set_find(w[1]))
                return "expected: types NAME (new, outside another types block)";
        *cur = xcalloc(1, sizeof(TypeSet));
        (*cur)->name = xstrdup(w[1]);
        model.sets = xrealloc(model.sets, (model.n_sets + 1) * sizeof(TypeSet *));
        model.sets[model.n_sets++] = *cur;
        return NULL;
}

/* "end" closes it. */
static const char *stmt_end(size_t n, TypeSet **cur) {
        if (!*cur || n != 1)
                return "'end' without 'types'";
        if ((*cur)->n == 0)
                return "a types block needs at least one type";
        *cur = NULL;
        return NULL;
}

/* "type ID key=value...": one type of the open block. */
static const char *stmt_type(char **w, size_t n, TypeSet *cur) {
        static const char *const keys[] = { "instances", "ports", "device_api", "name",
                                            "description", "framebuffer", "gi", "per_gi", NULL };
        if (!cur || n < 2 || !name_ok(w[1]))
                return "expected: type ID key=value... inside a types block";
        if (!words_known(w, n, 2, keys))
                return "unknown key for type";
        for (size_t i = 0; i < cur->n; i++)
                if (streq(cur->types[i].id, w[1]))
                        return "duplicate type";
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
                return "instances: not a number";
        v = word_opt(w, n, 2, "framebuffer");
        if (v && (parse_uint(v, &d->fb) < 0 || d->fb == 0))
                return "framebuffer: MiB, a positive number";
        v = word_opt(w, n, 2, "gi");
        if (v && (parse_uint(v, &d->gi_slices) < 0 || d->gi_slices == 0))
                return "gi: the GPU instance's slices, a positive number";
        d->per_gi = 1;
        v = word_opt(w, n, 2, "per_gi");
        if (v && (parse_uint(v, &d->per_gi) < 0 || d->per_gi == 0))
                return "per_gi: a positive number";
        d->ports = 1;
        v = word_opt(w, n, 2, "ports");
        if (v && (parse_uint(v, &d->ports) < 0 || d->ports == 0))
                return "ports: not a positive number";
        return NULL;
}

/* "parent NAME types=SET key=value...": an mdev parent. */
static const char *stmt_parent(char **w, size_t n, const TypeSet *cur) {
        unsigned u;

        static const char *const keys[] = { "types", "devpath", "pool", "onetype", "errno",
                                            "registered", NULL };
        if (cur || n < 2 || !name_ok(w[1]))
                return "expected: parent NAME types=SET key=value...";
        if (!words_known(w, n, 2, keys))
                return "unknown key for parent";
        if (parent_find(w[1]))
                return "duplicate parent";
        const char *sn = word_opt(w, n, 2, "types");
        const TypeSet *set = sn ? set_find(sn) : NULL;
        if (!set)
                return "types=SET names no types block defined above";
        const char *devpath = word_opt(w, n, 2, "devpath");
        if (!devpath && !name_is_pci(w[1]))
                return "a parent that is not a PCI address needs devpath=";
        if (devpath && (!*devpath || devpath[0] == '/' || strstr(devpath, "..")))
                return "devpath must be relative to devices/";
        Parent *p = parent_new(w[1], devpath, set);
        const char *v = word_opt(w, n, 2, "pool");
        if (v && parse_uint(v, &p->pool) < 0)
                return "pool: not a number";
        v = word_opt(w, n, 2, "onetype");
        if (v && parse_uint(v, &u) < 0)
                return "onetype: 0 or 1";
        p->onetype = v && u;
        v = word_opt(w, n, 2, "errno");
        if (v && (p->nospace_errno = errno_from_name(v)) == 0)
                return "errno: unknown errno name";
        v = word_opt(w, n, 2, "registered");
        u = 1;
        if (v && parse_uint(v, &u) < 0)
                return "registered: 0 or 1";
        p->start_registered = u;
        return NULL;
}

/* sriov PF-ADDRESS ... or vfio PF-ADDRESS ... (or fakevf, the fake kind's
 * VFs, sim-fake.c): a PF and its VFs. */
static const char *stmt_pf(char **w, size_t n, const TypeSet *cur) {
        unsigned u;
        /* sriov PF-ADDRESS totalvfs=N [numvfs=N] types=SET [devpath=] [errno=] [onetype=]
         * vfio PF-ADDRESS totalvfs=N [numvfs=N] types=SET framebuffer=MiB [devpath=] */
        static const char *const sriov_keys[] = { "types", "devpath", "totalvfs", "numvfs",
                                                  "errno", "onetype", NULL };
        static const char *const vfio_keys[] = { "types", "devpath", "totalvfs", "numvfs",
                                                 "framebuffer", "mig", "heterogeneous", "slices", NULL };
        const VfModel *vfm = streq(w[0], vf_model_nvidia.statement) ? &vf_model_nvidia
                             : streq(w[0], vf_model_fake.statement) ? &vf_model_fake : NULL;
        bool vfio = vfm != NULL;
        if (cur || n < 2 || !name_is_pci(w[1]))
                return vfio ? "expected: vfio PCI-ADDRESS totalvfs=N types=SET framebuffer=MiB ..."
                            : "expected: sriov PCI-ADDRESS totalvfs=N types=SET ...";
        if (!words_known(w, n, 2, vfio ? vfio_keys : sriov_keys))
                return vfio ? "unknown key for vfio" : "unknown key for sriov";
        const char *sn = word_opt(w, n, 2, "types");
        const TypeSet *set = sn ? set_find(sn) : NULL;
        if (!set)
                return "types=SET names no types block defined above";
        for (size_t i = 0; vfio && i < set->n; i++) {
                const char *id = set->types[i].id;
                if (set->types[i].fb == 0 || strspn(id, "0123456789") != strlen(id) || atoi(id) <= 0)
                        return "vfio: every type needs a numeric ID and framebuffer=";
        }
        Pf *pf = xcalloc(1, sizeof(Pf));
        model.pfs = xrealloc(model.pfs, (model.n_pfs + 1) * sizeof(Pf *));
        model.pfs[model.n_pfs++] = pf;
        pf->name = xstrdup(w[1]);
        pf->vfio = vfio;
        pf->vfm = vfm;
        const char *devpath = word_opt(w, n, 2, "devpath");
        pf->devpath = devpath ? xstrdup(devpath) : pci_devpath(w[1]);
        pf->vf_set = set;
        pf->vf_errno = ENOSPC;
        pf->vf_onetype = true;
        const char *v = word_opt(w, n, 2, "totalvfs");
        if (!v || parse_uint(v, &pf->total) < 0 || pf->total == 0 || pf->total > 252)
                return "totalvfs: 1..252 required";
        v = word_opt(w, n, 2, "numvfs");
        if (v && (parse_uint(v, &u) < 0 || u > pf->total))
                return "numvfs: 0..totalvfs";
        pf->start_num = v ? u : 0;
        if (vfio) {
                v = word_opt(w, n, 2, "framebuffer");
                if (!v || parse_uint(v, &pf->fb) < 0 || pf->fb == 0)
                        return "framebuffer: the GPU's MiB, required";
                const char *bad = nvmode_topology(pf, w, n);
                if (bad)
                        return bad;
        } else {
                v = word_opt(w, n, 2, "errno");
                if (v && (pf->vf_errno = errno_from_name(v)) == 0)
                        return "errno: unknown errno name";
                v = word_opt(w, n, 2, "onetype");
                if (v && parse_uint(v, &u) < 0)
                        return "onetype: 0 or 1";
                if (v)
                        pf->vf_onetype = u;
        }
        return NULL;
}

/* "mdev_bus absent": a host without the mdev bus (VFIO only). */
static const char *stmt_mdev_bus(char **w, size_t n) {
        /* mdev_bus absent: no class/mdev_bus and no bus/mdev (a VFIO-only host) */
        if (n != 2 || !streq(w[1], "absent"))
                return "expected: mdev_bus absent";
        model.no_mdev_bus = true;
        return NULL;
}

/* "numa DEVICE N": the NUMA node of a PCI parent or PF (and its VFs),
 * served as its numa_node; a device without one shows -1, as on a host
 * of one node. */
static const char *stmt_numa(char **w, size_t n) {
        unsigned u;

        if (n != 3 || !name_is_pci(w[1]) || parse_uint(w[2], &u) < 0 || u > 1023)
                return "expected: numa PCI-ADDRESS N (a node from 0 to 1023)";
        if (numa_of(w[1]) >= 0)
                return "a second numa statement for the device";
        model.numa = xrealloc(model.numa, (model.n_numa + 1) * sizeof *model.numa);
        model.numa[model.n_numa++] = (struct SimNuma) { .dev = xstrdup(w[1]), .node = (int) u };
        return NULL;
}

static bool pf_named(const char *name) {
        for (size_t i = 0; i < model.n_pfs; i++)
                if (streq(model.pfs[i]->name, name))
                        return true;
        return false;
}

/* What the whole topology must hold once read; NULL when it does. */
static const char *topo_check(void) {
        for (size_t i = 0; i < model.n_numa; i++)
                if (!parent_find(model.numa[i].dev) && !pf_named(model.numa[i].dev))
                        return "a numa statement names no parent or PF of the topology";
        if (model.n_parents == 0 && model.n_pfs == 0)
                return "no parent and no sriov statement";
        if (model.no_mdev_bus && model.n_parents > 0)
                return "mdev_bus absent, but the topology has mdev parents";
        for (size_t i = 0; i < model.n_pfs; i++)
                if (model.no_mdev_bus && !model.pfs[i]->vfio)
                        return "mdev_bus absent, but an sriov PF has mdev VFs";
        return NULL;
}

int topo_load(const char *file) {
        _cleanup_fclose_ FILE *f = fopen(file, "re");
        _cleanup_free_ char *line = NULL;
        size_t cap = 0;
        unsigned lineno = 0;
        TypeSet *cur = NULL;
        const char *bad;

        if (!f) {
                fprintf(stderr, "mdev-sysfs-sim: cannot open topology '%s': %s\n", file, strerror(errno));
                return -errno;
        }
        while (getline(&line, &cap, f) >= 0) {
                char *w[MAX_WORDS];
                size_t n;

                lineno++;
                if (topo_words(line, w, &n) < 0)
                        return topo_fail(file, lineno, "unterminated quote or too many words");
                if (n == 0)
                        continue;
                if (streq(w[0], "types"))
                        bad = stmt_types(w, n, &cur);
                else if (streq(w[0], "end"))
                        bad = stmt_end(n, &cur);
                else if (streq(w[0], "type"))
                        bad = stmt_type(w, n, cur);
                else if (streq(w[0], "parent"))
                        bad = stmt_parent(w, n, cur);
                else if (streq(w[0], "sriov") || streq(w[0], vf_model_nvidia.statement) ||
                         streq(w[0], vf_model_fake.statement))
                        bad = stmt_pf(w, n, cur);
                else if (streq(w[0], vf_model_amdgim.statement))
                        bad = stmt_amdgim(w, n, cur);
                else if (streq(w[0], vf_model_xe.statement))
                        bad = stmt_xe(w, n, cur);
                else if (streq(w[0], "mdev_bus"))
                        bad = stmt_mdev_bus(w, n);
                else if (streq(w[0], "numa"))
                        bad = stmt_numa(w, n);
                else
                        bad = "unknown statement (types, type, end, parent, sriov, vfio, fakevf, amdgim, xe, mdev_bus, numa)";
                if (bad)
                        return topo_fail(file, lineno, bad);
        }
        if (cur)
                return topo_fail(file, lineno, "types block without 'end'");
        bad = topo_check();
        return bad ? topo_fail(file, lineno, bad) : 0;
}

void topo_build(void) {
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
                        _cleanup_free_ char *drv = xasprintf("bus/pci/drivers/%s", pf->vfm->pf_driver);
                        node_mkdir_p(tree.root, drv);
                        node_link(pf->dev, "driver", xasprintf("%s%s", up, drv));
                        node_text(pf->dev, "vendor", pf->vfm->pf_vendor);
                        if (pf->vfm->pf_build)
                                pf->vfm->pf_build(pf);
                }
                _cleanup_free_ char *total = xasprintf("%u", pf->total);
                node_text(pf->dev, "sriov_totalvfs", total);
                node_attr(pf->dev, "sriov_numvfs", K_NUMVFS, 0644, pf);
                if (pf->start_num) {
                        pf_enable(pf, pf->start_num);
                        if (pf->vfm && pf->vfm->enabled)
                                pf->vfm->enabled(pf);
                }
        }
}

void model_free(void) {
        for (size_t i = 0; i < model.n_pfs; i++) {
                Pf *pf = model.pfs[i];
                for (unsigned j = 0; pf->vfio && j < pf->num; j++)
                        vf_free(pf->vvfs[j]);
                free(pf->vvfs);
                free(pf->vfs);
                free(pf->partition);
                free(pf->device);
                if (pf->vfm && pf->vfm->pf_free)
                        pf->vfm->pf_free(pf);
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
        for (size_t i = 0; i < model.n_numa; i++)
                free(model.numa[i].dev);
        free(model.numa);
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
