/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* NVIDIA's vendor-specific VFIO framework: VFs and their vGPU (vfio.h). */
#include <ctype.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"
#include "sysfs.h"
#include "vfio.h"

#define PCI_DEVICES "sys/bus/pci/devices"

const VfioKind vfio_nvidia = {
        .prefix = VFIO_TYPE_PREFIX,
        .dir = "nvidia",
        .creatable = "creatable_vgpu_types",
        .current = "current_vgpu_type",
        .label = "NVIDIA VFIO framework",
};

int vfio_type_id(const char *type, unsigned *ret) {
        return vfio_kind_type_id(&vfio_nvidia, type, ret);
}

int vfio_kind_type_id(const VfioKind *k, const char *type, unsigned *ret) {
        const char *p;
        unsigned v;

        if (!type || strncmp(type, k->prefix, strlen(k->prefix)) != 0)
                return -EINVAL;
        p = type + strlen(k->prefix);
        if (!isdigit((unsigned char) *p) || *p == '0' || safe_atou(p, &v) < 0 || strchr(p, '\n'))
                return -EINVAL;
        *ret = v;
        return 0;
}

bool vfio_pci_address_parse(const char *s, char out[PCI_ADDRESS_STRING_MAX]) {
        return pci_address_normalize(s, out);
}

static bool line_is_header(const char *l) {
        /* "ID    : vGPU Name": a first word that is not a number */
        while (*l == ' ' || *l == '\t')
                l++;
        return strncmp(l, "ID", 2) == 0 && !isdigit((unsigned char) l[2]);
}

int vfio_creatable_parse(const char *text, VfioType **ret, size_t *ret_n) {
        return vfio_kind_creatable_parse(&vfio_nvidia, text, ret, ret_n);
}

int vfio_kind_creatable_parse(const VfioKind *k, const char *text, VfioType **ret, size_t *ret_n) {
        _cleanup_free_ VfioType *v = NULL;
        size_t n = 0, allocated = 0;
        bool first = true;

        for (const char *l = text; l && *l;) {
                const char *eol = strchr(l, '\n'), *p, *colon;
                size_t len = eol ? (size_t) (eol - l) : strlen(l);
                char line[256];
                unsigned long id;
                char *end;
                size_t nl;

                if (len >= sizeof line)
                        return error_set(-EBADMSG, "creatable_vgpu_types: a line longer than %zu bytes", sizeof line - 1);
                memcpy(line, l, len);
                line[len] = '\0';
                l = eol ? eol + 1 : l + len;
                for (p = line; *p == ' ' || *p == '\t'; p++)
                        ;
                if (*p == '\0')
                        continue;
                if (first && line_is_header(p)) {
                        first = false;
                        continue;
                }
                first = false;
                if (!isdigit((unsigned char) *p))
                        return error_set(-EBADMSG, "%s: '%s' is not 'ID : NAME'", k->creatable, line);
                errno = 0;
                id = strtoul(p, &end, 10);
                for (colon = end; *colon == ' ' || *colon == '\t'; colon++)
                        ;
                if (errno || id == 0 || id > INT_MAX || *colon != ':')
                        return error_set(-EBADMSG, "%s: '%s' is not 'ID : NAME'", k->creatable, line);
                for (p = colon + 1; *p == ' ' || *p == '\t'; p++)
                        ;
                if (array_grow(&v, n, &allocated, sizeof *v) < 0)
                        return -ENOMEM;
                v[n] = (VfioType) { .id = (unsigned) id };
                snprintf(v[n].type, sizeof v[n].type, "%s%lu", k->prefix, id);
                snprintf(v[n].name, sizeof v[n].name, "%s", p);
                for (nl = strlen(v[n].name); nl > 0 && isspace((unsigned char) v[n].name[nl - 1]); nl--)
                        v[n].name[nl - 1] = '\0';
                n++;
        }
        *ret = steal_pointer(&v);
        *ret_n = n;
        return 0;
}

static int vf_path(const char *vf, const char *file, char *buf, size_t size) {
        char a[PCI_ADDRESS_STRING_MAX];

        if (!pci_address_normalize(vf, a))
                return -EINVAL;
        snprintf(buf, size, PCI_DEVICES "/%s/%s", a, file);
        return 0;
}

/* One of the kind's attributes of a VF: <VF>/<dir>/<file>. */
static int vf_attr_path(const VfioKind *k, const char *vf, const char *file, char *buf, size_t size) {
        char f[64];

        snprintf(f, sizeof f, "%s/%s", k->dir, file);
        return vf_path(vf, f, buf, size);
}

int vfio_is_vf(const VfioKind *k, int rootfd, const char *vf) {
        char path[PATH_MAX];

        if (k->is_vf)
                return k->is_vf(rootfd, vf);
        if (vf_attr_path(k, vf, k->current, path, sizeof path) < 0)
                return 0;
        if (faccessat(rootfd, path, F_OK, 0) == 0)
                return 1;
        return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
}

static int link_base(int rootfd, const char *path, char out[PCI_ADDRESS_STRING_MAX]) {
        char target[PATH_MAX];
        const char *base;
        ssize_t n;

        n = readlinkat(rootfd, path, target, sizeof target - 1);
        if (n < 0)
                return -errno;
        target[n] = '\0';
        base = strrchr(target, '/');
        base = base ? base + 1 : target;
        if (!pci_address_normalize(base, out))
                return -EBADMSG;
        return 0;
}

int vfio_vf_pf(int rootfd, const char *vf, char pf[PCI_ADDRESS_STRING_MAX]) {
        char path[PATH_MAX];
        int r;

        r = vf_path(vf, "physfn", path, sizeof path);
        if (r < 0)
                return r;
        r = link_base(rootfd, path, pf);
        if (r < 0)
                return error_set(r, "cannot read '/%s': %s", path, strerror(-r));
        return 0;
}

int vfio_pf_vfs(int rootfd, const char *pf, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        size_t n = 0, allocated = 0;
        char path[PATH_MAX];
        int r;

        for (unsigned i = 0;; i++) {
                char vf[PCI_ADDRESS_STRING_MAX], name[32];

                snprintf(name, sizeof name, "virtfn%u", i);
                r = vf_path(pf, name, path, sizeof path);
                if (r < 0)
                        return r;
                r = link_base(rootfd, path, vf);
                if (r == -ENOENT)
                        break;
                if (r < 0)
                        return error_set(r, "cannot read '/%s': %s", path, strerror(-r));
                r = strv_push(&l, &n, &allocated, strdup(vf));
                if (r < 0)
                        return r;
        }
        if (n == 0)
                return -ENOENT;
        *ret = steal_pointer(&l);
        return 0;
}

int vfio_is_pf(const VfioKind *k, int rootfd, const char *pf) {
        char path[PATH_MAX], vf[PCI_ADDRESS_STRING_MAX];

        if (vf_path(pf, "virtfn0", path, sizeof path) < 0)
                return 0;
        if (link_base(rootfd, path, vf) < 0)
                return 0;
        return vfio_is_vf(k, rootfd, vf);
}

int vfio_pf_list(const VfioKind *k, int rootfd, char ***ret) {
        _cleanup_strv_free_ char **all = NULL, **l = NULL;
        size_t n = 0, allocated = 0;
        int r;

        r = dir_list_at(rootfd, PCI_DEVICES, &all);
        if (r == -ENOENT) {
                *ret = NULL;
                return strv_ensure(ret);
        }
        if (r < 0)
                return error_set(r, "cannot list '/" PCI_DEVICES "': %s", strerror(-r));
        for (char **a = all; *a; a++) {
                if (vfio_is_pf(k, rootfd, *a) <= 0)
                        continue;
                r = strv_push(&l, &n, &allocated, strdup(*a));
                if (r < 0)
                        return r;
        }
        r = strv_ensure(&l);
        if (r < 0)
                return r;
        *ret = steal_pointer(&l);
        return 0;
}

int vfio_vf_current(const VfioKind *k, int rootfd, const char *vf, unsigned *ret) {
        char path[PATH_MAX], buf[32];
        int r;

        if (k->current_of)
                return k->current_of(rootfd, vf, ret);
        r = vf_attr_path(k, vf, k->current, path, sizeof path);
        if (r < 0)
                return error_set(r, "'%s' is not a PCI address", vf);
        r = read_small_at(rootfd, path, buf, sizeof buf);
        if (r < 0)
                return r == -ENOENT ? r : error_set(r, "cannot read '/%s': %s", path, strerror(-r));
        r = safe_atou(buf, ret);
        if (r < 0)
                return error_set(-EBADMSG, "'/%s' holds '%s', not a number", path, buf);
        return 0;
}

int vfio_vf_creatable(const VfioKind *k, int rootfd, const char *vf, VfioType **ret, size_t *ret_n) {
        char path[PATH_MAX];
        _cleanup_free_ char *text = NULL;
        _cleanup_close_ int fd = -1;
        size_t len;
        int r;

        if (!k->creatable) {
                *ret = NULL; /* its VFs carry their type already */
                *ret_n = 0;
                return 0;
        }
        r = vf_attr_path(k, vf, k->creatable, path, sizeof path);
        if (r < 0)
                return error_set(r, "'%s' is not a PCI address", vf);
        fd = openat(rootfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return errno == ENOENT ? -ENOENT : error_set(-errno, "cannot open '/%s': %s", path, strerror(errno));
        r = read_fd_full(fd, 1u << 20, &text, &len);
        if (r == -EFBIG)
                return error_set(r, "'/%s' is too large", path);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return error_set(r, "cannot read '/%s': %s", path, strerror(-r));
        r = vfio_kind_creatable_parse(k, text, ret, ret_n);
        if (r < 0)
                return error_prefix(r, "'/%s'", path);
        return 0;
}

int vfio_vf_program(const VfioKind *k, int rootfd, const char *vf, unsigned id) {
        char path[PATH_MAX], buf[16];
        unsigned now;
        int r;

        if (id == 0)
                return -EINVAL;
        if (!k->current)
                return -EOPNOTSUPP;
        r = vf_attr_path(k, vf, k->current, path, sizeof path);
        if (r < 0)
                return r;
        snprintf(buf, sizeof buf, "%u", id);
        r = write_string_at(rootfd, path, buf);
        if (r < 0)
                return r;
        r = vfio_vf_current(k, rootfd, vf, &now);
        error_clear();
        if (r < 0)
                return r;
        return now == id ? 0 : -EIO;
}

int vfio_vf_clear(const VfioKind *k, int rootfd, const char *vf) {
        char path[PATH_MAX];
        int r;

        if (!k->current)
                return 0; /* nothing was programmed */
        r = vf_attr_path(k, vf, k->current, path, sizeof path);
        if (r < 0)
                return r;
        return write_string_at(rootfd, path, "0");
}

static VfioOffer *offer_get(const VfioKind *k, VfioOffer **l, size_t *n, unsigned id) {
        VfioOffer *t;

        for (size_t i = 0; i < *n; i++)
                if ((*l)[i].type.id == id)
                        return &(*l)[i];
        t = reallocarray(*l, *n + 1, sizeof *t);
        if (!t)
                return NULL;
        *l = t;
        t = &t[(*n)++];
        *t = (VfioOffer) { .type.id = id };
        snprintf(t->type.type, sizeof t->type.type, "%s%u", k->prefix, id);
        return t;
}

static int offer_cmp(const void *a, const void *b) {
        unsigned x = ((const VfioOffer *) a)->type.id, y = ((const VfioOffer *) b)->type.id;
        return x < y ? -1 : x > y;
}

int vfio_pf_offers(const VfioKind *k, int rootfd, const char *pf, VfioOffer **ret, size_t *ret_n, unsigned *ret_vfs, unsigned *ret_free) {
        _cleanup_strv_free_ char **vfs = NULL;
        _cleanup_free_ VfioOffer *l = NULL;
        unsigned nvfs = 0, nfree = 0;
        size_t n = 0;
        int r;

        r = vfio_pf_vfs(rootfd, pf, &vfs);
        if (r < 0 && r != -ENOENT)
                return r;
        for (char **vf = vfs; vf && *vf; vf++) {
                _cleanup_free_ VfioType *cr = NULL;
                size_t n_cr = 0;
                unsigned cur;
                VfioOffer *o;

                if (vfio_vf_current(k, rootfd, *vf, &cur) < 0) {
                        error_clear();
                        continue;
                }
                nvfs++;
                if (cur) {
                        o = offer_get(k, &l, &n, cur);
                        if (!o)
                                return -ENOMEM;
                        o->existing++;
                        continue;
                }
                nfree++;
                r = vfio_vf_creatable(k, rootfd, *vf, &cr, &n_cr);
                if (r < 0)
                        return r;
                for (size_t i = 0; i < n_cr; i++) {
                        o = offer_get(k, &l, &n, cr[i].id);
                        if (!o)
                                return -ENOMEM;
                        o->creatable++;
                        snprintf(o->type.name, sizeof o->type.name, "%s", cr[i].name);
                }
        }
        if (n > 1)
                qsort(l, n, sizeof *l, offer_cmp);
        *ret = steal_pointer(&l);
        *ret_n = n;
        if (ret_vfs)
                *ret_vfs = nvfs;
        if (ret_free)
                *ret_free = nfree;
        return 0;
}

int vfio_pf_offer(const VfioKind *k, int rootfd, const char *pf, const char *type, VfioOffer *ret, bool *ret_offered) {
        _cleanup_free_ VfioOffer *l = NULL;
        size_t n = 0;
        unsigned id;
        int r;

        *ret = (VfioOffer) { .existing = 0 };
        *ret_offered = false;
        if (vfio_kind_type_id(k, type, &id) < 0)
                return 0;
        r = vfio_pf_offers(k, rootfd, pf, &l, &n, NULL, NULL);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++)
                if (l[i].type.id == id) {
                        *ret = l[i];
                        *ret_offered = true;
                }
        return 0;
}

static int mdev_name_cmp(const void *a, const void *b) {
        return strcmp(((const SysfsMdev *) a)->uuid, ((const SysfsMdev *) b)->uuid);
}

int vfio_vgpus_append(const VfioKind *k, int rootfd, SysfsMdev **mdevs, size_t *n) {
        _cleanup_strv_free_ char **pfs = NULL;
        size_t added = 0;
        int r;

        r = vfio_pf_list(k, rootfd, &pfs);
        if (r < 0)
                return r;
        for (char **pf = pfs; *pf; pf++) {
                _cleanup_strv_free_ char **vfs = NULL;

                if (vfio_pf_vfs(rootfd, *pf, &vfs) < 0) {
                        error_clear();
                        continue;
                }
                for (char **vf = vfs; *vf; vf++) {
                        unsigned cur;
                        SysfsMdev *t;

                        if (vfio_vf_current(k, rootfd, *vf, &cur) < 0) {
                                error_clear();
                                continue;
                        }
                        if (cur == 0)
                                continue;
                        t = reallocarray(*mdevs, *n + 1, sizeof *t);
                        if (!t)
                                return -ENOMEM;
                        *mdevs = t;
                        t = &t[(*n)++];
                        memset(t, 0, sizeof *t);
                        snprintf(t->uuid, sizeof t->uuid, "%s", *vf);
                        snprintf(t->parent, sizeof t->parent, "%s", *pf);
                        snprintf(t->type, sizeof t->type, "%s%u", k->prefix, cur);
                        added++;
                }
        }
        if (added && *mdevs)
                qsort(*mdevs, *n, sizeof **mdevs, mdev_name_cmp);
        return 0;
}

void vfio_types_describe(const VfioType *t, size_t n, char *buf, size_t size) {
        size_t o = 0;

        if (size == 0)
                return;
        buf[0] = '\0';
        if (n == 0) {
                snprintf(buf, size, "nothing");
                return;
        }
        for (size_t i = 0; i < n && o < size; i++) {
                int k = snprintf(buf + o, size - o, "%s%s (%s)", i ? ", " : "", t[i].type, t[i].name);
                if (k < 0)
                        break;
                o += (size_t) k;
        }
}
