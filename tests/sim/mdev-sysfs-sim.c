/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mdev-sysfs-sim: a FUSE file system that plays the mdev part of /sys, so
 * that the programs can be tested end to end on a kernel without mdev.
 *
 *   mdev-sysfs-sim [-f] TOPOLOGY MOUNTPOINT   mount; returns once mounted
 *   mdev-sysfs-sim --ctl MOUNTPOINT COMMAND... send a control command
 *   mdev-sysfs-sim --counters MOUNTPOINT      print the access counters
 *   mdev-sysfs-sim --check TOPOLOGY           parse a topology and exit
 *
 * It reproduces drivers/vfio/mdev/ of Linux 6.1 (mdev_sysfs.c, mdev_core.c)
 * and samples/vfio-mdev/mtty.c: the layout and link targets, "create" and
 * "remove" with the kernel's errno values, available_instances, mtty's
 * shared pool of ports, NVIDIA's one-type-per-GPU rule and SR-IOV virtual
 * functions. Faults are injected through the hidden directory ".sim" at the
 * top of the mount (see tests/sim/README.md).
 *
 * The tree is kept in memory: every node sits in one hash table keyed by
 * (parent, name), so resolving a path costs one hash lookup per component.
 * One read-write lock guards the tree and the model; a "remove" that is
 * told to block sleeps without holding it.
 */
#include "sim.h"

static int client_ctl(const char *mountpoint, int argc, char **argv) {
        _cleanup_free_ char *path = xasprintf("%s/.sim/ctl", mountpoint);
        size_t len = 0;
        for (int i = 0; i < argc; i++)
                len += strlen(argv[i]) + 1;
        _cleanup_free_ char *cmd = xcalloc(1, len + 1);
        for (int i = 0; i < argc; i++) {
                strcat(cmd, argv[i]);
                strcat(cmd, i + 1 < argc ? " " : "\n");
        }
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0 || write(fd, cmd, strlen(cmd)) < 0) {
                fprintf(stderr, "mdev-sysfs-sim: %s: %s: %s\n", path, cmd, strerror(errno));
                return 1;
        }
        return 0;
}

static int client_cat(const char *mountpoint, const char *file) {
        _cleanup_free_ char *path = xasprintf("%s/.sim/%s", mountpoint, file);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        char buf[65536];
        ssize_t k;
        if (fd < 0) {
                fprintf(stderr, "mdev-sysfs-sim: %s: %s\n", path, strerror(errno));
                return 1;
        }
        while ((k = read(fd, buf, sizeof(buf))) > 0)
                if (fwrite(buf, 1, (size_t) k, stdout) != (size_t) k)
                        return 1;
        return k < 0 ? 1 : 0;
}

static void usage(FILE *f) {
        fputs("usage: mdev-sysfs-sim [-f] [-d] [-n | -c] TOPOLOGY MOUNTPOINT\n"
              "       mdev-sysfs-sim --ctl MOUNTPOINT COMMAND [ARGS...]\n"
              "       mdev-sysfs-sim --counters MOUNTPOINT\n"
              "       mdev-sysfs-sim --state MOUNTPOINT\n"
              "       mdev-sysfs-sim --check TOPOLOGY\n"
              "-f stays in the foreground, -d also prints FUSE debug output,\n"
              "-n lets the kernel cache nothing (by default it may cache the stable\n"
              "entries, and is told to forget each one that goes away),\n"
              "-c lets it cache the text of attribute files too and sends no open,\n"
              "like kernfs' cost (dropped on each change; opens and reads served\n"
              "from that cache are not counted).\n"
              "Commands: see tests/sim/README.md.\n",
              f);
}

/* The locks the FUSE threads and the timer share. */
static void locks_init(void) {
        pthread_rwlockattr_t rwa;
        pthread_condattr_t ca;

        pthread_rwlockattr_init(&rwa);
        /* 32 hooks read in parallel: do not let them starve a create */
        pthread_rwlockattr_setkind_np(&rwa, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
        pthread_rwlock_init(&model_lock, &rwa);
        pthread_rwlockattr_destroy(&rwa);
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&timers.cond, &ca);
        pthread_condattr_destroy(&ca);
}

/* Mounts the model at MOUNTPOINT and serves it until unmounted. */
static int serve(const char *argv0, const char *mountpoint, bool foreground, bool debug) {
        struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
        struct fuse_session *se;
        struct fuse_loop_config *lc;

        fuse_opt_add_arg(&args, argv0);
        fuse_opt_add_arg(&args, "-o");
        fuse_opt_add_arg(&args, geteuid() == 0 ? "fsname=mdev-sysfs-sim,subtype=mdev-sysfs-sim,allow_other"
                                               : "fsname=mdev-sysfs-sim,subtype=mdev-sysfs-sim");
        if (debug)
                fuse_opt_add_arg(&args, "-d");
        se = fuse_session_new(&args, &sim_ops, sizeof(sim_ops), NULL);
        fuse_opt_free_args(&args);
        if (!se)
                return 1;
        if (fuse_session_mount(se, mountpoint) != 0) {
                fuse_session_destroy(se);
                return 1;
        }
        /* The mount exists now; the parent returns once the child is set up. */
        if (fuse_daemonize(foreground) != 0) {
                fuse_session_unmount(se);
                fuse_session_destroy(se);
                return 1;
        }
        session = se;
        fuse_set_signal_handlers(se);
        lc = fuse_loop_cfg_create();
        fuse_loop_cfg_set_max_threads(lc, 256);
        fuse_loop_cfg_set_idle_threads(lc, 8);
        /* Ends on unmount (or on SIGTERM/SIGINT, e.g. when a copy of the
         * mount in another mount namespace keeps it alive). Either way the
         * simulator is done: its status is not an error. */
        (void) fuse_session_loop_mt(se, lc);
        fuse_loop_cfg_destroy(lc);
        timers_stop();
        session = NULL;
        fuse_remove_signal_handlers(se);
        fuse_session_unmount(se);
        fuse_session_destroy(se);
        return 0;
}

/* The client modes (--ctl, --counters, --state, --check, --help); -1 when
 * ARGV asks for none of them. */
static int client_main(int argc, char **argv) {
        if (argc >= 4 && streq(argv[1], "--ctl"))
                return client_ctl(argv[2], argc - 3, argv + 3);
        if (argc == 3 && streq(argv[1], "--counters"))
                return client_cat(argv[2], "counters");
        if (argc == 3 && streq(argv[1], "--state"))
                return client_cat(argv[2], "state");
        if (argc == 3 && streq(argv[1], "--check")) {
                int r = topo_load(argv[2]);
                if (r >= 0) {
                        topo_build();
                        printf("%s: %zu parents, %zu nodes\n", argv[2], model.n_parents, tree.count);
                }
                model_free();
                return r < 0 ? 2 : 0;
        }
        if (argc == 2 && (streq(argv[1], "--help") || streq(argv[1], "-h"))) {
                usage(stdout);
                return 0;
        }
        return -1;
}

int main(int argc, char **argv) {
        bool foreground = false, debug = false;
        int i = 1, r;

        r = client_main(argc, argv);
        if (r >= 0)
                return r;
        for (; i < argc && argv[i][0] == '-'; i++) {
                if (streq(argv[i], "-f"))
                        foreground = true;
                else if (streq(argv[i], "-d"))
                        foreground = debug = true;
                else if (streq(argv[i], "-n"))
                        stable_timeout = 0.0;
                else if (streq(argv[i], "-c"))
                        cache_content = true;
                else {
                        usage(stderr);
                        return 2;
                }
        }
        if (argc - i != 2 || (cache_content && stable_timeout == 0.0)) {
                usage(stderr);
                return 2;
        }
        const char *topology = argv[i];
        /* absolute: fuse_daemonize() changes to / and the unmount at exit
         * must still find the mount point */
        _cleanup_free_ char *mountpoint = realpath(argv[i + 1], NULL);
        if (!mountpoint) {
                fprintf(stderr, "mdev-sysfs-sim: mount point '%s': %s\n", argv[i + 1], strerror(errno));
                return 1;
        }

        locks_init();
        if (topo_load(topology) < 0) {
                model_free();
                return 2;
        }
        topo_build();

        clock_gettime(CLOCK_REALTIME, &start_time);
        /* The daemon outlives its caller: keep none of the caller's file
         * descriptors (bats waits for EOF on its fd 3). */
        if (!foreground)
                (void) close_range(3, ~0U, 0);

        r = serve(argv[0], mountpoint, foreground, debug);
        model_free();
        if (r == 0) {
                free(content_cache.v);
                pthread_rwlock_destroy(&model_lock);
                pthread_cond_destroy(&timers.cond);
        }
        return r;
}
