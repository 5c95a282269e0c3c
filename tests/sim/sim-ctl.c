/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mdev-sysfs-sim: the control commands (.sim/ctl) and the model as text
 * (.sim/state).
 */
#include "sim.h"

/* Splits a line into words; "key=value" words stay whole. */
static size_t split_words(char *line, char *words[MAX_WORDS]) {
        size_t n = 0;
        char *save = NULL;
        for (char *w = strtok_r(line, " \t\r\n", &save); w && n < MAX_WORDS; w = strtok_r(NULL, " \t\r\n", &save))
                words[n++] = w;
        return n;
}

/* Finds "key=value" among words[from..]; NULL if absent. */
const char *word_opt(char **words, size_t n, size_t from, const char *key) {
        size_t kl = strlen(key);
        for (size_t i = from; i < n; i++)
                if (strncmp(words[i], key, kl) == 0 && words[i][kl] == '=')
                        return words[i] + kl + 1;
        return NULL;
}

bool words_known(char **words, size_t n, size_t from, const char *const *keys) {
        for (size_t i = from; i < n; i++) {
                bool ok = false;
                for (const char *const *k = keys; *k; k++)
                        if (strncmp(words[i], *k, strlen(*k)) == 0 && words[i][strlen(*k)] == '=')
                                ok = true;
                if (!ok)
                        return false;
        }
        return true;
}

void set_str(char **dst, const char *src) {
        free(*dst);
        *dst = src ? xstrdup(src) : NULL;
}

/* "remove-block MS [uuid=U]", "remove-busy N [uuid=U]": a number and the
 * mdev it applies to (NULL: any). */
static int ctl_remove_fault(char **w, size_t n, unsigned *ret, char **ret_uuid) {
        static const char *const keys[] = { "uuid", NULL };
        unsigned u;
        if (n < 2 || parse_uint(w[1], &u) < 0 || !words_known(w, n, 2, keys))
                return -EINVAL;
        *ret = u;
        set_str(ret_uuid, word_opt(w, n, 2, "uuid"));
        return 0;
}

/* "vf-driver VF DRIVER": the VF is bound to DRIVER, as libvirt's
 * managed='yes' rebinds it (to vfio-pci for a guest, back to its driver
 * after). */
static int ctl_vf_driver(const char *name, const char *driver) {
        Vf *v = vf_find(name);
        Node *old = v && v->dev ? node_child(v->dev, "driver", strlen("driver")) : NULL;
        char *target;

        if (!old || !old->text || !strrchr(old->text, '/'))
                return -ENOENT;
        if (!driver[0] || strspn(driver, "abcdefghijklmnopqrstuvwxyz0123456789-_") != strlen(driver))
                return -EINVAL;
        target = xasprintf("%.*s%s", (int) (strrchr(old->text, '/') + 1 - old->text), old->text, driver);
        node_free(old);
        node_link(v->dev, "driver", target);
        return 0;
}

/* "vf-open VF", "vf-close VF": a guest (QEMU) opens or closes a VF of
 * the VFIO framework; "vf-driver VF DRIVER". -ENOTTY: not one of these. */
static int ctl_vf(char **w, size_t n) {
        if ((streq(w[0], "vf-open") || streq(w[0], "vf-close")) && n == 2) {
                Vf *v = vf_find(w[1]);
                if (!v)
                        return -ENOENT;
                v->open = streq(w[0], "vf-open");
                return 0;
        }
        if (streq(w[0], "vf-driver") && n == 3)
                return ctl_vf_driver(w[1], w[2]);
        return -ENOTTY;
}

static int ctl_one(char *line) {
        char *w[MAX_WORDS];
        size_t n = split_words(line, w);
        unsigned u;

        if (n == 0)
                return 0;
        int r = nvmode_ctl(w, n);
        if (r != -ENOTTY)
                return r;
        r = xe_ctl(w, n);
        if (r == -ENOTTY)
                r = ctl_vf(w, n);
        if (r != -ENOTTY)
                return r;
        if (streq(w[0], "create-fail")) {
                /* create-fail ERRNO [parent=P] [count=N] */
                static const char *const keys[] = { "parent", "count", NULL };
                const char *c = word_opt(w, n, 2, "count");
                int e = n >= 2 ? errno_from_name(w[1]) : 0;
                if (e == 0 || !words_known(w, n, 2, keys))
                        return -EINVAL;
                u = 1;
                if (c && parse_uint(c, &u) < 0)
                        return -EINVAL;
                fault.create_errno = e;
                fault.create_count = u;
                set_str(&fault.create_parent, word_opt(w, n, 2, "parent"));
                return 0;
        }
        /* remove-block MS [uuid=U]: every remove blocks MS ms; 0 ends it */
        if (streq(w[0], "remove-block"))
                return ctl_remove_fault(w, n, &fault.remove_block_ms, &fault.remove_block_uuid);
        /* remove-busy N [uuid=U]: the next N removes fail with EBUSY */
        if (streq(w[0], "remove-busy"))
                return ctl_remove_fault(w, n, &fault.remove_busy_count, &fault.remove_busy_uuid);
        if (streq(w[0], "unregister") && n == 2) {
                Parent *p = parent_find(w[1]);
                if (!p)
                        return -ENOENT;
                parent_unregister(p);
                return 0;
        }
        if (streq(w[0], "register") && (n == 2 || n == 3)) {
                static const char *const keys[] = { "after", NULL };
                const char *after = word_opt(w, n, 2, "after");
                Parent *p = parent_find(w[1]);
                if (!p)
                        return -ENOENT;
                if (!words_known(w, n, 2, keys))
                        return -EINVAL;
                if (after) {
                        if (parse_uint(after, &u) < 0)
                                return -EINVAL;
                        return timer_start(p->name, u);
                }
                parent_register(p);
                return 0;
        }
        if (streq(w[0], "counters-reset") && n == 1) {
                counters_reset();
                return 0;
        }
        if (streq(w[0], "faults-reset") && n == 1) {
                fault.create_count = 0;
                fault.remove_block_ms = 0;
                fault.remove_busy_count = 0;
                set_str(&fault.create_parent, NULL);
                set_str(&fault.remove_block_uuid, NULL);
                set_str(&fault.remove_busy_uuid, NULL);
                return 0;
        }
        return -EINVAL;
}

int ctl_write(const char *buf, size_t len) {
        _cleanup_free_ char *copy = xmalloc(len + 1);
        memcpy(copy, buf, len);
        copy[len] = 0;
        char *save = NULL;
        for (char *line = strtok_r(copy, "\n;", &save); line; line = strtok_r(NULL, "\n;", &save)) {
                int r = ctl_one(line);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* .sim/state: the model in a stable form, for tests and debugging. */
char *state_text(void) {
        char *buf;
        size_t size;
        FILE *f = xopen_memstream(&buf, &size);
        fprintf(f, "pid %ld\n", (long) getpid());
        fprintf(f, "mdevs %u\n", model.n_mdevs);
        for (size_t i = 0; i < model.n_parents; i++) {
                Parent *p = model.parents[i];
                fprintf(f, "parent %s %s used=%u", p->name, p->registered ? "registered" : "unregistered", p->used);
                if (p->pool)
                        fprintf(f, " pool=%u/%u", p->pool_used, p->pool);
                fputc('\n', f);
        }
        for (size_t i = 0; i < model.n_pfs; i++) {
                const Pf *pf = model.pfs[i];
                for (unsigned j = 0; pf->vfio && j < pf->num; j++) {
                        const Vf *v = pf->vvfs[j];
                        fprintf(f, "vf %s pf=%s type=%s open=%d\n", v->name, pf->name, v->cur ? v->cur->id : "0",
                                v->open);
                }
        }
        nvmode_state(f);
        fprintf(f, "fault create-fail count=%u errno=%d parent=%s\n", fault.create_count, fault.create_errno,
                strna(fault.create_parent));
        fprintf(f, "fault remove-block ms=%u uuid=%s\n", fault.remove_block_ms, strna(fault.remove_block_uuid));
        fprintf(f, "fault remove-busy count=%u uuid=%s\n", fault.remove_busy_count, strna(fault.remove_busy_uuid));
        fclose(f);
        return buf;
}
