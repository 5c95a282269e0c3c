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

#include "attach.h"
#include "backend.h"
#include "hook.h"
#include "ledger.h"
#include "lock.h"
#include "log.h"
#include "pciaddr.h"

/* --- choosing ------------------------------------------------------------ */

void attach_device_fill(AttachDevice *d, AttachKind kind, const char *key, const AttachRequest *req, const char *what) {
        *d = (AttachDevice) { .kind = kind };
        snprintf(d->key, sizeof d->key, "%s", key);
        snprintf(d->type, sizeof d->type, "%s", strempty(req->type));
        snprintf(d->mdev_class, sizeof d->mdev_class, "%s", strempty(req->mdev_class));
        if (kind == ATTACH_MDEV)
                snprintf(d->parent, sizeof d->parent, "%s", strempty(req->parent));
        snprintf(d->what, sizeof d->what, "%s", what);
}

/* The backend that serves the request: the first that says so, else the
 * first in the table, which says why nothing fits. */
static const Backend *backend_serving(const AttachChoosing *ch) {
        const Backend *b;

        BACKEND_FOREACH(b)
                if (b->attach_serves && b->attach_serves(ch))
                        return b;
        return backends[0];
}

int attach_choose(int rootfd, const Config *c, const char *guest, const Domxml *def, const Domxml *live,
                  const AttachRequest *req, AttachDevice **ret, size_t *ret_n) {
        _cleanup_close_ int ledgerfd = -1;
        _cleanup_free_ AttachDevice *out = NULL;
        char boot_id[UUID_STRING_MAX] = "";
        AttachChoosing ch = { .rootfd = rootfd, .config = c, .guest = guest, .boot_id = boot_id,
                              .def = def, .live = live, .req = req };
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
        ch.ledgerfd = ledgerfd;
        out = calloc(req->count, sizeof *out);
        if (!out)
                return -ENOMEM;
        r = backend_serving(&ch)->attach_choose(&ch, out);
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
                xmlNewProp(hostdev, BAD_CAST "managed", BAD_CAST(d->managed ? "yes" : "no"));
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
        return pci_address_normalize((const char *) v, a) && streq(a, d->key);
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
        *d = (AttachDevice) { .kind = ATTACH_VGPU, .managed = v->managed };
        snprintf(d->key, sizeof d->key, "%s", v->pci);
        snprintf(d->type, sizeof d->type, "%s", v->type);
        snprintf(d->mdev_class, sizeof d->mdev_class, "%s", v->mdev_class);
        if (v->type[0] || !v->mdev_class[0])
                snprintf(d->what, sizeof d->what, "%s", v->type[0] ? v->type : "type not given");
        else
                snprintf(d->what, sizeof d->what, "class %s", v->mdev_class);
}

/* 1 when PCI hostdev v is a vGPU of mdev-hooks: it has an <mh:vgpu> entry, or
 * its device is one of a backend's here (a VF of a VF kind). */
static bool vgpu_listed(int rootfd, const DomxmlVgpu *v) {
        bool ours = v->has_meta || backend_of_device(rootfd, v->pci);

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
        } else if (pci_address_normalize(key, norm)) {
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
