/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mdev-hooks: the operator CLI (doc/design.md §3). A table of commands; each
 * lives in its own file (cli-<command>.c) with the signature of cli.h.
 */
#include <getopt.h>
#include <limits.h>

#include "cli.h"
#include "log.h"
#include "util.h"

/* Some commands run in programs of their own, so that this one loads neither
 * libvirt (and glib, gnutls, ...) nor libcurl (and its TLS, Kerberos, LDAP,
 * ... libraries: 35 more, which made every `list` several times slower) for
 * every `types` or `list`: `reconcile`, `attach` and `detach` in
 * mdev-hooks-reconcile, `placement`
 * in mdev-hooks-placement. Each is looked for where `meson install` puts it
 * relative to this program, then beside it (the build tree). */
static int libexec_run(const char *program, int argc, char *argv[], const char *config_path) {
        char self[PATH_MAX];
        _cleanup_free_ char **args = NULL;
        size_t n = 0;
        int r;

        r = program_dir(self, sizeof self);
        if (r < 0) {
                log_error("%s", error_get(r));
                return 1;
        }

        args = calloc((size_t) argc + 4, sizeof(char *));
        if (!args)
                return 1;
        args[n++] = (char *) program;
        if (config_path) {
                args[n++] = (char *) "--config";
                args[n++] = (char *) config_path;
        }
        for (int i = 0; i < argc; i++)
                args[n++] = argv[i];

        for (int place = 0; place < 2; place++) {
                _cleanup_free_ char *path = place == 0 ? strdup_printf("%s/%s/%s", self, LIBEXEC_FROM_BINDIR, program)
                                                       : strdup_printf("%s/%s", self, program);

                if (!path)
                        return 1;
                if (access(path, X_OK) == 0) {
                        fflush(NULL);
                        execv(path, args);
                        log_error("cannot run '%s': %s", path, strerror(errno));
                        return 1;
                }
        }
        log_error("cannot find %s in %s/%s or %s; is mdev-hooks fully installed?",
                  program, self, LIBEXEC_FROM_BINDIR, self);
        return 1;
}

static int libvirt_exec(int argc, char *argv[], const char *config_path) {
        return libexec_run("mdev-hooks-reconcile", argc, argv, config_path);
}

static int placement_exec(int argc, char *argv[], const char *config_path) {
        return libexec_run("mdev-hooks-placement", argc, argv, config_path);
}

typedef struct CliCommand {
        const char *name;
        CliMain main;
        const char *summary;
} CliCommand;

static const CliCommand commands[] = {
        { "types",        cli_types_main,        "every mdev parent and the types it offers" },
        { "list",         cli_list_main,         "every mdev with its parent, type, state and guest" },
        { "inventory",    cli_inventory_main,    "capacity per parent as Nova counts it (--placement)" },
        { "check-config", cli_check_config_main, "check the config, and against this host" },
        { "metrics",      cli_metrics_main,      "capacity and states for Prometheus (node_exporter textfile)" },
        { "placement",    placement_exec,    "placement sync: publish this host to OpenStack Placement" },
        { "pick",         cli_pick_main,         "a free VF for a VFIO vGPU type (--xml: what to paste)" },
        { "attach",       libvirt_exec,        "give a guest vGPUs, defined or running (--live)" },
        { "detach",       libvirt_exec,        "take vGPUs from a guest, defined or running (--live)" },
        { "reconcile",    libvirt_exec,        "libvirt's guests against the record and sysfs" },
        { "gpu",          cli_gpu_main,          "gpu plan | status: NVIDIA GPUs' declared modes ([gpu_PF])" },
};

static void usage(FILE *f) {
        fputs("Usage: mdev-hooks [--config FILE] COMMAND [OPTIONS]\n"
              "\n"
              "Mediated devices (vGPUs) for libvirt guests, the way OpenStack Nova\n"
              "manages them. Commands:\n", f);
        for (size_t i = 0; i < ELEMENTSOF(commands); i++)
                fprintf(f, "  %-14s %s\n", commands[i].name, commands[i].summary);
        fputs("\n"
              "  --config FILE   read FILE instead of /etc/mdev-hooks/mdev-hooks.conf\n"
              "  --help          show this help; 'mdev-hooks COMMAND --help' for a command\n"
              "  --version       show the version\n"
              "\n"
              "MDEV_HOOKS_ROOT=DIR makes every path relative to DIR (for tests).\n"
              "Exit status: 0 done, 1 failed, 2 bad usage or bad config.\n", f);
}

int main(int argc, char *argv[]) {
        static const struct option options[] = {
                { "config",  required_argument, NULL, 'c' },
                { "help",    no_argument,       NULL, 'h' },
                { "version", no_argument,       NULL, 'V' },
                { 0 }
        };
        const char *config_path = NULL;
        int c;

        log_open("mdev-hooks", LOG_TARGET_STDERR);

        opterr = 0;
        while ((c = getopt_long(argc, argv, "+c:h", options, NULL)) >= 0)
                switch (c) {
                case 'c':
                        config_path = optarg;
                        break;
                case 'h':
                        usage(stdout);
                        return 0;
                case 'V':
                        puts("mdev-hooks " PACKAGE_VERSION);
                        return 0;
                default:
                        log_error("unknown option or missing argument '%s'; see 'mdev-hooks --help'", argv[optind - 1]);
                        return 2;
                }
        if (optind >= argc) {
                usage(stderr);
                return 2;
        }
        for (size_t i = 0; i < ELEMENTSOF(commands); i++)
                if (streq(commands[i].name, argv[optind])) {
                        int r = commands[i].main(argc - optind, argv + optind, config_path);

                        if (fflush(stdout) != 0 && r == 0) {
                                log_error("cannot write the output: %s", strerror(errno));
                                r = 1;
                        }
                        log_close();
                        return r;
                }
        if (streq(argv[optind], "help")) {
                /* "mdev-hooks help COMMAND" is "mdev-hooks COMMAND --help" */
                if (optind + 1 < argc)
                        for (size_t i = 0; i < ELEMENTSOF(commands); i++)
                                if (streq(commands[i].name, argv[optind + 1]))
                                        return commands[i].main(2, (char *[]) { argv[optind + 1], (char *) "--help", NULL }, NULL);
                usage(stdout);
                return 0;
        }
        log_error("unknown command '%s'; see 'mdev-hooks --help'", argv[optind]);
        return 2;
}
