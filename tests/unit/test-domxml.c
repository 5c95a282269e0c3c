/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * domxml.c: what it extracts from a domain XML, what it refuses (hostile and
 * malformed input), and that a rewrite changes nothing but the mdev UUIDs.
 * Sample documents are in tests/data/domxml/.
 */
#include <fcntl.h>
#include <iconv.h>
#include <stdarg.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <libxml/parser.h>

#include "check.h"
#include "domscan.h"
#include "domxml.h"

#define DATADIR SRCDIR "/tests/data/domxml/"

static char *read_data(const char *name, size_t *ret_len) {
        _cleanup_close_ int fd = -1;
        char *buf = NULL;
        size_t len;
        char path[1024];

        snprintf(path, sizeof path, DATADIR "%s", name);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
                fprintf(stderr, "cannot open %s: %s\n", path, strerror(errno));
                exit(EXIT_FAILURE);
        }
        if (read_fd_full(fd, DOMSCAN_MAX_SIZE, &buf, &len) < 0) {
                fprintf(stderr, "cannot read %s\n", path);
                exit(EXIT_FAILURE);
        }
        *ret_len = len;
        return buf;
}

static int parse_data(const char *name, Domxml **ret) {
        _cleanup_free_ char *buf = NULL;
        size_t len;

        buf = read_data(name, &len);
        error_clear();
        return domxml_parse(buf, len, ret);
}

/* --- what is extracted ------------------------------------------------- */

static void test_two_mdevs(void) {
        _cleanup_domxml_free_ Domxml *d = NULL;

        check(parse_data("two-mdevs.xml", &d) == 0);
        if (!d)
                return;
        check_streq(d->name, "web1");
        check_streq(d->uuid, "8d5e7a9c-0f4b-4c1e-9a55-0d3c2e6f1b27");
        /* the PCI hostdev does not count; the third metadata entry has no hostdev */
        check(d->n_mdevs == 2);
        if (d->n_mdevs != 2)
                return;
        check_streq(d->mdevs[0].uuid, "b1ae8bf6-38b0-4c81-9d44-78ce2e5d2b9d");
        check_streq(d->mdevs[0].type, "nvidia-35");
        check_streq(d->mdevs[0].mdev_class, "");
        check_streq(d->mdevs[0].parent, "");
        check(d->mdevs[0].meta != NULL);
        check(d->mdevs[0].address && xmlStrEqual(d->mdevs[0].address->name, BAD_CAST "address"));
        /* metadata UUID in upper case still matches */
        check_streq(d->mdevs[1].uuid, "5d0c4e8a-8d3a-4b38-9f7e-2f0f4c1d9a10");
        check_streq(d->mdevs[1].type, "");
        check_streq(d->mdevs[1].mdev_class, "CUSTOM_NVIDIA_11");
        check_streq(d->mdevs[1].parent, "0000:84:00.0");

        check(domxml_find_mdev(d, "5D0C4E8A-8D3A-4B38-9F7E-2F0F4C1D9A10") == 1);
        check(domxml_find_mdev(d, "11111111-2222-3333-4444-555555555555") == -ENOENT);
        check(domxml_find_mdev(d, "not-a-uuid") == -ENOENT);
}

static void test_no_mdev(void) {
        _cleanup_domxml_free_ Domxml *d = NULL;

        check(parse_data("no-mdev.xml", &d) == 0);
        if (!d)
                return;
        check_streq(d->name, "plain");
        check(d->n_mdevs == 0);
}

static void test_wrong_namespace_ignored(void) {
        _cleanup_domxml_free_ Domxml *d = NULL;

        /* Metadata in another namespace or in none, and a hostdev in another
         * namespace, are not ours: neither trusted nor validated. */
        check(parse_data("wrong-namespace.xml", &d) == 0);
        if (!d)
                return;
        check(d->n_mdevs == 1);
        if (d->n_mdevs != 1)
                return;
        check_streq(d->mdevs[0].type, "");
        check_streq(d->mdevs[0].parent, "");
        check(d->mdevs[0].meta == NULL);
}

static void test_default_namespace(void) {
        _cleanup_domxml_free_ Domxml *d = NULL;

        check(parse_data("default-namespace.xml", &d) == 0);
        if (!d || d->n_mdevs != 1)
                return;
        check_streq(d->mdevs[0].type, "nvidia-35");
        check(d->mdevs[0].meta != NULL);
}

/* --- what is refused --------------------------------------------------- */

static void test_refused(void) {
        static const struct {
                const char *file;
                int error;
                const char *message; /* a part of the one-line message */
        } cases[] = {
                { "billion-laughs.xml",    -EINVAL,  "DOCTYPE" },
                { "external-entity.xml",   -EINVAL,  "DOCTYPE" },
                { "external-dtd.xml",      -EINVAL,  "DOCTYPE" },
                { "undeclared-entity.xml", -EBADMSG, "line 2" },
                { "malformed.xml",         -EBADMSG, "line 5" },
                { "not-domain.xml",        -EINVAL,  "<domain>" },
                { "no-name.xml",           -EINVAL,  "<name>" },
                { "no-source-uuid.xml",    -EINVAL,  "line 4" },
                { "dup-uuid.xml",          -EINVAL,  "two hostdevs" },
                { "bad-uuid.xml",          -EINVAL,  "not a UUID" },
                { "bad-uuid-chars.xml",    -EINVAL,  "not a UUID" },
                { "meta-bad-uuid.xml",     -EINVAL,  "'../../etc' is not a UUID" },
                { "meta-type-dotdot.xml",  -EINVAL,  "type '..'" },
                { "meta-type-slash.xml",   -EINVAL,  "type '../../../tmp/x'" },
                { "meta-type-newline.xml", -EINVAL,  "type 'nv?idia/x'" },
                { "meta-parent-slash.xml", -EINVAL,  "parent '0000:84:00.0/../x'" },
                { "meta-bad-class.xml",    -EINVAL,  "class 'custom_lower'" },
                { "meta-dup.xml",          -EINVAL,  "two metadata" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_domxml_free_ Domxml *d = NULL;
                int r = parse_data(cases[i].file, &d);
                const char *msg = error_get(r);

                if (r != cases[i].error || d || !strstr(msg, cases[i].message) || strchr(msg, '\n')) {
                        fprintf(stderr, "%s: got %d '%s', expected %d with '%s'\n", cases[i].file, r, msg,
                                cases[i].error, cases[i].message);
                        abort();
                }
        }
}

static void test_external_entity_not_read(void) {
        _cleanup_free_ char *buf = NULL;
        _cleanup_domxml_free_ Domxml *d = NULL;
        size_t len;
        int r;

        /* Even if something let the document through, no byte of the
         * referenced file may end up in the message or the tree. */
        buf = read_data("external-entity.xml", &len);
        error_clear();
        r = domxml_parse(buf, len, &d);
        check(r < 0);
        check(!strstr(error_get(r), "root:"));
}

static void test_size_limit(void) {
        _cleanup_free_ char *big = NULL;
        _cleanup_domxml_free_ Domxml *d = NULL;
        _cleanup_free_ char *buf = NULL;
        char path[] = "/tmp/test-domxml-XXXXXX";
        _cleanup_close_ int fd = -1;
        size_t len, size = (size_t) DOMXML_MAX_SIZE + 1;
        int r;

        big = malloc(size);
        check(big);
        if (!big)
                return;
        /* well-formed but one byte too big: refused before parsing */
        memset(big, ' ', size);
        memcpy(big, "<domain><name>x</name>", 22);
        memcpy(big + DOMXML_MAX_SIZE - 9, "</domain>", 9);
        big[DOMXML_MAX_SIZE] = '\n';
        error_clear();
        r = domxml_parse(big, size, &d);
        check(r == -EFBIG);
        check(strstr(error_get(r), "larger than"));
        check(domxml_parse(big, DOMXML_MAX_SIZE, &d) == 0);

        /* reading stdin (the hook's program) stops right after the limit */
        fd = mkostemp(path, O_CLOEXEC);
        check(fd >= 0);
        if (fd < 0)
                return;
        unlink(path);
        check(write(fd, big, size) == (ssize_t) size);
        check(lseek(fd, 0, SEEK_SET) == 0);
        r = read_fd_full(fd, DOMSCAN_MAX_SIZE, &buf, &len);
        check(r == -EFBIG);
        check(buf == NULL);

        /* exactly the limit is fine */
        check(ftruncate(fd, DOMXML_MAX_SIZE) == 0);
        check(lseek(fd, 0, SEEK_SET) == 0);
        check(read_fd_full(fd, DOMSCAN_MAX_SIZE, &buf, &len) == 0);
        check(len == DOMXML_MAX_SIZE);
        check(buf && buf[len] == '\0');
}

static void test_deep_nesting(void) {
        _cleanup_domxml_free_ Domxml *d = NULL;
        _cleanup_free_ char *buf = NULL;
        size_t n = 0, depth = 100000;

        /* libxml2 refuses nesting beyond 256 levels (no XML_PARSE_HUGE);
         * neither it nor the tree builder recurses that deep. */
        buf = malloc(depth * 7 + 128);
        check(buf);
        if (!buf)
                return;
        n += (size_t) sprintf(buf, "<domain><name>x</name><devices><hostdev>");
        for (size_t i = 0; i < depth; i++)
                n += (size_t) sprintf(buf + n, "<a>");
        for (size_t i = 0; i < depth; i++)
                n += (size_t) sprintf(buf + n, "</a>");
        n += (size_t) sprintf(buf + n, "</hostdev></devices></domain>");
        error_clear();
        check(domxml_parse(buf, n, &d) == -EBADMSG);
        check(strstr(error_get(-EBADMSG), "depth"));
}

static void test_too_many_mdevs(void) {
        _cleanup_domxml_free_ Domxml *d = NULL;
        _cleanup_free_ char *buf = NULL;
        size_t n = 0, size = 8u * 1024u * 1024u;
        unsigned i;

        /* 8 MiB of tiny hostdevs: refused quickly, not compared pair by pair */
        buf = malloc(size + 256);
        check(buf);
        if (!buf)
                return;
        n += (size_t) sprintf(buf, "<domain><name>x</name><devices>");
        for (i = 0; n + 200 < size; i++)
                n += (size_t) sprintf(buf + n, "<hostdev mode='subsystem' type='mdev'><source><address uuid='%08x-0000-4000-8000-000000000000'/></source></hostdev>", i);
        n += (size_t) sprintf(buf + n, "</devices></domain>");
        error_clear();
        check(domxml_parse(buf, n, &d) == -EINVAL);
        check(strstr(error_get(-EINVAL), "more than 256 mdev hostdevs"));
}

static void test_empty(void) {
        _cleanup_domxml_free_ Domxml *d = NULL;

        check(domxml_parse("", 0, &d) == -EBADMSG);
        check(domxml_parse("<domain><name>a</name></domain><x/>", 35, &d) == -EBADMSG);
}

static void test_name_checks(void) {
        static const char long_head[] = "<domain><name>";
        static const char long_tail[] = "</name></domain>";
        _cleanup_domxml_free_ Domxml *d = NULL;
        char buf[1024];
        size_t n;

        /* a newline in the name would break the record's one-line fields */
        n = (size_t) snprintf(buf, sizeof buf, "<domain><name>a&#10;b</name></domain>");
        check(domxml_parse(buf, n, &d) == -EINVAL);
        /* GUEST_NAME_MAX - 1 bytes fit, one more does not */
        memcpy(buf, long_head, sizeof long_head - 1);
        n = sizeof long_head - 1;
        memset(buf + n, 'a', GUEST_NAME_MAX - 1);
        n += GUEST_NAME_MAX - 1;
        memcpy(buf + n, long_tail, sizeof long_tail - 1);
        n += sizeof long_tail - 1;
        check(domxml_parse(buf, n, &d) == 0);
        domxml_free(steal_pointer(&d));

        memcpy(buf, long_head, sizeof long_head - 1);
        n = sizeof long_head - 1;
        memset(buf + n, 'a', GUEST_NAME_MAX);
        n += GUEST_NAME_MAX;
        memcpy(buf + n, long_tail, sizeof long_tail - 1);
        n += sizeof long_tail - 1;
        check(domxml_parse(buf, n, &d) == -EINVAL);
        /* a character reference in an attribute is decoded before checks */
        n = (size_t) snprintf(buf, sizeof buf,
                              "<domain><name>c</name><devices><hostdev mode='subsystem' type='m&#100;ev'>"
                              "<source><address uuid='B1AE8BF6-38B0-4C81-9D44-78CE2E5D2B9&#x44;'/></source>"
                              "</hostdev></devices></domain>");
        check(domxml_parse(buf, n, &d) == 0);
        check(d && d->n_mdevs == 1 && streq(d->mdevs[0].uuid, "b1ae8bf6-38b0-4c81-9d44-78ce2e5d2b9d"));
}

/* The metadata's class= takes what the config's mdev_class takes: Nova's
 * 255 characters, one more is refused (one check for both, util.c). */
static void test_class_length(void) {
        _cleanup_domxml_free_ Domxml *d = NULL;
        char cls[MDEV_CLASS_MAX + 2], buf[1024];
        size_t n;

        memcpy(cls, "CUSTOM_", 7);
        memset(cls + 7, 'A', MDEV_CLASS_MAX - 7);
        cls[MDEV_CLASS_MAX] = '\0';
        n = (size_t) snprintf(buf, sizeof buf,
                              "<domain><name>c</name><metadata><mh:mdevs xmlns:mh='http://mdev-hooks.org/xmlns/domain/1.0'>"
                              "<mh:mdev uuid='b1ae8bf6-38b0-4c81-9d44-78ce2e5d2b9d' class='%s'/></mh:mdevs></metadata>"
                              "<devices><hostdev mode='subsystem' type='mdev'><source>"
                              "<address uuid='b1ae8bf6-38b0-4c81-9d44-78ce2e5d2b9d'/></source></hostdev></devices></domain>", cls);
        check(domxml_parse(buf, n, &d) == 0);
        check(d && d->n_mdevs == 1 && streq(d->mdevs[0].mdev_class, cls));
        domxml_free(steal_pointer(&d));

        cls[MDEV_CLASS_MAX] = 'A';
        cls[MDEV_CLASS_MAX + 1] = '\0';
        n = (size_t) snprintf(buf, sizeof buf,
                              "<domain><name>c</name><metadata><mh:mdevs xmlns:mh='http://mdev-hooks.org/xmlns/domain/1.0'>"
                              "<mh:mdev uuid='b1ae8bf6-38b0-4c81-9d44-78ce2e5d2b9d' class='%s'/></mh:mdevs></metadata>"
                              "<devices><hostdev mode='subsystem' type='mdev'><source>"
                              "<address uuid='b1ae8bf6-38b0-4c81-9d44-78ce2e5d2b9d'/></source></hostdev></devices></domain>", cls);
        error_clear();
        check(domxml_parse(buf, n, &d) == -EINVAL);
        check(strstr(error_get(-EINVAL), "of at most 255 characters") != NULL);
}

/* --- the rewrite changes only the UUIDs -------------------------------- */

/* The input and output are both parsed into full trees with plain libxml2
 * (domxml_parse() keeps only what it reads), then compared node by node. */
typedef struct Rewrite {
        const xmlNode **allowed;       /* input nodes whose uuid= must change */
        const char **allowed_uuid;     /* ... to this */
        size_t n_allowed;
        unsigned changed;              /* attributes found changed as allowed */
        unsigned mismatches;
} Rewrite;

static xmlDoc *full_parse(const char *buf, size_t len) {
        return xmlReadMemory(buf, (int) len, "test.xml", NULL, XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
}

static const xmlNode *first_child(const xmlNode *n, const char *name) {
        for (const xmlNode *c = n ? n->children : NULL; c; c = c->next)
                if (c->type == XML_ELEMENT_NODE && !c->ns && xmlStrEqual(c->name, BAD_CAST name))
                        return c;
        return NULL;
}

static bool attr_is(const xmlNode *n, const char *name, const char *value) {
        _cleanup_free_ char *v = (char *) xmlGetNoNsProp(n, BAD_CAST name);
        return v && streq(v, value);
}

/* Finds, in the full input tree, the uuid= attributes the rewrite may change:
 * source/address of the k-th mdev hostdev (to new_uuid[k]), and the
 * mh:mdev entry whose uuid is that hostdev's old one. Found independently of
 * domxml.c, by walking the tree. */
static void rewrite_allowed(Rewrite *rw, const xmlDoc *doc, char (*new_uuid)[UUID_STRING_MAX]) {
        const xmlNode *root = xmlDocGetRootElement(doc);
        size_t k = 0, n = 0;

        rw->allowed = calloc(256, sizeof *rw->allowed);
        rw->allowed_uuid = calloc(256, sizeof *rw->allowed_uuid);
        for (const xmlNode *dev = root->children; dev; dev = dev->next) {
                if (dev->type != XML_ELEMENT_NODE || dev->ns || !xmlStrEqual(dev->name, BAD_CAST "devices"))
                        continue;
                for (const xmlNode *h = dev->children; h; h = h->next) {
                        const xmlNode *a;
                        _cleanup_free_ char *old = NULL;

                        if (h->type != XML_ELEMENT_NODE || h->ns || !xmlStrEqual(h->name, BAD_CAST "hostdev") ||
                            !attr_is(h, "mode", "subsystem") || !attr_is(h, "type", "mdev"))
                                continue;
                        a = first_child(first_child(h, "source"), "address");
                        old = (char *) xmlGetNoNsProp(a, BAD_CAST "uuid");
                        rw->allowed[n] = a;
                        rw->allowed_uuid[n++] = new_uuid[k];
                        for (const xmlNode *md = first_child(root, "metadata") ? first_child(root, "metadata")->children : NULL;
                             md; md = md->next) {
                                if (md->type != XML_ELEMENT_NODE || !md->ns ||
                                    !xmlStrEqual(md->ns->href, BAD_CAST DOMXML_NAMESPACE))
                                        continue;
                                for (const xmlNode *e = md->children; e; e = e->next) {
                                        _cleanup_free_ char *u = NULL;

                                        if (e->type != XML_ELEMENT_NODE || !e->ns ||
                                            !xmlStrEqual(e->ns->href, BAD_CAST DOMXML_NAMESPACE) ||
                                            !xmlStrEqual(e->name, BAD_CAST "mdev"))
                                                continue;
                                        u = (char *) xmlGetNoNsProp(e, BAD_CAST "uuid");
                                        if (u && old && strcasecmp(u, old) == 0) {
                                                rw->allowed[n] = e;
                                                rw->allowed_uuid[n++] = new_uuid[k];
                                        }
                                }
                        }
                        k++;
                }
        }
        rw->n_allowed = n;
}

static void mismatch(Rewrite *rw, const xmlNode *a, const char *fmt, ...) _printf_(3, 4);
static void mismatch(Rewrite *rw, const xmlNode *a, const char *fmt, ...) {
        va_list ap;

        fprintf(stderr, "tree mismatch at line %ld: ", xmlGetLineNo(a));
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        rw->mismatches++;
}

static const char *ns_href(const xmlNs *ns) {
        return ns ? (const char *) ns->href : NULL;
}

/* The new UUID the uuid= attribute of this input node must carry, or NULL
 * if it must not change. */
static const char *allowed_uuid(const Rewrite *rw, const xmlNode *a) {
        for (size_t i = 0; i < rw->n_allowed; i++)
                if (a == rw->allowed[i])
                        return rw->allowed_uuid[i];
        return NULL;
}

static void compare_nodes(Rewrite *rw, const xmlNode *a, const xmlNode *b) {
        const xmlNode *ca, *cb;

        if (a->type != b->type) {
                mismatch(rw, a, "node type %d != %d", a->type, b->type);
                return;
        }
        if (!streq_ptr((const char *) a->name, (const char *) b->name))
                mismatch(rw, a, "name '%s' != '%s'", a->name, b->name);
        if (!streq_ptr(ns_href(a->ns), ns_href(b->ns)))
                mismatch(rw, a, "namespace of <%s>", a->name);
        if (a->type == XML_TEXT_NODE || a->type == XML_COMMENT_NODE || a->type == XML_CDATA_SECTION_NODE ||
            a->type == XML_PI_NODE) {
                if (!streq_ptr((const char *) a->content, (const char *) b->content))
                        mismatch(rw, a, "content '%s' != '%s'", a->content, b->content);
        }
        if (a->type == XML_ELEMENT_NODE) {
                const xmlNs *na, *nb;
                const xmlAttr *pa, *pb;
                const char *allowed = allowed_uuid(rw, a);

                for (na = a->nsDef, nb = b->nsDef; na && nb; na = na->next, nb = nb->next)
                        if (!streq_ptr((const char *) na->prefix, (const char *) nb->prefix) ||
                            !streq_ptr((const char *) na->href, (const char *) nb->href))
                                mismatch(rw, a, "namespace declaration on <%s>", a->name);
                if (na || nb)
                        mismatch(rw, a, "number of namespace declarations on <%s>", a->name);

                for (pa = a->properties, pb = b->properties; pa && pb; pa = pa->next, pb = pb->next) {
                        _cleanup_free_ char *va = NULL, *vb = NULL;

                        va = (char *) xmlNodeListGetString(a->doc, pa->children, 1);
                        vb = (char *) xmlNodeListGetString(b->doc, pb->children, 1);
                        if (!streq_ptr((const char *) pa->name, (const char *) pb->name) ||
                            !streq_ptr(ns_href(pa->ns), ns_href(pb->ns))) {
                                mismatch(rw, a, "attribute '%s' != '%s'", pa->name, pb->name);
                                continue;
                        }
                        if (allowed && !pa->ns && streq((const char *) pa->name, "uuid")) {
                                /* the masked position: must hold exactly the new UUID */
                                if (!streq_ptr(vb, allowed))
                                        mismatch(rw, a, "uuid '%s', expected '%s'", strna(vb), allowed);
                                else
                                        rw->changed++;
                                continue;
                        }
                        if (!streq_ptr(va, vb))
                                mismatch(rw, a, "attribute %s='%s' became '%s'", pa->name, strna(va), strna(vb));
                }
                if (pa || pb)
                        mismatch(rw, a, "number of attributes of <%s>", a->name);
        }
        for (ca = a->children, cb = b->children; ca && cb; ca = ca->next, cb = cb->next)
                compare_nodes(rw, ca, cb);
        if (ca || cb)
                mismatch(rw, a, "number of children of <%s>", a->name);
}

static void compare_docs(Rewrite *rw, const xmlDoc *a, const xmlDoc *b) {
        const xmlNode *ca, *cb;

        for (ca = a->children, cb = b->children; ca && cb; ca = ca->next, cb = cb->next)
                compare_nodes(rw, ca, cb);
        if (ca || cb) {
                fprintf(stderr, "tree mismatch: number of top-level nodes\n");
                rw->mismatches++;
        }
}

/* Rewrites every mdev of the document in buf to new UUIDs, formats it,
 * parses both again and compares them node by node, attribute by attribute,
 * with only the rewritten uuid= attributes allowed (and required) to differ. */
/* domxml_write() (migrate's stdout, from the input's own bytes) writes
 * exactly what domxml_format() returns. */
static void check_write_equals_format(const Domxml *d, const char *text, size_t text_len) {
        _cleanup_free_ char *got = NULL;
        _cleanup_close_ int fd = -1;
        ssize_t n;

        fd = memfd_create("domxml-write", MFD_CLOEXEC);
        check(fd >= 0);
        if (fd < 0)
                return;
        check(domxml_write(d, fd) == 0);
        check(lseek(fd, 0, SEEK_CUR) == (off_t) text_len);
        got = malloc(text_len + 1);
        check(got);
        if (!got)
                return;
        n = pread(fd, got, text_len + 1, 0);
        check(n == (ssize_t) text_len);
        check(n >= 0 && memcmp(got, text, text_len) == 0);
}

static void check_rewrite(const char *buf, size_t len, unsigned expect_changed) {
        _cleanup_domxml_free_ Domxml *in = NULL, *work = NULL, *out = NULL;
        _cleanup_free_ char (*new_uuid)[UUID_STRING_MAX] = NULL;
        _cleanup_free_ char *text = NULL;
        _cleanup_xmldoc_free_ xmlDoc *full_in = NULL, *full_out = NULL;
        Rewrite rw = { .mismatches = 0 };
        size_t text_len;

        check(domxml_parse(buf, len, &in) == 0);
        check(domxml_parse(buf, len, &work) == 0);
        if (!in || !work)
                return;
        new_uuid = calloc(work->n_mdevs + 1, sizeof *new_uuid);
        check(new_uuid);
        if (!new_uuid)
                return;
        for (size_t i = 0; i < work->n_mdevs; i++) {
                snprintf(new_uuid[i], UUID_STRING_MAX, "0000%04x-aaaa-4bbb-8ccc-dddddddddddd", (unsigned) (i & 0xffff));
                check(domxml_set_mdev_uuid(work, i, new_uuid[i]) == 0);
                check_streq(work->mdevs[i].uuid, new_uuid[i]);
        }
        check(domxml_format(work, &text, &text_len) == 0);
        if (!text)
                return;
        check(strlen(text) == text_len);
        check_write_equals_format(work, text, text_len);
        check(domxml_parse(text, text_len, &out) == 0);
        if (!out)
                return;
        check(out->n_mdevs == in->n_mdevs);
        for (size_t i = 0; i < out->n_mdevs && i < in->n_mdevs; i++) {
                check_streq(out->mdevs[i].uuid, new_uuid[i]);
                check_streq(out->mdevs[i].type, in->mdevs[i].type);
                check_streq(out->mdevs[i].mdev_class, in->mdevs[i].mdev_class);
                check_streq(out->mdevs[i].parent, in->mdevs[i].parent);
        }
        check_streq(out->name, in->name);
        check_streq(out->uuid, in->uuid);

        full_in = full_parse(buf, len);
        full_out = full_parse(text, text_len);
        check(full_in && full_out);
        if (!full_in || !full_out)
                return;
        rewrite_allowed(&rw, full_in, new_uuid);
        compare_docs(&rw, full_in, full_out);
        check(rw.mismatches == 0);
        check(rw.changed == expect_changed);
        free(rw.allowed);
        free(rw.allowed_uuid);
}

/* Replaces every occurrence of from with to (any lengths); a fresh string. */
static char *replace_all(const char *s, const char *from, const char *to) {
        size_t lf = strlen(from), lt = strlen(to), n = 0;
        char *out, *o;

        for (const char *p = s; (p = strstr(p, from)); p += lf)
                n++;
        out = malloc(strlen(s) + n * lt + 1);
        if (!out)
                abort();
        for (o = out; *s;) {
                if (strncmp(s, from, lf) == 0) {
                        memcpy(o, to, lt);
                        o += lt;
                        s += lf;
                } else
                        *o++ = *s++;
        }
        *o = '\0';
        return out;
}

static void test_rewrite_changes_only_uuids(void) {
        _cleanup_free_ char *buf = NULL, *charref = NULL, *quoted = NULL, *bom = NULL;
        size_t len;

        buf = read_data("two-mdevs.xml", &len);
        /* two hostdev addresses and their two metadata entries */
        check_rewrite(buf, len, 4);

        /* A UUID written with a character reference cannot be spliced in
         * place: the rewrite goes through a full tree and libxml2's writer. */
        charref = replace_all(buf, "5d0c4e8a-8d3a-4b38-9f7e-2f0f4c1d9a10", "5d0c4e8a-8d3a-4b38-9f7e-2f0f4c1d9a1&#x30;");
        check_rewrite(charref, strlen(charref), 4);

        /* libvirt's own quoting, and a byte order mark with a declaration */
        quoted = replace_all(buf, "\"", "'");
        check_rewrite(quoted, strlen(quoted), 4);
        bom = strdup_printf("\xef\xbb\xbf<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n%s", buf);
        check_rewrite(bom, strlen(bom), 4);

        free(steal_pointer(&buf));
        buf = read_data("wrong-namespace.xml", &len);
        /* the foreign metadata keeps the old UUID */
        check_rewrite(buf, len, 1);
}

/* Normally the output is the input byte for byte apart from the UUIDs:
 * libvirt's quoting, spacing, declaration and all. */
static void check_rewrite_bytes(const char *in) {
        _cleanup_domxml_free_ Domxml *d = NULL;
        _cleanup_free_ char *text = NULL, *expected = NULL, *tmp = NULL;
        static const char old0[] = "b1ae8bf6-38b0-4c81-9d44-78ce2e5d2b9d";
        static const char new0[] = "0f0e0d0c-0b0a-4908-8706-050403020100";
        static const char old1[] = "5D0C4E8A-8D3A-4B38-9F7E-2F0F4C1D9A10"; /* the metadata's spelling */
        static const char old1l[] = "5d0c4e8a-8d3a-4b38-9f7e-2f0f4c1d9a10";
        static const char new1[] = "0f0e0d0c-0b0a-4908-8706-0504030201ff";
        size_t text_len;

        check(domxml_parse(in, strlen(in), &d) == 0);
        if (!d)
                return;
        check(domxml_set_mdev_uuid(d, 0, new0) == 0);
        check(domxml_set_mdev_uuid(d, 1, new1) == 0);
        check(domxml_format(d, &text, &text_len) == 0);
        tmp = replace_all(in, old0, new0);
        free(steal_pointer(&expected));
        expected = replace_all(tmp, old1, new1);
        free(steal_pointer(&tmp));
        tmp = steal_pointer(&expected);
        expected = replace_all(tmp, old1l, new1);
        check_streq(text, expected);
        check(text_len == strlen(expected));
}

/* text with about pad bytes of disks inserted after the root's start tag */
static char *pad_after_root(const char *text, size_t pad) {
        static const char disk[] = "\n  <disk type='file' device='disk'><source file='/var/lib/images/pad.qcow2'/>"
                                   "<target dev='vdz' bus='virtio'/></disk>";
        const char *gt = strchr(text, '>');
        size_t head, n = pad / (sizeof disk - 1) + 1, len = strlen(text);
        char *out, *o;

        check(gt);
        if (!gt)
                return NULL;
        head = (size_t) (gt - text) + 1;
        out = malloc(len + n * (sizeof disk - 1) + 1);
        check(out);
        if (!out)
                return NULL;
        memcpy(out, text, head);
        o = out + head;
        for (size_t i = 0; i < n; i++, o += sizeof disk - 1)
                memcpy(o, disk, sizeof disk - 1);
        memcpy(o, text + head, len - head + 1);
        return out;
}

static void test_rewrite_bytes(void) {
        _cleanup_free_ char *buf = NULL, *quoted = NULL, *bom = NULL, *padded = NULL;
        size_t len;

        buf = read_data("two-mdevs.xml", &len);
        check_rewrite_bytes(buf);
        quoted = replace_all(buf, "\"", "'");
        check_rewrite_bytes(quoted);
        bom = strdup_printf("\xef\xbb\xbf<?xml version='1.0' encoding='UTF-8'?>\n<!-- saved -->\n%s", quoted);
        check_rewrite_bytes(bom);

        /* libxml2 reads the input a few KiB at a time and drops what it
         * has parsed: UUIDs a megabyte in are still found in place. */
        padded = pad_after_root(quoted, 1u << 20);
        check_rewrite_bytes(padded);
}

static void test_set_uuid_checks(void) {
        _cleanup_domxml_free_ Domxml *d = NULL;

        check(parse_data("two-mdevs.xml", &d) == 0);
        if (!d)
                return;
        check(domxml_set_mdev_uuid(d, 0, "not-a-uuid") == -EINVAL);
        check(domxml_set_mdev_uuid(d, 2, "0f0e0d0c-0b0a-4908-8706-050403020100") == -EINVAL);
        /* two hostdevs may not end up with one UUID */
        check(domxml_set_mdev_uuid(d, 0, "5D0C4E8A-8D3A-4B38-9F7E-2F0F4C1D9A10") == -EEXIST);
        check_streq(d->mdevs[0].uuid, "b1ae8bf6-38b0-4c81-9d44-78ce2e5d2b9d");
        /* the same UUID is a no-op; upper case is normalised */
        check(domxml_set_mdev_uuid(d, 0, "B1AE8BF6-38B0-4C81-9D44-78CE2E5D2B9D") == 0);
        check(domxml_set_mdev_uuid(d, 1, "0F0E0D0C-0B0A-4908-8706-050403020100") == 0);
        check_streq(d->mdevs[1].uuid, "0f0e0d0c-0b0a-4908-8706-050403020100");
        check(domxml_find_mdev(d, "0f0e0d0c-0b0a-4908-8706-050403020100") == 1);
        check(domxml_find_mdev(d, "5d0c4e8a-8d3a-4b38-9f7e-2f0f4c1d9a10") == -ENOENT);
        /* the third metadata entry has no hostdev: its UUID is taken, or
         * the document would hold two entries for it */
        check(domxml_has_orphan_meta(d, "11111111-2222-3333-4444-555555555555"));
        check(!domxml_has_orphan_meta(d, "b1ae8bf6-38b0-4c81-9d44-78ce2e5d2b9d"));
        error_clear();
        check(domxml_set_mdev_uuid(d, 0, "11111111-2222-3333-4444-555555555555") == -EEXIST);
        check(strstr(error_get(-EEXIST), "metadata entry"));
        check_streq(d->mdevs[0].uuid, "b1ae8bf6-38b0-4c81-9d44-78ce2e5d2b9d");
}

/* Every UUID-shaped string in text (any case), lower-cased, and one fresh
 * one: what a rewrite might be asked to use. */
static char **uuids_in(const char *text) {
        char **l = NULL;
        size_t n = strlen(text);

        for (size_t i = 0; i + UUID_STRING_MAX - 1 <= n; i++) {
                char u[UUID_STRING_MAX], norm[UUID_STRING_MAX];

                memcpy(u, text + i, UUID_STRING_MAX - 1);
                u[UUID_STRING_MAX - 1] = '\0';
                if (!uuid_is_valid(u))
                        continue;
                uuid_normalize(u, norm);
                if (!strv_contains(l, norm) && strv_extend(&l, norm) < 0)
                        abort();
        }
        if (strv_extend(&l, "0f0e0d0c-0b0a-4908-8706-0504030201aa") < 0)
                abort();
        return l;
}

/* A rewrite either refuses or gives a document that prepare accepts
 * (domxml_parse()), with the same hostdevs and the new UUIDs: for every
 * hostdev, every UUID the document holds anywhere and a fresh one, one
 * rewrite and then a second of every other hostdev. */
static void check_rewrites_parse(const char *name, const char *buf, size_t len) {
        _cleanup_strv_free_ char **cand = uuids_in(buf);
        _cleanup_domxml_free_ Domxml *probe = NULL;
        size_t n;

        if (domxml_parse(buf, len, &probe) < 0) {
                error_clear();
                return; /* refused input: nothing to rewrite */
        }
        n = probe->n_mdevs;
        for (size_t i = 0; i < n; i++)
                for (size_t j = 0; j < n; j++)
                        for (char **u = cand; *u; u++)
                                for (char **v = cand; *v; v++) {
                                        _cleanup_domxml_free_ Domxml *d = NULL, *out = NULL;
                                        _cleanup_free_ char *text = NULL;
                                        char want_i[UUID_STRING_MAX], want_j[UUID_STRING_MAX];
                                        size_t text_len;

                                        check(domxml_parse(buf, len, &d) == 0);
                                        if (!d)
                                                return;
                                        if (domxml_set_mdev_uuid(d, i, *u) < 0)
                                                continue;
                                        if (i != j && domxml_set_mdev_uuid(d, j, *v) < 0)
                                                continue;
                                        memcpy(want_i, d->mdevs[i].uuid, sizeof want_i);
                                        memcpy(want_j, d->mdevs[j].uuid, sizeof want_j);
                                        check(domxml_format(d, &text, &text_len) == 0);
                                        if (!text)
                                                continue;
                                        error_clear();
                                        if (domxml_parse(text, text_len, &out) < 0) {
                                                fprintf(stderr, "%s: hostdev %zu -> %s, %zu -> %s: prepare refuses the rewrite: %s\n",
                                                        name, i, *u, j, *v, error_get(-EINVAL));
                                                abort();
                                        }
                                        check(out->n_mdevs == n);
                                        if (out->n_mdevs != n)
                                                continue;
                                        check_streq(out->mdevs[i].uuid, want_i);
                                        check_streq(out->mdevs[j].uuid, want_j);
                                }
}

static void test_rewrites_parse(void) {
        static const char *const files[] = { "two-mdevs.xml", "default-namespace.xml", "wrong-namespace.xml", "meta-dup.xml" };

        for (size_t f = 0; f < ELEMENTSOF(files); f++) {
                _cleanup_free_ char *buf = NULL;
                size_t len;

                buf = read_data(files[f], &len);
                check_rewrites_parse(files[f], buf, len);
        }
}

/* --- the hook's filter against the parser ------------------------ */

/* A small domain whose one hostdev start tag is `tag`, in UTF-8 after an
 * optional XML declaration `decl`. */
static char *doc_with_tag(const char *decl, const char *tag) {
        return strdup_printf("%s<domain type='kvm'>\n  <name>f</name>\n  <devices>\n"
                             "    %s\n      <source>\n        <address uuid='b1ae8bf6-38b0-4c81-9d44-78ce2e5d2b01'/>\n"
                             "      </source>\n    </hostdev>\n  </devices>\n</domain>\n",
                             decl, tag);
}

/* The property: where the parser finds an mdev hostdev, the filter never
 * says no. Returns whether the parser found one. */
static bool check_filter_agrees(const char *what, const char *buf, size_t len) {
        _cleanup_domxml_free_ Domxml *d = NULL;
        bool parsed;

        error_clear();
        parsed = domxml_parse(buf, len, &d) == 0 && d->n_mdevs > 0;
        error_clear();
        if (parsed && !domscan_has_mdev(buf, len)) {
                fprintf(stderr, "%s: the parser finds an mdev hostdev, the hook's filter says none\n", what);
                abort();
        }
        return parsed;
}

/* text converted to an encoding with iconv; NULL if iconv does not know it. */
static char *convert(const char *text, const char *to, size_t *ret_len) {
        iconv_t cd = iconv_open(to, "UTF-8");
        size_t in_left = strlen(text), out_size = 8 * in_left + 16, out_left = out_size;
        char *in = (char *) text, *out, *o;

        if (cd == (iconv_t) -1)
                return NULL;
        out = o = malloc(out_size);
        if (!out || iconv(cd, &in, &in_left, &o, &out_left) == (size_t) -1) {
                iconv_close(cd);
                free(out);
                return NULL;
        }
        iconv_close(cd);
        *ret_len = out_size - out_left;
        return out;
}

/* check_filter_agrees() on "mdev" with every letter literal or a character
 * reference, decimal or hex; how many of them the parser found. */
static unsigned filter_char_refs(void) {
        unsigned found = 0;

        for (unsigned mask = 0; mask < 16; mask++)
                for (unsigned hex = 0; hex < 2; hex++) {
                        char tag[256] = "<hostdev mode='subsystem' type='";
                        _cleanup_free_ char *doc = NULL;

                        for (unsigned k = 0; k < 4; k++) {
                                size_t o = strlen(tag);

                                if (mask & (1u << k))
                                        snprintf(tag + o, sizeof tag - o, hex ? "&#x%x;" : "&#%d;", "mdev"[k]);
                                else
                                        snprintf(tag + o, sizeof tag - o, "%c", "mdev"[k]);
                        }
                        strcat(tag, "'>");
                        doc = doc_with_tag("", tag);
                        found += check_filter_agrees(tag, doc, strlen(doc));
                }

        return found;
}

/* The same in encodings where the bytes of "mdev" are not ASCII's. */
static unsigned filter_encodings(void) {
        static const struct {
                const char *iconv_name, *decl;
        } encodings[] = {
                { "UTF-16LE", "" }, { "UTF-16BE", "" }, { "UTF-16", "" },
                { "UCS-4LE", "" }, { "UCS-4BE", "" },
                { "UTF-16LE", "<?xml version='1.0' encoding='UTF-16'?>" },
                { "IBM037", "<?xml version='1.0' encoding='IBM037'?>" },
                { "UTF-7", "<?xml version='1.0' encoding='UTF-7'?>" },
        };
        unsigned found = 0;

        for (size_t e = 0; e < ELEMENTSOF(encodings); e++) {
                _cleanup_free_ char *utf8 = NULL, *doc = NULL;
                size_t len;

                utf8 = doc_with_tag(encodings[e].decl, "<hostdev mode='subsystem' type='mdev'>");
                doc = convert(utf8, encodings[e].iconv_name, &len);
                if (!doc) {
                        printf("# iconv does not know %s: not tried\n", encodings[e].iconv_name);
                        continue;
                }
                found += check_filter_agrees(encodings[e].iconv_name, doc, len);
        }
        return found;
}

static void test_filter_never_misses(void) {
        static const char *const tags[] = {
                "<hostdev mode='subsystem' type='mdev'>",
                "<hostdev mode='subsystem' type='&#109;dev'>",
                "<hostdev mode='subsystem' type=\"&#x6d;dev\">",
                "<hostdev mode='subsystem' type=\"&#X6D;&#x64;&#101;&#118;\">",
                "<hostdev mode='subsystem' type='md&#101;v'>",
                "<hostdev mode='&#115;ubsystem' type='mdev'>",
                "<hostdev\n  type\n  =\n  'mdev'\tmode='subsystem'>",
                "<hostdev display='a>b' mode='subsystem' type='mdev'>",
                "<hostdev xmlns='' mode='subsystem' type='mdev'>",
                "<hostdev mode='subsystem' type='pci'>",
        };
        static const char *const decls[] = {
                "",
                "<?xml version='1.0'?>\n",
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n",
                "\xef\xbb\xbf",
                "<?xml version='1.0' encoding='ISO-8859-1'?>\n",
        };
        unsigned found = 0;

        for (size_t d = 0; d < ELEMENTSOF(decls); d++)
                for (size_t t = 0; t < ELEMENTSOF(tags); t++) {
                        _cleanup_free_ char *doc = doc_with_tag(decls[d], tags[t]);

                        found += check_filter_agrees(tags[t], doc, strlen(doc));
                }

        found += filter_char_refs();
        found += filter_encodings();
        /* The property is not empty: the parser did find most of them. */
        printf("# the parser found an mdev hostdev in %u tricky documents; the filter never missed one\n", found);
        check(found >= 60);

        /* And the filter still says no where there is nothing to find. */
        {
                _cleanup_free_ char *pci = doc_with_tag("", "<hostdev mode='subsystem' type='pci'>");
                _cleanup_free_ char *ref = doc_with_tag("", "<interface type='n&#101;twork'>");
                _cleanup_free_ char *cdata = doc_with_tag("", "<![CDATA[ <hostdev-ish type='mdev'> ]]>");

                check(!domscan_has_mdev(pci, strlen(pci)));
                check(!domscan_has_mdev(ref, strlen(ref)));
                check(!domscan_has_mdev(cdata, strlen(cdata)));
        }
}

/* domscan_read_all() over a document of about `size` bytes without any
 * hostdev, with `insert` placed at offset `at` (if not NULL). */
static int read_all_of(size_t size, const char *insert, size_t at, bool *ret_has_mdev, size_t *ret_len) {
        _cleanup_free_ char *doc = NULL, *buf = NULL;
        char path[] = "/tmp/test-domscan-XXXXXX";
        _cleanup_close_ int fd = -1;
        size_t len;
        int r;

        doc = malloc(size + 1);
        if (!doc)
                abort();
        memset(doc, ' ', size);
        memcpy(doc, "<domain><name>x</name><devices>", 31);
        memcpy(doc + size - 19, "</devices></domain>", 19);
        for (size_t o = 64; o + 40 < size - 64; o += 4096)
                memcpy(o + doc, "<disk type='file'><x/></disk><hostdevx>", 39);
        if (insert)
                memcpy(doc + at, insert, strlen(insert));
        fd = mkostemp(path, O_CLOEXEC);
        if (fd < 0)
                abort();
        unlink(path);
        if (write(fd, doc, size) != (ssize_t) size || lseek(fd, 0, SEEK_SET) != 0)
                abort();
        r = domscan_read_all(fd, DOMSCAN_MAX_SIZE, &buf, &len, ret_has_mdev);
        *ret_len = len;
        /* all of it read, whatever the answer */
        check(lseek(fd, 0, SEEK_CUR) == (off_t) size);
        return r;
}

static void test_read_all_large(void) {
        static const char mdev_tag[] = "<hostdev mode='subsystem' type='mdev'>";
        static const char ref_tag[] = "<hostdev mode='subsystem' type='&#109;dev'>";
        size_t big = 9u * 1024u * 1024u + 12345, len = 0;
        bool has = true;

        /* small: all of it, and the answer */
        check(read_all_of(4096, NULL, 0, &has, &len) == 0 && !has && len == 4096);
        check(read_all_of(4096, mdev_tag, 100, &has, &len) == 0 && has);
        /* exactly the limit is not "larger" */
        check(read_all_of(DOMSCAN_MAX_SIZE, NULL, 0, &has, &len) == 0 && !has && len == DOMSCAN_MAX_SIZE);

        /* larger: -EFBIG, the head kept, and whether any of it may be an mdev hostdev */
        check(read_all_of(big, NULL, 0, &has, &len) == -EFBIG && !has && len == DOMSCAN_MAX_SIZE + 1);
        check(read_all_of(big, mdev_tag, 1000, &has, &len) == -EFBIG && has);
        check(read_all_of(big, mdev_tag, big - 4096, &has, &len) == -EFBIG && has);
        check(read_all_of(big, ref_tag, big - 4096, &has, &len) == -EFBIG && has);
        /* a tag across the head's end, and across the scan window's */
        for (size_t at = DOMSCAN_MAX_SIZE - 20; at <= DOMSCAN_MAX_SIZE + 2; at += 11) {
                check(read_all_of(big, mdev_tag, at, &has, &len) == -EFBIG);
                check(has);
        }
        for (size_t at = DOMSCAN_MAX_SIZE + 1024 * 1024 - 40; at <= DOMSCAN_MAX_SIZE + 1024 * 1024 + 2; at += 7) {
                check(read_all_of(big, mdev_tag, at, &has, &len) == -EFBIG);
                check(has);
        }
}

/* --- a large migration XML --------------------------------------------- */

/* About `size` bytes of libvirt-like XML with n mdevs among many disks. */
static char *make_large(size_t size, unsigned n, size_t *ret_len) {
        size_t cap = size + 64 * 1024, len = 0;
        char *buf = malloc(cap);
        unsigned disk = 0;

#define APPEND(...) len += (size_t) snprintf(buf + len, cap - len, __VA_ARGS__)
        if (!buf)
                return NULL;
        APPEND("<domain type=\"kvm\">\n  <name>big</name>\n"
               "  <uuid>0b3f4c2e-6d7a-4e8b-9c1d-2e3f4a5b6c7d</uuid>\n  <metadata>\n"
               "    <mh:mdevs xmlns:mh=\"" DOMXML_NAMESPACE "\">\n");
        for (unsigned i = 0; i < n; i++)
                APPEND("      <mh:mdev uuid=\"%08x-38b0-4c81-9d44-78ce2e5d2b9d\" type=\"nvidia-35\"/>\n", i);
        APPEND("    </mh:mdevs>\n  </metadata>\n  <devices>\n");
        for (unsigned i = 0; len + 2048 < size; disk++) {
                APPEND("    <disk type=\"file\" device=\"disk\">\n"
                       "      <driver name=\"qemu\" type=\"qcow2\" cache=\"none\" io=\"native\"/>\n"
                       "      <source file=\"/var/lib/libvirt/images/big-%u.qcow2\" index=\"%u\"/>\n"
                       "      <target dev=\"vd%u\" bus=\"virtio\"/>\n"
                       "      <alias name=\"virtio-disk%u\"/>\n"
                       "      <address type=\"pci\" domain=\"0x0000\" bus=\"0x%02x\" slot=\"0x00\" function=\"0x0\"/>\n"
                       "    </disk>\n", disk, disk, disk, disk, disk & 0xff);
                if (i < n && disk % 64 == 0) {
                        APPEND("    <hostdev mode=\"subsystem\" type=\"mdev\" managed=\"no\" model=\"vfio-pci\" display=\"off\">\n"
                               "      <source>\n        <address uuid=\"%08x-38b0-4c81-9d44-78ce2e5d2b9d\"/>\n      </source>\n"
                               "      <alias name=\"hostdev%u\"/>\n"
                               "      <address type=\"pci\" domain=\"0x0000\" bus=\"0x%02x\" slot=\"0x00\" function=\"0x0\"/>\n"
                               "    </hostdev>\n", i, i, 0x80 + i);
                        i++;
                }
        }
        APPEND("  </devices>\n</domain>\n");
#undef APPEND
        *ret_len = len;
        return buf;
}

static void test_large(void) {
        _cleanup_free_ char *buf = NULL, *text = NULL;
        _cleanup_domxml_free_ Domxml *d = NULL;
        unsigned long long t0, t1;
        size_t len, text_len;

        buf = make_large(1024 * 1024, 16, &len);
        check(buf);
        if (!buf)
                return;
        t0 = now_usec();
        check(domxml_parse(buf, len, &d) == 0);
        if (!d)
                return;
        for (size_t i = 0; i < d->n_mdevs; i++) {
                char u[UUID_STRING_MAX];
                snprintf(u, sizeof u, "%08x-0000-4000-8000-000000000000", (unsigned) i);
                check(domxml_set_mdev_uuid(d, i, u) == 0);
        }
        check(domxml_format(d, &text, &text_len) == 0);
        t1 = now_usec();
        check(d->n_mdevs == 16);
        /* for information only: timings are asserted in bench/, not here */
        printf("# %zu bytes, %zu mdevs: parse + rewrite + format took %llu us\n", len, d->n_mdevs, t1 - t0);

        check_rewrite(buf, len, 32);
}

/* An <mh:vgpu> entry's scheduling profile: each knob optional, a u32,
 * anything else refused. */
static void test_vgpu_sched(void) {
        static const char fmt[] =
                "<domain><name>c</name><metadata><mh:mdevs xmlns:mh='http://mdev-hooks.org/xmlns/domain/1.0'>"
                "<mh:vgpu pci='0000:03:00.4' type='intel-xe-8192' %s/></mh:mdevs></metadata>"
                "<devices><hostdev mode='subsystem' type='pci' managed='yes'><source>"
                "<address domain='0x0000' bus='0x03' slot='0x00' function='0x4'/></source></hostdev></devices></domain>";
        static const char *const bad[] = { "exec_quantum_ms='4294967296'", "exec_quantum_ms='-1'",
                                           "preempt_timeout_us=''", "preempt_timeout_us='1 '",
                                           "exec_quantum_ms='+5'", "preempt_timeout_us='0x10'" };
        _cleanup_domxml_free_ Domxml *d = NULL;
        char buf[1024];
        size_t n;

        n = (size_t) snprintf(buf, sizeof buf, fmt, "exec_quantum_ms='20' preempt_timeout_us='4294967295'");
        check(domxml_parse(buf, n, &d) == 0);
        check(d && d->n_vgpus == 1 && d->vgpus[0].sched.has_exec_quantum && d->vgpus[0].sched.exec_quantum_ms == 20);
        check(d && d->vgpus[0].sched.has_preempt_timeout && d->vgpus[0].sched.preempt_timeout_us == 4294967295u);
        domxml_free(steal_pointer(&d));

        n = (size_t) snprintf(buf, sizeof buf, fmt, "preempt_timeout_us='0'");
        check(domxml_parse(buf, n, &d) == 0);
        check(d && !d->vgpus[0].sched.has_exec_quantum && d->vgpus[0].sched.has_preempt_timeout);
        domxml_free(steal_pointer(&d));

        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
                n = (size_t) snprintf(buf, sizeof buf, fmt, bad[i]);
                error_clear();
                check(domxml_parse(buf, n, &d) == -EINVAL);
        }
}

/* <numatune><memory nodeset=>: the guest's wish, in every mode, both
 * parses; none without a nodeset, with placement='auto', or unreadable. */
static NodeSet numa_of(const char *numatune, bool full) {
        static const char fmt[] = "<domain><name>n</name>%s<devices/></domain>";
        _cleanup_domxml_free_ Domxml *d = NULL;
        char buf[1024];
        size_t n = (size_t) snprintf(buf, sizeof buf, fmt, numatune);

        error_clear();
        check((full ? domxml_parse_full(buf, n, &d) : domxml_parse(buf, n, &d)) == 0);
        return d ? d->numa_nodes : (NodeSet) -1;
}

static void test_numatune(void) {
        for (int full = 0; full < 2; full++) {
                check(numa_of("", full) == 0);
                check(numa_of("<numatune><memory mode='strict' nodeset='1'/></numatune>", full) == 0x2);
                check(numa_of("<numatune><memory nodeset='0-3,^2'/></numatune>", full) == 0xb);
                check(numa_of("<numatune><memory mode='preferred' nodeset='1'/></numatune>", full) == 0x2);
                check(numa_of("<numatune><memory mode='restrictive' nodeset='3'/></numatune>", full) == 0x8);
                check(numa_of("<numatune><memory mode='interleave' nodeset='0,1'/></numatune>", full) == 0x3);
                check(numa_of("<numatune><memory mode='strict' placement='auto'/></numatune>", full) == 0);
                check(numa_of("<numatune><memory placement='auto' nodeset='1'/></numatune>", full) == 0);
                check(numa_of("<numatune><memory mode='strict' placement='static' nodeset='1'/>"
                              "<memnode cellid='0' mode='strict' nodeset='0'/></numatune>", full) == 0x2);
                check(numa_of("<numatune><memory nodeset='x'/></numatune>", full) == 0);
                /* elsewhere than under <domain>, or another namespace's: not the guest's */
                check(numa_of("<metadata><numatune><memory nodeset='1'/></numatune></metadata>", full) == 0);
                check(numa_of("<n:numatune xmlns:n='urn:x'><memory nodeset='1'/></n:numatune>", full) == 0);
        }
}

int main(void) {
        test_two_mdevs();
        test_no_mdev();
        test_wrong_namespace_ignored();
        test_default_namespace();
        test_refused();
        test_external_entity_not_read();
        test_size_limit();
        test_empty();
        test_deep_nesting();
        test_too_many_mdevs();
        test_name_checks();
        test_class_length();
        test_vgpu_sched();
        test_numatune();
        test_rewrite_changes_only_uuids();
        test_rewrite_bytes();
        test_set_uuid_checks();
        test_rewrites_parse();
        test_filter_never_misses();
        test_read_all_large();
        test_large();
        xmlCleanupParser();
        return EXIT_SUCCESS;
}
