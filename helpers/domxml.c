/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The domain XML on the hook's stdin (see domxml.h).
 *
 * Parsing is hardened the way DESIGN.md §4 asks: the size is checked before
 * libxml2 sees a byte, the parser runs without NOENT, DTDLOAD, DTDATTR or
 * XINCLUDE and with NONET, and a DOCTYPE stops the parser the moment it is
 * seen (a SAX internalSubset callback), so that no entity declaration -- the
 * billion laughs, an external entity -- is ever read, let alone expanded.
 * libxml2 prints nothing; the first error is kept and reported as one line
 * with its line and column.
 *
 * Extraction walks only the few levels that matter (domain, devices,
 * hostdev, source, address; metadata, mh:mdevs, mh:mdev), never the whole
 * tree, so a 1 MiB document costs little more than libxml2's parse.
 */
#include <ctype.h>
#include <fcntl.h>
#include <limits.h>

#include <libxml/parser.h>
#include <libxml/xmlerror.h>
#include <libxml/xmlsave.h>

#include "domxml.h"

#define PARSE_OPTIONS (XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING | XML_PARSE_COMPACT)

int domxml_read_fd(int fd, char **ret_buf, size_t *ret_len) {
        _cleanup_free_ char *buf = NULL;
        size_t len = 0, size = 0;

        for (;;) {
                ssize_t n;

                if (size - len < 2) {
                        size_t nsize = size ? size * 2 : 64 * 1024;
                        char *p;

                        /* One byte over the limit is enough to know it is too big. */
                        if (nsize > (size_t) DOMXML_MAX_SIZE + 2)
                                nsize = (size_t) DOMXML_MAX_SIZE + 2;
                        p = realloc(buf, nsize);
                        if (!p)
                                return -ENOMEM;
                        buf = p;
                        size = nsize;
                }
                n = read(fd, buf + len, size - len - 1);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return error_set(-errno, "cannot read the domain XML from stdin: %s", strerror(errno));
                }
                if (n == 0)
                        break;
                len += (size_t) n;
                if (len > DOMXML_MAX_SIZE)
                        return error_set(-EFBIG, "domain XML is larger than %u bytes, refusing it",
                                         DOMXML_MAX_SIZE);
        }
        if (!buf) {
                buf = malloc(1);
                if (!buf)
                        return -ENOMEM;
        }
        buf[len] = '\0';
        *ret_buf = steal_pointer(&buf);
        *ret_len = len;
        return 0;
}

/* --- parsing ------------------------------------------------------------ */

typedef struct ParseState {
        bool doctype;
        bool have_error;
        int line, column;
        char message[256];
} ParseState;

static void parse_structured_error(void *userdata, xmlErrorPtr e) {
        xmlParserCtxt *ctxt = userdata;
        ParseState *st = ctxt->_private;
        size_t n;

        if (!st || st->have_error || !e || e->level < XML_ERR_ERROR)
                return;
        st->have_error = true;
        st->line = e->line;
        st->column = e->int2;
        snprintf(st->message, sizeof st->message, "%s", e->message ? e->message : "unknown error");
        /* libxml2's messages end in a newline; keep the report on one line. */
        for (n = strlen(st->message); n > 0 && isspace((unsigned char) st->message[n - 1]); n--)
                st->message[n - 1] = '\0';
        for (char *p = st->message; *p; p++)
                if (*p == '\n' || *p == '\r' || *p == '\t')
                        *p = ' ';
}

/* <!DOCTYPE ...>: stop before the internal subset is read. */
static void parse_internal_subset(void *userdata, const xmlChar *name, const xmlChar *external_id,
                                  const xmlChar *system_id) {
        xmlParserCtxt *ctxt = userdata;
        ParseState *st = ctxt->_private;

        st->doctype = true;
        xmlStopParser(ctxt);
}

static bool is_element(const xmlNode *n, const char *name) {
        return n->type == XML_ELEMENT_NODE && !n->ns && xmlStrEqual(n->name, BAD_CAST name);
}

static bool is_mh_element(const xmlNode *n, const char *name) {
        return n->type == XML_ELEMENT_NODE && n->ns && n->ns->href &&
               xmlStrEqual(n->ns->href, BAD_CAST DOMXML_NAMESPACE) &&
               xmlStrEqual(n->name, BAD_CAST name);
}

static void xmlfreep(xmlChar **p) {
        if (*p)
                xmlFree(*p);
}
#define _cleanup_xmlfree_ _cleanup_(xmlfreep)

/* The value of an attribute without namespace (NULL if absent), as
 * libxml2 decoded it: character references resolved. */
static xmlChar *attr_get(const xmlNode *n, const char *name) {
        return xmlGetNoNsProp(n, BAD_CAST name);
}

/* A value from the input, made safe for a one-line message: at most 64
 * bytes, control characters shown as '?'. */
#define SHOW_MAX 68
static const char *show(const char *s, char buf[static SHOW_MAX]) {
        size_t i;

        for (i = 0; s && s[i] && i < SHOW_MAX - 4; i++)
                buf[i] = ((unsigned char) s[i] < 0x20 || s[i] == 0x7f) ? '?' : s[i];
        if (s && s[i])
                buf[i++] = '.', buf[i++] = '.', buf[i++] = '.';
        buf[i] = '\0';
        return buf;
}

static long node_line(const xmlNode *n) {
        return xmlGetLineNo(n);
}

static bool class_is_valid(const char *s) {
        if (streq(s, "VGPU"))
                return true;
        if (strncmp(s, "CUSTOM_", 7) != 0 || s[7] == '\0' || strlen(s) >= NAME_STRING_MAX)
                return false;
        for (s += 7; *s; s++)
                if (!(isupper((unsigned char) *s) || isdigit((unsigned char) *s) || *s == '_'))
                        return false;
        return true;
}

static bool name_has_control(const char *s) {
        for (; *s; s++)
                if ((unsigned char) *s < 0x20 || *s == 0x7f)
                        return true;
        return false;
}

/* The text of a simple element such as <name>: its text and CDATA children. */
static int element_text(const xmlNode *n, char *buf, size_t size) {
        size_t len = 0;

        for (const xmlNode *c = n->children; c; c = c->next) {
                size_t l;

                if (c->type == XML_COMMENT_NODE || c->type == XML_PI_NODE)
                        continue;
                if (c->type != XML_TEXT_NODE && c->type != XML_CDATA_SECTION_NODE)
                        return -EINVAL;
                l = strlen((const char *) c->content);
                if (len + l >= size)
                        return -E2BIG;
                memcpy(buf + len, c->content, l);
                len += l;
        }
        buf[len] = '\0';
        return 0;
}

static int add_mdev(Domxml *d, size_t *allocated, xmlNode *hostdev) {
        _cleanup_xmlfree_ xmlChar *uuid_attr = NULL;
        xmlNode *address = NULL;
        const char *uuid;
        DomxmlMdev *m;

        for (xmlNode *s = hostdev->children; s && !address; s = s->next)
                if (is_element(s, "source"))
                        for (xmlNode *a = s->children; a; a = a->next)
                                if (is_element(a, "address")) {
                                        address = a;
                                        break;
                                }
        if (!address)
                return error_set(-EINVAL, "domain XML line %ld: mdev hostdev without <source><address uuid='...'/>",
                                 node_line(hostdev));
        uuid_attr = attr_get(address, "uuid");
        uuid = (const char *) uuid_attr;
        if (!uuid)
                return error_set(-EINVAL, "domain XML line %ld: mdev hostdev without a source address uuid",
                                 node_line(address));
        if (!uuid_is_valid(uuid))
                return error_set(-EINVAL, "domain XML line %ld: mdev hostdev uuid '%s' is not a UUID",
                                 node_line(address), show(uuid, (char[SHOW_MAX]) { 0 }));

        if (d->n_mdevs == *allocated) {
                size_t n = *allocated ? *allocated * 2 : 4;
                DomxmlMdev *p = reallocarray(d->mdevs, n, sizeof *p);
                if (!p)
                        return -ENOMEM;
                d->mdevs = p;
                *allocated = n;
        }
        m = &d->mdevs[d->n_mdevs];
        *m = (DomxmlMdev) { .address = address };
        uuid_normalize(uuid, m->uuid);
        for (size_t i = 0; i < d->n_mdevs; i++)
                if (streq(d->mdevs[i].uuid, m->uuid))
                        return error_set(-EINVAL, "domain XML line %ld: mdev %s is used by two hostdevs (also line %ld)",
                                         node_line(hostdev), m->uuid, node_line(d->mdevs[i].address));
        d->n_mdevs++;
        return 0;
}

static int parse_devices(Domxml *d, xmlNode *devices, size_t *allocated) {
        for (xmlNode *h = devices->children; h; h = h->next) {
                _cleanup_xmlfree_ xmlChar *mode = NULL, *type = NULL;
                int r;

                if (!is_element(h, "hostdev"))
                        continue;
                mode = attr_get(h, "mode");
                type = attr_get(h, "type");
                if (!streq_ptr((char *) mode, "subsystem") || !streq_ptr((char *) type, "mdev"))
                        continue;
                r = add_mdev(d, allocated, h);
                if (r < 0)
                        return r;
        }
        return 0;
}

typedef struct MetaEntry {
        xmlNode *node;
        char uuid[UUID_STRING_MAX];
} MetaEntry;

static int parse_meta_entry(xmlNode *e, MetaEntry *ret) {
        static const char *const names[] = { "type", "parent" };
        _cleanup_xmlfree_ xmlChar *uuid_attr = NULL, *cls_attr = NULL;
        const char *uuid, *cls;

        uuid_attr = attr_get(e, "uuid");
        uuid = (const char *) uuid_attr;
        if (!uuid || !uuid_is_valid(uuid))
                return error_set(-EINVAL, "domain XML line %ld: metadata <mdev> uuid '%s' is not a UUID",
                                 node_line(e), show(uuid, (char[SHOW_MAX]) { 0 }));
        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                _cleanup_xmlfree_ xmlChar *v = attr_get(e, names[i]);
                if (v && !name_is_valid((const char *) v))
                        return error_set(-EINVAL, "domain XML line %ld: metadata <mdev> %s '%s' is not a valid name "
                                         "(letters, digits and ._:+- only)", node_line(e), names[i],
                                         show((const char *) v, (char[SHOW_MAX]) { 0 }));
        }
        cls_attr = attr_get(e, "class");
        cls = (const char *) cls_attr;
        if (cls && !class_is_valid(cls))
                return error_set(-EINVAL, "domain XML line %ld: metadata <mdev> class '%s' is not VGPU or CUSTOM_[A-Z0-9_]+",
                                 node_line(e), show(cls, (char[SHOW_MAX]) { 0 }));
        ret->node = e;
        uuid_normalize(uuid, ret->uuid);
        return 0;
}

/* Every <mh:mdev> of every <mh:mdevs> under <metadata>; elements in other
 * namespaces (or none) are somebody else's and are not looked at. */
static int parse_metadata(Domxml *d, xmlNode *metadata, MetaEntry **entries, size_t *n, size_t *allocated) {
        for (xmlNode *l = metadata->children; l; l = l->next) {
                if (!is_mh_element(l, "mdevs"))
                        continue;
                for (xmlNode *e = l->children; e; e = e->next) {
                        int r;

                        if (!is_mh_element(e, "mdev"))
                                continue;
                        if (*n == *allocated) {
                                size_t k = *allocated ? *allocated * 2 : 4;
                                MetaEntry *p = reallocarray(*entries, k, sizeof *p);
                                if (!p)
                                        return -ENOMEM;
                                *entries = p;
                                *allocated = k;
                        }
                        r = parse_meta_entry(e, &(*entries)[*n]);
                        if (r < 0)
                                return r;
                        for (size_t i = 0; i < *n; i++)
                                if (streq((*entries)[i].uuid, (*entries)[*n].uuid))
                                        return error_set(-EINVAL, "domain XML line %ld: two metadata <mdev> entries for %s (also line %ld)",
                                                         node_line(e), (*entries)[*n].uuid,
                                                         node_line((*entries)[i].node));
                        (*n)++;
                }
        }
        return 0;
}

static void copy_attr(const xmlNode *n, const char *name, char *buf, size_t size) {
        _cleanup_xmlfree_ xmlChar *v = attr_get(n, name);

        snprintf(buf, size, "%s", v ? (const char *) v : "");
}

static int parse_tree(Domxml *d) {
        _cleanup_free_ MetaEntry *entries = NULL;
        size_t n_entries = 0, entries_allocated = 0, mdevs_allocated = 0;
        xmlNode *root = xmlDocGetRootElement(d->doc), *name = NULL, *uuid = NULL;
        int r;

        if (!root || !is_element(root, "domain"))
                return error_set(-EINVAL, "domain XML: the root element is not <domain>");

        for (xmlNode *c = root->children; c; c = c->next) {
                if (c->type != XML_ELEMENT_NODE || c->ns)
                        continue;
                if (is_element(c, "name")) {
                        if (name)
                                return error_set(-EINVAL, "domain XML line %ld: a second <name>", node_line(c));
                        name = c;
                } else if (is_element(c, "uuid")) {
                        if (uuid)
                                return error_set(-EINVAL, "domain XML line %ld: a second <uuid>", node_line(c));
                        uuid = c;
                } else if (is_element(c, "devices")) {
                        r = parse_devices(d, c, &mdevs_allocated);
                        if (r < 0)
                                return r;
                } else if (is_element(c, "metadata")) {
                        r = parse_metadata(d, c, &entries, &n_entries, &entries_allocated);
                        if (r < 0)
                                return r;
                }
        }

        if (!name)
                return error_set(-EINVAL, "domain XML: no <name>");
        r = element_text(name, d->name, sizeof d->name);
        if (r == -E2BIG)
                return error_set(-EINVAL, "domain XML line %ld: <name> is longer than %d bytes",
                                 node_line(name), GUEST_NAME_MAX - 1);
        if (r < 0 || d->name[0] == '\0' || name_has_control(d->name))
                return error_set(-EINVAL, "domain XML line %ld: <name> is empty or not plain text", node_line(name));

        if (uuid) {
                char buf[64];

                r = element_text(uuid, buf, sizeof buf);
                if (r < 0 || !uuid_is_valid(buf))
                        return error_set(-EINVAL, "domain XML line %ld: <uuid> is not a UUID", node_line(uuid));
                uuid_normalize(buf, d->uuid);
        }

        for (size_t i = 0; i < n_entries; i++) {
                int k = domxml_find_mdev(d, entries[i].uuid);
                DomxmlMdev *m;

                if (k < 0)
                        continue; /* an entry for a device this guest does not have */
                m = &d->mdevs[k];
                m->meta = entries[i].node;
                copy_attr(m->meta, "type", m->type, sizeof m->type);
                copy_attr(m->meta, "class", m->mdev_class, sizeof m->mdev_class);
                copy_attr(m->meta, "parent", m->parent, sizeof m->parent);
        }
        return 0;
}

int domxml_parse(const char *buf, size_t len, Domxml **ret) {
        _cleanup_domxml_free_ Domxml *d = NULL;
        xmlParserCtxt *ctxt;
        ParseState st = { .doctype = false };
        int r;

        if (len > DOMXML_MAX_SIZE)
                return error_set(-EFBIG, "domain XML is larger than %u bytes, refusing it", DOMXML_MAX_SIZE);
        if (len == 0)
                return error_set(-EBADMSG, "domain XML is empty");

        d = calloc(1, sizeof *d);
        if (!d)
                return -ENOMEM;

        ctxt = xmlNewParserCtxt();
        if (!ctxt)
                return -ENOMEM;
        ctxt->_private = &st;
        ctxt->sax->internalSubset = parse_internal_subset;
        ctxt->sax->serror = parse_structured_error;
        d->doc = xmlCtxtReadMemory(ctxt, buf, (int) len, "domain.xml", NULL, PARSE_OPTIONS);
        xmlFreeParserCtxt(ctxt);

        if (st.doctype)
                return error_set(-EINVAL, "domain XML has a <!DOCTYPE>, which libvirt never sends; refusing it "
                                 "(no DTDs or entity declarations are accepted)");
        if (st.have_error)
                return error_set(-EBADMSG, "malformed domain XML at line %d, column %d: %s",
                                 st.line, st.column, st.message);
        if (!d->doc)
                return error_set(-EBADMSG, "malformed domain XML");
        if (d->doc->intSubset || d->doc->extSubset)
                return error_set(-EINVAL, "domain XML has a <!DOCTYPE>, refusing it");

        r = parse_tree(d);
        if (r < 0)
                return r;
        *ret = steal_pointer(&d);
        return 0;
}

void domxml_free(Domxml *d) {
        if (!d)
                return;
        if (d->doc)
                xmlFreeDoc(d->doc);
        free(d->mdevs);
        free(d);
}

int domxml_find_mdev(const Domxml *d, const char *uuid) {
        char u[UUID_STRING_MAX];

        if (!uuid_is_valid(uuid))
                return -ENOENT;
        uuid_normalize(uuid, u);
        for (size_t i = 0; i < d->n_mdevs; i++)
                if (streq(d->mdevs[i].uuid, u))
                        return (int) i;
        return -ENOENT;
}

int domxml_set_mdev_uuid(Domxml *d, size_t i, const char *uuid) {
        char u[UUID_STRING_MAX];
        DomxmlMdev *m;
        int k;

        if (i >= d->n_mdevs)
                return -EINVAL;
        if (!uuid_is_valid(uuid))
                return error_set(-EINVAL, "'%s' is not a UUID", show(uuid, (char[SHOW_MAX]) { 0 }));
        uuid_normalize(uuid, u);
        m = &d->mdevs[i];
        if (streq(m->uuid, u))
                return 0;
        k = domxml_find_mdev(d, u);
        if (k >= 0)
                return error_set(-EEXIST, "mdev %s is already used by another hostdev of the guest", u);

        if (!xmlSetProp(m->address, BAD_CAST "uuid", BAD_CAST u))
                return -ENOMEM;
        if (m->meta && !xmlSetProp(m->meta, BAD_CAST "uuid", BAD_CAST u))
                return -ENOMEM;
        memcpy(m->uuid, u, sizeof u);
        return 0;
}

int domxml_format(const Domxml *d, char **ret_buf, size_t *ret_len) {
        xmlBuffer *xb;
        xmlSaveCtxt *save;
        char *s;
        size_t len;

        xb = xmlBufferCreate();
        if (!xb)
                return -ENOMEM;
        /* No XML declaration: libvirt sends none, and the output is UTF-8,
         * XML's default, whatever the input declared. */
        save = xmlSaveToBuffer(xb, "UTF-8", XML_SAVE_NO_DECL);
        if (!save) {
                xmlBufferFree(xb);
                return -ENOMEM;
        }
        if (xmlSaveDoc(save, d->doc) < 0) {
                xmlSaveClose(save);
                xmlBufferFree(xb);
                return error_set(-EIO, "cannot serialise the domain XML");
        }
        xmlSaveClose(save);

        len = (size_t) xmlBufferLength(xb);
        s = malloc(len + 1);
        if (!s) {
                xmlBufferFree(xb);
                return -ENOMEM;
        }
        memcpy(s, xmlBufferContent(xb), len);
        s[len] = '\0';
        xmlBufferFree(xb);
        *ret_buf = s;
        *ret_len = len;
        return 0;
}
