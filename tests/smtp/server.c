#include "server.h"
#include "loop.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/pem.h>

#ifndef SMTPD_PY
#error "SMTPD_PY: the path of tests/smtp/smtpd.py"
#endif

#define PYTHON "/usr/bin/python3" /* Debian's: the one aiosmtpd is for */

bool smtp_server_installed(void)
{
    const char *argv[] = {PYTHON, "-c", "import aiosmtpd.smtp", NULL};
    return access(PYTHON, X_OK) == 0 && tide_test_child_succeeds(argv, 30000);
}

static int count_lines(const char *path, const char *word)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char line[256];
    int n = 0;
    size_t w = strlen(word);
    while (fgets(line, sizeof line, f))
        if (strncmp(line, word, w) == 0 && (line[w] == '\n' || line[w] == ' '))
            n++;
    fclose(f);
    return n;
}

/* Ready: a READY line more in the record than the starts before this one
 * (a connection made to see whether it listens would be recorded as a
 * session). */
static bool listens(void *arg)
{
    struct smtp_server *s = arg;
    if (count_lines(s->record, "READY") <= s->starts)
        return false;
    s->starts++;
    return true;
}

static bool spawn(void *arg)
{
    struct smtp_server *s = arg;
    char port[16], timeout[32], delay[32], drop[16];
    snprintf(port, sizeof port, "%d", s->port);
    snprintf(timeout, sizeof timeout, "%.3f",
             s->o.timeout_ms ? s->o.timeout_ms / 1000.0 : 300.0);
    snprintf(delay, sizeof delay, "%.3f", s->o.delay_ms / 1000.0);
    const char *argv[32] = {PYTHON,  "-u",       SMTPD_PY,  "--port",
                            port,    "--record", s->record, "--timeout",
                            timeout, "--delay",  delay};
    int n = 11;
    if (s->tls) {
        argv[n++] = "--tlscert";
        argv[n++] = s->cert_path;
        argv[n++] = "--tlskey";
        argv[n++] = s->key_path;
    }
    if (s->o.require_starttls)
        argv[n++] = "--require-starttls";
    if (s->o.auth) {
        argv[n++] = "--auth";
        argv[n++] = s->o.auth;
    }
    if (s->o.refuse) {
        argv[n++] = "--refuse";
        argv[n++] = s->o.refuse;
    }
    if (s->o.greet421)
        argv[n++] = "--greet421";
    if (s->o.drop_mail) {
        snprintf(drop, sizeof drop, "%d", s->o.drop_mail);
        argv[n++] = "--drop-mail";
        argv[n++] = drop;
    }
    if (s->o.drop_421)
        argv[n++] = "--drop-421";
    argv[n] = NULL;
    return tide_test_child_spawn(&s->child, argv) &&
           tide_test_child_wait(&s->child, listens, s, 10000);
}

static bool write_pem(const char *path, X509 *cert, EVP_PKEY *key)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return false;
    bool ok =
        cert ? PEM_write_X509(f, cert) == 1
             : PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL) == 1;
    return fclose(f) == 0 && ok;
}

bool smtp_server_start(struct smtp_server *s, const struct smtp_server_opts *o)
{
    memset(s, 0, sizeof *s);
    s->o = *o;
    if (!tide_test_child_mkdir(&s->child, "smtp"))
        return false;
    snprintf(s->record, sizeof s->record, "%s/record", s->child.dir);
    snprintf(s->cert_path, sizeof s->cert_path, "%s/cert.pem", s->child.dir);
    snprintf(s->key_path, sizeof s->key_path, "%s/key.pem", s->child.dir);
    if (o->cert && (!write_pem(s->cert_path, o->cert, NULL) ||
                    !write_pem(s->key_path, NULL, o->key)))
        return false;
    s->tls = o->cert != NULL;
    s->o.cert = NULL;
    s->o.key = NULL;
    /* aiosmtpd picks no port itself: a free one, and a retry when it was taken
     * in between (98) */
    for (int attempt = 0; attempt < 5; attempt++) {
        s->port = tide_test_free_port();
        if (s->port && spawn(s))
            return true;
    }
    return false;
}

void smtp_server_stop(struct smtp_server *s)
{
    tide_test_child_stop(&s->child, SIGTERM, 5000);
}

void smtp_server_kill(struct smtp_server *s)
{
    tide_test_child_stop(&s->child, SIGKILL, 5000);
}

bool smtp_server_restart(struct smtp_server *s)
{
    return tide_test_child_restart(&s->child, spawn, s);
}

void smtp_server_dispose(struct smtp_server *s)
{
    tide_test_child_dispose(&s->child);
}

static char *unhex(const char *hex, size_t *len)
{
    size_t n = strcmp(hex, "-") == 0 ? 0 : strlen(hex) / 2;
    char *out = malloc(n + 1);
    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        if (sscanf(hex + 2 * i, "%2x", &v) != 1) {
            free(out);
            return NULL;
        }
        out[i] = (char)v;
    }
    out[n] = '\0';
    *len = n;
    return out;
}

bool smtp_record_read(const struct smtp_server *s, struct smtp_record *r)
{
    memset(r, 0, sizeof *r);
    FILE *f = fopen(s->record, "r");
    if (!f)
        return false;
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    int room = 0;
    while ((got = getline(&line, &cap, f)) > 0) {
        if (line[got - 1] == '\n')
            line[got - 1] = '\0';
        if (strcmp(line, "READY") == 0) {
            /* a restart: the sessions of the one before ended with it */
            r->conns = r->gone = 0;
        } else if (strcmp(line, "CONN") == 0) {
            r->conns++;
        } else if (strcmp(line, "GONE") == 0) {
            r->gone++;
        } else if (strcmp(line, "DROP") == 0) {
            r->drops++;
        } else if (strncmp(line, "AUTH ok ", 8) == 0) {
            r->auth_ok++;
        } else if (strncmp(line, "AUTH bad ", 9) == 0) {
            r->auth_bad++;
        } else if (strncmp(line, "MSG ", 4) == 0) {
            if (r->n == room) {
                room = room ? 2 * room : 64;
                r->msgs = realloc(r->msgs, (size_t)room * sizeof *r->msgs);
                if (!r->msgs)
                    break;
            }
            struct smtp_message *m = &r->msgs[r->n];
            memset(m, 0, sizeof *m);
            char *save = NULL;
            strtok_r(line, " ", &save);
            const char *id = strtok_r(NULL, " ", &save);
            const char *rcpts = strtok_r(NULL, " ", &save);
            const char *hex = strtok_r(NULL, " ", &save);
            if (!id || !rcpts || !hex)
                continue;
            snprintf(m->id, sizeof m->id, "%s", id);
            snprintf(m->rcpts, sizeof m->rcpts, "%s", rcpts);
            m->content = unhex(hex, &m->len);
            if (m->content)
                r->n++;
        }
    }
    free(line);
    fclose(f);
    return true;
}

void smtp_record_free(struct smtp_record *r)
{
    for (int i = 0; i < r->n; i++)
        free(r->msgs[i].content);
    free(r->msgs);
    memset(r, 0, sizeof *r);
}

int smtp_record_count(const struct smtp_record *r, const char *id)
{
    int n = 0;
    for (int i = 0; i < r->n; i++)
        if (strcmp(r->msgs[i].id, id) == 0)
            n++;
    return n;
}
