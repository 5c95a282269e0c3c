/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The config (config.c): Nova's sections and their old names, [hooks] and
 * [sriov], the resolution of a parent's type, and every error, each checked
 * with the line it must name.
 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>

#include "check.h"
#include "config.h"

static char tmpdir[] = "/tmp/test-config-XXXXXX";
static char path[256];

static void write_config(const char *text, mode_t mode) {
        int fd;

        unlink(path);
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        check(fd >= 0);
        check(write(fd, text, strlen(text)) == (ssize_t) strlen(text));
        check(fchmod(fd, mode) == 0);
        close(fd);
}

static Config *load_ok(const char *text) {
        char **errors = NULL;
        Config *c = NULL;
        int r;

        write_config(text, 0644);
        r = config_load(-1, path, &c, &errors);
        if (r < 0)
                for (char **e = errors; e && *e; e++)
                        fprintf(stderr, "unexpected: %s\n", *e);
        check(r == 0);
        check(c);
        check(!errors);
        return c;
}

/* Loading fails, and one of the errors is "<path>:<line>: ...<what>...". */
static char **load_fails(const char *text) {
        char **errors = NULL;
        Config *c = NULL;
        int r;

        write_config(text, 0644);
        r = config_load(-1, path, &c, &errors);
        check(r == -EINVAL);
        check(!c);
        check(errors && errors[0]);
        return errors;
}

static bool has_error(char **errors, unsigned line, const char *what) {
        char prefix[300];

        snprintf(prefix, sizeof prefix, "%s:%u: ", path, line);
        for (char **e = errors; e && *e; e++)
                if (strncmp(*e, prefix, strlen(prefix)) == 0 && strstr(*e, what))
                        return true;
        return false;
}

static void expect_error(const char *text, unsigned line, const char *what) {
        char **errors = load_fails(text);

        if (!has_error(errors, line, what)) {
                fprintf(stderr, "expected line %u: '%s'; got:\n", line, what);
                for (char **e = errors; *e; e++)
                        fprintf(stderr, "  %s\n", *e);
                abort();
        }
        strv_free(errors);
}

/* --- what loads -------------------------------------------------------- */

static void test_nova_sections(void) {
        Config *c = load_ok(
                "# pasted from nova.conf\n"
                "[devices]\n"
                "enabled_mdev_types = nvidia-35, nvidia-36\n"
                "\n"
                "[mdev_nvidia-35]\n"
                "device_addresses = 0000:84:00.0,0000:85:00.0\n"
                "mdev_class = CUSTOM_NVIDIA_35\n"
                "max_instances = 20\n"
                "\n"
                "[mdev_nvidia-36]\n"
                "device_addresses = 0000:86:00.0\n");

        check(c->n_types == 2);
        check(streq(c->types[0].name, "nvidia-35"));
        check(streq(c->types[1].name, "nvidia-36"));
        check(c->types[0].line == 5);
        check(c->types[0].max_instances == 20);
        check(streq(c->types[0].mdev_class, "CUSTOM_NVIDIA_35"));
        check(streq(c->types[1].mdev_class, "VGPU"));
        check(c->types[1].max_instances == 0);
        check(strv_length(c->types[0].addresses) == 2);
        check(!c->default_type);
        check(config_parent_type(c, "0000:85:00.0") == &c->types[0]);
        check(config_parent_type(c, "0000:86:00.0") == &c->types[1]);
        check(config_parent_type(c, "0000:87:00.0") == NULL);
        check(config_parent_is_listed(c, "0000:84:00.0"));
        check(!config_parent_is_listed(c, "0000:87:00.0"));
        check(config_find_type(c, "nvidia-36") == &c->types[1]);
        check(config_find_type(c, "nvidia-37") == NULL);
        /* defaults of what is not set */
        check(c->release == CONFIG_RELEASE_REMOVE);
        check(c->placement == CONFIG_PLACEMENT_PACK);
        check(c->recreate == CONFIG_RECREATE_LAZY);
        check(c->lock_timeout == 30);
        check(c->parent_wait == 0);
        check(c->n_sriov == 0 && !c->sriov_command);
        config_free(c);
}

static void test_old_names(void) {
        Config *c = load_ok(
                "[devices]\n"
                "enabled_vgpu_types = nvidia-35, nvidia-36\n"
                "[vgpu_nvidia-35]\n"
                "device_addresses = 0000:84:00.0\n");

        check(c->n_types == 2);
        check(c->default_type == &c->types[1]);
        check(c->types[1].line == 2);
        check(config_parent_type(c, "0000:84:00.0") == &c->types[0]);
        check(config_parent_type(c, "0000:99:00.0") == &c->types[1]);
        check(config_parent_type(c, "mtty") == &c->types[1]);
        config_free(c);
}

static void test_default_type_and_virtual_parent(void) {
        Config *c = load_ok(
                "[devices]\n"
                "enabled_mdev_types = mtty-2, mtty-1\n"
                "[mdev_mtty-2]\n"
                "device_addresses = mtty\n");

        check(config_parent_type(c, "mtty") == config_find_type(c, "mtty-2"));
        check(c->default_type == config_find_type(c, "mtty-1"));
        config_free(c);
}

static void test_addresses_normalised_and_continued(void) {
        Config *c = load_ok(
                "[devices]\n"
                "enabled_mdev_types = nvidia-35\n"
                "[mdev_nvidia-35]\n"
                "device_addresses = 0000:85:00.0,\n"
                "    0000:84:00.0, 0000:AF:00.0 ; inline comment\n"
                "  0000:83:00.0\n");
        char **a = c->types[0].addresses;

        check(strv_length(a) == 4);
        /* sorted and lower case */
        check(streq(a[0], "0000:83:00.0"));
        check(streq(a[1], "0000:84:00.0"));
        check(streq(a[2], "0000:85:00.0"));
        check(streq(a[3], "0000:af:00.0"));
        check(config_parent_type(c, "0000:af:00.0") == &c->types[0]);
        config_free(c);
}

/* Nova's own CI config names the mtty parent by its libvirt node-device
 * name; any parent may be named either way, and both name one parent. */
static void test_addresses_by_node_device_name(void) {
        Config *c = load_ok(
                "[devices]\n"
                "enabled_mdev_types = nvidia-35, mtty-1\n"
                "[mdev_nvidia-35]\n"
                "device_addresses = pci_0000_84_00_0, pci_0000_AF_00_1, 0.0.0052, css_0_0_0053, ap_matrix\n"
                "[mdev_mtty-1]\n"
                "device_addresses = mtty_mtty\n");
        char **a = c->types[0].addresses;

        check(strv_length(a) == 5);
        check(streq(a[0], "0.0.0052"));
        check(streq(a[1], "0.0.0053"));
        check(streq(a[2], "0000:84:00.0"));
        check(streq(a[3], "0000:af:00.1"));
        check(streq(a[4], "matrix"));
        check(config_parent_type(c, "mtty") == config_find_type(c, "mtty-1"));
        check(config_parent_type(c, "0000:84:00.0") == &c->types[0]);
        config_free(c);

        /* one parent under two names is one parent under two types */
        expect_error("[devices]\n"
                     "enabled_mdev_types = nvidia-35, nvidia-36\n"
                     "[mdev_nvidia-35]\n"
                     "device_addresses = 0000:84:00.0\n"
                     "[mdev_nvidia-36]\n"
                     "device_addresses = pci_0000_84_00_0\n",
                     6, "'0000:84:00.0' is listed under two types, nvidia-35 (line 4) and nvidia-36");
        expect_error("[devices]\n"
                     "enabled_mdev_types = mtty-1, mtty-2\n"
                     "[mdev_mtty-1]\n"
                     "device_addresses = mtty\n"
                     "[mdev_mtty-2]\n"
                     "device_addresses = mtty_mtty\n",
                     6, "'mtty' is listed under two types");
        /* a PCI node-device name with a bad function is still refused */
        expect_error("[devices]\n"
                     "enabled_mdev_types = nvidia-35\n"
                     "[mdev_nvidia-35]\n"
                     "device_addresses = pci_0000_84_00_8\n",
                     4, "'pci_0000_84_00_8' is neither a PCI address nor a valid parent name");
}

/* An SR-IOV host lists hundreds of VFs: all kept, sorted, each once. */
static void test_addresses_many_sorted(void) {
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        Config *c;
        char **a;

        check(f);
        fputs("[devices]\nenabled_mdev_types = nvidia-35\n[mdev_nvidia-35]\ndevice_addresses =", f);
        for (unsigned i = 512; i-- > 0;) /* backwards */
                fprintf(f, "%s\n  0000:%02x:%02x.%u", i < 511 ? "," : "", 0x10 + i / 64, (i / 8) % 8, i % 8);
        fputs("\n", f);
        check(fclose(f) == 0);
        c = load_ok(text);
        a = c->types[0].addresses;
        check(strv_length(a) == 512);
        check(streq(a[0], "0000:10:00.0"));
        check(streq(a[511], "0000:17:07.7"));
        for (size_t i = 1; i < 512; i++)
                check(strcmp(a[i - 1], a[i]) < 0);
        check(config_parent_type(c, "0000:13:04.5") == &c->types[0]);
        config_free(c);
}

static void test_hooks_and_sriov(void) {
        Config *c = load_ok(
                "[hooks]\n"
                "release = keep\n"
                "placement = spread\n"
                "lock_timeout = 5\n"
                "parent_wait = 60\n"
                "recreate = eager\n"
                "[sriov]\n"
                "0000:41:00.0 = 16\n"
                "0000:C1:00.0 = max\n"
                "command = /usr/lib/nvidia/sriov-manage -e ALL\n");

        check(c->n_types == 0 && !c->default_type);
        check(c->release == CONFIG_RELEASE_KEEP);
        check(c->placement == CONFIG_PLACEMENT_SPREAD);
        check(c->recreate == CONFIG_RECREATE_EAGER);
        check(c->lock_timeout == 5);
        check(c->parent_wait == 60);
        check(c->n_sriov == 2);
        check(streq(c->sriov[0].address, "0000:41:00.0"));
        check(c->sriov[0].numvfs == 16 && !c->sriov[0].max);
        check(c->sriov[0].line == 8 && c->sriov[1].line == 9);
        check(streq(c->sriov[1].address, "0000:c1:00.0"));
        check(c->sriov[1].max);
        check(streq(c->sriov_command, "/usr/lib/nvidia/sriov-manage -e ALL"));
        check(streq(config_release_to_string(c->release), "keep"));
        check(streq(config_placement_to_string(c->placement), "spread"));
        check(streq(config_recreate_to_string(c->recreate), "eager"));
        config_free(c);
}

static void test_empty_and_missing(void) {
        char **errors = NULL;
        Config *c = NULL;
        int rootfd, r;

        c = load_ok("");
        check(c->n_types == 0 && c->lock_timeout == 30);
        config_free(c);

        /* A missing default config: an empty config. */
        rootfd = open(tmpdir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        check(rootfd >= 0);
        c = NULL;
        check(config_load(rootfd, NULL, &c, &errors) == 0);
        check(c && c->n_types == 0 && !errors);
        check(streq(c->path, "/etc/mdev-hooks/mdev-hooks.conf"));
        config_free(c);
        close(rootfd);

        /* A missing explicit path: an error naming it. */
        c = NULL;
        r = config_load(-1, "/nonexistent/mdev-hooks.conf", &c, &errors);
        check(r == -ENOENT);
        check(!c);
        check(errors && strstr(errors[0], "/nonexistent/mdev-hooks.conf: cannot open"));
        strv_free(errors);
}

/* --- every error, with its line ------------------------------------------ */

static void test_error_same_address_two_types(void) {
        expect_error("[devices]\n"
                     "enabled_mdev_types = nvidia-35, nvidia-36\n"
                     "[mdev_nvidia-35]\n"
                     "device_addresses = 0000:84:00.0\n"
                     "[mdev_nvidia-36]\n"
                     "device_addresses = 0000:85:00.0, 0000:84:00.0\n",
                     6, "'0000:84:00.0' is listed under two types, nvidia-35 (line 4) and nvidia-36");
        /* also after normalisation of the case */
        expect_error("[devices]\n"
                     "enabled_mdev_types = nvidia-35, nvidia-36\n"
                     "[mdev_nvidia-36]\n"
                     "device_addresses = 0000:AF:00.0\n"
                     "[mdev_nvidia-35]\n"
                     "device_addresses = 0000:af:00.0\n",
                     6, "'0000:af:00.0' is listed under two types");
        expect_error("[devices]\n"
                     "enabled_mdev_types = nvidia-35\n"
                     "[mdev_nvidia-35]\n"
                     "device_addresses = 0000:84:00.0,\n"
                     "   0000:84:00.0\n",
                     5, "'0000:84:00.0' is listed twice");
        /* three listings: each later one names the first, and nothing else
         * is reported */
        {
                char **errors = load_fails("[devices]\n"
                                           "enabled_mdev_types = nvidia-35, nvidia-36\n"
                                           "[mdev_nvidia-35]\n"
                                           "device_addresses = 0000:84:00.0, 0000:85:00.0,\n"
                                           "   0000:84:00.0\n"
                                           "[mdev_nvidia-36]\n"
                                           "device_addresses = 0000:84:00.0, 0000:86:00.0\n");

                check(strv_length(errors) == 2);
                check(has_error(errors, 5, "'0000:84:00.0' is listed twice in [mdev_nvidia-35]"));
                check(has_error(errors, 7, "'0000:84:00.0' is listed under two types, nvidia-35 (line 4) and nvidia-36"));
                strv_free(errors);
        }
        /* hundreds of addresses, one repeated at the end */
        {
                _cleanup_free_ char *text = NULL;
                char **errors;
                size_t len = 0;
                FILE *f = open_memstream(&text, &len);

                check(f);
                fputs("[devices]\nenabled_mdev_types = nvidia-35\n[mdev_nvidia-35]\ndevice_addresses =", f);
                for (unsigned i = 0; i < 512; i++)
                        fprintf(f, "%s\n  0000:%02x:%02x.%u", i ? "," : "", 0x10 + i / 64, (i / 8) % 8, i % 8);
                fputs(",\n  0000:10:00.0\n", f);
                check(fclose(f) == 0);
                errors = load_fails(text);
                check(strv_length(errors) == 1);
                check(has_error(errors, 517, "'0000:10:00.0' is listed twice"));
                strv_free(errors);
        }
}

static void test_error_malformed_address(void) {
        expect_error("[devices]\n"
                     "enabled_mdev_types = nvidia-35\n"
                     "[mdev_nvidia-35]\n"
                     "device_addresses = 0000:84:00.0, 0000:84:00\n",
                     4, "'0000:84:00' is not a PCI address");
        expect_error("[devices]\n"
                     "enabled_mdev_types = nvidia-35\n"
                     "[mdev_nvidia-35]\n"
                     "device_addresses = 0000:84:00.0,\n"
                     "  ../../etc\n",
                     5, "'../../etc' is neither a PCI address nor a valid parent name");
        expect_error("[sriov]\n"
                     "command = true\n"
                     "0000:41:00 = 4\n",
                     3, "unknown key '0000:41:00' in [sriov]");
}

/* Nova (22+): "Mdev type default already set to X so Y will not be used":
 * the first type without device_addresses is the default, the later ones
 * are dropped, with a warning naming the line. */
static void test_two_defaults_as_nova(void) {
        Config *c = load_ok("[devices]\n"
                            "enabled_mdev_types = nvidia-35, nvidia-36\n");
        char prefix[600];

        check(c->n_types == 1);
        check(c->default_type == config_find_type(c, "nvidia-35"));
        check(!config_find_type(c, "nvidia-36"));
        check(config_parent_type(c, "0000:84:00.0") == c->default_type);
        check(strv_length(c->warnings) == 1);
        snprintf(prefix, sizeof prefix, "%s:2: 'nvidia-36' and 'nvidia-35' (line 2) both have no device_addresses: as Nova does, "
                                        "'nvidia-35' is the default for every parent not listed and 'nvidia-36' is not used", path);
        check(strncmp(c->warnings[0], prefix, strlen(prefix)) == 0);
        config_free(c);

        c = load_ok("[devices]\n"
                    "enabled_mdev_types = nvidia-35, nvidia-36, nvidia-37, nvidia-38\n"
                    "[mdev_nvidia-36]\n"
                    "mdev_class = CUSTOM_B\n"
                    "max_instances = 3\n"
                    "[mdev_nvidia-37]\n"
                    "device_addresses = 0000:84:00.0\n");
        check(c->n_types == 2);
        check(streq(c->types[0].name, "nvidia-35") && streq(c->types[1].name, "nvidia-37"));
        check(c->types[1].addresses && streq(c->types[1].addresses[0], "0000:84:00.0"));
        check(c->types[1].max_instances == 0 && streq(c->types[1].mdev_class, "VGPU"));
        check(config_parent_type(c, "0000:84:00.0") == &c->types[1]);
        check(strv_length(c->warnings) == 2);
        check(strstr(c->warnings[0], ":3: 'nvidia-36' and 'nvidia-35' (line 2)"));
        check(strstr(c->warnings[1], ":2: 'nvidia-38' and 'nvidia-35' (line 2)"));
        config_free(c);
}

static void test_error_max_instances(void) {
        static const char *bad[] = { "0", "-1", "ten", "1.5", "", "99999999999" };

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                char text[256];

                snprintf(text, sizeof text,
                         "[devices]\n"
                         "enabled_mdev_types = nvidia-35\n"
                         "[mdev_nvidia-35]\n"
                         "\n"
                         "max_instances = %s\n", bad[i]);
                expect_error(text, 5, "max_instances must be an integer >= 1");
        }
}

static void test_error_mdev_class(void) {
        static const char *bad[] = { "vgpu", "CUSTOM_", "CUSTOM_lower", "CUSTOM_A-B", "PGPU", "" };

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                char text[256];

                snprintf(text, sizeof text,
                         "[devices]\n"
                         "enabled_mdev_types = nvidia-35\n"
                         "[mdev_nvidia-35]\n"
                         "mdev_class = %s\n", bad[i]);
                expect_error(text, 4, "mdev_class must be VGPU or CUSTOM_[A-Z0-9_]+");
        }
}

static void test_error_unknown_key_and_section(void) {
        expect_error("[devices]\n"
                     "enabled_mdev_types = nvidia-35\n"
                     "enabled_pci_types = x\n",
                     3, "unknown key 'enabled_pci_types' in [devices]");
        expect_error("[devices]\n"
                     "enabled_mdev_types = nvidia-35\n"
                     "[mdev_nvidia-35]\n"
                     "device_address = 0000:84:00.0\n",
                     4, "unknown key 'device_address' in [mdev_nvidia-35]");
        expect_error("[hooks]\n"
                     "release = keep\n"
                     "timeout = 3\n",
                     3, "unknown key 'timeout' in [hooks]");
        expect_error("[devices]\n"
                     "\n"
                     "[libvirt]\n"
                     "virt_type = kvm\n",
                     3, "unknown section [libvirt]");
        /* the section is reported once, not each of its keys */
        {
                char **errors = load_fails("[DEFAULT]\n"
                                           "a = 1\n"
                                           "b = 2\n");
                check(strv_length(errors) == 1);
                check(has_error(errors, 1, "unknown section [DEFAULT]"));
                strv_free(errors);
        }
        expect_error("release = keep\n", 1, "key 'release' outside a section");
}

static void test_placement_section(void) {
        Config *c = load_ok("[placement]\n"
                            "url = http://placement.example.net:8778\n"
                            "token_file = /etc/mdev-hooks/placement-token\n");

        check(streq(c->placement_url, "http://placement.example.net:8778"));
        check(streq(c->placement_token_file, "/etc/mdev-hooks/placement-token"));
        config_free(c);
        c = load_ok("[devices]\nenabled_mdev_types = nvidia-35\n");
        check(!c->placement_url && !c->placement_token_file);
        config_free(c);
        expect_error("[placement]\n"
                     "url = http://p:8778\n"
                     "password = x\n",
                     3, "unknown key 'password' in [placement] (known: url, token_file)");
        expect_error("[placement]\nurl = placement:8778\n", 2, "url must start with http:// or https://, not 'placement:8778'");
        expect_error("[placement]\ntoken_file = token\n", 2, "token_file must be an absolute path, not 'token'");
        expect_error("[placement]\nurl = http://a\nurl = http://b\n", 3, "duplicate key 'url' (first set on line 2)");
}

static void test_error_section_for_type_not_enabled(void) {
        expect_error("[devices]\n"
                     "enabled_mdev_types = nvidia-35\n"
                     "[mdev_nvidia-35]\n"
                     "device_addresses = 0000:84:00.0\n"
                     "[mdev_nvidia-36]\n"
                     "device_addresses = 0000:85:00.0\n",
                     5, "[mdev_nvidia-36] configures a type that is not enabled");
        /* also when [devices] comes after it, or is missing */
        expect_error("[vgpu_nvidia-36]\n"
                     "device_addresses = 0000:85:00.0\n",
                     1, "[mdev_nvidia-36] configures a type that is not enabled");
}

static void test_error_duplicate_key(void) {
        expect_error("[hooks]\n"
                     "release = keep\n"
                     "placement = pack\n"
                     "release = remove\n",
                     4, "duplicate key 'release' (first set on line 2)");
        /* the old and the new name of one option */
        expect_error("[devices]\n"
                     "enabled_mdev_types = nvidia-35\n"
                     "enabled_vgpu_types = nvidia-35\n",
                     3, "duplicate key 'enabled_vgpu_types' (first set on line 2)");
        /* one type's two section names */
        expect_error("[devices]\n"
                     "enabled_mdev_types = nvidia-35\n"
                     "[mdev_nvidia-35]\n"
                     "max_instances = 4\n"
                     "[vgpu_nvidia-35]\n"
                     "max_instances = 8\n",
                     6, "duplicate key 'max_instances' (first set on line 4)");
        /* a section repeated */
        expect_error("[hooks]\n"
                     "lock_timeout = 1\n"
                     "[hooks]\n"
                     "lock_timeout = 2\n",
                     4, "duplicate key 'lock_timeout' (first set on line 2)");
        expect_error("[sriov]\n"
                     "0000:41:00.0 = 4\n"
                     "0000:41:00.0 = 8\n",
                     3, "duplicate key '0000:41:00.0' (first set on line 2)");
        expect_error("[devices]\n"
                     "enabled_mdev_types = nvidia-35, nvidia-35\n",
                     2, "type 'nvidia-35' is enabled twice");
}

static void test_error_hooks_values(void) {
        expect_error("[hooks]\nrelease = delete\n", 2, "release must be remove or keep, not 'delete'");
        expect_error("[hooks]\nplacement = random\n", 2, "placement must be pack or spread");
        expect_error("[hooks]\nrecreate = yes\n", 2, "recreate must be lazy or eager");
        expect_error("[hooks]\nlock_timeout = 30s\n", 2, "lock_timeout must be a number of seconds, not '30s'");
        expect_error("[hooks]\nparent_wait = -1\n", 2, "parent_wait must be a number of seconds");
        expect_error("[sriov]\n0000:41:00.0 = 0\n", 2, "must be an integer >= 1 or max, not '0'");
        expect_error("[sriov]\n0000:41:00.0 = all\n", 2, "must be an integer >= 1 or max, not 'all'");
        expect_error("[sriov]\ncommand =\n", 2, "command is empty");
        expect_error("[hooks]\nrelease = keep,\n  remove\n", 3, "'release' takes one value");
}

static void test_error_syntax(void) {
        expect_error("[devices\nenabled_mdev_types = a\n", 1, "section header without ']'");
        expect_error("[devices]\nenabled_mdev_types\n", 2, "expected 'key = value'");
        expect_error("[mdev_../x]\n", 1, "is not a valid mdev type name");
        expect_error("[devices]\nenabled_mdev_types = nvidia-35, ../x\n", 2, "'../x' is not a valid mdev type name");
        {
                char text[600];

                /* a key alone longer than inih's line */
                snprintf(text, sizeof text, "[devices]\nenabled_mdev_types = nvidia-35\n[mdev_nvidia-35]\n%0250d = 1\n", 0);
                expect_error(text, 4, "key longer than 194 characters");
        }
}

/* "0000:3b:00.4, 0000:3b:00.5, ..." : n VFs of the PF 0000:<bus>:00.0, as on an A100. */
static char *vf_list(unsigned bus, unsigned n) {
        _cleanup_free_ char *l = strdup("");

        for (unsigned i = 0; i < n && l; i++) {
                unsigned devfn = 4 + i;
                char *m = strdup_printf("%s%s0000:%02x:%02x.%u", l, i ? ", " : "", bus, devfn >> 3, devfn & 7);

                free(l);
                l = m;
        }
        return steal_pointer(&l);
}

/* A real SR-IOV nova.conf lists 16 to 64 VFs on one line (1 to 2
 * KiB) and mdev_class may be 255 characters; inih's buffer is 200 bytes. */
static void test_long_lines(void) {
        _cleanup_free_ char *vfs = vf_list(0x3b, 64), *more = vf_list(0x5e, 40);
        _cleanup_free_ char *cls = NULL, *text = NULL;
        char long_comment[1200];
        Config *c;

        check(vfs && more && strlen(vfs) > 800);
        cls = calloc(256, 1);
        check(cls);
        memcpy(cls, "CUSTOM_", 7);
        memset(cls + 7, 'X', 255 - 7);
        check(strlen(cls) == 255);
        memset(long_comment, '#', sizeof long_comment - 1);
        long_comment[sizeof long_comment - 1] = '\0';

        text = strdup_printf("[devices]\n"
                             "enabled_mdev_types = nvidia-472\n"
                             "%s\n"
                             "[mdev_nvidia-472]\n"
                             "device_addresses = %s ; the first A100's 64 VFs\n"
                             "    %s\n"
                             "mdev_class = %s\n"
                             "max_instances = 100\n",
                             long_comment, vfs, more, cls);
        check(text && strlen(text) > 2048);
        c = load_ok(text);
        check(strv_length(c->types[0].addresses) == 104);
        check(streq(c->types[0].addresses[0], "0000:3b:00.4"));
        check(streq(c->types[0].addresses[63], "0000:3b:08.3"));
        check(streq(c->types[0].addresses[64], "0000:5e:00.4"));
        check(config_parent_type(c, "0000:3b:08.3") == &c->types[0]);
        check(streq(c->types[0].mdev_class, cls));
        check(c->types[0].max_instances == 100);
        config_free(c);
        free(text);

        /* every other error keeps its line, before and after a long line */
        text = strdup_printf("[devices]\n"
                             "enabled_mdev_types = nvidia-472\n"
                             "[mdev_nvidia-472]\n"
                             "device_addresses = %s, 0000:3b:00\n"
                             "max_instances = 0\n"
                             "mdev_class = %sY\n",
                             vfs, cls);
        check(text);
        {
                char **errors = load_fails(text);

                check(has_error(errors, 4, "'0000:3b:00' is not a PCI address"));
                check(has_error(errors, 5, "max_instances must be an integer >= 1"));
                check(has_error(errors, 6, "mdev_class must be VGPU or CUSTOM_[A-Z0-9_]+ of at most 255 characters"));
                check(strv_length(errors) == 3);
                strv_free(errors);
        }
}

static void test_errors_all_collected_sorted(void) {
        char **errors = load_fails("[devices]\n"                                /* 1 */
                                   "enabled_mdev_types = nvidia-35, nvidia-36\n" /* 2 */
                                   "bogus = 1\n"                                 /* 3 */
                                   "[hooks]\n"                                   /* 4 */
                                   "release = never\n"                           /* 5 */
                                   "[mdev_nvidia-35]\n"                          /* 6 */
                                   "max_instances = 0\n"                         /* 7 */
                                   "[foo]\n");                                   /* 8 */
        unsigned lines[] = { 3, 5, 7, 8 }; /* line 2's two defaults are a warning (as in Nova) */

        check(strv_length(errors) == ELEMENTSOF(lines));
        for (size_t i = 0; i < ELEMENTSOF(lines); i++) {
                char prefix[300];

                snprintf(prefix, sizeof prefix, "%s:%u: ", path, lines[i]);
                check(strncmp(errors[i], prefix, strlen(prefix)) == 0);
        }
        strv_free(errors);
}

static void test_error_permissions(void) {
        char **errors = NULL;
        Config *c = NULL;

        write_config("[hooks]\nrelease = keep\n", 0646);
        check(config_load(-1, path, &c, &errors) == -EPERM);
        check(!c);
        check(strv_length(errors) == 1);
        check(strstr(errors[0], path) == errors[0]);
        check(strstr(errors[0], "world-writable"));
        strv_free(errors);
        errors = NULL;

        if (geteuid() == 0) {
                write_config("[hooks]\nrelease = keep\n", 0644);
                check(chown(path, 65534, 65534) == 0);
                check(config_load(-1, path, &c, &errors) == -EPERM);
                check(!c);
                check(strv_length(errors) == 1);
                check(strstr(errors[0], path) == errors[0]);
                check(strstr(errors[0], "not root"));
                strv_free(errors);
        } else
                fprintf(stderr, "skipped: ownership check (needs root)\n");
}

/* The file is read whole, at once: a last line without its newline, CRLF
 * lines and a large file read as before; one over 16 MiB is refused. */
static void test_read_whole(void) {
        _cleanup_free_ char *big = NULL;
        char **errors = NULL;
        Config *c;
        size_t n = (1u << 20) + 7;

        c = load_ok("[devices]\r\nenabled_mdev_types = nvidia-35\r\n[hooks]\nlock_timeout = 7");
        check(c->n_types == 1 && streq(c->types[0].name, "nvidia-35"));
        check(c->lock_timeout == 7);
        config_free(c);

        big = malloc((17u << 20) + 64);
        check(big);
        memset(big, '#', n);
        for (size_t i = 100; i < n; i += 100)
                big[i] = '\n';
        snprintf(big + n, 64, "\n[devices]\nenabled_mdev_types = nvidia-36\n");
        c = load_ok(big);
        check(c->n_types == 1 && streq(c->types[0].name, "nvidia-36"));
        config_free(c);

        memset(big, '#', 17u << 20);
        big[17u << 20] = '\0';
        write_config(big, 0644);
        c = NULL;
        check(config_load(-1, path, &c, &errors) == -EFBIG);
        check(!c);
        check(errors && strstr(errors[0], "cannot read"));
        strv_free(errors);
}

/* config_parse_text() on the text config_load() kept: the same config,
 * warnings and all, without reading the file again (it is gone). */
static void test_parse_text_again(void) {
        Config *c = load_ok("[devices]\n"
                            "enabled_mdev_types = nvidia-35, nvidia-36, nvidia-37\n"
                            "[mdev_nvidia-37]\n"
                            "device_addresses = 0000:84:00.0,\n"
                            "  0000:85:00.0\n"
                            "[hooks]\n"
                            "lock_timeout = 9\n");
        Config *again = NULL;
        char *text;
        int r;

        check(c->text && c->text_len == strlen(c->text) && strstr(c->text, "lock_timeout = 9"));
        unlink(path);
        check(config_parse_text(path, c->text, c->text_len, &again) == 0);
        check(again->n_types == c->n_types && c->n_types == 2);
        for (size_t i = 0; i < c->n_types; i++)
                check(streq(again->types[i].name, c->types[i].name) &&
                      strv_length(again->types[i].addresses) == strv_length(c->types[i].addresses));
        check(streq(again->types[1].addresses[1], "0000:85:00.0"));
        check(again->default_type == &again->types[0]);
        check(again->lock_timeout == 9 && !again->missing);
        check(strv_length(again->warnings) == 1 && streq(again->warnings[0], c->warnings[0]));
        check(again->text_len == c->text_len && memcmp(again->text, c->text, c->text_len) == 0);
        config_free(again);
        config_free(c);

        /* no file: the missing default config, as config_load() gives it */
        again = NULL;
        check(config_parse_text(NULL, NULL, 0, &again) == 0);
        check(again->missing && again->n_types == 0 && !again->text);
        check(streq(again->path, "/etc/mdev-hooks/mdev-hooks.conf"));
        config_free(again);

        /* an empty file, and text that is not a whole string */
        again = NULL;
        check(config_parse_text(path, "", 0, &again) == 0);
        check(!again->missing && again->n_types == 0 && again->text && again->text_len == 0);
        config_free(again);
        text = strdup("[hooks]\nlock_timeout = 5\n[devices]");
        check(text);
        again = NULL;
        check(config_parse_text(path, text, strlen("[hooks]\nlock_timeout = 5\n"), &again) == 0);
        check(again->lock_timeout == 5);
        config_free(again);
        free(text);

        /* errors: the first, as config_load() says it */
        again = NULL;
        r = config_parse_text(path, "[hooks]\nbogus = 1\n", strlen("[hooks]\nbogus = 1\n"), &again);
        check(r == -EINVAL && !again);
        check(strstr(error_get(r), ":2: unknown key 'bogus' in [hooks]"));
        error_clear();
}

int main(void) {
        check(mkdtemp(tmpdir));
        snprintf(path, sizeof path, "%s/mdev-hooks.conf", tmpdir);

        test_nova_sections();
        test_old_names();
        test_default_type_and_virtual_parent();
        test_addresses_normalised_and_continued();
        test_addresses_by_node_device_name();
        test_addresses_many_sorted();
        test_hooks_and_sriov();
        test_empty_and_missing();
        test_error_same_address_two_types();
        test_error_malformed_address();
        test_two_defaults_as_nova();
        test_error_max_instances();
        test_error_mdev_class();
        test_error_unknown_key_and_section();
        test_error_section_for_type_not_enabled();
        test_placement_section();
        test_error_duplicate_key();
        test_error_hooks_values();
        test_error_syntax();
        test_long_lines();
        test_errors_all_collected_sorted();
        test_error_permissions();
        test_read_whole();
        test_parse_text_again();

        unlink(path);
        rmdir(tmpdir);
        return 0;
}
