/* tls/hosts.c: names from a hosts file, for a factory that builds its own
 * resolver. The parser runs on files the test writes; the factory test uses
 * the machine's /etc/hosts only for a name it lists as 127.0.0.1, so no DNS
 * question is ever sent. */
#include <arpa/inet.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixture.h"
#include "net_internal.h"

static char path[PATH_MAX];

static void write_hosts(const char *text)
{
    const char *dir = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/tidepool-hosts-XXXXXX",
             dir && *dir ? dir : "/tmp");
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
}

static const char *ip_of(const struct tide__net_addr *a)
{
    static char buf[INET6_ADDRSTRLEN];
    if (a->u.sa.sa_family == AF_INET6)
        inet_ntop(AF_INET6, &a->u.in6.sin6_addr, buf, sizeof buf);
    else
        inet_ntop(AF_INET, &a->u.in.sin_addr, buf, sizeof buf);
    return buf;
}

static const char sample[] = "# a comment line\n"
                             "127.0.0.1   localhost box\n"
                             "::1         localhost ip6-localhost\n"
                             "10.0.0.5\tdb.internal db   # trailing comment\n"
                             "fe80::1%eth0  scoped\n"
                             "not-an-address  bogus\n"
                             "192.0.2.7   DB.Internal\n";

START_TEST(listed_name_gives_its_addresses_in_order)
{
    write_hosts(sample);
    struct tide__net_addr a[8];
    ck_assert_int_eq(tide__net_hosts_lookup(path, "db", 80, AF_UNSPEC, a, 8),
                     1);
    ck_assert_str_eq(ip_of(&a[0]), "10.0.0.5");
    ck_assert_int_eq(ntohs(a[0].u.in.sin_port), 80);
    /* case and a trailing dot do not matter; every line counts */
    ck_assert_int_eq(
        tide__net_hosts_lookup(path, "db.internal.", 443, AF_UNSPEC, a, 8), 2);
    ck_assert_str_eq(ip_of(&a[0]), "10.0.0.5");
    ck_assert_str_eq(ip_of(&a[1]), "192.0.2.7");
    ck_assert_int_eq(
        tide__net_hosts_lookup(path, "localhost", 1, AF_UNSPEC, a, 8), 2);
    unlink(path);
}
END_TEST

START_TEST(family_and_max_are_respected)
{
    write_hosts(sample);
    struct tide__net_addr a[8];
    ck_assert_int_eq(
        tide__net_hosts_lookup(path, "localhost", 1, AF_INET6, a, 8), 1);
    ck_assert_str_eq(ip_of(&a[0]), "::1");
    ck_assert_int_eq(
        tide__net_hosts_lookup(path, "localhost", 1, AF_INET, a, 8), 1);
    ck_assert_str_eq(ip_of(&a[0]), "127.0.0.1");
    ck_assert_int_eq(
        tide__net_hosts_lookup(path, "db.internal", 1, AF_UNSPEC, a, 1), 1);
    unlink(path);
}
END_TEST

START_TEST(unlisted_names_and_odd_lines_give_nothing)
{
    write_hosts(sample);
    struct tide__net_addr a[8];
    ck_assert_int_eq(tide__net_hosts_lookup(path, "nowhere", 1, 0, a, 8), 0);
    ck_assert_int_eq(tide__net_hosts_lookup(path, "scoped", 1, 0, a, 8), 0);
    ck_assert_int_eq(tide__net_hosts_lookup(path, "bogus", 1, 0, a, 8), 0);
    ck_assert_int_eq(tide__net_hosts_lookup(path, "comment", 1, 0, a, 8), 0);
    ck_assert_int_eq(tide__net_hosts_lookup(path, "d", 1, 0, a, 8), 0);
    unlink(path);
    ck_assert_int_eq(tide__net_hosts_lookup(path, "db", 1, 0, a, 8), 0);
}
END_TEST

/* A name /etc/hosts lists as 127.0.0.1 only, other than localhost. */
static bool loopback_name(char *out, size_t len)
{
    FILE *f = fopen("/etc/hosts", "r");
    if (!f)
        return false;
    char line[512];
    bool found = false;
    while (!found && fgets(line, sizeof line, f)) {
        char *save = NULL;
        char *addr = strtok_r(line, " \t\r\n", &save);
        if (!addr || strcmp(addr, "127.0.0.1") != 0)
            continue;
        for (char *name; !found && (name = strtok_r(NULL, " \t\r\n#", &save));)
            if (strcmp(name, "localhost") != 0 && strchr(name, '#') == NULL) {
                struct tide__net_addr a[8];
                /* listed with no other address anywhere in the file */
                if (tide__net_hosts_lookup("/etc/hosts", name, 1, 0, a, 8) ==
                        1 &&
                    strcmp(ip_of(&a[0]), "127.0.0.1") == 0) {
                    snprintf(out, len, "%s", name);
                    found = true;
                }
            }
    }
    fclose(f);
    return found;
}

START_TEST(factory_with_its_own_resolver_uses_the_hosts_file)
{
    char name[256];
    if (!loopback_name(name, sizeof name))
        return; /* nothing suitable here: never ask real DNS */
    struct test_server s;
    ck_assert(server_start(&s, fx->base, AF_INET, 0, NULL));
    struct tide_tcp_options o = {.host = name, .port = s.port};
    struct tide_tcp_factory *f;
    ck_assert_int_eq(tide_tcp_factory_new(fx->base, &o, &f), 0);
    struct tide_factory table;
    tide_tcp_factory_bind(f, &table);
    struct test_pool tp;
    pool_start(&tp, &table, 0);
    struct got g;
    acquire_wait(&tp, &g, 5000);
    ck_assert_int_eq(g.status, 0);
    ck_assert_str_eq(echo(g.bev, "hosts", 2000), "hosts");
    ck_assert_int_eq(tide_evpool_release(tp.pool, g.bev), 0);
    pool_stop(&tp);
    tide_tcp_factory_free(f);
    server_stop(&s);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("hosts");
    TCase *tc = tcase_create("hosts");
    fixture_add(tc);
    tcase_add_test(tc, listed_name_gives_its_addresses_in_order);
    tcase_add_test(tc, family_and_max_are_respected);
    tcase_add_test(tc, unlisted_names_and_odd_lines_give_nothing);
    tcase_add_test(tc, factory_with_its_own_resolver_uses_the_hosts_file);
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(suite)
