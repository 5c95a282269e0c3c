/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mdev-sysfs-sim: Intel's xe driver in SR-IOV PF mode (doc/design.md §9,
 * Documentation/ABI/testing/sysfs-driver-intel-xe-sriov, xe_pci_sriov.c,
 * xe_sriov_pf_sysfs.c): "xe PF-ADDRESS totalvfs=N [numvfs=N] vram=MiB
 * [notpf=ERANGE|ENODEV] [device=0xNNNN] [devpath=]". device is the GPU's
 * PCI device ID, its VFs' too (default 0xe211, an Arc Pro B60: Battlemage,
 * which xe-vfio-pci drives; 0x56c0, a Flex 170, is one it does not). The
 * PF, bound to xe, has
 * sriov_admin/vf1..vfN (N = totalvfs, there before the VFs are):
 *
 *   vfK/profile/exec_quantum_ms     u32, 0 unlimited (EINVAL: not a u32)
 *   vfK/profile/preempt_timeout_us  u32, 0 unlimited
 *   vfK/profile/sched_priority      0444 "[low] normal": a write EACCES
 *   vfK/profile/vram_quota          u64 bytes: EINVAL not a number, EPERM
 *                                   on a GPU without VRAM (vram=0), EIO
 *                                   beyond the GPU's free VRAM (the
 *                                   firmware refuses), EBUSY while the VF
 *                                   runs (a guest has it open: vf-open)
 *   vfK/stop                        0200, "1" stops the VF
 *   vfK/device -> ../../../<VF>     only while the VF is enabled
 *
 * The control command "xe-sched-refuse PF-ADDRESS EPERM|EIO|0 [knob=NAME]"
 * makes every write to a VF's exec_quantum_ms or preempt_timeout_us (or
 * to the one named) on that PF fail with that errno (EPERM: not applicable, EIO: the firmware refuses, as
 * xe_gt_sriov_pf_config.c reports the GuC's refusal); 0 ends it.
 *
 * sriov_numvfs: ERANGE above totalvfs (totalvfs 0: the GPU is not in PF
 * mode; notpf=ENODEV is the older kernels' errno), EBUSY while VFs are
 * enabled, 0 disables them and releases every VF's provisioning. Enabling
 * VFs none of which has a quota shares the VRAM out evenly (the driver's
 * fair-share auto-provisioning). New VFs bind to xe (sriov_drivers_autoprobe
 * at its default): they share the PF's device ID.
 */
#include "sim.h"

#define MIB (1024ull * 1024ull)

enum { XE_EQ, XE_PT, XE_QUOTA, XE_STOP };

typedef struct XeAttr {
        Pf *pf;
        unsigned vf; /* 0-based: vf1 is 0 */
        int which;
} XeAttr;

typedef struct XeAdmin {
        unsigned long long vram;  /* bytes */
        int notpf_errno;
        int sched_errno;          /* xe-sched-refuse: what a scheduling write fails with */
        int sched_which;          /* XE_EQ, XE_PT, or -1: both */
        unsigned *eq, *pt;
        unsigned long long *quota;
        bool *stopped;
        Node **dir;               /* sriov_admin/vfK */
        XeAttr *attrs;            /* 4 per VF */
} XeAdmin;

static const TypeSet no_types = { .name = (char *) "xe", .types = NULL, .n = 0 };

static unsigned long long quota_used(const XeAdmin *x, unsigned total, unsigned except) {
        unsigned long long used = 0;
        for (unsigned i = 0; i < total; i++)
                if (i != except)
                        used += x->quota[i];
        return used;
}

char *xe_admin_text(const Node *n) {
        const XeAttr *a = n->obj;
        const XeAdmin *x = a->pf->xe;
        switch (a->which) {
        case XE_EQ:
                return xasprintf("%u\n", x->eq[a->vf]);
        case XE_PT:
                return xasprintf("%u\n", x->pt[a->vf]);
        case XE_QUOTA:
                return xasprintf("%llu\n", x->quota[a->vf]);
        default:
                return NULL;
        }
}

static int parse_u64(const char *s, unsigned long long max, unsigned long long *ret) {
        char *end;
        if (!isdigit((unsigned char) s[0]))
                return -EINVAL;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 0);
        if (errno || *end || v > max)
                return -EINVAL;
        *ret = v;
        return 0;
}

static int quota_write(const XeAttr *a, unsigned long long v) {
        Pf *pf = a->pf;
        XeAdmin *x = pf->xe;
        if (x->vram == 0)
                return -EPERM; /* no VRAM to provision: not applicable */
        if (a->vf < pf->num && pf->vvfs[a->vf]->open)
                return -EBUSY; /* the VF runs */
        if (quota_used(x, pf->total, a->vf) + v > x->vram)
                return -EIO; /* the firmware refuses */
        x->quota[a->vf] = v;
        return 0;
}

int xe_admin_write(const Node *n, const char *buf, size_t len) {
        const XeAttr *a = n->obj;
        XeAdmin *x = a->pf->xe;
        char tmp[WRITE_TEXT_MAX];
        unsigned long long v;
        if (write_text(buf, len, tmp) < 0)
                return -EINVAL;
        if (parse_u64(tmp, a->which == XE_QUOTA ? UINT64_MAX : UINT32_MAX, &v) < 0)
                return -EINVAL;
        if ((a->which == XE_EQ || a->which == XE_PT) && x->sched_errno &&
            (x->sched_which < 0 || x->sched_which == a->which))
                return -x->sched_errno;
        switch (a->which) {
        case XE_EQ:
                x->eq[a->vf] = (unsigned) v;
                return 0;
        case XE_PT:
                x->pt[a->vf] = (unsigned) v;
                return 0;
        case XE_QUOTA:
                return quota_write(a, v);
        default:
                if (v != 1)
                        return -EINVAL;
                x->stopped[a->vf] = true;
                return 0;
        }
}

static void xe_attr(Pf *pf, Node *dir, const char *name, unsigned vf, int which, mode_t perm) {
        XeAttr *a = &pf->xe->attrs[vf * 4 + (unsigned) which];
        *a = (XeAttr) { .pf = pf, .vf = vf, .which = which };
        node_attr(dir, name, K_XEADMIN, perm, a);
}

static void xe_pf_build(Pf *pf) {
        XeAdmin *x = pf->xe;
        Node *admin = node_dir(pf->dev, "sriov_admin");
        node_text(pf->dev, "device", pf->device ? pf->device : vf_model_xe.device);
        x->dir = xcalloc(pf->total + 1, sizeof(Node *));
        for (unsigned i = 0; i < pf->total; i++) {
                _cleanup_free_ char *name = xasprintf("vf%u", i + 1);
                Node *d = node_dir(admin, name), *p = node_dir(d, "profile");
                x->dir[i] = d;
                xe_attr(pf, p, "exec_quantum_ms", i, XE_EQ, 0644);
                xe_attr(pf, p, "preempt_timeout_us", i, XE_PT, 0644);
                xe_attr(pf, p, "vram_quota", i, XE_QUOTA, 0644);
                node_text(p, "sched_priority", "[low] normal");
                xe_attr(pf, d, "stop", i, XE_STOP, 0200);
        }
}

/* The VFs appeared: their device links, and the fair share when no VF
 * was given a quota. */
static void xe_enabled(Pf *pf) {
        XeAdmin *x = pf->xe;
        bool fair = quota_used(x, pf->total, UINT_MAX) == 0 && x->vram > 0;
        for (unsigned i = 0; i < pf->num; i++) {
                node_link(x->dir[i], "device", xasprintf("../../../%s", pf->vvfs[i]->name));
                if (fair)
                        x->quota[i] = x->vram / pf->num / MIB * MIB;
        }
}

/* The VFs go: so do their links and every VF's provisioning. */
static void xe_disabling(Pf *pf) {
        XeAdmin *x = pf->xe;
        for (unsigned i = 0; i < pf->num; i++)
                node_free(node_child(x->dir[i], "device", strlen("device")));
        for (unsigned i = 0; i < pf->total; i++) {
                x->quota[i] = 0;
                x->eq[i] = x->pt[i] = 0;
                x->stopped[i] = false;
        }
}

static int xe_numvfs_check(const Pf *pf, unsigned long n) {
        if (pf->total == 0 && n > 0)
                return pf->xe->notpf_errno;
        return 0;
}

static void xe_pf_free(Pf *pf) {
        XeAdmin *x = pf->xe;
        if (!x)
                return;
        free(x->eq);
        free(x->pt);
        free(x->quota);
        free(x->stopped);
        free(x->dir);
        free(x->attrs);
        free(x);
        pf->xe = NULL;
}

const VfModel vf_model_xe = {
        .statement = "xe",
        .driver = "xe",
        .vendor = "0x8086",
        .dir = NULL,
        .pf_driver = "xe",
        .pf_vendor = "0x8086",
        .device = "0xe211",
        .pf_build = xe_pf_build,
        .numvfs_check = xe_numvfs_check,
        .enabled = xe_enabled,
        .disabling = xe_disabling,
        .pf_free = xe_pf_free,
};

const char *stmt_xe(char **w, size_t n, const TypeSet *cur) {
        static const char *const keys[] = { "totalvfs", "numvfs", "vram", "notpf", "device", "devpath", NULL };
        unsigned total, num = 0, vram;
        const char *v;

        if (cur || n < 3 || !name_is_pci(w[1]))
                return "expected: xe PCI-ADDRESS totalvfs=N [numvfs=N] vram=MiB [notpf=ERANGE|ENODEV] [device=0xNNNN] [devpath=]";
        if (!words_known(w, n, 2, keys))
                return "unknown key for xe";
        v = word_opt(w, n, 2, "totalvfs");
        if (!v || parse_uint(v, &total) < 0 || total > 63)
                return "totalvfs: 0..63 required (0: the GPU is not in PF mode)";
        v = word_opt(w, n, 2, "numvfs");
        if (v && (parse_uint(v, &num) < 0 || num > total))
                return "numvfs: 0..totalvfs";
        v = word_opt(w, n, 2, "vram");
        if (!v || parse_uint(v, &vram) < 0)
                return "vram: the GPU's MiB (0: none, an integrated GPU), required";
        v = word_opt(w, n, 2, "notpf");
        int notpf = v ? errno_from_name(v) : ERANGE;
        if (notpf != ERANGE && notpf != ENODEV)
                return "notpf: ERANGE or ENODEV";
        const char *device = word_opt(w, n, 2, "device");
        if (device && (strlen(device) != 6 || strncmp(device, "0x", 2) != 0 ||
                       strspn(device + 2, "0123456789abcdef") != 4))
                return "device: 0x and 4 lower-case hex digits";
        Pf *pf = xcalloc(1, sizeof(Pf));
        model.pfs = xrealloc(model.pfs, (model.n_pfs + 1) * sizeof(Pf *));
        model.pfs[model.n_pfs++] = pf;
        pf->name = xstrdup(w[1]);
        pf->vfio = true;
        pf->vfm = &vf_model_xe;
        pf->device = device ? xstrdup(device) : NULL;
        v = word_opt(w, n, 2, "devpath");
        pf->devpath = v ? xstrdup(v) : pci_devpath(w[1]);
        pf->vf_set = &no_types;
        pf->total = total;
        pf->start_num = num;
        XeAdmin *x = pf->xe = xcalloc(1, sizeof(XeAdmin));
        x->vram = vram * MIB;
        x->notpf_errno = notpf;
        x->eq = xcalloc(total + 1, sizeof(unsigned));
        x->pt = xcalloc(total + 1, sizeof(unsigned));
        x->quota = xcalloc(total + 1, sizeof(unsigned long long));
        x->stopped = xcalloc(total + 1, sizeof(bool));
        x->attrs = xcalloc(4 * (size_t) total + 1, sizeof(XeAttr));
        return NULL;
}

/* "xe-sched-refuse PF-ADDRESS EPERM|EIO|0 [knob=NAME]" (see the top).
 * -ENOTTY: not an xe command. */
int xe_ctl(char **w, size_t n) {
        static const char *const keys[] = { "knob", NULL };
        if (!streq(w[0], "xe-sched-refuse"))
                return -ENOTTY;
        if (n < 3 || !words_known(w, n, 3, keys))
                return -EINVAL;
        const char *knob = word_opt(w, n, 3, "knob");
        int which = !knob ? -1 : streq(knob, "exec_quantum_ms") ? XE_EQ : streq(knob, "preempt_timeout_us") ? XE_PT : -2;
        int e = streq(w[2], "0") ? 0 : errno_from_name(w[2]);
        if (which == -2 || (e != 0 && e != EPERM && e != EIO))
                return -EINVAL;
        for (size_t i = 0; i < model.n_pfs; i++) {
                Pf *pf = model.pfs[i];
                if (!pf->xe || !streq(pf->name, w[1]))
                        continue;
                pf->xe->sched_errno = e;
                pf->xe->sched_which = which;
                return 0;
        }
        return -ENOENT;
}
