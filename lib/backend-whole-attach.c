/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `mdev-hooks attach` of the VFs a guest gets whole (backend-whole.h): a
 * TYPE of the kind (amd-mxgpu-<N>, intel-xe-<MiB>) gets VFs chosen as
 * `pick` chooses them (whole_choose(): the config, placement, the one
 * ownership rule), none the guest's XML or another guest's definition
 * names, each written as a <hostdev type='pci' managed='yes'> (libvirt
 * binds it to vfio-pci) with its <mh:vgpu pci= type=> entry. Nothing is
 * claimed: the guest's prepare takes the VF, as for a VF named by hand.
 */
#include <errno.h>
#include <stdlib.h>

#include "backend-vf.h"
#include "backend-whole.h"
#include "error.h"
#include "pciaddr.h"

bool whole_attach_serves(const WholeKind *w, const AttachChoosing *ch) {
        _cleanup_strv_free_ char **pfs = NULL;
        bool serves;

        if (!ch->req->type || !vf_type_is_mine(w->kind, ch->req->type))
                return false;
        serves = vfio_pf_list(w->kind, ch->rootfd, &pfs) >= 0 && strv_length(pfs) > 0;
        error_clear();
        return serves;
}

/* --parent: a GPU of the kind (want->pf), or one of its VFs (want->vf and
 * its GPU). */
static int want_parent(const WholeKind *w, const AttachChoosing *ch, WholeWant *want, char pf[PCI_ADDRESS_STRING_MAX],
                       char vf[PCI_ADDRESS_STRING_MAX]) {
        const char *parent = ch->req->parent;

        if (!parent)
                return 0;
        if (!pci_address_normalize(parent, vf))
                return error_set(-EINVAL, "--parent '%s' is not a PCI address; for a %s name its GPU (PF) or a VF",
                                 parent, w->noun);
        if (vfio_is_pf(w->kind, ch->rootfd, vf) > 0) {
                snprintf(pf, PCI_ADDRESS_STRING_MAX, "%s", vf);
                want->pf = pf;
                return 0;
        }
        if (vfio_is_vf(w->kind, ch->rootfd, vf) > 0 && vfio_vf_pf(ch->rootfd, vf, pf) >= 0) {
                want->pf = pf;
                want->vf = vf;
                return 0;
        }
        error_clear();
        return error_set(-ENODEV, "--parent %s is neither a GPU (PF) nor a VF of the %s here", parent, w->kind->label);
}

int whole_attach_choose(const WholeKind *w, const AttachChoosing *ch, AttachDevice *out) {
        const AttachRequest *req = ch->req;
        char pf[PCI_ADDRESS_STRING_MAX], vf[PCI_ADDRESS_STRING_MAX];
        _cleanup_free_ char (*taken)[PCI_ADDRESS_STRING_MAX] = NULL;
        WholeWant want = { .type = req->type, .wish = attach_wish(ch), .guest = ch->guest };
        VfTaken t;
        int r;

        r = want_parent(w, ch, &want, pf, vf);
        if (r < 0)
                return r;
        r = vf_taken_init(ch, &t);
        if (r < 0)
                return r;
        taken = t.vf; /* freed on every way out */
        for (unsigned i = 0; i < req->count; i++) {
                SysfsMdev m;

                want.taken = t.vf;
                want.n_taken = t.n;
                r = whole_choose(w, ch->rootfd, ch->ledgerfd, ch->config, ch->boot_id, &want, &m);
                if (r == -ENOSPC && req->parent) {
                        error_clear();
                        return error_set(-ENOSPC, "no capacity for %s on %s: no free %s there is of that type%s (see mdev-hooks list)",
                                         req->type, req->parent, w->noun, i > 0 ? " after the ones chosen" : "");
                }
                if (r < 0)
                        return r;
                attach_device_fill(&out[i], ATTACH_VGPU, m.uuid, req, m.type);
                out[i].managed = true;
                vf_taken_add(&t, m.uuid);
        }
        return 0;
}
