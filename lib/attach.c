/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `mdev-hooks attach` and `detach`, without libvirt (attach.h).
 *
 * Every XML read here goes through domxml_parse(), the one reader: the
 * guest's definition as libvirt gives it, and this project's metadata
 * element, read inside a small <domain> of its own. Only this project's
 * element and the <hostdev>s named are changed; the rest of a document is
 * written back as libxml2 read it.
 */
#include <stdio.h>
#include <sys/random.h>

#include "alloc.h"
#include "attach.h"
#include "hook.h"
#include "ledger.h"
#include "lock.h"
#include "log.h"
#include "sysfs.h"
#include "vfio.h"
#include "vgpu.h"

/* --- choosing ------------------------------------------------------------ */

/* A new random (version 4) UUID. */
static int uuid_random(char out[UUID_STRING_MAX]) {
        uint8_t b[16];

        if (getrandom(b, sizeof b, 0) != (ssize_t) sizeof b)
                return error_set(-errno, "cannot make a UUID: %s", strerror(errno));
        b[6] = (uint8_t) ((b[6] & 0x0f) | 0x40);
        b[8] = (uint8_t) ((b[8] & 0x3f) | 0x80);
        snprintf(out, UUID_STRING_MAX, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
        return 0;
}

static bool dom_names_uuid(const Domxml *d, const char *uuid) {
        return d && (domxml_find_mdev(d, uuid) >= 0 || domxml_has_orphan_meta(d, uuid));
}

/* A UUID no mdev here, no hostdev or entry of the guest and no earlier
 * choice of this call has. */
static int uuid_new(int rootfd, const Domxml *def, const Domxml *live, const AttachDevice *chosen, size_t n_chosen,
                    char out[UUID_STRING_MAX]) {
        for (unsigned tries = 0; tries < 16; tries++) {
                bool used = false;
                SysfsMdev m;
                int r;

                r = uuid_random(out);
                if (r < 0)
                        return r;
                for (size_t i = 0; i < n_chosen; i++)
                        used = used || streq(chosen[i].key, out);
                if (used || dom_names_uuid(def, out) || dom_names_uuid(live, out))
                        continue;
                r = sysfs_mdev_get(rootfd, out, &m);
                if (r == -ENOENT) {
                        error_clear();
                        return 0;
                }
                if (r < 0)
                        return error_prefix(r, "cannot look up mdev %s", out);
        }
        return error_set(-EEXIST, "cannot find an unused UUID");
}

/* ATTACH_VGPU when every type is NVIDIA's (nvidia-<ID>), the host has PFs of
 * NVIDIA's VFIO framework, and no mdev parent offers any of the types (the
 * two frameworks name a vGPU type alike); else ATTACH_MDEV. */
static AttachKind kind_of(int rootfd, char *const *types) {
        _cleanup_strv_free_ char **pfs = NULL, **parents = NULL;
        unsigned id, avail;

        for (size_t t = 0; types[t]; t++)
                if (vfio_type_id(types[t], &id) < 0)
                        return ATTACH_MDEV;
        if (vfio_pf_list(rootfd, &pfs) < 0 || strv_length(pfs) == 0) {
                error_clear();
                return ATTACH_MDEV;
        }
        if (sysfs_parent_list(rootfd, &parents) >= 0)
                for (char **p = parents; p && *p; p++)
                        for (size_t t = 0; types[t]; t++)
                                if (sysfs_type_available(rootfd, *p, types[t], &avail) >= 0)
                                        return ATTACH_MDEV;
        error_clear();
        return ATTACH_VGPU;
}

static void device_fill(AttachDevice *d, AttachKind kind, const char *key, const AttachRequest *req, const char *what) {
        *d = (AttachDevice) { .kind = kind };
        snprintf(d->key, sizeof d->key, "%s", key);
        snprintf(d->type, sizeof d->type, "%s", strempty(req->type));
        snprintf(d->mdev_class, sizeof d->mdev_class, "%s", strempty(req->mdev_class));
        if (kind == ATTACH_MDEV)
                snprintf(d->parent, sizeof d->parent, "%s", strempty(req->parent));
        snprintf(d->what, sizeof d->what, "%s", what);
}

static int mdevs_choose(Alloc *a, AllocWant *w, const Domxml *def, const Domxml *live, const AttachRequest *req,
                        AttachDevice *out) {
        _cleanup_free_ char (*uuids)[UUID_STRING_MAX] = calloc(req->count, sizeof *uuids);
        int r;

        if (!uuids)
                return -ENOMEM;
        for (unsigned i = 0; i < req->count; i++) {
                r = uuid_new(a->rootfd, def, live, out, i, uuids[i]);
                if (r < 0)
                        return r;
                device_fill(&out[i], ATTACH_MDEV, uuids[i], req, w->what);
        }
        return alloc_check_room(a, w, uuids, req->count);
}

/* The VFs --parent allows: itself when it names a VF, its VFs when it names
 * a PF. */
static int parent_vfs(int rootfd, const char *parent, char ***ret) {
        char pci[PCI_ADDRESS_MAX];

        if (!vfio_pci_address_parse(parent, pci))
                return error_set(-EINVAL, "--parent '%s' is not a PCI address; for a vGPU of NVIDIA's VFIO framework name its GPU (PF) or a VF", parent);
        if (vfio_is_vf(rootfd, pci) > 0)
                return strv_extend(ret, pci);
        if (vfio_is_pf(rootfd, pci) > 0)
                return vfio_pf_vfs(rootfd, pci, ret);
        error_clear();
        return error_set(-ENODEV, "--parent %s is neither a GPU (PF) nor a VF of NVIDIA's VFIO framework here", pci);
}

static void taken_add(char (*taken)[PCI_ADDRESS_MAX], size_t *n, const char *pci) {
        snprintf(taken[(*n)++], PCI_ADDRESS_MAX, "%.12s", pci);
}

static int vgpus_choose(int rootfd, int ledgerfd, const Config *c, const char *boot_id, const Domxml *def,
                        const Domxml *live, const AttachRequest *req, AttachDevice *out) {
        _cleanup_free_ char (*taken)[PCI_ADDRESS_MAX] = NULL;
        _cleanup_strv_free_ char **types = NULL, **allowed = NULL;
        DomxmlVgpu want = { 0 };
        size_t n_taken = 0, room;
        int r;

        snprintf(want.type, sizeof want.type, "%s", strempty(req->type));
        snprintf(want.mdev_class, sizeof want.mdev_class, "%s", strempty(req->mdev_class));
        error_clear();
        r = vgpu_want_types(c, &want, NULL, 0, &types);
        if (r < 0)
                return r;
        if (req->parent) {
                r = parent_vfs(rootfd, req->parent, &allowed);
                if (r < 0)
                        return r;
        }

        room = (def ? def->n_vgpus : 0) + (live ? live->n_vgpus : 0) + strv_length(req->avoid) + req->count + 1;
        taken = calloc(room, sizeof *taken);
        if (!taken)
                return -ENOMEM;
        for (size_t i = 0; def && i < def->n_vgpus; i++)
                taken_add(taken, &n_taken, def->vgpus[i].pci);
        for (size_t i = 0; live && i < live->n_vgpus; i++)
                taken_add(taken, &n_taken, live->vgpus[i].pci);
        for (char **v = req->avoid; v && *v; v++)
                taken_add(taken, &n_taken, *v);

        for (unsigned k = 0; k < req->count; k++) {
                VgpuChoice ch = { 0 };

                error_clear();
                if (!allowed)
                        r = vgpu_choose(rootfd, ledgerfd, c, boot_id, NULL, types, NULL, taken, n_taken, &ch);
                else {
                        /* the first VF of the PF (or the VF) that can take it */
                        r = -ENOSPC;
                        for (char **vf = allowed; *vf && r < 0; vf++) {
                                bool skip = false;

                                for (size_t i = 0; i < n_taken; i++)
                                        skip = skip || streq(taken[i], *vf);
                                if (skip)
                                        continue;
                                r = vgpu_choose(rootfd, ledgerfd, c, boot_id, NULL, types, *vf, taken, n_taken, &ch);
                                if (r >= 0 && !streq(ch.vf, *vf))
                                        r = -ENOSPC;
                        }
                        if (r < 0) {
                                error_clear();
                                return error_set(-ENOSPC, "no capacity for %s on %s: no free VF there can take it%s (see mdev-hooks list)",
                                                 req->type ? req->type : req->mdev_class, req->parent,
                                                 k > 0 ? " after the ones chosen" : "");
                        }
                }
                if (r < 0)
                        return r;
                device_fill(&out[k], ATTACH_VGPU, ch.vf, req, ch.type);
                taken_add(taken, &n_taken, ch.vf);
        }
        return 0;
}

int attach_choose(int rootfd, const Config *c, const char *guest, const Domxml *def, const Domxml *live,
                  const AttachRequest *req, AttachDevice **ret, size_t *ret_n) {
        _cleanup_close_ int ledgerfd = -1;
        _cleanup_free_ AttachDevice *out = NULL;
        char boot_id[UUID_STRING_MAX] = "";
        DomxmlMdev m = { .has_meta = true };
        AllocWant w = { 0 };
        Alloc a;
        int r;

        if (req->count < 1)
                return error_set(-EINVAL, "--count must be 1 or more");
        if (req->type && !config_find_type(c, req->type)) {
                char enabled[512];

                config_enabled_types_string(c, enabled, sizeof enabled);
                return error_set(-ENOENT, "type %s is not enabled in the config (enabled: %s); add it to [devices] enabled_mdev_types",
                                 req->type, enabled);
        }
        if (req->parent && !name_is_valid(req->parent))
                return error_set(-EINVAL, "--parent '%s' is not a parent's name", req->parent);

        if (boot_id_read(rootfd, boot_id) < 0)
                boot_id[0] = '\0';
        if (ledger_open_existing(rootfd, &ledgerfd) < 0)
                ledgerfd = -1;
        error_clear();
        out = calloc(req->count, sizeof *out);
        if (!out)
                return -ENOMEM;

        /* The types, as the hook reads the metadata entry attach writes. */
        snprintf(m.type, sizeof m.type, "%s", strempty(req->type));
        snprintf(m.mdev_class, sizeof m.mdev_class, "%s", strempty(req->mdev_class));
        snprintf(m.parent, sizeof m.parent, "%s", strempty(req->parent));
        alloc_init(&a, rootfd, ledgerfd, c, guest, NULL, boot_id);
        r = alloc_want_resolve(&a, &m, NULL, &w);
        if (r >= 0) {
                if (kind_of(rootfd, w.types) == ATTACH_MDEV)
                        r = mdevs_choose(&a, &w, def, live, req, out);
                else
                        r = vgpus_choose(rootfd, ledgerfd, c, boot_id, def, live, req, out);
        }
        alloc_want_done(&w);
        alloc_done(&a);
        if (r < 0)
                return r;
        *ret = steal_pointer(&out);
        *ret_n = req->count;
        return 0;
}

/* --- XML ------------------------------------------------------------------ */

/* <hostdev> of one device. */
static xmlNode *hostdev_node(const AttachDevice *d) {
        xmlNode *hostdev, *source, *address;
        unsigned dom, bus, slot, fn;
        char v[16];

        hostdev = xmlNewNode(NULL, BAD_CAST "hostdev");
        if (!hostdev)
                return NULL;
        xmlNewProp(hostdev, BAD_CAST "mode", BAD_CAST "subsystem");
        source = address = NULL;
        if (d->kind == ATTACH_MDEV) {
                xmlNewProp(hostdev, BAD_CAST "type", BAD_CAST "mdev");
                xmlNewProp(hostdev, BAD_CAST "model", BAD_CAST "vfio-pci");
                source = xmlNewChild(hostdev, NULL, BAD_CAST "source", NULL);
                address = source ? xmlNewChild(source, NULL, BAD_CAST "address", NULL) : NULL;
                if (address && xmlNewProp(address, BAD_CAST "uuid", BAD_CAST d->key))
                        return hostdev;
        } else if (sscanf(d->key, "%4x:%2x:%2x.%1x", &dom, &bus, &slot, &fn) == 4) {
                xmlNewProp(hostdev, BAD_CAST "type", BAD_CAST "pci");
                xmlNewProp(hostdev, BAD_CAST "managed", BAD_CAST "no");
                source = xmlNewChild(hostdev, NULL, BAD_CAST "source", NULL);
                address = source ? xmlNewChild(source, NULL, BAD_CAST "address", NULL) : NULL;
                if (address) {
                        snprintf(v, sizeof v, "0x%04x", dom);
                        xmlNewProp(address, BAD_CAST "domain", BAD_CAST v);
                        snprintf(v, sizeof v, "0x%02x", bus);
                        xmlNewProp(address, BAD_CAST "bus", BAD_CAST v);
                        snprintf(v, sizeof v, "0x%02x", slot);
                        xmlNewProp(address, BAD_CAST "slot", BAD_CAST v);
                        snprintf(v, sizeof v, "0x%x", fn);
                        if (xmlNewProp(address, BAD_CAST "function", BAD_CAST v))
                                return hostdev;
                }
        }
        xmlFreeNode(hostdev);
        return NULL;
}

/* A node (and what is under it) as text. */
static int node_dump(xmlDoc *doc, xmlNode *node, bool format, char **ret) {
        _cleanup_xmlbuffer_free_ xmlBuffer *b = xmlBufferCreate();
        char *s;

        if (!b || xmlNodeDump(b, doc, node, 0, format) < 0)
                return -ENOMEM;
        s = strdup((const char *) xmlBufferContent(b));
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

int attach_hostdev_xml(const AttachDevice *d, char **ret) {
        xmlNode *n = hostdev_node(d);
        int r;

        if (!n)
                return -ENOMEM;
        r = node_dump(NULL, n, false, ret);
        xmlFreeNode(n);
        return r;
}

static bool is_element(const xmlNode *n, const char *name) {
        return n->type == XML_ELEMENT_NODE && xmlStrEqual(n->name, BAD_CAST name);
}

static xmlNode *child_element(xmlNode *parent, const char *name) {
        for (xmlNode *n = parent ? parent->children : NULL; n; n = n->next)
                if (is_element(n, name))
                        return n;
        return NULL;
}

/* Appends an entry per device to <mh:mdevs>. */
static int meta_entries_add(xmlNode *mdevs, const AttachDevice *d, size_t n) {
        for (size_t i = 0; i < n; i++) {
                xmlNode *e = xmlNewChild(mdevs, mdevs->ns, BAD_CAST(d[i].kind == ATTACH_MDEV ? "mdev" : "vgpu"), NULL);

                if (!e || !xmlNewProp(e, BAD_CAST(d[i].kind == ATTACH_MDEV ? "uuid" : "pci"), BAD_CAST d[i].key))
                        return -ENOMEM;
                if (d[i].type[0] && !xmlNewProp(e, BAD_CAST "type", BAD_CAST d[i].type))
                        return -ENOMEM;
                if (d[i].mdev_class[0] && !xmlNewProp(e, BAD_CAST "class", BAD_CAST d[i].mdev_class))
                        return -ENOMEM;
                if (d[i].parent[0] && !xmlNewProp(e, BAD_CAST "parent", BAD_CAST d[i].parent))
                        return -ENOMEM;
        }
        return 0;
}

/* A new <mh:mdevs> under parent. */
static xmlNode *mdevs_new(xmlNode *parent) {
        xmlNode *mdevs = xmlNewChild(parent, NULL, BAD_CAST "mdevs", NULL);
        xmlNs *ns = mdevs ? xmlNewNs(mdevs, BAD_CAST DOMXML_NAMESPACE, BAD_CAST "mh") : NULL;

        if (!ns)
                return NULL;
        xmlSetNs(mdevs, ns);
        return mdevs;
}

/* Drops the text between the element's children (the indentation libvirt
 * gave it), so that libvirt indents the changed element anew. */
static void blanks_drop(xmlNode *e) {
        for (xmlNode *n = e->children, *next; n; n = next) {
                next = n->next;
                if (n->type == XML_TEXT_NODE && xmlIsBlankNode(n)) {
                        xmlUnlinkNode(n);
                        xmlFreeNode(n);
                }
        }
}

/* This project's element as libvirt's metadata API gives and takes it:
 * without a namespace (libvirt puts it and everything under it in this
 * project's namespace itself), read inside a <domain> of its own with
 * domxml_parse(). *ret_mdevs is the element, made when there is none. */
static int metadata_read(const char *element, char **ret_buf, Domxml **ret_dom, xmlNode **ret_mdevs) {
        _cleanup_free_ char *buf = NULL;
        _cleanup_domxml_free_ Domxml *d = NULL;
        xmlNode *metadata;
        int r;

        buf = strdup_printf("<domain><name>metadata</name><metadata>%s</metadata></domain>", strempty(element));
        if (!buf)
                return -ENOMEM;
        r = domxml_parse_full(buf, strlen(buf), &d);
        if (r < 0)
                return error_prefix(r, "cannot read the guest's mdev-hooks metadata");
        metadata = child_element(xmlDocGetRootElement(d->doc), "metadata");
        *ret_mdevs = child_element(metadata, "mdevs");
        if (!*ret_mdevs) {
                *ret_mdevs = xmlNewChild(metadata, NULL, BAD_CAST "mdevs", NULL);
                if (!*ret_mdevs)
                        return -ENOMEM;
        }
        *ret_buf = steal_pointer(&buf);
        *ret_dom = steal_pointer(&d);
        return 0;
}

int attach_metadata_add(const char *element, const AttachDevice *d, size_t n, char **ret) {
        _cleanup_free_ char *buf = NULL;
        _cleanup_domxml_free_ Domxml *dom = NULL;
        xmlNode *mdevs;
        int r;

        r = metadata_read(element, &buf, &dom, &mdevs);
        if (r < 0)
                return r;
        blanks_drop(mdevs);
        r = meta_entries_add(mdevs, d, n);
        if (r < 0)
                return r;
        return node_dump(dom->doc, mdevs, true, ret);
}

/* Whether a metadata entry names the device. */
static bool entry_names(xmlNode *e, const AttachDevice *d) {
        _cleanup_xmlfree_ xmlChar *v = NULL;
        char a[UUID_STRING_MAX], b[UUID_STRING_MAX];

        if (d->kind == ATTACH_MDEV) {
                if (!is_element(e, "mdev") || !(v = xmlGetProp(e, BAD_CAST "uuid")) || !uuid_is_valid((const char *) v))
                        return false;
                uuid_normalize((const char *) v, a);
                uuid_normalize(d->key, b);
                return streq(a, b);
        }
        if (!is_element(e, "vgpu") || !(v = xmlGetProp(e, BAD_CAST "pci")))
                return false;
        return vfio_pci_address_parse((const char *) v, a) && streq(a, d->key);
}

int attach_metadata_remove(const char *element, const AttachDevice *d, size_t n, char **ret) {
        _cleanup_free_ char *buf = NULL;
        _cleanup_domxml_free_ Domxml *dom = NULL;
        xmlNode *mdevs;
        bool left = false;
        int r;

        r = metadata_read(element, &buf, &dom, &mdevs);
        if (r < 0)
                return r;
        for (xmlNode *e = mdevs->children, *next; e; e = next) {
                bool named = false;

                next = e->next;
                for (size_t i = 0; i < n && !named; i++)
                        named = entry_names(e, &d[i]);
                if (named) {
                        xmlUnlinkNode(e);
                        xmlFreeNode(e);
                } else if (e->type == XML_ELEMENT_NODE)
                        left = true;
        }
        if (!left) {
                *ret = NULL;
                return 0;
        }
        blanks_drop(mdevs);
        return node_dump(dom->doc, mdevs, true, ret);
}

/* The whole document as text, as libxml2 read it. */
static int doc_dump(xmlDoc *doc, char **ret) {
        xmlChar *mem = NULL;
        int size = 0;
        char *s;

        xmlDocDumpMemory(doc, &mem, &size);
        if (!mem)
                return -ENOMEM;
        s = strndup((const char *) mem, (size_t) size);
        xmlFree(mem);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

int attach_define_add(const char *xml, const AttachDevice *d, size_t n, char **ret) {
        _cleanup_domxml_free_ Domxml *dom = NULL;
        xmlNode *root, *devices;
        int r;

        r = domxml_parse_full(xml, strlen(xml), &dom);
        if (r < 0)
                return error_prefix(r, "cannot read the guest's definition");
        root = xmlDocGetRootElement(dom->doc);
        devices = child_element(root, "devices");
        if (!devices)
                devices = xmlNewChild(root, NULL, BAD_CAST "devices", NULL);
        if (!devices)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                xmlNode *h = hostdev_node(&d[i]);

                if (!h)
                        return -ENOMEM;
                if (!xmlAddChild(devices, h)) {
                        xmlFreeNode(h);
                        return -ENOMEM;
                }
        }
        return doc_dump(dom->doc, ret);
}

/* The <hostdev> of a device in the document, or NULL. */
static xmlNode *hostdev_find(const Domxml *dom, const AttachDevice *d) {
        xmlNode *address = NULL;
        int i;

        if (d->kind == ATTACH_MDEV) {
                i = domxml_find_mdev(dom, d->key);
                address = i >= 0 ? dom->mdevs[i].address : NULL;
        } else {
                i = domxml_find_vgpu(dom, d->key);
                address = i >= 0 ? dom->vgpus[i].address : NULL;
        }
        /* <hostdev><source><address> */
        return address && address->parent ? address->parent->parent : NULL;
}

int attach_define_remove(const char *xml, const AttachDevice *d, size_t n, char **ret) {
        _cleanup_domxml_free_ Domxml *dom = NULL;
        int r;

        r = domxml_parse_full(xml, strlen(xml), &dom);
        if (r < 0)
                return error_prefix(r, "cannot read the guest's definition");
        for (size_t i = 0; i < n; i++) {
                xmlNode *h = hostdev_find(dom, &d[i]);

                if (!h)
                        continue;
                /* the indentation before it goes with it */
                if (h->prev && h->prev->type == XML_TEXT_NODE && xmlIsBlankNode(h->prev)) {
                        xmlNode *blank = h->prev;

                        xmlUnlinkNode(blank);
                        xmlFreeNode(blank);
                }
                xmlUnlinkNode(h);
                xmlFreeNode(h);
        }
        return doc_dump(dom->doc, ret);
}

/* --- detach: which devices ---------------------------------------------- */

static void device_from_mdev(AttachDevice *d, const DomxmlMdev *m) {
        *d = (AttachDevice) { .kind = ATTACH_MDEV };
        snprintf(d->key, sizeof d->key, "%s", m->uuid);
        snprintf(d->type, sizeof d->type, "%s", m->type);
        snprintf(d->mdev_class, sizeof d->mdev_class, "%s", m->mdev_class);
        snprintf(d->parent, sizeof d->parent, "%s", m->parent);
        if (m->type[0] || !m->mdev_class[0])
                snprintf(d->what, sizeof d->what, "%s", m->type[0] ? m->type : "type not given");
        else
                snprintf(d->what, sizeof d->what, "class %s", m->mdev_class);
}

static void device_from_vgpu(AttachDevice *d, const DomxmlVgpu *v) {
        *d = (AttachDevice) { .kind = ATTACH_VGPU };
        snprintf(d->key, sizeof d->key, "%s", v->pci);
        snprintf(d->type, sizeof d->type, "%s", v->type);
        snprintf(d->mdev_class, sizeof d->mdev_class, "%s", v->mdev_class);
        if (v->type[0] || !v->mdev_class[0])
                snprintf(d->what, sizeof d->what, "%s", v->type[0] ? v->type : "type not given");
        else
                snprintf(d->what, sizeof d->what, "class %s", v->mdev_class);
}

/* 1 when PCI hostdev v is a vGPU of mdev-hooks: it has an <mh:vgpu> entry, or
 * its device is a VF of NVIDIA's VFIO framework here. */
static bool vgpu_listed(int rootfd, const DomxmlVgpu *v) {
        bool ours = v->has_meta || vgpu_is_ours(rootfd, v) > 0;

        error_clear();
        return ours;
}

int attach_find(int rootfd, const Domxml *dom, const char *key, AttachDevice **ret, size_t *ret_n) {
        _cleanup_free_ AttachDevice *out = calloc(dom->n_mdevs + dom->n_vgpus + 1, sizeof *out);
        char norm[UUID_STRING_MAX];
        size_t n = 0;
        int i;

        if (!out)
                return -ENOMEM;
        if (!key) {
                for (size_t k = 0; k < dom->n_mdevs; k++)
                        device_from_mdev(&out[n++], &dom->mdevs[k]);
                for (size_t k = 0; k < dom->n_vgpus; k++)
                        if (vgpu_listed(rootfd, &dom->vgpus[k]))
                                device_from_vgpu(&out[n++], &dom->vgpus[k]);
        } else if (uuid_is_valid(key)) {
                uuid_normalize(key, norm);
                i = domxml_find_mdev(dom, norm);
                if (i < 0)
                        return error_set(-ENOENT, "the guest has no mdev %s; 'mdev-hooks list' shows which mdevs it holds", norm);
                device_from_mdev(&out[n++], &dom->mdevs[i]);
        } else if (vfio_pci_address_parse(key, norm)) {
                i = domxml_find_vgpu(dom, norm);
                if (i < 0)
                        return error_set(-ENOENT, "the guest has no PCI hostdev %s", norm);
                if (!vgpu_listed(rootfd, &dom->vgpus[i]))
                        return error_set(-EINVAL, "PCI hostdev %s of the guest is not a vGPU (an ordinary passthrough device); detach it with 'virsh detach-device'",
                                         norm);
                device_from_vgpu(&out[n++], &dom->vgpus[i]);
        } else
                return error_set(-EINVAL, "'%s' is neither an mdev's UUID nor a VF's PCI address", key);
        *ret = steal_pointer(&out);
        *ret_n = n;
        return 0;
}

/* --- --live: the hook's prepare and release ------------------------------ */

/* A domain XML holding only the devices, with their entries: what the hook's
 * prepare reads. */
static int claim_xml(const char *guest, const char *guest_uuid, const AttachDevice *d, size_t n, char **ret) {
        _cleanup_xmldoc_free_ xmlDoc *doc = xmlNewDoc(BAD_CAST "1.0");
        xmlNode *root, *metadata, *mdevs, *devices;
        int r;

        root = doc ? xmlNewNode(NULL, BAD_CAST "domain") : NULL;
        if (!root)
                return -ENOMEM;
        xmlDocSetRootElement(doc, root);
        if (!xmlNewTextChild(root, NULL, BAD_CAST "name", BAD_CAST guest))
                return -ENOMEM;
        if (guest_uuid && guest_uuid[0] && !xmlNewTextChild(root, NULL, BAD_CAST "uuid", BAD_CAST guest_uuid))
                return -ENOMEM;
        metadata = xmlNewChild(root, NULL, BAD_CAST "metadata", NULL);
        mdevs = metadata ? mdevs_new(metadata) : NULL;
        devices = xmlNewChild(root, NULL, BAD_CAST "devices", NULL);
        if (!mdevs || !devices)
                return -ENOMEM;
        r = meta_entries_add(mdevs, d, n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                xmlNode *h = hostdev_node(&d[i]);

                if (!h || !xmlAddChild(devices, h)) {
                        xmlFreeNode(h);
                        return -ENOMEM;
                }
        }
        return doc_dump(doc, ret);
}

/* What the hook's worker takes before an operation (setup()): the record,
 * the boot id and the host-wide lock. */
typedef struct LiveSetup {
        int ledgerfd, lockfd;
        char boot_id[UUID_STRING_MAX];
} LiveSetup;

static void live_setup_done(LiveSetup *s) {
        closep(&s->lockfd); /* lets go of the lock */
        closep(&s->ledgerfd);
}

static int live_setup(int rootfd, const Config *c, const char *op, const char *guest, LiveSetup *s) {
        char what[GUEST_NAME_MAX + 32];
        int r;

        r = boot_id_read(rootfd, s->boot_id);
        if (r < 0)
                return r;
        r = ledger_open(rootfd, &s->ledgerfd);
        if (r < 0)
                return r;
        snprintf(what, sizeof what, "%s %s", op, guest);
        return lock_acquire(rootfd, c->lock_timeout, what, &s->lockfd);
}

int attach_claim(int rootfd, const Config *c, const char *guest, const char *guest_uuid,
                 const AttachDevice *d, size_t n) {
        _cleanup_(live_setup_done) LiveSetup s = { .ledgerfd = -1, .lockfd = -1 };
        _cleanup_free_ char *xml = NULL;
        _cleanup_domxml_free_ Domxml *dom = NULL;
        HookContext ctx;
        int r;

        r = claim_xml(guest, guest_uuid, d, n, &xml);
        if (r < 0)
                return r;
        r = domxml_parse(xml, strlen(xml), &dom);
        if (r < 0)
                return r;
        r = live_setup(rootfd, c, "attach", guest, &s);
        if (r < 0)
                return r;
        ctx = (HookContext) {
                .rootfd = rootfd,
                .ledgerfd = s.ledgerfd,
                .config = c,
                .dom = dom,
                .guest = guest,
                .lockfd = -1, /* held throughout: prepare syncs under it */
        };
        memcpy(ctx.boot_id, s.boot_id, sizeof ctx.boot_id);
        return hook_prepare(&ctx);
}

int attach_release(int rootfd, const Config *c, const char *guest, const AttachDevice *d, size_t n) {
        _cleanup_(live_setup_done) LiveSetup s = { .ledgerfd = -1, .lockfd = -1 };
        ErrorSaved why;
        HookContext ctx;
        int r, ret = 0;

        r = live_setup(rootfd, c, "detach", guest, &s);
        if (r < 0)
                return r;
        ctx = (HookContext) {
                .rootfd = rootfd,
                .ledgerfd = s.ledgerfd,
                .config = c,
                .guest = guest,
                .lockfd = -1,
        };
        memcpy(ctx.boot_id, s.boot_id, sizeof ctx.boot_id);
        for (size_t i = 0; i < n; i++) {
                LedgerEntry e;

                error_clear();
                r = ledger_read(s.ledgerfd, d[i].key, &e);
                if (r == -ENOENT)
                        continue;
                if (r >= 0 && (!streq(e.guest, guest) ||
                               (e.state != LEDGER_ASSIGNED && e.state != LEDGER_INCOMING && e.state != LEDGER_LOST)))
                        continue; /* not this guest's: never touched */
                if (r >= 0)
                        r = hook_release_one(&ctx, &e);
                if (r < 0 && ret == 0) {
                        ret = r;
                        error_save(&why);
                } else if (r < 0)
                        log_warning("%s", error_get(r));
        }
        return ret < 0 ? error_restore(ret, &why) : 0;
}
