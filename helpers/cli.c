/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the CLI's commands share (cli.h): options, root, config, JSON, tables. */
#include <assert.h>
#include <getopt.h>
#include <limits.h>
#include <unistd.h>

#include "cli.h"
#include "inventory.h"
#include "log.h"
#include "vfio.h"

#define CLI_OWN_MAX 8          /* a command's own options at most */
#define CLI_OWN_FIRST 0x100   /* getopt_long()'s value of the first */

int cli_parse_options(int argc, char *argv[], unsigned accepted, const char *help, CliOptions *o) {
        return cli_parse_options_own(argc, argv, accepted, NULL, help, o);
}

int cli_parse_options_own(int argc, char *argv[], unsigned accepted, const CliOption *own, const char *help,
                          CliOptions *o) {
        /* The options every command knows; one with a flag is refused
         * unless accepted has it. */
        static const struct {
                struct option option;
                unsigned flag;
        } common[] = {
                { { "config",    required_argument, NULL, 'F' }, 0 },
                { { "json",      no_argument,       NULL, 'j' }, CLI_OPT_JSON },
                { { "placement", no_argument,       NULL, 'L' }, CLI_OPT_PLACEMENT },
                { { "hostname",  required_argument, NULL, 'H' }, CLI_OPT_HOSTNAME },
                { { "parent",    required_argument, NULL, 'p' }, CLI_OPT_PARENT },
                { { "uuid",      required_argument, NULL, 'u' }, CLI_OPT_UUID },
                { { "connect",   required_argument, NULL, 'C' }, CLI_OPT_CONNECT },
                { { "apply",     no_argument,       NULL, 'A' }, CLI_OPT_APPLY },
                { { "help",      no_argument,       NULL, 'h' }, 0 },
                { { "version",   no_argument,       NULL, 'V' }, 0 },
        };
        struct option options[ELEMENTSOF(common) + CLI_OWN_MAX + 1] = { { 0 } };
        size_t n = 0;
        bool refused_arg;
        int c;

        for (; own && own[n].name; n++) {
                assert(n < CLI_OWN_MAX);
                options[n] = (struct option) { own[n].name, own[n].arg ? required_argument : no_argument, NULL,
                                               CLI_OWN_FIRST + (int) n };
        }
        for (size_t i = 0; i < ELEMENTSOF(common); i++)
                options[n + i] = common[i].option;

        optind = 0; /* glibc: start over, argv[0] is the command */
        opterr = 0;
        /* Options may follow a command's arguments ("pick TYPE --xml"); without
         * arguments, the first word that is not an option ends them. */
        while ((c = getopt_long(argc, argv, accepted & CLI_OPT_ARGS ? "c:jhp:u:" : "+c:jhp:u:", options, NULL)) >= 0) {
                refused_arg = false;
                for (size_t i = 0; i < ELEMENTSOF(common); i++)
                        if (c == common[i].option.val && (common[i].flag & ~accepted)) {
                                refused_arg = optarg && optarg == argv[optind - 1]; /* "--opt ARG" */
                                c = '?';
                        }
                switch (c) {
                case 'c':
                        /* -c: virsh's, the libvirt URI, after attach and detach */
                        if (accepted & CLI_OPT_SHORT_C_CONNECT)
                                o->connect = optarg;
                        else
                                o->config_path = optarg;
                        break;
                case 'F':
                        o->config_path = optarg;
                        break;
                case 'j':
                        o->json = true;
                        break;
                case 'L':
                        o->placement = true;
                        break;
                case 'p':
                        if (!name_is_valid(optarg)) {
                                log_error("%s: --parent '%s' is not a parent's name", argv[0], optarg);
                                return CLI_EXIT_USAGE;
                        }
                        o->parent = optarg;
                        break;
                case 'u':
                        if (!uuid_is_valid(optarg)) {
                                log_error("%s: --uuid '%s' is not a UUID", argv[0], optarg);
                                return CLI_EXIT_USAGE;
                        }
                        uuid_normalize(optarg, o->uuid);
                        break;
                case 'H':
                        o->hostname = optarg;
                        break;
                case 'C':
                        o->connect = optarg;
                        break;
                case 'A':
                        o->apply = true;
                        break;
                case 'h':
                        fputs(help, stdout);
                        return CLI_EXIT_OK;
                case 'V':
                        puts("mdev-hooks " PACKAGE_VERSION);
                        return CLI_EXIT_OK;
                default:
                        if (c >= CLI_OWN_FIRST && c < CLI_OWN_FIRST + (int) n) {
                                if (own[c - CLI_OWN_FIRST].arg)
                                        *own[c - CLI_OWN_FIRST].arg = optarg;
                                else
                                        *own[c - CLI_OWN_FIRST].flag = true;
                                break;
                        }
                        /* name the option, not the argument it took */
                        log_error("%s: unknown option or missing argument '%s'; see 'mdev-hooks %s --help'",
                                  argv[0], argv[optind - (refused_arg ? 2 : 1)], argv[0]);
                        return CLI_EXIT_USAGE;
                }
        }
        if (accepted & CLI_OPT_ARGS) {
                o->args = argv + optind;
                o->n_args = argc - optind;
        } else if (optind < argc) {
                log_error("%s: unexpected argument '%s'; see 'mdev-hooks %s --help'", argv[0], argv[optind], argv[0]);
                return CLI_EXIT_USAGE;
        }
        return -1;
}

int cli_oom(void) {
        log_error("out of memory");
        return CLI_EXIT_FAILED;
}

int cli_open_root(int *ret_fd) {
        int r = root_open(ret_fd);

        if (r < 0) {
                log_error("%s", error_get(r));
                return CLI_EXIT_FAILED;
        }
        return 0;
}

int cli_load_config(int rootfd, const char *path, FILE *f, Config **ret) {
        _cleanup_strv_free_ char **errors = NULL;
        int r;

        error_clear();
        r = config_load(rootfd, path, ret, &errors);
        if (r >= 0) {
                /* accepted as Nova accepts them; check-config refuses them */
                for (char **w = (*ret)->warnings; w && *w; w++)
                        log_warning("%s", *w);
                return 0;
        }
        if (strv_length(errors) == 0)
                fprintf(f, "%s\n", error_get(r));
        for (char **e = errors; e && *e; e++)
                fprintf(f, "%s\n", *e);
        /* A config that is bad, unsafe, missing (when named) or unreadable is
         * refused whole: bad config. */
        return r == -ENOMEM ? CLI_EXIT_FAILED : CLI_EXIT_USAGE;
}

int cli_open_root_config(const char *config_path, int *ret_rootfd, Config **ret_config) {
        int r = cli_open_root(ret_rootfd);

        if (r > 0)
                return r;
        return cli_load_config(*ret_rootfd, config_path, stderr, ret_config);
}

int cli_host_name(const char *cmd, const char *option, const char *given, char *host) {
        if (given) {
                if (!*given || strlen(given) > HOST_NAME_MAX) {
                        log_error("%s: %s '%s' is not a host name", cmd, option, given);
                        return CLI_EXIT_USAGE;
                }
                snprintf(host, HOST_NAME_MAX + 1, "%s", given);
        } else if (gethostname(host, HOST_NAME_MAX + 1) < 0) {
                log_error("%s: cannot get the host name (%s); give %s", cmd, strerror(errno), option);
                return CLI_EXIT_FAILED;
        }
        host[HOST_NAME_MAX] = '\0';
        return 0;
}

int cli_read_inventory(const char *cmd, int rootfd, const Config *c, InventoryParent **ret, size_t *ret_n) {
        int r;

        error_clear();
        r = inventory_read(rootfd, c, ret, ret_n);
        if (r < 0) {
                log_error("%s%s%s", strempty(cmd), cmd ? ": " : "", error_get(r));
                return CLI_EXIT_FAILED;
        }
        return 0;
}

int cli_print_json(json_object *o) {
        const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
                                                          JSON_C_TO_STRING_SPACED |
                                                          JSON_C_TO_STRING_NOSLASHESCAPE);

        if (!s)
                return -ENOMEM;
        if (fputs(s, stdout) < 0 || fputc('\n', stdout) < 0)
                return -EIO;
        return 0;
}

json_object *cli_json_string(const char *s) {
        return s ? json_object_new_string(s) : NULL;
}

struct CliTable {
        size_t n_columns;
        unsigned right;
        char **cells;     /* row-major, header row first */
        size_t n_rows;
};

CliTable *cli_table_new(const char * const *headers, size_t n_columns, unsigned right_aligned_mask) {
        CliTable *t = calloc(1, sizeof *t);

        if (!t)
                return NULL;
        t->n_columns = n_columns;
        t->right = right_aligned_mask;
        if (cli_table_add(t, headers) < 0) {
                cli_table_free(t);
                return NULL;
        }
        return t;
}

int cli_table_add(CliTable *t, const char * const *cells) {
        char **c = realloc(t->cells, (t->n_rows + 1) * t->n_columns * sizeof *c);

        if (!c)
                return -ENOMEM;
        t->cells = c;
        for (size_t i = 0; i < t->n_columns; i++) {
                char *s = strdup(cells[i] ? cells[i] : "-");

                if (!s) {
                        for (size_t j = 0; j < i; j++)
                                free(t->cells[t->n_rows * t->n_columns + j]);
                        return -ENOMEM;
                }
                /* one line per row, and no terminal control characters */
                for (char *p = s; *p; p++)
                        if (*p == '\n' || *p == '\t')
                                *p = ' ';
                        else if ((unsigned char) *p < 0x20 || *p == 0x7f)
                                *p = '?';
                t->cells[t->n_rows * t->n_columns + i] = s;
        }
        t->n_rows++;
        return 0;
}

void cli_table_print(const CliTable *t, FILE *f) {
        size_t width[32] = { 0 };
        size_t n = t->n_columns < ELEMENTSOF(width) ? t->n_columns : ELEMENTSOF(width);

        for (size_t r = 0; r < t->n_rows; r++)
                for (size_t i = 0; i < n; i++) {
                        size_t l = strlen(t->cells[r * t->n_columns + i]);
                        if (l > width[i])
                                width[i] = l;
                }
        for (size_t r = 0; r < t->n_rows; r++) {
                _cleanup_free_ char *line = NULL;
                size_t size = 0, len;
                FILE *m = open_memstream(&line, &size);

                if (!m)
                        return;
                for (size_t i = 0; i < n; i++) {
                        const char *s = t->cells[r * t->n_columns + i];

                        if (i > 0)
                                fputs("  ", m);
                        if (t->right & (1u << i))
                                fprintf(m, "%*s", (int) width[i], s);
                        else
                                fprintf(m, "%-*s", (int) width[i], s);
                }
                if (fclose(m) != 0 || !line)
                        return;
                /* no trailing blanks when the last cells are short or empty */
                len = strlen(line);
                while (len > 0 && line[len - 1] == ' ')
                        line[--len] = '\0';
                fprintf(f, "%s\n", line);
        }
}

void cli_table_free(CliTable *t) {
        if (!t)
                return;
        for (size_t i = 0; i < t->n_rows * t->n_columns; i++)
                free(t->cells[i]);
        free(t->cells);
        free(t);
}

int cli_host_read(int rootfd, CliHost *ret) {
        _cleanup_close_ int ledgerfd = -1;
        CliHost h = { 0 };
        int r;

        error_clear();
        r = sysfs_mdev_list(rootfd, &h.mdevs, &h.n_mdevs);
        if (r >= 0)
                r = vfio_vgpus_append(rootfd, &h.mdevs, &h.n_mdevs);
        if (r < 0) {
                log_error("cannot list the mdevs in sysfs: %s", error_get(r));
                cli_host_done(&h);
                return r;
        }
        error_clear();
        r = ledger_open_existing(rootfd, &ledgerfd);
        if (r >= 0)
                r = ledger_list(ledgerfd, &h.records, &h.n_records, &h.n_bad);
        if (r >= 0 && h.n_bad > 0)
                r = ledger_list_unreadable(ledgerfd, &h.bad);
        if (r < 0 && r != -ENOENT) {
                log_error("cannot read the record under /" LEDGER_DIR ": %s", error_get(r));
                cli_host_done(&h);
                return r;
        }
        *ret = h;
        return 0;
}

void cli_host_done(CliHost *h) {
        strv_free(h->bad);
        free(h->records);
        free(h->mdevs);
        *h = (CliHost) { 0 };
}

int cli_libexec_main(int argc, char *argv[], const char *program, const char *command, CliMain fn) {
        const char *config_path = NULL;
        int r;

        log_open("mdev-hooks", LOG_TARGET_STDERR);
        if (argc == 2 && streq(argv[1], "--help")) {
                printf("Usage: %s %s [OPTIONS]\n"
                       "\n"
                       "The program behind 'mdev-hooks %s' (it alone links what that\n"
                       "command needs); run that instead. 'mdev-hooks %s --help' lists\n"
                       "the options.\n"
                       "\n"
                       "  --help     show this help\n"
                       "  --version  show the version\n", program, command, command, command);
                return 0;
        }
        if (argc == 2 && streq(argv[1], "--version")) {
                printf("%s " PACKAGE_VERSION "\n", program);
                return 0;
        }
        argc--, argv++;
        if (argc >= 2 && streq(argv[0], "--config")) {
                config_path = argv[1];
                argc -= 2, argv += 2;
        }
        if (argc < 1 || !streq(argv[0], command)) {
                log_error("%s is run by 'mdev-hooks %s'; use that", program, command);
                return 2;
        }
        r = fn(argc, argv, config_path);
        if (fflush(stdout) != 0 && r == 0) {
                log_error("cannot write the output: %s", strerror(errno));
                r = 1;
        }
        log_close();
        return r;
}
