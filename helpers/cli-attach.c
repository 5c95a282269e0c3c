/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `mdev-hooks attach` and `mdev-hooks detach` (doc/design.md §3, "CLI,
 * guests"): give a guest a vGPU, or take it back, through libvirt's API.
 * They run in mdev-hooks-reconcile, the program that links libvirt, never
 * in a hook (a hook that calls libvirt deadlocks). What they decide and the
 * XML they write are lib/attach.c's; here: libvirt, and the order of steps.
 *
 * The order keeps what a crash leaves harmless, or repaired by reconcile
 * (doc/design.md §4.4):
 *
 *   attach: choose (read only; every refusal is here) -> metadata entries
 *   (libvirt's metadata API, only this project's element) -> [--live] claim
 *   and create under the lock (the hook's prepare) -> hot-plug -> the
 *   definition's <hostdev>s.
 *   detach: [--live] unplug, wait for libvirt's device-removed event ->
 *   free under the lock (the hook's release) -> the definition's
 *   <hostdev>s -> metadata entries.
 *
 * A metadata entry without a hostdev is ignored by every hook, so killed
 * between two steps attach leaves at most such an entry, or (--live) a
 * claim on a running guest that does not use the device, which reconcile
 * finds unused and removes, as the guest's release does.
 */
#include <time.h>

#include "attach.h"
#include "cli.h"
#include "cli-libvirt.h"
#include "config.h"
#include "crash.h"
#include "domxml.h"
#include "log.h"
#include "util.h"

/* How long detach --live waits for the guest to give a device back. */
#define DETACH_TIMEOUT_SEC 30

/* --- the guest ------------------------------------------------------------ */

typedef struct Guest {
        virConnectPtr conn;
        virDomainPtr dom;
        const char *name;              /* libvirt's */
        char uuid[VIR_UUID_STRING_BUFLEN];
        bool active, persistent;
} Guest;

static void guest_done(Guest *g) {
        virDomainFreep(&g->dom);
        virConnectClosep(&g->conn);
}

/* Connects (read-write) and finds the guest by name or UUID, as virsh
 * does. Logs. */
static int guest_open(const char *uri, const char *which, Guest *g) {
        virSetErrorFunc(NULL, libvirt_error_silent);
        g->conn = virConnectOpen(uri);
        if (!g->conn) {
                log_error("cannot connect to libvirt%s%s%s: %s", uri ? " at '" : "", strempty(uri), uri ? "'" : "",
                          libvirt_message());
                return -ECONNREFUSED;
        }
        if (uuid_is_valid(which))
                g->dom = virDomainLookupByUUIDString(g->conn, which);
        if (!g->dom)
                g->dom = virDomainLookupByName(g->conn, which);
        if (!g->dom) {
                log_error("no guest named '%s' (or with that UUID); 'virsh list --all' lists them", which);
                return -ENOENT;
        }
        g->name = virDomainGetName(g->dom);
        if (!g->name || virDomainGetUUIDString(g->dom, g->uuid) < 0) {
                log_error("cannot read guest '%s': %s", which, libvirt_message());
                return -EIO;
        }
        log_set_subject(g->name);
        g->active = virDomainIsActive(g->dom) == 1;
        g->persistent = virDomainIsPersistent(g->dom) == 1;
        return 0;
}

/* The guest's XML: flags 0 the running guest's, VIR_DOMAIN_XML_INACTIVE
 * its definition (with its secrets: it is defined again from it). -errno
 * with the message set. */
static int guest_xml(Guest *g, unsigned flags, char **ret_xml, Domxml **ret_dom) {
        _cleanup_free_ char *xml = NULL;
        int r;

        if (flags & VIR_DOMAIN_XML_INACTIVE)
                flags |= VIR_DOMAIN_XML_SECURE;
        xml = virDomainGetXMLDesc(g->dom, flags);
        if (!xml)
                return error_set(-EIO, "cannot read the guest's XML: %s", libvirt_message());
        if (ret_dom) {
                error_clear();
                r = domxml_parse(xml, strlen(xml), ret_dom);
                if (r < 0)
                        return error_prefix(r, "cannot read the guest's XML");
        }
        *ret_xml = steal_pointer(&xml);
        return 0;
}

/* The VFs every other guest names, in its definition or running: attach
 * never gives one to a second guest, although no record holds it while
 * that guest is stopped. */
static int others_vfs(Guest *g, char ***ret) {
        virDomainPtr *doms = NULL;
        _cleanup_strv_free_ char **l = NULL;
        int n;

        n = virConnectListAllDomains(g->conn, &doms, 0);
        if (n < 0) {
                log_error("cannot list the guests: %s", libvirt_message());
                return -EIO;
        }
        for (int i = 0; i < n; i++) {
                _cleanup_(virDomainFreep) virDomainPtr d = doms[i];
                char uuid[VIR_UUID_STRING_BUFLEN];

                if (virDomainGetUUIDString(d, uuid) < 0 || streq(uuid, g->uuid))
                        continue;
                for (int pass = 0; pass < 2; pass++) {
                        _cleanup_domxml_free_ Domxml *x = NULL;
                        _cleanup_free_ char *xml = NULL;

                        if (pass == 1 && virDomainIsActive(d) != 1)
                                continue;
                        xml = virDomainGetXMLDesc(d, pass == 0 ? VIR_DOMAIN_XML_INACTIVE : 0);
                        if (!xml || domxml_parse(xml, strlen(xml), &x) < 0)
                                continue; /* read by its own hook when it starts */
                        for (size_t k = 0; k < x->n_vgpus; k++)
                                if (!strv_contains(l, x->vgpus[k].pci) && strv_extend(&l, x->vgpus[k].pci) < 0) {
                                        free(doms);
                                        return -ENOMEM;
                                }
                }
        }
        free(doms);
        error_clear();
        *ret = steal_pointer(&l);
        return 0;
}

/* Adds (add) or removes the devices' entries in this project's metadata
 * element of the definition or the running guest (scope:
 * VIR_DOMAIN_AFFECT_CONFIG or _LIVE), through libvirt's metadata API:
 * other tools' metadata is not touched. Logs. */
static int metadata_update(Guest *g, unsigned scope, const AttachDevice *d, size_t n, bool add) {
        _cleanup_free_ char *old = NULL, *new = NULL;
        int r;

        old = virDomainGetMetadata(g->dom, VIR_DOMAIN_METADATA_ELEMENT, DOMXML_NAMESPACE, scope);
        if (!old) {
                virErrorPtr e = virGetLastError();

                if (!e || e->code != VIR_ERR_NO_DOMAIN_METADATA) {
                        log_error("cannot read the guest's metadata: %s", libvirt_message());
                        return -EIO;
                }
                if (!add)
                        return 0;
        }
        error_clear();
        r = add ? attach_metadata_add(old, d, n, &new) : attach_metadata_remove(old, d, n, &new);
        if (r < 0) {
                log_error("%s", error_get(r));
                return r;
        }
        if (virDomainSetMetadata(g->dom, VIR_DOMAIN_METADATA_ELEMENT, new, "mh", DOMXML_NAMESPACE, scope) < 0) {
                log_error("cannot %s the guest's mdev-hooks metadata: %s", add ? "write" : "update", libvirt_message());
                return -EIO;
        }
        return 0;
}

/* Defines the guest again with its definition's <hostdev>s for the devices
 * added (add) or taken out. -errno with the message set. */
static int definition_update(Guest *g, const AttachDevice *d, size_t n, bool add) {
        _cleanup_free_ char *xml = NULL, *new = NULL;
        virDomainPtr defined;
        int r;

        error_clear();
        r = guest_xml(g, VIR_DOMAIN_XML_INACTIVE, &xml, NULL);
        if (r < 0)
                return r;
        r = add ? attach_define_add(xml, d, n, &new) : attach_define_remove(xml, d, n, &new);
        if (r < 0)
                return r;
        defined = virDomainDefineXML(g->conn, new);
        if (!defined)
                return error_set(-EIO, "libvirt refused the definition with the %s: %s",
                                 add ? "new hostdevs" : "hostdevs removed", libvirt_message());
        virDomainFree(defined);
        return 0;
}

static const char *noun(const AttachDevice *d) {
        return d->kind == ATTACH_MDEV ? "mdev" : d->managed ? "VF" : "vGPU";
}

static const char *scope_words(bool live, bool config) {
        return live && config ? "the running guest and its definition" : live ? "the running guest" : "its definition";
}

/* --- attach --------------------------------------------------------------- */

static const char attach_help[] =
        "Usage: mdev-hooks attach GUEST (TYPE | --class CLASS) [--parent P] [--count N]\n"
        "                         [--live [--persistent]] [-c URI]\n"
        "\n"
        "Gives GUEST (a libvirt guest's name or UUID) N vGPUs (default 1) of TYPE,\n"
        "or of any enabled type of CLASS (the config's mdev_class): a <hostdev> each\n"
        "and its entry in the guest's mdev-hooks metadata, through libvirt's API.\n"
        "An mdev gets a new UUID, made when the guest starts; a vGPU of NVIDIA's\n"
        "VFIO framework, or an AMD or Intel VF given whole (managed='yes'), gets\n"
        "a free VF chosen as 'mdev-hooks pick' chooses. Refused,\n"
        "with nothing changed, when the config does not enable the type or the\n"
        "host has no room for it now.\n"
        "\n"
        "  --class CLASS      any enabled type of this mdev_class\n"
        "  --parent P         only this parent (an mdev parent; for a VF vGPU its\n"
        "                     GPU's PF or the VF itself)\n"
        "  --count N          N vGPUs (default 1)\n"
        "  --live             hot-plug into the running guest: created and claimed\n"
        "                     as the hook's prepare does, then plugged; without it\n"
        "                     only the definition changes (used at the next start)\n"
        "  --persistent       with --live: its definition too\n"
        "  -c, --connect URI  libvirt's URI (default: LIBVIRT_DEFAULT_URI, else\n"
        "                     libvirt's default)\n"
        "  --help             show this help\n"
        "Exit status: 0 added, 1 refused or failed (nothing changed unless said),\n"
        "2 bad usage or config. See mdev-hooks(8).\n";

typedef struct AttachOptions {
        CliOptions o;
        const char *mdev_class, *count_s, *timeout_s;
        unsigned count, timeout;
        bool live, persistent, all;
} AttachOptions;

/* Hot-plugs the claimed devices, one by one. Returns how many are in the
 * guest; logs libvirt's refusal. */
static size_t attach_hotplug(Guest *g, const AttachDevice *d, size_t n) {
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *xml = NULL;

                if (attach_hostdev_xml(&d[i], &xml) < 0) {
                        cli_oom();
                        return i;
                }
                if (virDomainAttachDeviceFlags(g->dom, xml, VIR_DOMAIN_AFFECT_LIVE) < 0) {
                        log_error("libvirt refused to hot-plug %s %s (%s): %s; its claim is undone",
                                  noun(&d[i]), d[i].key, d[i].what, libvirt_message());
                        return i;
                }
        }
        return n;
}

/* --live: claim and create, hot-plug, and undo what libvirt did not take.
 * Returns how many are plugged (all: n). */
static int attach_live(Guest *g, int rootfd, const Config *c, const AttachDevice *d, size_t n, size_t *ret_plugged) {
        size_t plugged;
        int r;

        error_clear();
        r = attach_claim(rootfd, c, g->name, g->uuid, d, n);
        if (r < 0) {
                log_error("%s", error_get(r));
                (void) metadata_update(g, VIR_DOMAIN_AFFECT_LIVE, d, n, false);
                *ret_plugged = 0;
                return r;
        }
        CRASHPOINT("attach-after-claim");
        plugged = attach_hotplug(g, d, n);
        if (plugged < n) {
                error_clear();
                r = attach_release(rootfd, c, g->name, d + plugged, n - plugged);
                if (r < 0)
                        log_warning("cannot undo the claim: %s", error_get(r));
                (void) metadata_update(g, VIR_DOMAIN_AFFECT_LIVE, d + plugged, n - plugged, false);
        }
        *ret_plugged = plugged;
        return plugged == n ? 0 : -EIO;
}

static int attach_parse(int argc, char *argv[], const char *config_path, AttachOptions *a) {
        const CliOption own[] = {
                { "class", &a->mdev_class, NULL },
                { "count", &a->count_s, NULL },
                { "live", NULL, &a->live },
                { "persistent", NULL, &a->persistent },
                { NULL, NULL, NULL },
        };
        int r;

        a->o = (CliOptions) { .config_path = config_path };
        r = cli_parse_options_own(argc, argv, CLI_OPT_ARGS | CLI_OPT_PARENT | CLI_OPT_CONNECT | CLI_OPT_SHORT_C_CONNECT,
                                  own, attach_help, &a->o);
        if (r >= 0)
                return r;
        a->count = 1;
        if (a->count_s && (safe_atou(a->count_s, &a->count) < 0 || a->count < 1 || a->count > 64)) {
                log_error("attach: --count '%s' is not a number from 1 to 64", a->count_s);
                return CLI_EXIT_USAGE;
        }
        if (a->o.n_args != (a->mdev_class ? 1 : 2)) {
                log_error("attach: give GUEST and TYPE, or GUEST and --class CLASS; see 'mdev-hooks attach --help'");
                return CLI_EXIT_USAGE;
        }
        if (a->mdev_class && !mdev_class_is_valid(a->mdev_class)) {
                log_error("attach: --class '%s' is not VGPU or CUSTOM_[A-Z0-9_]+", a->mdev_class);
                return CLI_EXIT_USAGE;
        }
        if (!a->mdev_class && !name_is_valid(a->o.args[1])) {
                log_error("attach: '%s' is not a type's name", a->o.args[1]);
                return CLI_EXIT_USAGE;
        }
        if (a->persistent && !a->live) {
                log_error("attach: --persistent goes with --live; without --live attach changes the definition alone");
                return CLI_EXIT_USAGE;
        }
        return -1;
}

/* The guest's XML (its definition when config_too, the running one when it
 * runs) and the devices attach_choose() gives it, read only. 0, or -1 with
 * the reason logged. */
static int choose_devices(Guest *g, int rootfd, const Config *config, const AttachOptions *a, bool config_too,
                          AttachDevice **ret, size_t *ret_n) {
        _cleanup_free_ char *def_xml = NULL, *live_xml = NULL;
        _cleanup_domxml_free_ Domxml *def = NULL, *live = NULL;
        _cleanup_strv_free_ char **avoid = NULL;
        AttachRequest req;
        int r;

        error_clear();
        r = config_too ? guest_xml(g, VIR_DOMAIN_XML_INACTIVE, &def_xml, &def) : 0;
        if (r >= 0 && g->active)
                r = guest_xml(g, 0, &live_xml, &live);
        if (r < 0) {
                log_error("%s", error_get(r));
                return -1;
        }
        if (others_vfs(g, &avoid) < 0)
                return -1;

        /* Every refusal is here, before anything changes. */
        req = (AttachRequest) {
                .type = a->mdev_class ? NULL : a->o.args[1],
                .mdev_class = a->mdev_class,
                .parent = a->o.parent,
                .count = a->count,
                .avoid = avoid,
        };
        error_clear();
        r = attach_choose(rootfd, config, g->name, def, live, &req, ret, ret_n);
        if (r < 0) {
                log_error("%s", error_get(r));
                return -1;
        }
        return 0;
}

int cli_attach_main(int argc, char *argv[], const char *config_path) {
        _cleanup_(guest_done) Guest g = { 0 };
        _cleanup_config_free_ Config *config = NULL;
        _cleanup_close_ int rootfd = -1;
        _cleanup_free_ AttachDevice *d = NULL;
        AttachOptions a = { 0 };
        bool config_too;
        size_t n = 0, plugged;
        int r;

        r = attach_parse(argc, argv, config_path, &a);
        if (r >= 0)
                return r;
        r = cli_open_root_config(a.o.config_path, &rootfd, &config);
        if (r > 0)
                return r;
        if (guest_open(a.o.connect, a.o.args[0], &g) < 0)
                return CLI_EXIT_FAILED;
        config_too = !a.live || a.persistent;
        if (a.live && !g.active) {
                log_error("the guest is not running; without --live, attach adds to its definition, used at its next start");
                return CLI_EXIT_FAILED;
        }
        if (config_too && !g.persistent) {
                log_error("the guest is transient: it has no definition to add to; use --live alone");
                return CLI_EXIT_FAILED;
        }
        if (choose_devices(&g, rootfd, config, &a, config_too, &d, &n) < 0)
                return CLI_EXIT_FAILED;

        /* The entries first: one without its hostdev is ignored. */
        if ((a.live && metadata_update(&g, VIR_DOMAIN_AFFECT_LIVE, d, n, true) < 0) ||
            (config_too && metadata_update(&g, VIR_DOMAIN_AFFECT_CONFIG, d, n, true) < 0)) {
                if (a.live)
                        (void) metadata_update(&g, VIR_DOMAIN_AFFECT_LIVE, d, n, false);
                return CLI_EXIT_FAILED;
        }
        CRASHPOINT("attach-after-metadata");

        plugged = n;
        if (a.live && attach_live(&g, rootfd, config, d, n, &plugged) < 0 && plugged == 0) {
                if (config_too)
                        (void) metadata_update(&g, VIR_DOMAIN_AFFECT_CONFIG, d, n, false);
                return CLI_EXIT_FAILED;
        }
        CRASHPOINT("attach-after-hotplug");
        r = config_too ? definition_update(&g, d, plugged, true) : 0;
        if (r < 0) {
                if (!a.live)
                        log_error("%s", error_get(r));
                else
                        log_error("%s; the running guest has the %s but its next start will not: "
                                  "give its definition one with 'mdev-hooks attach %s %s'",
                                  error_get(r), plugged > 1 ? "vGPUs" : "vGPU", g.name, d[0].what);
                (void) metadata_update(&g, VIR_DOMAIN_AFFECT_CONFIG, d, n, false);
                return CLI_EXIT_FAILED;
        }
        if (config_too && plugged < n)
                (void) metadata_update(&g, VIR_DOMAIN_AFFECT_CONFIG, d + plugged, n - plugged, false);

        for (size_t i = 0; i < plugged; i++)
                printf("added %s %s (%s) to '%s': %s\n", noun(&d[i]), d[i].key, d[i].what, g.name,
                       scope_words(a.live, config_too));
        return plugged == n ? CLI_EXIT_OK : CLI_EXIT_FAILED;
}

/* --- detach --------------------------------------------------------------- */

static const char detach_help[] =
        "Usage: mdev-hooks detach GUEST (UUID | PCI | --all) [--live [--persistent]]\n"
        "                         [--timeout SEC] [-c URI]\n"
        "\n"
        "Takes from GUEST (a libvirt guest's name or UUID) the mdev with UUID, the\n"
        "VF vGPU at PCI, or every vGPU: its <hostdev> and its entry in the guest's\n"
        "mdev-hooks metadata, through libvirt's API.\n"
        "\n"
        "  --all              every mdev and VF vGPU of the guest\n"
        "  --live             unplug it from the running guest, wait until the guest\n"
        "                     gives it back (libvirt's device-removed event), then\n"
        "                     free it as the hook's release does; without it only\n"
        "                     the definition changes\n"
        "  --persistent       with --live: its definition too\n"
        "  --timeout SEC      how long --live waits for the guest (default 30)\n"
        "  -c, --connect URI  libvirt's URI (default: LIBVIRT_DEFAULT_URI, else\n"
        "                     libvirt's default)\n"
        "  --help             show this help\n"
        "Exit status: 0 removed, 1 refused or failed, 2 bad usage or config.\n"
        "See mdev-hooks(8).\n";

/* What the device-removed callback and the timer learn. */
typedef struct Removal {
        bool event, timed_out;
} Removal;

/* Any device of the guest removed: the caller looks whether it was ours. */
static void removal_event(virConnectPtr conn, virDomainPtr dom, const char *alias, void *opaque) {
        ((Removal *) opaque)->event = true;
}

static void removal_timeout(int timer, void *opaque) {
        ((Removal *) opaque)->timed_out = true;
}

/* Whether the running guest still has the device. Logs. */
static int still_plugged(Guest *g, const AttachDevice *d) {
        _cleanup_free_ char *xml = NULL;
        _cleanup_domxml_free_ Domxml *dom = NULL;
        int r;

        error_clear();
        r = guest_xml(g, 0, &xml, &dom);
        if (r < 0) {
                log_error("%s", error_get(r));
                return r;
        }
        return (d->kind == ATTACH_MDEV ? domxml_find_mdev(dom, d->key) : domxml_find_vgpu(dom, d->key)) >= 0;
}

/* Asks libvirt to unplug the device and waits for the guest to give it back,
 * up to timeout seconds: for libvirt's device-removed event, after which
 * the running guest's XML says whether it was this device. Logs. */
static int detach_unplug(Guest *g, const AttachDevice *d, unsigned timeout) {
        _cleanup_free_ char *xml = NULL;
        Removal w = { 0 };
        int cb, timer, r;

        if (attach_hostdev_xml(d, &xml) < 0)
                return cli_oom(), -ENOMEM;
        cb = virConnectDomainEventRegisterAny(g->conn, g->dom, VIR_DOMAIN_EVENT_ID_DEVICE_REMOVED,
                                              VIR_DOMAIN_EVENT_CALLBACK(removal_event), &w, NULL);
        if (cb < 0) {
                log_error("cannot watch the guest for the device's removal: %s", libvirt_message());
                return -EIO;
        }
        if (virDomainDetachDeviceFlags(g->dom, xml, VIR_DOMAIN_AFFECT_LIVE) < 0) {
                log_error("libvirt refused to unplug %s %s: %s; nothing was changed", noun(d), d->key, libvirt_message());
                virConnectDomainEventDeregisterAny(g->conn, cb);
                return -EIO;
        }
        /* libvirt waits a few seconds itself: the guest may have answered */
        r = still_plugged(g, d);
        timer = r > 0 ? virEventAddTimeout((int) timeout * 1000, removal_timeout, &w, NULL) : -1;
        while (r > 0 && !w.timed_out && timer >= 0) {
                if (virEventRunDefaultImpl() < 0)
                        break;
                if (w.event) {
                        w.event = false;
                        r = still_plugged(g, d);
                }
        }
        if (timer >= 0)
                virEventRemoveTimeout(timer);
        virConnectDomainEventDeregisterAny(g->conn, cb);
        if (r < 0)
                return r;
        if (r > 0) {
                log_error("the guest has not given back %s %s within %u s, so it stays attached and held; "
                          "check that the guest handles PCI hot-unplug, then run this again with a longer --timeout, "
                          "or shut the guest down ('virsh shutdown %s'): its release frees it",
                          noun(d), d->key, timeout, g->name);
                return -ETIMEDOUT;
        }
        return 0;
}

static int detach_parse(int argc, char *argv[], const char *config_path, AttachOptions *a) {
        const CliOption own[] = {
                { "all", NULL, &a->all },
                { "live", NULL, &a->live },
                { "persistent", NULL, &a->persistent },
                { "timeout", &a->timeout_s, NULL },
                { NULL, NULL, NULL },
        };
        int r;

        a->o = (CliOptions) { .config_path = config_path };
        r = cli_parse_options_own(argc, argv, CLI_OPT_ARGS | CLI_OPT_CONNECT | CLI_OPT_SHORT_C_CONNECT, own,
                                  detach_help, &a->o);
        if (r >= 0)
                return r;
        a->timeout = DETACH_TIMEOUT_SEC;
        if (a->timeout_s && (safe_atou(a->timeout_s, &a->timeout) < 0 || a->timeout < 1 || a->timeout > 3600)) {
                log_error("detach: --timeout '%s' is not a number of seconds from 1 to 3600", a->timeout_s);
                return CLI_EXIT_USAGE;
        }
        if (a->o.n_args != (a->all ? 1 : 2)) {
                log_error("detach: give GUEST and an mdev's UUID or a VF's PCI address, or GUEST and --all; see 'mdev-hooks detach --help'");
                return CLI_EXIT_USAGE;
        }
        if (a->persistent && !a->live) {
                log_error("detach: --persistent goes with --live; without --live detach changes the definition alone");
                return CLI_EXIT_USAGE;
        }
        return -1;
}

int cli_detach_main(int argc, char *argv[], const char *config_path) {
        _cleanup_(guest_done) Guest g = { 0 };
        _cleanup_config_free_ Config *config = NULL;
        _cleanup_close_ int rootfd = -1;
        _cleanup_free_ char *xml = NULL;
        _cleanup_domxml_free_ Domxml *dom = NULL;
        _cleanup_free_ AttachDevice *d = NULL;
        AttachOptions a = { 0 };
        bool config_too;
        size_t n = 0;
        int r;

        r = detach_parse(argc, argv, config_path, &a);
        if (r >= 0)
                return r;
        r = cli_open_root_config(a.o.config_path, &rootfd, &config);
        if (r > 0)
                return r;
        if (a.live && virEventRegisterDefaultImpl() < 0) {
                log_error("cannot set up libvirt's event loop: %s", libvirt_message());
                return CLI_EXIT_FAILED;
        }
        if (guest_open(a.o.connect, a.o.args[0], &g) < 0)
                return CLI_EXIT_FAILED;
        config_too = !a.live || a.persistent;
        if (a.live && !g.active) {
                log_error("the guest is not running; without --live, detach takes it from its definition");
                return CLI_EXIT_FAILED;
        }
        if (config_too && !g.persistent) {
                log_error("the guest is transient: it has no definition; use --live alone");
                return CLI_EXIT_FAILED;
        }
        /* What is named: in the running guest with --live, else in the definition. */
        error_clear();
        r = guest_xml(&g, a.live ? 0 : VIR_DOMAIN_XML_INACTIVE, &xml, &dom);
        if (r >= 0)
                r = attach_find(rootfd, dom, a.all ? NULL : a.o.args[1], &d, &n);
        if (r < 0) {
                log_error("%s", error_get(r));
                return CLI_EXIT_FAILED;
        }
        if (n == 0) {
                printf("'%s' has no vGPUs in %s\n", g.name, scope_words(a.live, false));
                return CLI_EXIT_OK;
        }

        for (size_t i = 0; i < n; i++) {
                if (a.live) {
                        r = detach_unplug(&g, &d[i], a.timeout);
                        if (r < 0)
                                return CLI_EXIT_FAILED;
                        CRASHPOINT("detach-after-unplug");
                        error_clear();
                        r = attach_release(rootfd, config, g.name, &d[i], 1);
                        if (r < 0)
                                log_warning("%s", error_get(r)); /* left for later, as by release */
                }
                r = config_too ? definition_update(&g, &d[i], 1, false) : 0;
                if (r < 0) {
                        log_error("%s", error_get(r));
                        return CLI_EXIT_FAILED;
                }
                CRASHPOINT("detach-before-metadata");
                if ((a.live && metadata_update(&g, VIR_DOMAIN_AFFECT_LIVE, &d[i], 1, false) < 0) ||
                    (config_too && metadata_update(&g, VIR_DOMAIN_AFFECT_CONFIG, &d[i], 1, false) < 0))
                        return CLI_EXIT_FAILED;
                printf("removed %s %s (%s) from '%s': %s\n", noun(&d[i]), d[i].key, d[i].what, g.name,
                       scope_words(a.live, config_too));
        }
        return CLI_EXIT_OK;
}
