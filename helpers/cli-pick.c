/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `mdev-hooks pick TYPE [--numa-node N] [--xml]` (doc/design.md §3): a
 * guest with a vGPU of NVIDIA's VFIO framework names a fixed VF in its XML
 * before prepare runs, so the operator needs a VF to name: a free one that
 * can take the type, chosen as migrate chooses on the destination (its
 * backend's pick(): config, placement, max_instances, what the VFs can
 * create now; --numa-node: the GPUs of that node first, as for a guest
 * pinned there). Nothing is reserved: the VF is taken when the guest
 * starts.
 */
#include <libxml/tree.h>

#include "backend.h"
#include "cli.h"
#include "domxml.h"
#include "ledger.h"
#include "log.h"
#include "pciaddr.h"

static const char help[] =
        "Usage: mdev-hooks pick TYPE [--numa-node N] [--xml]\n"
        "\n"
        "Prints the PCI address of a free VF that can take a vGPU of TYPE\n"
        "(nvidia-<ID>, NVIDIA's vendor-specific VFIO framework, vGPU 17+; or a\n"
        "whole VF: amd-mxgpu-<N>, AMD's GIM; intel-xe-<MiB>, Intel's xe), chosen\n"
        "as the hook chooses on a migration's destination: the GPUs the config\n"
        "gives TYPE ([mdev_TYPE] device_addresses names PFs), [hooks] placement,\n"
        "max_instances, and what each VF can create now. Nothing is reserved:\n"
        "the VF is taken when the guest starts.\n"
        "\n"
        "  --numa-node N  the NUMA node the guest will be pinned to\n"
        "                 (<numatune><memory nodeset='N'/>): a VF on a GPU of\n"
        "                 that node first, as the hook prefers for such a guest;\n"
        "                 another node's when none there is free\n"
        "  --xml          print the <hostdev> to put under <devices> and the\n"
        "                 metadata entry to put under <metadata> (virsh edit)\n"
        "  --help         show this help\n";

static int print_xml(const SysfsMdev *ch, bool managed) {
        PciAddress a;
        char v[16];
        xmlNode *hostdev, *source, *address, *mdevs, *vgpu;
        xmlNs *ns;
        xmlBuffer *b;
        int r = 0;

        if (pci_address_split(ch->uuid, &a) < 0)
                return -EINVAL;
        hostdev = xmlNewNode(NULL, BAD_CAST "hostdev");
        mdevs = xmlNewNode(NULL, BAD_CAST "mdevs");
        b = xmlBufferCreate();
        if (!hostdev || !mdevs || !b) {
                r = -ENOMEM;
                goto out;
        }
        xmlNewProp(hostdev, BAD_CAST "mode", BAD_CAST "subsystem");
        xmlNewProp(hostdev, BAD_CAST "type", BAD_CAST "pci");
        xmlNewProp(hostdev, BAD_CAST "managed", BAD_CAST (managed ? "yes" : "no"));
        source = xmlNewChild(hostdev, NULL, BAD_CAST "source", NULL);
        address = source ? xmlNewChild(source, NULL, BAD_CAST "address", NULL) : NULL;
        if (!address) {
                r = -ENOMEM;
                goto out;
        }
        snprintf(v, sizeof v, "0x%04x", a.domain);
        xmlNewProp(address, BAD_CAST "domain", BAD_CAST v);
        snprintf(v, sizeof v, "0x%02x", a.bus);
        xmlNewProp(address, BAD_CAST "bus", BAD_CAST v);
        snprintf(v, sizeof v, "0x%02x", a.slot);
        xmlNewProp(address, BAD_CAST "slot", BAD_CAST v);
        snprintf(v, sizeof v, "0x%x", a.function);
        xmlNewProp(address, BAD_CAST "function", BAD_CAST v);

        ns = xmlNewNs(mdevs, BAD_CAST DOMXML_NAMESPACE, BAD_CAST "mh");
        xmlSetNs(mdevs, ns);
        vgpu = xmlNewChild(mdevs, ns, BAD_CAST "vgpu", NULL);
        if (!ns || !vgpu) {
                r = -ENOMEM;
                goto out;
        }
        xmlNewProp(vgpu, BAD_CAST "pci", BAD_CAST ch->uuid);
        xmlNewProp(vgpu, BAD_CAST "type", BAD_CAST ch->type);

        printf("<!-- under <devices>: -->\n");
        if (xmlNodeDump(b, NULL, hostdev, 0, 1) < 0) {
                r = -ENOMEM;
                goto out;
        }
        printf("%s\n", (const char *) xmlBufferContent(b));
        xmlBufferEmpty(b);
        printf("<!-- under <metadata> (or add the mh:vgpu line to an existing mh:mdevs): -->\n");
        if (xmlNodeDump(b, NULL, mdevs, 0, 1) < 0) {
                r = -ENOMEM;
                goto out;
        }
        printf("%s\n", (const char *) xmlBufferContent(b));
out:
        if (b)
                xmlBufferFree(b);
        if (hostdev)
                xmlFreeNode(hostdev);
        if (mdevs)
                xmlFreeNode(mdevs);
        return r;
}

int cli_pick_main(int argc, char *argv[], const char *config_path) {
        CliOptions o = { .config_path = config_path };
        bool xml = false;
        const char *numa_s = NULL;
        const CliOption own[] = {
                { "xml", NULL, &xml },
                { "numa-node", &numa_s, NULL },
                { NULL, NULL, NULL },
        };
        _cleanup_close_ int rootfd = -1, ledgerfd = -1;
        _cleanup_config_free_ Config *config = NULL;
        char boot_id[UUID_STRING_MAX] = "";
        const Backend *b = NULL, *q;
        const char *type;
        unsigned node = 0;
        SysfsMdev ch;
        int r;

        r = cli_parse_options_own(argc, argv, CLI_OPT_ARGS, own, help, &o);
        if (r >= 0)
                return r;
        if (o.n_args != 1) {
                fputs(help, stderr);
                return CLI_EXIT_USAGE;
        }
        type = o.args[0];
        if (numa_s && (safe_atou(numa_s, &node) < 0 || node >= NODESET_MAX)) {
                log_error("pick: --numa-node '%s' is not a NUMA node from 0 to %d (the N of the guest's <numatune><memory nodeset='N'/>)",
                          numa_s, NODESET_MAX - 1);
                return CLI_EXIT_USAGE;
        }
        BACKEND_FOREACH(q)
                if (!b && q->pick && q->type_is_mine && q->type_is_mine(type))
                        b = q;
        if (!b) {
                log_error("'%s' is not a vGPU type of NVIDIA's VFIO framework (nvidia-<ID>); an mdev's parent is chosen by the hook when the guest starts",
                          type);
                return CLI_EXIT_USAGE;
        }
        r = cli_open_root_config(o.config_path, &rootfd, &config);
        if (r > 0)
                return r;
        if (!config_find_type(config, type)) {
                char enabled[512];
                config_enabled_types_string(config, enabled, sizeof enabled);
                log_error("type %s is not enabled in the config (enabled: %s)", type, enabled);
                return CLI_EXIT_FAILED;
        }
        if (boot_id_read(rootfd, boot_id) < 0)
                boot_id[0] = '\0';
        r = ledger_open_existing(rootfd, &ledgerfd);
        if (r < 0)
                ledgerfd = -1;
        error_clear();
        r = b->pick(rootfd, ledgerfd, config, boot_id, type, numa_s ? (NodeSet) 1 << node : 0, &ch);
        if (r < 0) {
                log_error("%s", error_get(r));
                return CLI_EXIT_FAILED;
        }
        if (!xml) {
                printf("%s\n", ch.uuid);
                return CLI_EXIT_OK;
        }
        r = print_xml(&ch, b->managed);
        if (r < 0)
                return cli_oom();
        return CLI_EXIT_OK;
}
