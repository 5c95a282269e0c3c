/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <syslog.h>

#include "log.h"
#include "spawn.h"
#include "sriov.h"
#include "util.h"

/* The config is read whole only to find a PF's address in it. */
#define CONFIG_TEXT_MAX (1024 * 1024)
#define SRIOV_MARK_DIR "run/mdev-hooks/sriov" /* under the root */

typedef struct Sriov {
        int rootfd;
        const Config *config;
        const char *address;
        char boot_id[UUID_STRING_MAX];
} Sriov;

static const char *config_name(const Sriov *s) {
        return s->config->path ? s->config->path : "/" CONFIG_DEFAULT_PATH;
}

int sriov_config_mentions(int rootfd, const char *address) {
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *text = NULL;
        size_t len;
        int r;

        fd = openat(rootfd, CONFIG_DEFAULT_PATH, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return errno == ENOENT ? 0 : 1; /* let config_load() say what is wrong */
        r = read_fd_full(fd, CONFIG_TEXT_MAX, &text, &len);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return 1; /* too large or unreadable: config_load() says so */
        return strcasestr(text, address) ? 1 : 0;
}

static const ConfigSriovPf *config_find_pf(const Config *cfg, const char *address) {
        for (size_t i = 0; i < cfg->n_sriov; i++)
                if (strcasecmp(cfg->sriov[i].address, address) == 0)
                        return &cfg->sriov[i];
        return NULL;
}

static void command_line(const char *line, void *userdata) {
        const Sriov *s = userdata;

        log_msg(LOG_NOTICE, "'%s': %s", s->config->sriov_command, line);
}

/* Runs the [sriov] command for the PF, its output logged line by line.
 * Returns 1 if it exited 0, 0 if it failed (logged), <0 if it could not run. */
static int command_run(const Sriov *s) {
        const char *command = s->config->sriov_command;
        SpawnResult res;
        int r;

        r = spawn_shell(command, s->address, SRIOV_COMMAND_TIMEOUT, command_line, (void *) s, &res);
        if (r < 0)
                return r;
        if (res.timed_out)
                log_msg(LOG_ERR, "'%s %s' did not finish within %u s and was killed", command, s->address, SRIOV_COMMAND_TIMEOUT);
        else if (WIFEXITED(res.status) && WEXITSTATUS(res.status) == 0)
                return 1;
        else if (WIFEXITED(res.status))
                log_msg(LOG_ERR, "'%s %s' failed with exit status %d", command, s->address, WEXITSTATUS(res.status));
        else
                log_msg(LOG_ERR, "'%s %s' was killed by signal %d", command, s->address, WTERMSIG(res.status));
        return 0;
}

/* [sriov] command: run once per boot and PF. A mark under run/mdev-hooks/sriov/
 * (flocked while the command runs, then holding the boot id) makes a repeated
 * or concurrent event (add, then bind) do nothing. */
static int sriov_command(Sriov *s) {
        const char *command = s->config->sriov_command;
        char mark[sizeof SRIOV_MARK_DIR + NAME_STRING_MAX + 1], done[UUID_STRING_MAX + 2];
        _cleanup_close_ int fd = -1;
        ssize_t n;
        int r;

        r = mkdir_p_at(s->rootfd, SRIOV_MARK_DIR, 0755);
        if (r < 0)
                return error_set(r, "cannot create '/" SRIOV_MARK_DIR "': %s", strerror(-r));
        snprintf(mark, sizeof mark, SRIOV_MARK_DIR "/%s", s->address);
        fd = openat(s->rootfd, mark, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0644);
        if (fd < 0)
                return error_set(-errno, "cannot open '/%s': %s", mark, strerror(errno));
        if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
                if (errno != EWOULDBLOCK)
                        return error_set(-errno, "cannot lock '/%s': %s", mark, strerror(errno));
                log_msg(LOG_INFO, "'%s' is already running for it (another event)", command);
                return 0;
        }
        n = pread(fd, done, sizeof done - 1, 0);
        done[n > 0 ? n : 0] = '\0';
        done[strcspn(done, "\n")] = '\0';
        if (streq(done, s->boot_id)) {
                log_msg(LOG_DEBUG, "'%s' already ran for it in this boot", command);
                return 0;
        }

        log_msg(LOG_INFO, "running '%s %s'", command, s->address);
        r = command_run(s);
        if (r <= 0)
                return r; /* no mark: the next event tries again */
        snprintf(done, sizeof done, "%s\n", s->boot_id);
        if (ftruncate(fd, 0) < 0 || pwrite(fd, done, strlen(done), 0) != (ssize_t) strlen(done))
                log_msg(LOG_WARNING, "cannot write '/%s': %s; a repeated event runs the command again", mark, strerror(errno));
        log_msg(LOG_NOTICE, "enabled its virtual functions with '%s %s'", command, s->address);
        return 0;
}

int sriov_enable(int rootfd, const Config *config, const char *address, bool added) {
        Sriov s = { .rootfd = rootfd, .config = config, .address = address };
        char dir[sizeof "sys/bus/pci/devices/" + NAME_STRING_MAX], path[sizeof dir + 32], num[32];
        const ConfigSriovPf *pf;
        unsigned total, numvfs, want;
        int r;

        pf = config_find_pf(config, address);
        if (!pf)
                return 0;

        snprintf(dir, sizeof dir, "sys/bus/pci/devices/%s", address);
        snprintf(path, sizeof path, "%s/sriov_totalvfs", dir);
        r = read_small_at(rootfd, path, num, sizeof num);
        if (r >= 0)
                r = safe_atou(num, &total);
        if (r < 0) {
                log_msg(LOG_WARNING, "%s names it in [sriov], but it is not an SR-IOV physical function ('/%s': %s)",
                    config_name(&s), path, strerror(-r));
                return 0;
        }
        snprintf(path, sizeof path, "%s/sriov_numvfs", dir);
        r = read_small_at(rootfd, path, num, sizeof num);
        if (r >= 0)
                r = safe_atou(num, &numvfs);
        if (r < 0)
                return error_set(r, "cannot read '/%s': %s", path, strerror(-r));
        if (numvfs > 0) {
                log_msg(LOG_DEBUG, "%u virtual functions are enabled already", numvfs);
                return 0;
        }
        /* At coldplug, "add" comes with the driver bound; at driver load,
         * "bind" follows "add". Neither the kernel nor a vendor tool can
         * enable VFs without the PF's driver. */
        snprintf(path, sizeof path, "%s/driver", dir);
        if (added && faccessat(rootfd, path, F_OK, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT) {
                log_msg(LOG_INFO, "no driver bound yet: its virtual functions are enabled when one binds");
                return 0;
        }
        r = boot_id_read(rootfd, s.boot_id);
        if (r < 0)
                return r;

        if (config->sriov_command)
                return sriov_command(&s);

        want = pf->max ? total : pf->numvfs;
        if (want == 0)
                return 0;
        if (want > total) {
                log_msg(LOG_ERR, "%s asks for %u virtual functions in [sriov], but it offers at most %u (sriov_totalvfs): none enabled",
                    config_name(&s), want, total);
                return 0;
        }
        snprintf(num, sizeof num, "%u", want);
        snprintf(path, sizeof path, "%s/sriov_numvfs", dir);
        r = write_string_at(rootfd, path, num);
        if (r == -EBUSY) {
                /* Another event enabled them meanwhile (the kernel refuses a
                 * second write while VFs are enabled). */
                char again[32];
                if (read_small_at(rootfd, path, again, sizeof again) >= 0 && safe_atou(again, &numvfs) >= 0 && numvfs > 0)
                        return 0;
        }
        if (r < 0) {
                log_msg(LOG_ERR, "cannot enable %u virtual functions: writing '/%s' failed: %s", want, path, strerror(-r));
                return 0;
        }
        log_msg(LOG_NOTICE, "enabled %u virtual functions", want);
        return 0;
}
