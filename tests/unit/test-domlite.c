/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * domlite.c, the strict libc-only reader of the domain XML: on what libvirt
 * formats it reads exactly what domxml_parse() reads; on everything it is
 * not certain of it declines (-EOPNOTSUPP), whether domxml_parse() then
 * accepts the document or refuses it. And it never accepts what
 * domxml_parse() refuses, nor reads anything differently (every sample
 * document of tests/data/domxml and tests/fixtures).
 */
#include <dirent.h>
#include <fcntl.h>

#include <libxml/parser.h>

#include "check.h"
#include "domdata-same.h"
#include "domlite.h"
#include "domscan.h"
#include "domxml.h"

#define NS "http://mdev-hooks.org/xmlns/domain/1.0"
#define U1 "b1ae8bf6-38b0-4c81-9d44-78ce2e5d2b01"
#define U2 "b1ae8bf6-38b0-4c81-9d44-78ce2e5d2b02"

/* As tests/bats/hook-helpers.bash's domxml prints it; META and DEV are
 * put inside <metadata> and <devices>. */
#define DOC(meta, dev)                                                                   \
        "<domain type='kvm'>\n  <name>web1</name>\n"                                     \
        "  <uuid>8d5e7a9c-0f4b-4c1e-9a55-0d3c2e6f1b27</uuid>\n"                          \
        "  <memory unit='KiB'>1048576</memory>\n  <metadata>\n" meta "  </metadata>\n"   \
        "  <os>\n    <type arch='x86_64' machine='pc-q35-7.2'>hvm</type>\n  </os>\n"      \
        "  <devices>\n    <emulator>/usr/bin/qemu-system-x86_64</emulator>\n" dev         \
        "  </devices>\n</domain>\n"
#define MDEVS(entries) "    <mh:mdevs xmlns:mh=\"" NS "\">\n" entries "    </mh:mdevs>\n"
#define HOSTDEV(uuid)                                                                    \
        "    <hostdev mode='subsystem' type='mdev' managed='no' model='vfio-pci' display='off'>\n" \
        "      <source>\n        <address uuid='" uuid "'/>\n      </source>\n    </hostdev>\n"
#define ONE DOC(MDEVS("      <mh:mdev uuid=\"" U1 "\" type=\"nvidia-35\"/>\n"), HOSTDEV(U1))

/* Both parsers on buf: domlite_parse()'s answer, and when it accepts,
 * domxml_parse() must accept too and read the same. */
static int both(const char *buf, size_t len, Domxml **ret_full) {
        _cleanup_domlite_free_ Domxml *lite = NULL;
        _cleanup_domxml_free_ Domxml *full = NULL;
        const char *why;
        int r, rf;

        error_clear();
        rf = domxml_parse(buf, len, &full);
        error_clear();
        r = domlite_parse(buf, len, &lite);
        check(r == 0 || r == -EOPNOTSUPP);
        if (r < 0) {
                check(!lite);
                *ret_full = steal_pointer(&full);
                return r;
        }
        if (rf < 0)
                fprintf(stderr, "domlite accepts what domxml refuses (%s):\n%.*s\n", error_get(rf), (int) len, buf);
        check(rf == 0);
        why = domdata_differs(full, lite);
        if (why)
                fprintf(stderr, "domlite reads differently: %s:\n%.*s\n", why, (int) len, buf);
        check(!why);
        *ret_full = steal_pointer(&full);
        return 0;
}

/* A document domlite reads, as domxml_parse() does. */
static void reads(const char *xml) {
        _cleanup_domxml_free_ Domxml *full = NULL;
        int r = both(xml, strlen(xml), &full);

        if (r < 0)
                fprintf(stderr, "declined: %s\n%s\n", error_get(r), xml);
        check(r == 0);
}

/* A document domlite declines; full_ok: whether domxml_parse() takes it. */
static void declines(const char *xml, size_t len, bool full_ok) {
        _cleanup_domxml_free_ Domxml *full = NULL;
        int r = both(xml, len, &full);

        if (r == 0 || !!full != full_ok)
                fprintf(stderr, "expected a decline (domxml %s):\n%.*s\n", full_ok ? "accepting" : "refusing", (int) len, xml);
        check(r == -EOPNOTSUPP);
        check(!!full == full_ok);
}
#define DECLINES(xml, full_ok) declines(xml, sizeof xml - 1, full_ok)

static void test_libvirt_formatted(void) {
        _cleanup_domlite_free_ Domxml *d = NULL;

        reads(ONE);
        check(domlite_parse(ONE, strlen(ONE), &d) == 0);
        check_streq(d->name, "web1");
        check_streq(d->uuid, "8d5e7a9c-0f4b-4c1e-9a55-0d3c2e6f1b27");
        check(d->n_mdevs == 1 && d->n_vgpus == 0);
        check_streq(d->mdevs[0].uuid, U1);
        check_streq(d->mdevs[0].type, "nvidia-35");
        check(d->mdevs[0].has_meta && !d->mdevs[0].meta && !d->mdevs[0].address && !d->doc);

        reads(DOC(MDEVS("      <mh:mdev uuid=\"" U1 "\" class=\"CUSTOM_A\" parent=\"0000:84:00.0\"/>\n"
                        "      <mh:mdev uuid=\"" U2 "\" type=\"nvidia-36\"/>\n"
                        "      <mh:mdev uuid=\"11111111-2222-4333-8444-555555555555\" type=\"orphan\"/>\n"),
                  HOSTDEV("B1AE8BF6-38B0-4C81-9D44-78CE2E5D2B01") HOSTDEV(U2)));
        /* no metadata at all, no <uuid>, an XML declaration */
        reads("<?xml version='1.0' encoding='UTF-8'?>\n<domain type='kvm'><name>a</name><devices>"
              HOSTDEV(U1) "</devices></domain>");
        reads("<?xml version=\"1.0\" standalone='yes' ?><domain><name>a</name></domain>\n\n");
        /* another application's metadata, and ours under another prefix */
        reads(DOC("    <libosinfo:libosinfo xmlns:libosinfo=\"http://libosinfo.org/xmlns/libvirt/domain/1.0\">\n"
                  "      <libosinfo:os id=\"http://debian.org/debian/12\"/>\n    </libosinfo:libosinfo>\n"
                  "    <x:mdevs xmlns:x=\"" NS "\"><x:mdev uuid=\"" U1 "\" type=\"t\" x:class=\"other\"/></x:mdevs>\n",
                  HOSTDEV(U1)));
        /* mh bound to another URI: not ours, as for domxml_parse() */
        reads(DOC("    <mh:mdevs xmlns:mh=\"http://example.org/other\"><mh:mdev uuid=\"" U1 "\" type=\"t\"/></mh:mdevs>\n",
                  HOSTDEV(U1)));
        /* references resolved as libxml2 resolves them */
        reads("<domain><name>a&amp;b&#x20;&lt;c&gt;&#233;\xc3\xa9</name><metadata>" MDEVS(
                      "<mh:mdev uuid='" U1 "' type='nvidia&#45;35' class='CUSTOM&#x5f;X'/>")
              "</metadata><devices><hostdev mode='sub&#115;ystem' type=\"md&#101;v\">"
              "<source><address uuid='&#98;1ae8bf6-38b0-4c81-9d44-78ce2e5d2b01'/></source></hostdev>"
              "<description>it&apos;s &quot;x&quot; ]] ></description></devices></domain>");
        reads("<domain><name>w</name><x>&#60;&#x3C;]]&gt;&#1114111;</x><y a='&#60;\t\n'>]]</y></domain>");
        /* each quote inside the other; values and text scanned in one pass
         * up to their end, or looked at whole when they hold a reference */
        reads("<domain><name>w</name><x a='say \"hi\"' b=\"it's\" c='&apos;' d=\"x&quot;\"/>"
              "<y>] ]] &amp;</y></domain>");
        /* the document checked sixteen bytes at a time: what needs a look
         * at every place in a block, and after it */
        reads("<domain><name>0123456789abcdef\xc3\xa9</name><description>0123456789abcde\xe2\x82\xac"
              "0123456789abcd\t\n\t\n\xf0\x9f\x98\x80</description></domain>");
}

static void test_vgpus(void) {
        _cleanup_domlite_free_ Domxml *d = NULL;
        static const char xml[] =
                DOC(MDEVS("      <mh:vgpu pci=\"0000:41:00.4\" type=\"nvidia-1150\"/>\n"
                          "      <mh:vgpu pci=\"0000:41:00.6\" class=\"CUSTOM_" /* longer than a vGPU's class field */
                          "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
                          "\"/>\n"),
                    "<hostdev mode='subsystem' type='pci' managed='no'><source>"
                    "<address domain='0x0000' bus='0x41' slot='0x00' function='0x4'/></source></hostdev>\n"
                    "<hostdev mode='subsystem' type='pci'><source><address bus='65' slot='0' function='6'/>"
                    "<address bus='1' slot='1' function='1'/></source></hostdev>\n"
                    "<hostdev mode='subsystem' type='pci' managed='yes'><source/></hostdev>\n");

        reads(xml);
        check(domlite_parse(xml, sizeof xml - 1, &d) == 0);
        check(d->n_vgpus == 2);
        check_streq(d->vgpus[0].pci, "0000:41:00.4");
        check(!d->vgpus[0].managed && d->vgpus[0].has_meta);
        check_streq(d->vgpus[0].type, "nvidia-1150");
        check_streq(d->vgpus[1].pci, "0000:41:00.6");
        check(d->vgpus[1].managed && d->vgpus[1].has_meta);
        check(strlen(d->vgpus[1].mdev_class) == NAME_STRING_MAX - 1);
}

static void test_declines_what_libxml2_takes(void) {
        DECLINES(DOC("<!-- a comment -->" MDEVS("<mh:mdev uuid='" U1 "' type='t'/>"), HOSTDEV(U1)), true);
        DECLINES(DOC(MDEVS("<!-- inside -->"), HOSTDEV(U1)), true);
        DECLINES(DOC("<?pi data?>", HOSTDEV(U1)), true);
        DECLINES("<domain><name><![CDATA[web1]]></name><devices>" HOSTDEV(U1) "</devices></domain>", true);
        DECLINES("<?xml version='1.0' encoding='ISO-8859-1'?><domain><name>w\xe9</name></domain>", true);
        DECLINES("<?xml version='1.0' encoding='US-ASCII'?><domain><name>w</name></domain>", true);
        DECLINES("\xef\xbb\xbf<domain><name>w</name></domain>", true);
        DECLINES("<domain>\r\n<name>w</name>\r\n</domain>", true);
        DECLINES("<domain><name>w</name><description>0123456789abcdef0123\r\n</description></domain>", true);
        DECLINES("<domain><name>w</name><os xmlns='http://example.org/x'/></domain>", true);
        DECLINES(DOC(MDEVS("<x xmlns:mh='http://example.org/other'><mh:mdev uuid='" U1 "'/></x>"), HOSTDEV(U1)), true);
        DECLINES("<domain xmlns:a='urn:example:a'><name>w</name></domain>", true);
        DECLINES("<domain xmlns:a='http://example.org/a?b'><name>w</name></domain>", true);
        DECLINES("<domain><name>w</name><x xmlns:a='http://e.org/' a:y='1' y='2'/></domain>", true);
        DECLINES("<domain><name>w</name><x xml:lang='en'/></domain>", true);
        DECLINES("<domain><name>w</name><caf\xc3\xa9/></domain>", true);
}

static void test_declines_what_libxml2_refuses(void) {
        DECLINES("<!DOCTYPE domain [<!ENTITY e 'x'>]><domain><name>&e;</name></domain>", false);
        DECLINES("<domain><name>&e;</name></domain>", false);
        DECLINES("<domain xmlns='http://example.org/x'><name>w</name></domain>", false);
        DECLINES("<domain><name>w</name><a:x/></domain>", false);
        DECLINES("<domain><name>w</name><x a:y='1'/></domain>", false);
        DECLINES("<domain><name>w</name><x y='1' y='2'/></domain>", false);
        DECLINES("<domain><name>w</name><x y='1'z='2'/></domain>", false);
        DECLINES("<domain><name>w</name><x y=1/></domain>", false);
        DECLINES("<domain><name>w</name><x y='<'/></domain>", false);
        DECLINES("<domain><name>w</name>]]></domain>", false);
        DECLINES("<domain><name>w</name><x>&#0;</x></domain>", false);
        DECLINES("<domain><name>w</name><x>&#X41;</x></domain>", false);
        DECLINES("<domain><name>w</name><x>&amp</x></domain>", false);
        DECLINES("<domain><name>w</name><x></y></domain>", false);
        DECLINES("<domain><name>w</name>", false);
        DECLINES("<domain><name>w</name></domain><domain/>", false);
        DECLINES("<domain><name>w</name></domain>trailing", false);
        DECLINES("  <?xml version='1.0'?><domain><name>w</name></domain>", false);
        DECLINES("<domain><name>w\xff</name></domain>", false);
        DECLINES("<domain><name>w\xed\xa0\x80</name></domain>", false); /* a surrogate */
        DECLINES("<domain><name>w\xef\xbf\xbe</name></domain>", false); /* U+FFFE */
        DECLINES("<domain><name>w\x01</name></domain>", false);
        DECLINES("<domain><name>w</name><description>0123456789abcdef0123\x01</description></domain>", false);
        DECLINES("<domain><name>w</name><description>0123456789abcdef\xc3</description></domain>", false);
        DECLINES("<domain><name>w</name><x y=\"a<b\"/></domain>", false);
        DECLINES("<domain><name>w</name><x y='a&b'/></domain>", false);
        DECLINES("<domain><name>w</name><x y='abc/></domain>", false);
        DECLINES("<domain><name>w</name><x>a]]>b</x></domain>", false);
        DECLINES("<domain xmlns:a='http://e.org/' xmlns:a='http://e.org/'><name>w</name></domain>", false);
        DECLINES("<domain xmlns:b='http://www.w3.org/XML/1998/namespace'><name>w</name></domain>", false);
        DECLINES("", false);
}

/* What domxml.c refuses in a well-formed document: declined, so that its
 * message is the one the user sees. */
static void test_declines_what_domxml_refuses(void) {
        DECLINES("<domian><name>w</name></domian>", false);
        DECLINES("<domain><uuid>8d5e7a9c-0f4b-4c1e-9a55-0d3c2e6f1b27</uuid></domain>", false);
        DECLINES("<domain><name></name></domain>", false);
        DECLINES("<domain><name>w\n</name></domain>", false);
        DECLINES("<domain><name>w</name><name>v</name></domain>", false);
        DECLINES("<domain><name>w<b/></name></domain>", false);
        DECLINES("<domain><name>w</name><uuid>nope</uuid></domain>", false);
        DECLINES(DOC("", HOSTDEV("not-a-uuid")), false);
        DECLINES(DOC("", HOSTDEV(U1) HOSTDEV(U1)), false);
        DECLINES(DOC("", "<hostdev mode='subsystem' type='mdev'/>"), false);
        DECLINES(DOC(MDEVS("<mh:mdev uuid='" U1 "' type='../x'/>"), HOSTDEV(U1)), false);
        DECLINES(DOC(MDEVS("<mh:mdev uuid='" U1 "' class='vgpu'/>"), HOSTDEV(U1)), false);
        DECLINES(DOC(MDEVS("<mh:mdev uuid='" U1 "'/><mh:mdev uuid='" U1 "'/>"), HOSTDEV(U1)), false);
        DECLINES(DOC(MDEVS("<mh:vgpu pci='0000:41:00.8'/>"), ""), false);
        DECLINES(DOC("", "<hostdev mode='subsystem' type='pci'><source><address bus='0x100' slot='0' function='0'/></source></hostdev>"), false);
}

static void test_deep_nesting(void) {
        _cleanup_free_ char *buf = malloc(64 + 200 * 7);
        size_t o = 0;

        check(buf);
        o += (size_t) sprintf(buf, "<domain><name>w</name>");
        for (int i = 0; i < 200; i++)
                o += (size_t) sprintf(buf + o, "<a>");
        for (int i = 0; i < 200; i++)
                o += (size_t) sprintf(buf + o, "</a>");
        o += (size_t) sprintf(buf + o, "</domain>");
        declines(buf, o, true);
}

static void closedirp(DIR **d) {
        if (*d)
                closedir(*d);
}

/* Every sample document: if domlite reads it, it reads it as domxml does. */
static void test_samples(const char *dir) {
        _cleanup_(closedirp) DIR *d = opendir(dir);
        struct dirent *de;
        unsigned n = 0, read = 0;

        check(d);
        while ((de = readdir(d))) {
                _cleanup_domxml_free_ Domxml *full = NULL;
                _cleanup_close_ int fd = -1;
                _cleanup_free_ char *buf = NULL;
                char path[1024];
                size_t len;

                if (!strstr(de->d_name, ".xml"))
                        continue;
                snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
                fd = open(path, O_RDONLY | O_CLOEXEC);
                check(fd >= 0);
                check(read_fd_full(fd, DOMSCAN_MAX_SIZE, &buf, &len) == 0);
                n++;
                read += both(buf, len, &full) == 0;
        }
        printf("%s: %u documents, %u read without libxml2\n", dir, n, read);
        check(n > 0);
}

int main(void) {
        test_libvirt_formatted();
        test_vgpus();
        test_declines_what_libxml2_takes();
        test_declines_what_libxml2_refuses();
        test_declines_what_domxml_refuses();
        test_deep_nesting();
        test_samples(SRCDIR "/tests/data/domxml");
        test_samples(SRCDIR "/tests/fixtures/libvirt/guests");
        xmlCleanupParser();
        return EXIT_SUCCESS;
}
