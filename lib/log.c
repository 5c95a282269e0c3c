/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdarg.h>
#include <strings.h>

#include "log.h"
#include "util.h"

static int log_level = LOG_NOTICE;
static unsigned log_targets = LOG_TARGET_STDERR;
static bool log_syslog_opened;
static char log_subject[GUEST_NAME_MAX];

typedef struct LogHeld {
        int level;
        char *text;
} LogHeld;

static bool log_holding;
static LogHeld *log_held;
static size_t log_n_held;

static int log_level_from_string(const char *s) {
        static const struct {
                const char *name;
                int level;
        } table[] = {
                { "err", LOG_ERR },     { "error", LOG_ERR },   { "warning", LOG_WARNING },
                { "notice", LOG_NOTICE }, { "info", LOG_INFO }, { "debug", LOG_DEBUG },
        };
        unsigned u;

        if (safe_atou(s, &u) >= 0 && u <= LOG_DEBUG)
                return (int) u;
        for (size_t i = 0; i < ELEMENTSOF(table); i++)
                if (strcasecmp(s, table[i].name) == 0)
                        return table[i].level;
        return -EINVAL;
}

void log_open(const char *ident, unsigned targets) {
        const char *e = getenv("MDEV_HOOKS_LOG_LEVEL");

        log_targets = targets;
        if (e && *e) {
                int l = log_level_from_string(e);
                if (l >= 0)
                        log_level = l;
        }
        if (targets & LOG_TARGET_SYSLOG) {
                /* No LOG_NDELAY: the socket is opened on the first message,
                 * so a run that logs nothing costs nothing. */
                openlog(ident, LOG_PID, LOG_DAEMON);
                log_syslog_opened = true;
        }
}

void log_close(void) {
        log_release(); /* nothing held is lost */
        if (log_syslog_opened)
                closelog();
        log_syslog_opened = false;
}

void log_set_level(int level) {
        log_level = level;
}

int log_get_level(void) {
        return log_level;
}

void log_set_subject(const char *subject) {
        if (!subject)
                log_subject[0] = '\0';
        else
                snprintf(log_subject, sizeof log_subject, "%s", subject);
}

static void log_write(int level, const char *buf) {
        if ((log_targets & LOG_TARGET_STDERR) && level <= log_level) {
                if (log_subject[0])
                        fprintf(stderr, "mdev-hooks: %s: %s\n", log_subject, buf);
                else
                        fprintf(stderr, "mdev-hooks: %s\n", buf);
        }
        if ((log_targets & LOG_TARGET_SYSLOG) && (level <= LOG_WARNING || level <= log_level)) {
                if (log_subject[0])
                        syslog(level, "%s: %s", log_subject, buf);
                else
                        syslog(level, "%s", buf);
        }
}

static bool log_keep(int level, const char *buf) {
        LogHeld *h = realloc(log_held, (log_n_held + 1) * sizeof *h);
        char *text = strdup(buf);

        if (h)
                log_held = h;
        if (!h || !text) {
                free(text);
                return false;
        }
        log_held[log_n_held++] = (LogHeld) { .level = level, .text = text };
        return true;
}

void log_msg(int level, const char *fmt, ...) {
        char buf[2048];
        va_list ap;
        int saved = errno;

        va_start(ap, fmt);
        vsnprintf(buf, sizeof buf, fmt, ap);
        va_end(ap);
        if (!log_holding || !log_keep(level, buf))
                log_write(level, buf);
        errno = saved;
}

void log_hold(void) {
        log_holding = true;
}

void log_release(void) {
        int saved = errno;

        log_holding = false;
        for (size_t i = 0; i < log_n_held; i++) {
                log_write(log_held[i].level, log_held[i].text);
                free(log_held[i].text);
        }
        free(log_held);
        log_held = NULL;
        log_n_held = 0;
        errno = saved;
}
