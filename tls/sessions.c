/* The TLS session cache: per upstream (the key), a short stack of sessions,
 * newest on top.
 *
 * OpenSSL's own client cache is not used (SSL_SESS_CACHE_NO_INTERNAL_STORE):
 * it is keyed by session id, not by upstream, and it would hand the same TLS
 * 1.3 ticket out twice. TLS 1.3 tickets are single use (RFC 8446 C.4: reuse
 * lets a path observer link connections, and OpenSSL 3 servers refuse a
 * ticket seen before), so a ticket is taken out when it is offered; a server
 * sends fresh ones after every handshake. A TLS 1.2 session may be resumed
 * any number of times, so it stays. Sessions that are no longer resumable
 * (expired, or spoiled by a connection that died uncleanly) are dropped when
 * met. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tls_internal.h"

#define PER_KEY    8
#define PRESET_MAX 64

struct entry {
    struct entry *next;
    char *key;
    SSL_SESSION *stack[PER_KEY]; /* [0] oldest */
    int n;
};

struct tide_tls_sessions {
    struct entry *head; /* most recently used first */
    size_t max;
    size_t count;
};

int tide_tls_sessions_new(size_t max, struct tide_tls_sessions **out)
{
    if (!out)
        return TIDE_EINVAL;
    *out = calloc(1, sizeof **out);
    if (!*out)
        return TIDE_ENOMEM;
    (*out)->max = max ? max : PRESET_MAX;
    return 0;
}

static void drop_at(struct tide_tls_sessions *s, struct entry *e, int i)
{
    SSL_SESSION_free(e->stack[i]);
    memmove(&e->stack[i], &e->stack[i + 1],
            (size_t)(e->n - i - 1) * sizeof e->stack[0]);
    e->n--;
    s->count--;
}

void tide_tls_sessions_free(struct tide_tls_sessions *s)
{
    if (!s)
        return;
    while (s->head) {
        struct entry *e = s->head;
        s->head = e->next;
        while (e->n > 0)
            drop_at(s, e, e->n - 1);
        free(e->key);
        free(e);
    }
    free(s);
}

size_t tide_tls_sessions_count(const struct tide_tls_sessions *s)
{
    return s ? s->count : 0;
}

/* Finds key's entry and moves it to the front. */
static struct entry *find(struct tide_tls_sessions *s, const char *key)
{
    struct entry **at = &s->head;
    while (*at && strcmp((*at)->key, key) != 0)
        at = &(*at)->next;
    struct entry *e = *at;
    if (e && e != s->head) {
        *at = e->next;
        e->next = s->head;
        s->head = e;
    }
    return e;
}

static bool usable(SSL_SESSION *sess, time_t now)
{
    if (!SSL_SESSION_is_resumable(sess))
        return false;
    long t = SSL_SESSION_get_time(sess);
    long life = SSL_SESSION_get_timeout(sess);
    return (long)now < t + life;
}

SSL_SESSION *tide__tls_sessions_take(struct tide_tls_sessions *s,
                                     const char *key)
{
    struct entry *e = find(s, key);
    if (!e)
        return NULL;
    time_t now = time(NULL);
    while (e->n > 0) {
        int top = e->n - 1;
        SSL_SESSION *sess = e->stack[top];
        if (!usable(sess, now)) {
            drop_at(s, e, top);
            continue;
        }
        if (SSL_SESSION_get_protocol_version(sess) >= TLS1_3_VERSION) {
            e->n--; /* the caller gets the cache's reference */
            s->count--;
            return sess;
        }
        SSL_SESSION_up_ref(sess);
        return sess;
    }
    return NULL;
}

/* Makes room for one more: the oldest session of the least recently used
 * upstream goes. */
static void evict_one(struct tide_tls_sessions *s)
{
    struct entry *last = NULL;
    for (struct entry *e = s->head; e; e = e->next)
        if (e->n > 0)
            last = e;
    if (last)
        drop_at(s, last, 0);
}

void tide__tls_sessions_put(struct tide_tls_sessions *s, const char *key,
                            SSL_SESSION *sess)
{
    struct entry *e = find(s, key);
    if (!e) {
        e = calloc(1, sizeof *e);
        if (e)
            e->key = strdup(key);
        if (!e || !e->key) {
            free(e);
            SSL_SESSION_free(sess);
            return;
        }
        e->next = s->head;
        s->head = e;
    }
    for (int i = 0; i < e->n; i++) {
        if (e->stack[i] == sess) { /* a TLS 1.2 session seen again */
            SSL_SESSION_free(sess);
            return;
        }
    }
    if (e->n == PER_KEY)
        drop_at(s, e, 0);
    while (s->count >= s->max)
        evict_one(s);
    e->stack[e->n++] = sess;
    s->count++;
}

size_t tide__tls_sessions_count_key(const struct tide_tls_sessions *s,
                                    const char *key)
{
    for (const struct entry *e = s->head; e; e = e->next)
        if (strcmp(e->key, key) == 0)
            return (size_t)e->n;
    return 0;
}
