/* redis_load: GET, SET or PING through the pooled client at a given
 * concurrency and count, over TCP, a Unix socket or TLS, then one line of
 * figures: requests per second, p50 and p99 latency, connections opened.
 *
 *   redis_load [--host H] [--port P] [--unix PATH] [--tls --cacert FILE
 *              [--name NAME]] [--user U] [--password-file FILE] [--db N]
 *              [-c CONC] [-n COUNT] [-t get|set|ping] [-d BYTES]
 *              [--warmup N] [--seconds S] [--reconnect] [--csv]
 *              [--streams K [--conns N] [--spread] [--preconnect PCT]]
 *
 * --streams K shares connections: K commands in flight on each, on at
 * most N connections (preset CONC), what the callers issue in one pass
 * written together (demos/redis/redis.h, "Shared connections"); packed
 * onto the fewest connections, or spread over them. The CSV line ends
 * with the connections made in all, the warm-up's included.
 * --preconnect PCT opens the next connection (up to N) once the commands
 * in flight reach PCT percent of the live connections' room (live x K):
 * with --spread, the callers then share all N rather than queue on the
 * first, which is what throughput on a few connections wants (K 64, N 4,
 * PCT 20 puts 50 callers on 4 connections of about 13).
 *
 * AUTH and SELECT run on every new connection, through the client's own
 * setup: the password is the first line of --password-file, or else
 * REDIS_PASSWORD from the environment, never a word on the command line,
 * which every user of the machine can read (ps, /proc/PID/cmdline) and
 * shells keep in their history; --user names an ACL user (Redis 6) and
 * needs a password; --db N SELECTs database N.
 *
 * Bounded: COUNT requests after a warm-up of N (not measured: the pool
 * fills during it), and never longer than S seconds (preset 60) in all.
 * --reconnect retires each connection after one request: the cost of a
 * new connection per request, for comparison. Exit 0 when every measured
 * request got a reply that was not an error, 1 otherwise, 2 for bad usage.
 * A run that cannot succeed stops at once with the cause rather than
 * waiting out S (demos/load.h): nothing listens at the port or on the
 * socket, the socket's path is not there or is no socket, the server does
 * not speak Redis, or it refuses the session itself (a wrong password or
 * user, a database that does not exist); any other failure once it
 * repeats. --help says what each option does, on stdout, and exits 0. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <hiredis/hiredis.h>
#include <openssl/err.h>

#include "load.h"
#include "redis.h"

/* What a request is: the command and its value, its words and their
 * lengths worked out once rather than for every request (they count in
 * the client's CPU per command that the benches report). */
struct load {
    struct tide_redis_client *client;
    char *value;
    size_t value_len;
    int argc;
    const char *argv[3];
    size_t argvlen[3];
};

/* A setup refused for a reason no retry changes, in Redis's words: the
 * credentials or the database. maxclients is not one: room comes back. */
static bool refused_for_good(int status, const char *message)
{
    static const char *const words[] = {"WRONGPASS",
                                        "NOAUTH",
                                        "NOPERM",
                                        "DB index is out of range",
                                        "without any password configured",
                                        NULL};
    if (status != TIDE_ESETUP || !message)
        return false;
    for (size_t i = 0; words[i]; i++)
        if (strstr(message, words[i]))
            return true;
    return false;
}

static void on_reply(struct tide_redis_client *c, int status,
                     const struct redisReply *reply, const char *message,
                     void *arg)
{
    (void)c;
    tide_demo_load_answered(arg, status == 0 && reply, message, status);
}

/* What no retry changes, in Redis's terms (see load.h). */
static const char *hopeless(int status, const char *message, void *arg)
{
    (void)arg;
    if (status == TIDE_REDIS_EPROTOCOL)
        return "the server does not speak Redis";
    if (refused_for_good(status, message))
        return "the server refuses the session";
    return NULL;
}

static int send_one(struct tide_demo_req *r, void *arg)
{
    struct load *l = arg;
    return tide_redis_command(l->client, l->argc, l->argv, l->argvlen, on_reply,
                              r);
}

static uint64_t made(void *arg)
{
    struct load *l = arg;
    struct tide_redis_stats s;
    tide_redis_client_stats(l->client, &s);
    return s.net.made;
}

static struct tide_evpool *pool(void *arg)
{
    struct load *l = arg;
    return tide_redis_client_pool(l->client);
}

static const struct tide_demo_load_ops load_ops = {
    .send = send_one,
    .strerror = tide_redis_strerror,
    .err_name = tide_redis_err_name,
    .made = made,
    .pool = pool,
    .hopeless = hopeless,
};

static void usage_to(FILE *f)
{
    fprintf(f, "usage: redis_load [--host H] [--port P] [--unix PATH] [--tls "
               "--cacert FILE [--name NAME]]\n"
               "                  [--user U] [--password-file FILE] [--db N] "
               "(password also from REDIS_PASSWORD)\n"
               "                  [-c CONC] [-n COUNT] [-t get|set|ping] [-d "
               "BYTES] [--warmup N]\n"
               "                  [--seconds S] [--reconnect] [--csv]\n"
               "                  [--streams K [--conns N] [--spread] "
               "[--preconnect PCT]]\n");
}

static int usage(void)
{
    usage_to(stderr);
    return 2;
}

/* --help: what each option does, for a person who asked (stdout, exit 0). */
static int help(void)
{
    usage_to(stdout);
    printf(
        "\n"
        "Sends COUNT requests through the pooled client, CONC at a time, and\n"
        "prints one line: requests/s, p50 and p99 latency, connections "
        "opened.\n"
        "  --host H, --port P   the server (preset 127.0.0.1 6379)\n"
        "  --unix PATH          its Unix socket instead\n"
        "  --tls --cacert FILE  TLS, trusting the CA certificates in FILE "
        "(PEM);\n"
        "  --name NAME          the name the certificate must carry (preset: "
        "the host)\n"
        "  --user U             AUTH as ACL user U (needs a password)\n"
        "  --password-file FILE AUTH with the first line of FILE (else "
        "REDIS_PASSWORD)\n"
        "  --db N               SELECT N on each new connection\n"
        "  -c CONC              requests in flight and pool size (preset "
        "10)\n"
        "  -n COUNT             measured requests (preset 20000)\n"
        "  -t get|set|ping      the command (preset get)\n"
        "  -d BYTES             the value's size for set (preset 3)\n"
        "  --warmup N           requests before measuring (preset 10 x "
        "CONC)\n"
        "  --seconds S          the whole run at most S seconds (preset 60)\n"
        "  --reconnect          a new connection for every request\n"
        "  --streams K          commands in flight on one connection: "
        "shared\n"
        "                       connections, auto-pipelined (preset 1: a\n"
        "                       connection per command)\n"
        "  --conns N            connections at most (preset CONC)\n"
        "  --spread             spread commands over the connections "
        "(preset: pack)\n"
        "  --preconnect PCT     open the next connection when commands in "
        "flight\n"
        "                       reach PCT%% of the open connections' room "
        "(preset 0:\n"
        "                       only when none has room); with --spread, "
        "for\n"
        "                       throughput: --streams 64 --conns 4 --spread\n"
        "                       --preconnect 20 puts 50 callers on 4 "
        "connections\n"
        "  --csv                the figures as one CSV line\n"
        "A run that cannot succeed stops at once with the cause: nothing "
        "listens,\n"
        "no socket at --unix PATH, a server that is not Redis or refuses "
        "the\n"
        "session; any other failure once every request failed twice in a "
        "row.\n"
        "Exit 0 when every measured request got a reply that was not an "
        "error,\n"
        "1 otherwise, 2 for bad usage.\n");
    return 0;
}

/* Why a TLS context would not build: a CA file that cannot be read is
 * said with the system's words; otherwise OpenSSL's first reason (a file
 * that is no PEM). */
static void say_tls_config(const char *cacert)
{
    FILE *f = fopen(cacert, "r");
    if (!f) {
        fprintf(stderr, "redis_load: --cacert %s: %s\n", cacert,
                strerror(errno));
        ERR_clear_error();
        return;
    }
    fclose(f);
    unsigned long e = ERR_get_error();
    const char *reason = e ? ERR_reason_error_string(e) : NULL;
    fprintf(stderr, "redis_load: --cacert %s: %s\n", cacert,
            reason ? reason : "no CA certificate could be read from it");
    ERR_clear_error();
}

/* The first line of path (its line end dropped) into buf; false, said on
 * stderr, when it cannot be read or is empty. */
static bool read_password(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "redis_load: --password-file %s: %s\n", path,
                strerror(errno));
        return false;
    }
    bool got = fgets(buf, (int)len, f) != NULL;
    fclose(f);
    if (got)
        buf[strcspn(buf, "\r\n")] = '\0';
    if (!got || !buf[0]) {
        fprintf(stderr, "redis_load: --password-file %s: no password in it\n",
                path);
        return false;
    }
    return true;
}

/* Runs the load once the options are read; the exit code. Everything it
 * makes it frees on every path, so that a run that stops early (a
 * certificate file that is not there) leaves nothing behind either. */
/* How commands share connections: --streams, --conns, --spread. */
struct sharing {
    int streams;
    int conns; /* 0: CONC */
    bool spread;
    int preconnect; /* percent; 0: off */
};

static int run_load(const struct tide_demo_load_args *a, const char *path,
                    const char *upper, bool tls, bool reconnect,
                    const char *user, const char *password, int db,
                    const struct sharing *sh)
{
    int exit_code = 1;
    struct tide_demo_load run = {0};
    struct load l = {.value_len = (size_t)a->size};
    l.value = malloc(l.value_len + 1);
    if (!l.value) {
        fprintf(stderr,
                "redis_load: out of memory (for a value of %ld bytes)\n",
                a->size);
        goto out;
    }
    if (!tide_demo_load_init(&run, "redis_load", a->warmup, a->count))
        goto out;
    run.path = path;
    memset(l.value, 'x', l.value_len);
    l.argc = strcmp(upper, "SET") == 0 ? 3 : strcmp(upper, "GET") == 0 ? 2 : 1;
    l.argv[0] = upper;
    l.argv[1] = "tidepool:load";
    l.argv[2] = l.value;
    l.argvlen[0] = strlen(upper);
    l.argvlen[1] = strlen(l.argv[1]);
    l.argvlen[2] = l.value_len;

    /* over a Unix socket the certificate is checked against the server's
     * name on the loopback address, as there is no host */
    struct tide_tls_options to = {.ca_file = a->cacert,
                                  .verify_name = a->name ? a->name
                                                 : path  ? "127.0.0.1"
                                                         : NULL};
    struct tide_redis_options o = {
        .tcp = {.host = path ? NULL : a->host, .port = path ? 0 : a->port},
        .tls = tls ? &to : NULL,
        .pool = {.limits =
                     TIDE_LIMITS(.size = sh->conns ? sh->conns : a->conc,
                                 .streams = sh->streams,
                                 .sharing = sh->spread ? TIDE_SHARING_SPREAD
                                                       : TIDE_SHARING_PACK,
                                 .preconnect = sh->preconnect / 100.0),
                 .retire_after = reconnect ? 1 : 0},
        .user = user,
        .password = password,
        .db = db,
        .timeout = TIDE_SEC(10),
    };
    o.tcp.path = path;
    int rc = tide_redis_client_new(run.base, &o, &l.client);
    if (rc != 0) {
        fprintf(stderr, "redis_load: %s (%s)\n", tide_redis_strerror(rc),
                tide_redis_err_name(rc));
        if (rc == TIDE_ETLS_CONFIG && a->cacert)
            say_tls_config(a->cacert);
        goto out;
    }
    if (tide_demo_load_run(&run, &load_ops, &l, a->conc, a->seconds) != 0) {
        fprintf(stderr, "redis_load: out of memory\n");
        goto out;
    }

    struct tide_redis_stats s;
    tide_redis_client_stats(l.client, &s);
    struct tide_demo_load_figures f = tide_demo_load_figures(&run, s.net.made);
    const char *over = path ? "unix" : tls ? "tls" : "tcp";
    if (a->csv)
        printf("%s,%s,%d,%ld,%.0f,%.1f,%.1f,%llu,%.3f,%llu,%ld,%llu\n", over,
               upper, a->conc, f.n, f.rate, f.p50 / 1e3, f.p99 / 1e3,
               (unsigned long long)f.opened, f.per_k,
               (unsigned long long)s.net.resumed, run.errors,
               (unsigned long long)s.net.made);
    else
        printf("%s %s c%d: %ld requests, %.0f requests/s, p50 %.1f us, p99 "
               "%.1f us, %llu connections opened (%.3f per 1,000 requests), "
               "%llu TLS resumed, %ld errors\n",
               over, upper, a->conc, f.n, f.rate, f.p50 / 1e3, f.p99 / 1e3,
               (unsigned long long)f.opened, f.per_k,
               (unsigned long long)s.net.resumed, run.errors);
    exit_code = tide_demo_load_ok(&run) ? 0 : 1;
out:
    /* the client before the base it runs on */
    tide_redis_client_free(l.client);
    tide_demo_load_dispose(&run);
    free(l.value);
    return exit_code;
}

int main(int argc, char **argv)
{
    struct tide_demo_load_args a = {.host = "127.0.0.1",
                                    .port = 6379,
                                    .conc = 10,
                                    .count = 20000,
                                    .size = 3,
                                    .warmup = -1,
                                    .seconds = 60};
    const char *path = NULL, *op = "get", *user = NULL, *password_file = NULL;
    bool tls = false, reconnect = false;
    int db = 0;
    struct sharing sh = {.streams = 1};
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0)
            return help();
    const struct tide_demo_opt own[] = {
        {.name = "--unix", .s = &path},
        {.name = "--tls", .flag = &tls},
        {.name = "-t", .s = &op},
        {.name = "--reconnect", .flag = &reconnect},
        {.name = "--user", .s = &user},
        {.name = "--password-file", .s = &password_file},
        {.name = "--db", .i = &db, .min = 0, .max = INT32_MAX},
        {.name = "--streams",
         .i = &sh.streams,
         .min = 1,
         .max = TIDE_STREAMS_MAX},
        {.name = "--conns", .i = &sh.conns, .min = 1, .max = INT32_MAX},
        {.name = "--spread", .flag = &sh.spread},
        {.name = "--preconnect", .i = &sh.preconnect, .min = 0, .max = 100},
    };
    if (!tide_demo_load_args_read(&a, "redis_load", own,
                                  sizeof own / sizeof own[0], argc, argv))
        return usage();
    if (tls && !a.cacert) {
        fprintf(stderr, "redis_load: --tls needs --cacert FILE\n");
        return usage();
    }
    if (a.warmup < 0)
        a.warmup = reconnect ? 0 : 10L * a.conc;
    const char *ops[] = {"GET", "SET", "PING"};
    const char *upper = NULL;
    for (size_t i = 0; i < 3; i++)
        if (strcasecmp(op, ops[i]) == 0)
            upper = ops[i];
    if (!upper) {
        fprintf(stderr, "redis_load: -t: '%s' is not get, set or ping\n", op);
        return usage();
    }
    char file_password[512];
    const char *password = getenv("REDIS_PASSWORD");
    if (password_file) {
        if (!read_password(password_file, file_password, sizeof file_password))
            return 2;
        password = file_password;
    }
    if (password && !password[0])
        password = NULL;
    if (user && !password) {
        fprintf(stderr, "redis_load: --user needs a password (--password-file "
                        "or REDIS_PASSWORD)\n");
        return usage();
    }
    signal(SIGPIPE, SIG_IGN);
    return run_load(&a, path, upper, tls, reconnect, user, password, db, &sh);
}
