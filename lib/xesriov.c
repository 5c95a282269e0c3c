/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Intel xe's SR-IOV PFs, VFs and their provisioning (xesriov.h). */
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "error.h"
#include "pcidev.h"
#include "util.h"
#include "xesriov.h"

#define PCI_DEVICES "sys/bus/pci/devices"
#define MIB (1024ull * 1024ull)

const VfioKind vfio_xe = {
        .prefix = XESRIOV_TYPE_PREFIX,
        .label = "Intel xe SR-IOV",
        .is_vf = xesriov_is_vf,
        .current_of = xesriov_vf_current,
};

int xesriov_is_pf(int rootfd, const char *pf) {
        char a[PCI_ADDRESS_STRING_MAX], path[PATH_MAX], driver[NAME_STRING_MAX];

        if (!pci_address_normalize(pf, a) || pci_device_driver(rootfd, a, driver) < 0 || !streq(driver, "xe"))
                return 0;
        snprintf(path, sizeof path, PCI_DEVICES "/%s/sriov_admin", a);
        return faccessat(rootfd, path, F_OK, 0) == 0;
}

int xesriov_is_vf(int rootfd, const char *vf) {
        char pf[PCI_ADDRESS_STRING_MAX];

        if (vfio_vf_pf(rootfd, vf, pf) < 0) {
                error_clear();
                return 0;
        }
        return xesriov_is_pf(rootfd, pf);
}

int xesriov_vf_index(int rootfd, const char *vf, char pf[PCI_ADDRESS_STRING_MAX], unsigned *ret) {
        _cleanup_strv_free_ char **vfs = NULL;
        char a[PCI_ADDRESS_STRING_MAX], p[PCI_ADDRESS_STRING_MAX];

        if (!pci_address_normalize(vf, a) || xesriov_is_vf(rootfd, a) <= 0)
                return -ENOENT;
        if (vfio_vf_pf(rootfd, a, p) < 0 || vfio_pf_vfs(rootfd, p, &vfs) < 0) {
                error_clear();
                return -ENOENT;
        }
        for (size_t i = 0; vfs[i]; i++)
                if (streq(vfs[i], a)) {
                        memcpy(pf, p, PCI_ADDRESS_STRING_MAX);
                        *ret = (unsigned) i + 1;
                        return 0;
                }
        return -ENOENT;
}

/* A number a PF's attribute holds (path under the root). */
static int attr_read_u64(int rootfd, const char *path, uint64_t *ret) {
        char buf[32], *end;
        unsigned long long v;
        int r;

        r = read_small_at(rootfd, path, buf, sizeof buf);
        if (r < 0)
                return error_set(r, "cannot read '/%s': %s", path, strerror(-r));
        errno = 0;
        v = strtoull(buf, &end, 10);
        if (errno || end == buf || *end || buf[0] == '-')
                return error_set(-EBADMSG, "'/%s' holds '%s', not a number", path, buf);
        *ret = v;
        return 0;
}

int xesriov_vf_quota(int rootfd, const char *vf, uint64_t *ret) {
        char pf[PCI_ADDRESS_STRING_MAX], path[PATH_MAX];
        unsigned k;
        int r;

        r = xesriov_vf_index(rootfd, vf, pf, &k);
        if (r < 0)
                return r;
        snprintf(path, sizeof path, PCI_DEVICES "/%s/sriov_admin/vf%u/profile/vram_quota", pf, k);
        return attr_read_u64(rootfd, path, ret);
}

int xesriov_vf_current(int rootfd, const char *vf, unsigned *ret) {
        uint64_t q;
        int r;

        r = xesriov_vf_quota(rootfd, vf, &q);
        if (r < 0)
                return r;
        *ret = q / MIB > UINT_MAX ? UINT_MAX : (unsigned) (q / MIB);
        return 0;
}

void xesriov_format_size(uint64_t bytes, char *buf, size_t size) {
        static const char units[] = "TGMK";

        for (unsigned i = 0; i < 4; i++) {
                uint64_t unit = 1ull << (10 * (4 - i));

                if (bytes && bytes % unit == 0) {
                        snprintf(buf, size, "%" PRIu64 "%c", bytes / unit, units[i]);
                        return;
                }
        }
        snprintf(buf, size, "%" PRIu64, bytes);
}

/* One write of v to a PF's attribute, read back. */
static int attr_write_u64(int rootfd, const char *path, uint64_t v) {
        char buf[32];
        uint64_t back;
        int r;

        snprintf(buf, sizeof buf, "%" PRIu64, v);
        r = write_string_at(rootfd, path, buf);
        if (r < 0)
                return error_set(r, "cannot write '%s' to '/%s': %s (%s)", buf, path, strerror(-r), strerrorname_np(-r));
        r = attr_read_u64(rootfd, path, &back);
        if (r < 0)
                return r;
        if (back != v)
                return error_set(-EIO, "'/%s' reads %" PRIu64 " after %s was written to it", path, back, buf);
        return 0;
}

/* --- live migration: xe-vfio-pci's ID table -------------------------------- */

#define XE_VFIO_MODULE "xe_vfio_pci"

/* The PF's ID as a VFIO driver's alias matches it: its modalias with
 * "vfio_pci:" for "pci:", else one made of its vendor and device. */
static int pf_vfio_subject(int rootfd, const char *pf, char *buf, size_t size, char device[32]) {
        char path[PATH_MAX], vendor[32], alias[256], *end;
        unsigned long v, d;
        int r;

        snprintf(path, sizeof path, PCI_DEVICES "/%s/device", pf);
        r = read_small_at(rootfd, path, device, 32);
        if (r < 0)
                return error_set(r, "cannot read '/%s': %s", path, strerror(-r));
        snprintf(path, sizeof path, PCI_DEVICES "/%s/modalias", pf);
        if (read_small_at(rootfd, path, alias, sizeof alias) >= 0 && strncmp(alias, "pci:", 4) == 0) {
                snprintf(buf, size, "vfio_pci:%s", alias + 4);
                return 0;
        }
        snprintf(path, sizeof path, PCI_DEVICES "/%s/vendor", pf);
        r = read_small_at(rootfd, path, vendor, sizeof vendor);
        if (r < 0)
                return error_set(r, "cannot read '/%s': %s", path, strerror(-r));
        errno = 0;
        v = strtoul(vendor, &end, 16);
        if (errno || *end)
                return error_set(-EBADMSG, "'/%s' holds '%s', not a PCI vendor ID", path, vendor);
        d = strtoul(device, &end, 16);
        if (errno || *end)
                return error_set(-EBADMSG, "'/" PCI_DEVICES "/%s/device' holds '%s', not a PCI device ID", pf, device);
        snprintf(buf, size, "vfio_pci:v%08lXd%08lXsv%08lXsd%08lXbc03sc00i00", v, d, 0ul, 0ul);
        return 0;
}

/* Scans modules.alias for xe_vfio_pci's aliases: whether there is one, and
 * whether one matches subject. */
static int alias_scan(int rootfd, const char *path, const char *subject, bool *ret_installed, bool *ret_match) {
        _cleanup_fclose_ FILE *f = NULL;
        _cleanup_free_ char *line = NULL;
        size_t n = 0;
        int fd;

        fd = openat(rootfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        f = fdopen(fd, "re");
        if (!f) {
                int r = -errno;
                close(fd);
                return r;
        }
        *ret_installed = *ret_match = false;
        while (getline(&line, &n, f) >= 0) {
                char pattern[512], module[128];

                if (sscanf(line, "alias %511s %127s", pattern, module) != 2 || !streq(module, XE_VFIO_MODULE))
                        continue;
                *ret_installed = true;
                if (fnmatch(pattern, subject, 0) == 0) {
                        *ret_match = true;
                        break;
                }
        }
        return ferror(f) ? -EIO : 0;
}

int xesriov_pf_migratable(int rootfd, const char *pf, char **reterr_why) {
        char release[128], path[PATH_MAX], subject[300], device[32];
        bool installed = false, match = false;
        char *why;
        int r;

        r = read_small_at(rootfd, "proc/sys/kernel/osrelease", release, sizeof release);
        if (r < 0)
                return error_set(r, "cannot read '/proc/sys/kernel/osrelease': %s", strerror(-r));
        if (!release[0] || strchr(release, '/'))
                return error_set(-EBADMSG, "'/proc/sys/kernel/osrelease' holds '%s', not a kernel release", release);
        r = pf_vfio_subject(rootfd, pf, subject, sizeof subject, device);
        if (r < 0)
                return r;
        snprintf(path, sizeof path, "lib/modules/%s/modules.alias", release);
        r = alias_scan(rootfd, path, subject, &installed, &match);
        if (r < 0 && r != -ENOENT)
                return error_set(r, "cannot read '/%s': %s", path, strerror(-r));
        if (match)
                return 1;
        if (r == -ENOENT)
                why = strdup_printf("xe-vfio-pci cannot be found for kernel %s: '/%s' is missing (run depmod)", release, path);
        else if (!installed)
                why = strdup_printf("xe-vfio-pci is not installed for kernel %s (no xe_vfio_pci alias in '/%s'): an xe VF migrates only through it, in kernel 6.19 or later built with CONFIG_XE_VFIO_PCI",
                                    release, path);
        else
                why = strdup_printf("GPU %s (device %s) is not one that xe-vfio-pci drives (its ID table in '/%s': Battlemage, Panther Lake, Wildcat Lake), so its VFs cannot migrate",
                                    pf, device, path);
        if (!why)
                return -ENOMEM;
        *reterr_why = why;
        return 0;
}

/* The path of a VF's profile knob under the root. */
static int sched_path(int rootfd, const char *vf, const char *name, char path[PATH_MAX]) {
        char pf[PCI_ADDRESS_STRING_MAX];
        unsigned k;
        int r;

        if (!streq(name, "exec_quantum_ms") && !streq(name, "preempt_timeout_us"))
                return -EINVAL;
        r = xesriov_vf_index(rootfd, vf, pf, &k);
        if (r < 0)
                return error_set(r, "%s is not a VF of an Intel GPU on xe", vf);
        snprintf(path, PATH_MAX, PCI_DEVICES "/%s/sriov_admin/vf%u/profile/%s", pf, k, name);
        return 0;
}

int xesriov_vf_sched_read(int rootfd, const char *vf, const char *name, unsigned *ret) {
        char path[PATH_MAX];
        uint64_t v;
        int r;

        r = sched_path(rootfd, vf, name, path);
        if (r < 0)
                return r;
        r = attr_read_u64(rootfd, path, &v);
        if (r < 0)
                return r;
        if (v > UINT_MAX)
                return error_set(-ERANGE, "'/%s' holds %" PRIu64 ", more than a u32", path, v);
        *ret = (unsigned) v;
        return 0;
}

int xesriov_vf_sched_write(int rootfd, const char *vf, const char *name, unsigned v) {
        char path[PATH_MAX];
        int r;

        r = sched_path(rootfd, vf, name, path);
        if (r < 0)
                return r;
        return attr_write_u64(rootfd, path, v);
}

int xesriov_pf_check(int rootfd, const char *pf, unsigned vfs) {
        char a[PCI_ADDRESS_STRING_MAX], path[PATH_MAX];
        uint64_t total;
        int r;

        if (!pci_address_normalize(pf, a) || xesriov_is_pf(rootfd, a) <= 0)
                return error_set(-ENODEV, "GPU %s is not an Intel GPU in SR-IOV PF mode (bound to xe, with sriov_admin/)", pf);
        snprintf(path, sizeof path, PCI_DEVICES "/%s/sriov_totalvfs", a);
        r = attr_read_u64(rootfd, path, &total);
        if (r < 0)
                return r;
        if (vfs > total)
                return error_set(-ERANGE, "GPU %s offers %" PRIu64 " VFs (/%s), fewer than the %u [gpu_%s] declares", a, total, path,
                                 vfs, a);
        return 0;
}

/* --- the boot plan: a GPU's declared VFs and their profile ---------------- */

static const char *const sched_knobs[] = { "exec_quantum_ms", "preempt_timeout_us" };

int xesriov_declared_from_config(const ConfigGpu *g, XesriovVfProfile **ret) {
        _cleanup_free_ XesriovVfProfile *vf = calloc(g->vfs + 1, sizeof *vf);
        uint64_t v;

        if (!vf)
                return -ENOMEM;
        for (unsigned k = 1; k <= g->vfs; k++) {
                XesriovVfProfile *p = &vf[k - 1];

                if (config_gpu_list_get(&g->vram_quota, k, &v))
                        p->vram_quota = v;
                p->has_sched[0] = config_gpu_list_get(&g->exec_quantum_ms, k, &v);
                p->sched[0] = p->has_sched[0] ? (unsigned) v : 0;
                p->has_sched[1] = config_gpu_list_get(&g->preempt_timeout_us, k, &v);
                p->sched[1] = p->has_sched[1] ? (unsigned) v : 0;
        }
        *ret = steal_pointer(&vf);
        return 0;
}

/* Whether VF k (1-based) of the PF is bound to a VFIO driver: a guest's,
 * or being given to one; its scheduling is then the guest's entry's. */
static bool vf_held(int rootfd, char **vfs, unsigned k) {
        char driver[NAME_STRING_MAX];

        if (!vfs || k > strv_length(vfs) || pci_device_driver(rootfd, vfs[k - 1], driver) < 0) {
                error_clear();
                return false;
        }
        return streq(driver, "vfio-pci") || streq(driver, "xe-vfio-pci");
}

/* The declared scheduling knobs of every VF nobody holds against what
 * sriov_admin/vfN/profile/ reads: counted, and with write each that
 * differs written and read back. */
static int sched_sync(int rootfd, const char *pf, const XesriovVfProfile *vf, unsigned vfs, bool write,
                      unsigned *ret_differ, unsigned *ret_held) {
        _cleanup_strv_free_ char **addrs = NULL;
        char path[PATH_MAX];
        unsigned differ = 0, held = 0;
        uint64_t v;
        int r;

        if (vfio_pf_vfs(rootfd, pf, &addrs) < 0)
                error_clear(); /* no VFs: none is held */
        for (unsigned k = 1; k <= vfs; k++) {
                const XesriovVfProfile *p = &vf[k - 1];

                if (!p->has_sched[0] && !p->has_sched[1])
                        continue;
                if (vf_held(rootfd, addrs, k)) {
                        held++;
                        continue;
                }
                for (size_t i = 0; i < ELEMENTSOF(sched_knobs); i++) {
                        if (!p->has_sched[i])
                                continue;
                        snprintf(path, sizeof path, PCI_DEVICES "/%s/sriov_admin/vf%u/profile/%s", pf, k, sched_knobs[i]);
                        r = attr_read_u64(rootfd, path, &v);
                        if (r < 0)
                                return r;
                        if (v == p->sched[i])
                                continue;
                        if (write && (r = attr_write_u64(rootfd, path, p->sched[i])) < 0)
                                return r;
                        differ++;
                }
        }
        *ret_differ = differ;
        *ret_held = held;
        return 0;
}

/* Whether each VF's quota is the declared one (none declared: any). */
static int quotas_match(int rootfd, const char *pf, const XesriovVfProfile *vf, unsigned vfs) {
        char path[PATH_MAX];
        uint64_t q;
        int r;

        for (unsigned k = 1; k <= vfs; k++) {
                if (!vf[k - 1].vram_quota)
                        continue;
                snprintf(path, sizeof path, PCI_DEVICES "/%s/sriov_admin/vf%u/profile/vram_quota", pf, k);
                r = attr_read_u64(rootfd, path, &q);
                if (r < 0)
                        return r;
                if (q != vf[k - 1].vram_quota)
                        return 0;
        }
        return 1;
}

int xesriov_pf_state(int rootfd, const char *pf, const XesriovVfProfile *vf, unsigned vfs, XesriovState *ret) {
        XesriovState s = { 0 };
        char path[PATH_MAX];
        uint64_t n;
        int r;

        snprintf(path, sizeof path, PCI_DEVICES "/%s/sriov_numvfs", pf);
        r = attr_read_u64(rootfd, path, &n);
        if (r < 0)
                return r;
        s.numvfs = n > UINT_MAX ? UINT_MAX : (unsigned) n;
        if (n == vfs) {
                r = quotas_match(rootfd, pf, vf, vfs);
                if (r < 0)
                        return r;
                s.quotas_differ = r == 0;
        }
        r = sched_sync(rootfd, pf, vf, vfs, false, &s.sched_differ, &s.held);
        if (r < 0)
                return r;
        *ret = s;
        return n == vfs && !s.quotas_differ && s.sched_differ == 0;
}

/* VFs enabled otherwise than declared: one line that says what to do. */
static int provision_refused(const char *pf, unsigned vfs, unsigned numvfs) {
        if (numvfs == vfs)
                return error_set(-EBUSY, "GPU %s has its %u VFs enabled with VRAM quotas other than the ones [gpu_%s] declares: mdev-hooks never disables VFs a guest may hold; when none does, write 0 to /" PCI_DEVICES "/%s/sriov_numvfs and run gpu plan again",
                                 pf, numvfs, pf, pf);
        return error_set(-EBUSY, "GPU %s has %u VFs enabled, not the %u [gpu_%s] declares: mdev-hooks never disables VFs a guest may hold; when none does, write 0 to /" PCI_DEVICES "/%s/sriov_numvfs and run gpu plan again",
                         pf, numvfs, vfs, pf, pf);
}

/* From no VFs: each quota, each scheduling knob, then sriov_numvfs; then
 * the scheduling read back again with the VFs there, and written again
 * where enabling them changed it (the driver takes it at any time). */
static int provision_from_none(int rootfd, const char *pf, const XesriovVfProfile *vf, unsigned vfs, unsigned *ret_changed) {
        char path[PATH_MAX];
        unsigned changed = 0, n = 0, held = 0;
        int r;

        /* The quotas first: the driver takes them only while the VFs are disabled. */
        for (unsigned k = 1; k <= vfs; k++) {
                if (!vf[k - 1].vram_quota)
                        continue;
                snprintf(path, sizeof path, PCI_DEVICES "/%s/sriov_admin/vf%u/profile/vram_quota", pf, k);
                r = attr_write_u64(rootfd, path, vf[k - 1].vram_quota);
                if (r < 0)
                        return r;
                changed++;
        }
        /* Scheduling may be written at any time: before the VFs, so that a
         * refusal leaves none enabled. */
        r = sched_sync(rootfd, pf, vf, vfs, true, &n, &held);
        if (r < 0)
                return r;
        changed += n;
        snprintf(path, sizeof path, PCI_DEVICES "/%s/sriov_numvfs", pf);
        r = attr_write_u64(rootfd, path, vfs);
        if (r < 0)
                return r;
        r = sched_sync(rootfd, pf, vf, vfs, true, &n, &held);
        if (r < 0)
                return r;
        *ret_changed = changed + 1 + n;
        return 0;
}

int xesriov_pf_provision(int rootfd, const char *pf, const XesriovVfProfile *vf, unsigned vfs, unsigned *ret_changed,
                         unsigned *ret_held) {
        char a[PCI_ADDRESS_STRING_MAX];
        XesriovState s;
        unsigned n = 0, held = 0;
        int r;

        r = xesriov_pf_check(rootfd, pf, vfs);
        if (r < 0)
                return r;
        pci_address_normalize(pf, a);
        r = xesriov_pf_state(rootfd, a, vf, vfs, &s);
        if (r < 0)
                return r;
        if (r > 0) {
                *ret_changed = 0;
                *ret_held = s.held;
                return 0;
        }
        if (s.numvfs == vfs && !s.quotas_differ) {
                /* only the scheduling differs: the VFs stay as they are */
                r = sched_sync(rootfd, a, vf, vfs, true, &n, &held);
                if (r < 0)
                        return r;
                *ret_changed = n;
                *ret_held = held;
                return 0;
        }
        if (s.numvfs != 0)
                return provision_refused(a, vfs, s.numvfs);
        r = provision_from_none(rootfd, a, vf, vfs, ret_changed);
        if (r >= 0)
                *ret_held = 0;
        return r;
}
