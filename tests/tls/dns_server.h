/* A DNS server in the test process, on 127.0.0.1 (libevent's own evdns
 * server API), and a resolver pointed at it and nowhere else: no test sends
 * a query to the machine's configured resolver. */
#ifndef TIDEPOOL_TEST_TLS_DNS_SERVER_H
#define TIDEPOOL_TEST_TLS_DNS_SERVER_H

#include <event2/dns.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>

enum dns_mode {
    DNS_ANSWER = 0, /* answer from the records; NXDOMAIN for others */
    DNS_REFUSE,     /* answer REFUSED to everything */
    DNS_SILENT,     /* never answer */
};

#define DNS_RECORDS 8
#define DNS_HELD    8

struct dns_record {
    char name[64];
    int family;
    union {
        struct in_addr v4;
        struct in6_addr v6;
    } addr;
};

struct dns_server {
    struct event_base *base;
    struct evdns_server_port *port;
    uint16_t portnum;
    enum dns_mode mode;
    struct dns_record records[DNS_RECORDS];
    int n_records;
    int aaaa_delay_ms; /* hold AAAA answers this long (0: at once) */
    int queries;
    int queries_a;
    int queries_aaaa;
    struct evdns_server_request *held[DNS_HELD];
    struct event *held_timer[DNS_HELD];
};

bool dns_server_start(struct dns_server *s, struct event_base *base);
/* name -> ip (an IPv4 or IPv6 literal); several per name are allowed */
void dns_server_add(struct dns_server *s, const char *name, const char *ip);
void dns_server_stop(struct dns_server *s);

/* A resolver that asks only s; `timeout` is evdns's per-try timeout in
 * seconds ("5", "0.2"), one try, no search domains, and it does not keep
 * the loop alive while idle. */
struct evdns_base *dns_resolver(struct event_base *base,
                                const struct dns_server *s,
                                const char *timeout);

#endif
