/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mdev-sysfs-sim: NVIDIA's modes per GPU (doc/design.md §9):
 * equal-size (the default), heterogeneous (mixed-size) and MIG with its GPU
 * instances, what sriov-manage and nvidia-smi do to them and the order
 * rules with their errors. The tests' stand-ins for those tools
 * (tests/nvidia-tools/) drive it through .sim/ctl:
 *
 *   nv-sriov PF enable|disable   sriov-manage -e / -d
 *   nv-mig PF 0|1                nvidia-smi -i PF -mig 0|1
 *   nv-shm PF 0|1                nvidia-smi vgpu -i PF -shm 0|1
 *   nv-cgi PF PROFILE            nvidia-smi mig -i PF -cgi PROFILE -C (one GI)
 *   nv-dgi PF                    nvidia-smi mig -i PF -dci; -dgi (every GI)
 *   unbind-hold PF N             an NVML client holds the GPU for the next N sriov-manage runs
 *   reboot                       every vfio GPU loses its VFs, vGPUs, modes and GIs
 *                                (xe: every VF's quota and scheduling)
 *
 * The errnos the tools map to their messages: EBUSY the unbind lock, or in
 * use (a vGPU exists; VFs on for -mig 0); EOPNOTSUPP not supported (MIG off
 * for -cgi, MIG on for -shm, no such capability); ENOSPC no room for a GI;
 * EINVAL a malformed profile; ENOENT no such GPU.
 */
#include "sim.h"

static unsigned gi_used(const Pf *pf, unsigned gi, unsigned *ret_fb) {
        unsigned n = 0;
        for (unsigned i = 0; i < pf->num; i++)
                if (pf->vvfs[i]->cur && pf->vvfs[i]->gi == gi) {
                        n++;
                        *ret_fb = pf->vvfs[i]->cur->fb;
                }
        return n;
}

/* MIG: only MIG-backed types, in a GPU instance of their slices that holds
 * nothing or vGPUs of the same size with room for one more. */
bool nvmode_can_create(const Vf *v, const TypeDef *d, unsigned *ret_gi) {
        const Pf *pf = v->pf;
        if (!pf->mig || !d->gi_slices)
                return false;
        for (unsigned i = 0; i < pf->n_gis; i++) {
                const GpuInstance *g = &pf->gis[i];
                unsigned fb = 0, n;
                if (g->slices != d->gi_slices)
                        continue;
                n = gi_used(pf, g->id, &fb);
                if (n == 0 || (fb == d->fb && n < d->per_gi)) {
                        if (ret_gi)
                                *ret_gi = g->id;
                        return true;
                }
        }
        return false;
}

/* Where the driver puts a new vGPU: in MIG mode its GPU instance and its
 * slot there; time-sliced, the VF's index. */
void nvmode_created(Vf *v, const TypeDef *d, unsigned gi) {
        unsigned fb = 0;
        if (!v->pf->mig || !d->gi_slices) {
                v->gi = 0;
                v->placement = v->index;
                return;
        }
        v->gi = gi;
        v->placement = gi_used(v->pf, gi, &fb) - 1; /* v->cur is already set */
}

static unsigned pf_fb_in_use(const Pf *pf) {
        unsigned used = 0;
        for (unsigned i = 0; i < pf->num; i++)
                if (pf->vvfs[i]->cur)
                        used += pf->vvfs[i]->cur->fb;
        return used;
}

static bool pf_has_vgpu(const Pf *pf) {
        for (unsigned i = 0; i < pf->num; i++)
                if (pf->vvfs[i]->cur)
                        return true;
        return false;
}

/* sriov-manage rebinds the PF: it needs the unbind lock, and wipes the
 * heterogeneous mode and every GPU instance. -e with VFs on is a no-op. */
static int nv_sriov(Pf *pf, bool enable) {
        if (pf->unbind_busy > 0) {
                pf->unbind_busy--;
                return -EBUSY;
        }
        if (enable) {
                if (pf->num)
                        return 0;
                pf->het = false;
                pf->n_gis = 0;
                pf_enable(pf, pf->total);
                return 0;
        }
        for (unsigned i = 0; i < pf->num; i++)
                if (pf->vvfs[i]->open)
                        return -EBUSY;
        for (unsigned i = 0; i < pf->num; i++)
                pf->vvfs[i]->cur = NULL;
        if (pf->num)
                pf_disable(pf);
        return 0;
}

static int nv_mig(Pf *pf, bool on) {
        if (on) {
                if (!pf->mig_cap)
                        return -EOPNOTSUPP;
                if (pf_has_vgpu(pf))
                        return -EBUSY;
                pf->mig = true;
                pf->het = false;
                return 0;
        }
        if (pf->num || pf->n_gis)
                return -EBUSY; /* refused while VFs are enabled (or GIs exist) */
        pf->mig = false;
        return 0;
}

static int nv_shm(Pf *pf, bool on) {
        if (pf->mig || !pf->het_cap)
                return -EOPNOTSUPP;
        if (pf_has_vgpu(pf))
                return -EBUSY; /* NVML_ERROR_IN_USE */
        pf->het = on;
        return 0;
}

/* "<N>g.<M>gb": a GPU instance of N slices. */
static int nv_cgi(Pf *pf, const char *profile) {
        char *end;
        unsigned long slices = strtoul(profile, &end, 10);
        unsigned used = 0;
        if (slices == 0 || *end != 'g' || end[1] != '.' || strlen(profile) >= GI_PROFILE_MAX)
                return -EINVAL;
        if (!pf->mig)
                return -EOPNOTSUPP;
        for (unsigned i = 0; i < pf->n_gis; i++)
                used += pf->gis[i].slices;
        if (used + slices > pf->mig_slices || pf->n_gis == MAX_GIS)
                return -ENOSPC;
        GpuInstance *g = &pf->gis[pf->n_gis++];
        g->id = ++pf->next_gi;
        g->slices = (unsigned) slices;
        snprintf(g->profile, sizeof(g->profile), "%s", profile);
        return 0;
}

static int nv_dgi(Pf *pf) {
        if (!pf->mig)
                return -EOPNOTSUPP;
        for (unsigned i = 0; i < pf->num; i++)
                if (pf->vvfs[i]->cur && pf->vvfs[i]->cur->gi_slices)
                        return -EBUSY;
        pf->n_gis = 0;
        return 0;
}

static void nv_reboot(void) {
        for (size_t i = 0; i < model.n_pfs; i++) {
                Pf *pf = model.pfs[i];
                if (!pf->vfio)
                        continue;
                for (unsigned j = 0; j < pf->num; j++) {
                        pf->vvfs[j]->cur = NULL;
                        pf->vvfs[j]->open = false;
                }
                /* what the driver keeps per VF goes too (xe: every
                 * VF's quota and scheduling, even with no VF enabled) */
                if (pf->vfm && pf->vfm->disabling)
                        pf->vfm->disabling(pf);
                if (pf->num)
                        pf_disable(pf);
                pf->mig = pf->het = false;
                pf->n_gis = 0;
                pf->next_gi = 0;
                pf->unbind_busy = 0;
        }
}

static Pf *gpu_find(const char *name) {
        for (size_t i = 0; i < model.n_pfs; i++)
                if (model.pfs[i]->vfio && streq(model.pfs[i]->name, name))
                        return model.pfs[i];
        return NULL;
}

static int bool_word(const char *s) {
        return streq(s, "1") ? 1 : streq(s, "0") ? 0 : -1;
}

/* A command of the list above: >= 0 done, -errno refused, -ENOTTY not one
 * of these commands. */
int nvmode_ctl(char **w, size_t n) {
        if (streq(w[0], "reboot") && n == 1) {
                nv_reboot();
                return 0;
        }
        if (!(streq(w[0], "nv-sriov") || streq(w[0], "nv-mig") || streq(w[0], "nv-shm") || streq(w[0], "nv-cgi") ||
              streq(w[0], "nv-dgi") || streq(w[0], "unbind-hold")))
                return -ENOTTY;
        if (n < 2)
                return -EINVAL;
        Pf *pf = gpu_find(w[1]);
        if (!pf)
                return -ENOENT;
        if (streq(w[0], "nv-dgi"))
                return n == 2 ? nv_dgi(pf) : -EINVAL;
        if (n != 3)
                return -EINVAL;
        if (streq(w[0], "nv-sriov"))
                return streq(w[2], "enable") ? nv_sriov(pf, true) : streq(w[2], "disable") ? nv_sriov(pf, false) : -EINVAL;
        if (streq(w[0], "nv-cgi"))
                return nv_cgi(pf, w[2]);
        if (streq(w[0], "unbind-hold"))
                return parse_uint(w[2], &pf->unbind_busy);
        int b = bool_word(w[2]);
        if (b < 0)
                return -EINVAL;
        return streq(w[0], "nv-mig") ? nv_mig(pf, b) : nv_shm(pf, b);
}

/* .sim/state: one "gpu" line per vfio PF, what the stand-ins read. */
void nvmode_state(FILE *f) {
        for (size_t i = 0; i < model.n_pfs; i++) {
                const Pf *pf = model.pfs[i];
                if (!pf->vfio)
                        continue;
                fprintf(f, "gpu %s numvfs=%u mig=%d het=%d mig_cap=%d het_cap=%d vgpus=%d unbind_busy=%u fb=%u fb_used=%u gis=",
                        pf->name, pf->num, pf->mig, pf->het, pf->mig_cap, pf->het_cap, pf_has_vgpu(pf), pf->unbind_busy,
                        pf->fb, pf_fb_in_use(pf));
                for (unsigned j = 0; j < pf->n_gis; j++)
                        fprintf(f, "%s%u:%s", j ? "," : "", pf->gis[j].id, pf->gis[j].profile);
                fputs(pf->n_gis ? "\n" : "-\n", f);
        }
}

/* The vfio statement's mode keys: mig=0|1 heterogeneous=0|1 slices=N. */
const char *nvmode_topology(Pf *pf, char **w, size_t n) {
        const char *v = word_opt(w, n, 2, "mig");
        unsigned u;
        if (v && (parse_uint(v, &u) < 0 || u > 1))
                return "mig: 0 or 1";
        pf->mig_cap = v && u;
        v = word_opt(w, n, 2, "heterogeneous");
        if (v && (parse_uint(v, &u) < 0 || u > 1))
                return "heterogeneous: 0 or 1";
        pf->het_cap = v && u;
        v = word_opt(w, n, 2, "slices");
        if (v && (parse_uint(v, &pf->mig_slices) < 0 || pf->mig_slices == 0 || pf->mig_slices > MAX_GIS))
                return "slices: 1..8";
        if (pf->mig_cap && !pf->mig_slices)
                return "mig=1 needs slices=N";
        return NULL;
}
