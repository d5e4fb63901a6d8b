/* libFuzzer target over the Redis client's reply path (demos/redis): a
 * pipeline of commands sent through the real client and its pool, over a
 * connection whose far end is this target (a bufferevent pair, through
 * tide__redis_client_new_over), which answers with the fuzzer's bytes cut
 * into reads, then closes. Everything from the connection's input to each
 * command's callback is the client's own: its reader feeding, hiredis's
 * redisReader, the matching of replies to commands, the end of the loan.
 *
 * The input:
 *   byte 0        how many commands (its low 3 bits: 1 to 8)
 *   a byte each   which command (GET, SET, PING, MULTI, EXEC, SUBSCRIBE,
 *                 SELECT, INCR: the ones that change the session retire
 *                 the connection rather than give it back)
 *   the rest      the cuts and the server's bytes (fuzz_cuts.h)
 *
 * What a user relies on, asserted for every input:
 * - the server receives exactly the commands' RESP, in order (as
 *   hiredis's own redisFormatCommandArgv writes it);
 * - every command is answered exactly once, in order;
 * - each answer is what a redisReader fed the whole stream at once says:
 *   the n-th reply to the n-th command (an error reply is that command's
 *   TIDE_REDIS_EREPLY with its text, and touches no other), a protocol
 *   error fails that command and every later one with
 *   TIDE_REDIS_EPROTOCOL and the reader's words, and the commands left
 *   when the stream ends fail with the peer's close;
 * - the same answers, messages included, whatever the cuts (the input's,
 *   and for short streams one byte a read);
 * - every connection made is destroyed once; no crash, no sanitizer
 *   report. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <hiredis/hiredis.h>

#include "fuzz_cuts.h"
#include "redis_internal.h"

#define MAX_CMDS     8
#define BYTEWISE_MAX 1024

static struct event_base *base; /* one for the whole run */
/* the model's readers' client: never sends a command */
static struct tide_redis_client *model_client;

/* ---- the commands ---- */

struct cmd {
    int argc;
    const char *argv[3];
};

static const struct cmd cmds[] = {
    {2, {"GET", "k"}},    {3, {"SET", "k", "v"}}, {1, {"PING"}},
    {1, {"MULTI"}},       {1, {"EXEC"}},          {2, {"SUBSCRIBE", "c"}},
    {2, {"SELECT", "1"}}, {2, {"INCR", "n"}},
};

/* ---- the connection's far end ---- */

struct far {
    struct bufferevent *end; /* the server's side of the connection made */
    int made;
    int destroyed;
};

static void make(struct tide_evpool *pool, struct tide_make *token, void *arg)
{
    (void)pool;
    struct far *f = arg;
    struct bufferevent *pair[2];
    if (f->end)
        abort(); /* one batch on a pool of one: one connection */
    if (bufferevent_pair_new(
            base, BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS, pair) != 0) {
        tide_evpool_unmade(token, TIDE_ENOMEM, "no pair");
        return;
    }
    bufferevent_enable(pair[0], EV_READ | EV_WRITE);
    bufferevent_enable(pair[1], EV_READ | EV_WRITE);
    f->end = pair[1];
    f->made++;
    tide_evpool_made(token, pair[0]);
}

static void destroy(void *resource, void *arg)
{
    struct far *f = arg;
    f->destroyed++;
    bufferevent_free(resource);
}

/* Runs what is due now: deliveries, deferred reads, finalizers. */
static void settle(void)
{
    for (int pass = 0; pass < 64; pass++) {
        if (event_base_get_num_events(base, EVENT_BASE_COUNT_ACTIVE) == 0)
            return;
        event_base_loop(base, EVLOOP_NONBLOCK);
    }
}

/* ---- answers ---- */

struct answer {
    int calls;
    int status;
    uint64_t digest; /* of the reply; 0 for none */
    char message[320];
};

struct run {
    struct answer answers[MAX_CMDS];
    size_t order[MAX_CMDS * 2]; /* commands in the order answered */
    size_t answered;
};

static uint64_t mix(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211u; /* FNV-1a */
    return h;
}

static uint64_t digest(const redisReply *r, uint64_t h)
{
    h = mix(h, &r->type, sizeof r->type);
    switch (r->type) {
    case REDIS_REPLY_INTEGER:
        return mix(h, &r->integer, sizeof r->integer);
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_ERROR:
        h = mix(h, &r->len, sizeof r->len);
        return mix(h, r->str, r->len);
    case REDIS_REPLY_ARRAY:
        h = mix(h, &r->elements, sizeof r->elements);
        for (size_t i = 0; i < r->elements; i++)
            h = digest(r->element[i], h);
        return h;
    }
    return h;
}

struct slot {
    struct run *run;
    size_t index;
};

static void on_answer(struct tide_redis_client *c, int status,
                      const struct redisReply *reply, const char *message,
                      void *arg)
{
    (void)c;
    struct slot *s = arg;
    struct run *r = s->run;
    struct answer *a = &r->answers[s->index];
    if (r->answered >= MAX_CMDS * 2 || !message)
        abort();
    r->order[r->answered++] = s->index;
    a->calls++;
    a->status = status;
    a->digest = reply ? digest(reply, 14695981039346656037u) : 0;
    snprintf(a->message, sizeof a->message, "%s", message);
    if ((status == 0 || status == TIDE_REDIS_EREPLY) != (reply != NULL))
        abort(); /* a reply with every answer that has one, and only then */
}

/* The commands' RESP as hiredis writes it, into out. */
static void expected_request(const size_t *pick, size_t n, struct evbuffer *out)
{
    for (size_t i = 0; i < n; i++) {
        const struct cmd *k = &cmds[pick[i]];
        const char *argv[3]; /* hiredis's prototype wants them writable */
        memcpy(argv, k->argv, sizeof argv);
        char *resp;
        int len = redisFormatCommandArgv(&resp, k->argc, argv, NULL);
        if (len < 0)
            abort();
        evbuffer_add(out, resp, (size_t)len);
        free(resp);
    }
}

/* One pipeline of the picked commands through a fresh client; the
 * stream in pieces ending at cuts[0..ncuts) (NULL with ncuts not 0: a
 * byte a piece), then the far end closes. */
static void run_once(const size_t *pick, size_t n, const uint8_t *s, size_t len,
                     const size_t *cuts, size_t ncuts, struct run *r)
{
    memset(r, 0, sizeof *r);
    struct far f = {0};
    struct tide_factory table = {.make = make, .destroy = destroy, .arg = &f};
    struct tide_redis_options o = {
        .pool = {.limits = TIDE_LIMITS(.size = 1), .seed = 1},
    };
    struct tide_redis_client *c;
    if (tide__redis_client_new_over(base, &o, &table, &c) != 0)
        abort();
    struct slot slots[MAX_CMDS];
    struct tide_redis_cmd batch[MAX_CMDS];
    for (size_t i = 0; i < n; i++) {
        slots[i] = (struct slot){.run = r, .index = i};
        batch[i] = (struct tide_redis_cmd){.argc = cmds[pick[i]].argc,
                                           .argv = cmds[pick[i]].argv,
                                           .cb = on_answer,
                                           .arg = &slots[i]};
    }
    if (tide_redis_pipeline(c, n, batch) != 0)
        abort();
    settle();
    if (!f.end)
        abort(); /* lent, and written */
    struct evbuffer *want = evbuffer_new();
    expected_request(pick, n, want);
    struct evbuffer *got = bufferevent_get_input(f.end);
    size_t wlen = evbuffer_get_length(want);
    if (evbuffer_get_length(got) != wlen ||
        memcmp(evbuffer_pullup(got, -1), evbuffer_pullup(want, -1), wlen) != 0)
        abort();
    evbuffer_free(want);

    size_t fed = 0;
    for (size_t piece = 0; piece <= ncuts; piece++) {
        size_t to = piece == ncuts ? len : cuts ? cuts[piece] : piece + 1;
        bufferevent_write(f.end, s + fed, to - fed);
        fed = to;
        settle();
    }
    /* the server closes: the commands still waiting fail */
    bufferevent_flush(f.end, EV_WRITE, BEV_FINISHED);
    settle();
    tide_redis_client_free(c);
    bufferevent_free(f.end);
    settle();
    if (f.made != 1 || f.destroyed != 1)
        abort();
}

/* What a reader fed the whole stream says each command gets: hiredis's
 * reader as the client sets it up (tide__redis_reader_take: arrays past
 * TIDE__REDIS_MAX_ELEMENTS refused), taken from a client of its own. */
static void model(size_t n, const uint8_t *s, size_t len, struct run *want)
{
    memset(want, 0, sizeof *want);
    redisReader *rd = tide__redis_reader_take(model_client);
    if (!rd || redisReaderFeed(rd, (const char *)s, len) != REDIS_OK)
        abort();
    size_t i = 0;
    for (; i < n; i++) {
        void *reply = NULL;
        struct answer *a = &want->answers[i];
        a->calls = 1;
        if (redisReaderGetReply(rd, &reply) != REDIS_OK) {
            char buf[128];
            const char *why =
                tide__redis_reader_error(model_client, rd, buf, sizeof buf);
            for (; i < n; i++) {
                want->answers[i].calls = 1;
                want->answers[i].status = TIDE_REDIS_EPROTOCOL;
                snprintf(want->answers[i].message, sizeof a->message, "%s",
                         why);
            }
            break;
        }
        if (!reply) {
            for (; i < n; i++) {
                want->answers[i].calls = 1;
                want->answers[i].status = TIDE_EPEER_CLOSED;
            }
            break;
        }
        redisReply *rep = reply;
        a->status = rep->type == REDIS_REPLY_ERROR ? TIDE_REDIS_EREPLY : 0;
        a->digest = digest(rep, 14695981039346656037u);
        freeReplyObject(reply);
    }
    tide__redis_reader_give(model_client, rd, false);
}

/* a against the model: statuses, replies, and the reader's words for a
 * protocol error (the other failures' words are the client's own). */
static void check_model(const struct run *a, const struct run *want, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const struct answer *x = &a->answers[i], *y = &want->answers[i];
        if (x->status != y->status || x->digest != y->digest ||
            (y->status == TIDE_REDIS_EPROTOCOL &&
             strcmp(x->message, y->message) != 0))
            abort();
    }
}

static void check_exactly_once_in_order(const struct run *r, size_t n)
{
    if (r->answered != n)
        abort();
    for (size_t i = 0; i < n; i++)
        if (r->order[i] != i || r->answers[i].calls != 1)
            abort();
}

static void check_same(const struct run *a, const struct run *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const struct answer *x = &a->answers[i], *y = &b->answers[i];
        if (x->status != y->status || x->digest != y->digest ||
            strcmp(x->message, y->message) != 0)
            abort();
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    base = event_base_new();
    static struct far unused;
    struct tide_factory table = {
        .make = make, .destroy = destroy, .arg = &unused};
    struct tide_redis_options o = {0};
    if (!base ||
        tide__redis_client_new_over(base, &o, &table, &model_client) != 0)
        abort();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t n = 1 + (data[0] & 7);
    if (size < 1 + n)
        return 0;
    size_t pick[MAX_CMDS];
    for (size_t i = 0; i < n; i++)
        pick[i] = data[1 + i] % (sizeof cmds / sizeof cmds[0]);
    struct tide_fuzz_cuts c;
    if (!tide_fuzz_cuts_read(&c, data + 1 + n, size - 1 - n))
        return 0;

    static struct run whole, pieces, want;
    model(n, c.stream, c.len, &want);
    run_once(pick, n, c.stream, c.len, NULL, 0, &whole);
    check_exactly_once_in_order(&whole, n);
    check_model(&whole, &want, n);
    run_once(pick, n, c.stream, c.len, c.at, c.n, &pieces);
    check_exactly_once_in_order(&pieces, n);
    check_same(&whole, &pieces, n);
    if (c.len > 0 && c.len <= BYTEWISE_MAX) {
        run_once(pick, n, c.stream, c.len, NULL, c.len - 1, &pieces);
        check_exactly_once_in_order(&pieces, n);
        check_same(&whole, &pieces, n);
    }
    return 0;
}
