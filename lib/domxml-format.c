/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Writing the domain XML out again (domxml-internal.h).
 *
 * For speed (see domxml-sax.c), rewriting does not serialise the tree: the output is the input,
 * byte for byte, with the 36 bytes of each rewritten uuid= value replaced.
 * libxml2 reports where each value lies in its input; the position is used
 * only after checking that the original bytes there are exactly that value
 * between quotes. When a value cannot be located that way (written with
 * character references, or an input in another encoding), domxml_format()
 * parses the document again into a full tree and serialises it with
 * libxml2 instead.
 */
#include <limits.h>
#include <sys/uio.h>

#include <libxml/xmlsave.h>

#include "domxml-internal.h"

/* The input with the rewritten values put in place, as the pieces of the
 * input between them and the new values: at most 2 * 2 * n_mdevs + 1, in
 * order. -ENOENT if a value that changed could not be located. */
static int splice_pieces(const DomxmlPrivate *p, struct iovec **ret, size_t *ret_n) {
        const Domxml *d = &p->pub;
        _cleanup_free_ struct iovec *iov = NULL;
        _cleanup_free_ size_t *at = NULL;
        _cleanup_free_ const char **with = NULL;
        size_t n_at = 0, n = 0, o = 0;

        for (size_t i = 0; i < d->n_vgpus; i++)
                if (!streq(d->vgpus[i].pci, d->vgpus[i].orig_pci))
                        return -ENOENT; /* four attributes of different lengths: libxml2 writes it */
        for (size_t i = 0; i < d->n_mdevs; i++)
                if (!streq(d->mdevs[i].uuid, p->src_uuid[i]) &&
                    (p->addr_pos[i] == SIZE_MAX || (d->mdevs[i].meta && p->meta_pos[i] == SIZE_MAX)))
                        return -ENOENT;
        at = calloc(2 * d->n_mdevs + 1, sizeof *at);
        with = calloc(2 * d->n_mdevs + 1, sizeof *with);
        iov = calloc(4 * d->n_mdevs + 1, sizeof *iov);
        if (!at || !with || !iov)
                return -ENOMEM;
        for (size_t i = 0; i < d->n_mdevs; i++) {
                if (streq(d->mdevs[i].uuid, p->src_uuid[i]))
                        continue;
                at[n_at] = p->addr_pos[i];
                with[n_at++] = d->mdevs[i].uuid;
                if (d->mdevs[i].meta) {
                        at[n_at] = p->meta_pos[i];
                        with[n_at++] = d->mdevs[i].uuid;
                }
        }
        /* In document order (the metadata comes before the devices); few
         * enough for an insertion sort. Values never overlap: each is the
         * whole of a distinct attribute. */
        for (size_t i = 1; i < n_at; i++)
                for (size_t j = i; j > 0 && at[j - 1] > at[j]; j--) {
                        size_t t = at[j];
                        const char *w = with[j];
                        at[j] = at[j - 1];
                        with[j] = with[j - 1];
                        at[j - 1] = t;
                        with[j - 1] = w;
                }
        for (size_t k = 0; k < n_at; k++) {
                iov[n++] = (struct iovec) { .iov_base = (char *) p->src + o, .iov_len = at[k] - o };
                iov[n++] = (struct iovec) { .iov_base = (char *) with[k], .iov_len = UUID_STRING_MAX - 1 };
                o = at[k] + UUID_STRING_MAX - 1;
        }
        iov[n++] = (struct iovec) { .iov_base = (char *) p->src + o, .iov_len = p->src_len - o };
        *ret = steal_pointer(&iov);
        *ret_n = n;
        return 0;
}

static int format_splice(const DomxmlPrivate *p, char **ret_buf, size_t *ret_len) {
        _cleanup_free_ struct iovec *iov = NULL;
        size_t n, o = 0;
        char *s;
        int r;

        r = splice_pieces(p, &iov, &n);
        if (r < 0)
                return r;
        s = malloc(p->src_len + 1);
        if (!s)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                memcpy(s + o, iov[i].iov_base, iov[i].iov_len);
                o += iov[i].iov_len;
        }
        s[o] = '\0';
        *ret_buf = s;
        *ret_len = o;
        return 0;
}

static int format_tree(xmlDoc *doc, char **ret_buf, size_t *ret_len) {
        _cleanup_xmlbuffer_free_ xmlBuffer *xb = NULL;
        _cleanup_xmlsave_close_ xmlSaveCtxt *save = NULL;
        char *s;
        size_t len;

        xb = xmlBufferCreate();
        if (!xb)
                return -ENOMEM;
        /* No XML declaration: libvirt sends none, and the output is UTF-8,
         * XML's default, whatever the input declared. */
        save = xmlSaveToBuffer(xb, "UTF-8", XML_SAVE_NO_DECL);
        if (!save)
                return -ENOMEM;
        if (xmlSaveDoc(save, doc) < 0)
                return error_set(-EIO, "cannot serialise the domain XML");
        xmlSaveClose(steal_pointer(&save)); /* flushes into xb */

        len = (size_t) xmlBufferLength(xb);
        s = malloc(len + 1);
        if (!s)
                return -ENOMEM;
        memcpy(s, xmlBufferContent(xb), len);
        s[len] = '\0';
        *ret_buf = s;
        *ret_len = len;
        return 0;
}


/* The slow way: the whole document as a tree, the same UUIDs set, and
 * libxml2's serialiser. */
static int format_full(const DomxmlPrivate *p, char **ret_buf, size_t *ret_len) {
        _cleanup_domxml_free_ Domxml *full = NULL;
        DomxmlPrivate *fp;
        ParseState st;
        int r;

        fp = calloc(1, sizeof *fp);
        if (!fp)
                return -ENOMEM;
        full = &fp->pub;
        memset(&st, 0, sizeof st);
        r = parse_doc(p->src, p->src_len, false, &st, &full->doc);
        free(st.pos);
        if (r < 0)
                return r;
        r = parse_tree(full);
        if (r < 0)
                return r;
        if (full->n_mdevs != p->pub.n_mdevs || full->n_vgpus != p->pub.n_vgpus)
                return error_set(-EIO, "domain XML: the document changed between two parses");
        for (size_t i = 0; i < full->n_vgpus; i++) {
                if (streq(p->pub.vgpus[i].pci, full->vgpus[i].pci))
                        continue;
                r = domxml_set_vgpu_pci(full, i, p->pub.vgpus[i].pci);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < full->n_mdevs; i++) {
                if (streq(p->pub.mdevs[i].uuid, full->mdevs[i].uuid))
                        continue;
                if (!xmlSetProp(full->mdevs[i].address, BAD_CAST "uuid", BAD_CAST p->pub.mdevs[i].uuid))
                        return -ENOMEM;
                if (full->mdevs[i].meta &&
                    !xmlSetProp(full->mdevs[i].meta, BAD_CAST "uuid", BAD_CAST p->pub.mdevs[i].uuid))
                        return -ENOMEM;
        }
        return format_tree(full->doc, ret_buf, ret_len);
}

int domxml_format(const Domxml *d, char **ret_buf, size_t *ret_len) {
        const DomxmlPrivate *p = domxml_private(d);
        int r;

        r = format_splice(p, ret_buf, ret_len);
        if (r != -ENOENT)
                return r;
        return format_full(p, ret_buf, ret_len);
}

/* writev() until every piece is written. */
static int writev_all(int fd, struct iovec *iov, size_t n) {
        for (;;) {
                ssize_t k;

                while (n > 0 && iov->iov_len == 0) {
                        iov++;
                        n--;
                }
                if (n == 0)
                        return 0;
                k = writev(fd, iov, (int) (n > IOV_MAX ? IOV_MAX : n));
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        return -EIO;
                while (n > 0 && (size_t) k >= iov->iov_len) {
                        k -= (ssize_t) iov->iov_len;
                        iov++;
                        n--;
                }
                if (n > 0) {
                        iov->iov_base = (char *) iov->iov_base + k;
                        iov->iov_len -= (size_t) k;
                }
        }
}

int domxml_write(const Domxml *d, int fd) {
        const DomxmlPrivate *p = domxml_private(d);
        _cleanup_free_ struct iovec *iov = NULL;
        _cleanup_free_ char *buf = NULL;
        size_t n, len;
        int r;

        /* The input's own bytes, with the new values between them: no copy
         * of the document. */
        r = splice_pieces(p, &iov, &n);
        if (r == -ENOENT) {
                r = format_full(p, &buf, &len);
                if (r < 0)
                        return r;
                iov = calloc(1, sizeof *iov);
                if (!iov)
                        return -ENOMEM;
                iov[0] = (struct iovec) { .iov_base = buf, .iov_len = len };
                n = 1;
        } else if (r < 0)
                return r;
        r = writev_all(fd, iov, n);
        if (r < 0)
                return error_set(r, "cannot write the rewritten domain XML: %s", strerror(-r));
        return 0;
}
