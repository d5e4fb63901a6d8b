/* Which commands leave their connection in a session of their own.
 *
 * A pooled connection is shared by every command in turn, so it may only
 * go back to the pool in the state its setup left it: the configured
 * database, the configured user, no transaction, nothing watched, no
 * subscription, RESP2. A command that changes that state (SELECT, AUTH,
 * HELLO, an open MULTI, SUBSCRIBE, CLIENT SETNAME ...) would otherwise
 * reach the next borrower, whose GET would be answered "+QUEUED", or from
 * another database, or by "-ERR Can't execute 'get'" in pub/sub mode.
 * Such a batch still gets all its replies; its connection is then closed
 * (retired: the server did nothing wrong) instead of given back.
 *
 * A transaction opened and closed in the same batch (MULTI ... EXEC, or
 * DISCARD), and a WATCH that its EXEC, DISCARD or UNWATCH ends, leave the
 * session as they found it: the connection goes back. Undoing the others
 * (RESET, then AUTH and SELECT again) would cost a round trip; closing costs
 * a connect, and these commands are rare on a shared pool.
 *
 * On a client whose connections are shared (limits.streams above 1), the
 * same notes pick the path: a batch with any of these commands, with
 * MULTI or WATCH (even ended), or with a blocking command (BLPOP, XREAD
 * BLOCK, WAIT ...) takes an exclusive loan (`alone`), so that no other
 * caller's command lands inside its transaction or session, or waits
 * behind its block.
 *
 * Two kinds of command are refused before anything is sent: those that
 * silence replies (CLIENT REPLY OFF, SKIP), since replies are matched to
 * commands by their order, and HELLO asking for RESP3, which hiredis
 * 0.14's reader cannot read. */
#include <string.h>
#include <strings.h>

#include "redis_internal.h"

static bool same(const char *word, size_t len, const char *name,
                 size_t name_len)
{
    return len == name_len && strncasecmp(word, name, len) == 0;
}

/* name: a literal, whose strlen the compiler counts */
static bool is(const char *word, size_t len, const char *name)
{
    return same(word, len, name, strlen(name));
}

/* A command's name with its length, counted once at compile time: every
 * command is checked against the tables below, and a strlen of each name
 * for each command was a measurable share of the client's CPU on the
 * shared path. */
struct word {
    const char *name;
    size_t len;
};
#define WORD(s)                                                                \
    {                                                                          \
        s, sizeof s - 1                                                        \
    }

static bool any(const char *word, size_t len, const struct word *names)
{
    for (; names->name; names++)
        if (same(word, len, names->name, names->len))
            return true;
    return false;
}

/* Commands that change the session for good (for this client). */
static const struct word changing[] = {
    WORD("SELECT"),  WORD("AUTH"),      WORD("HELLO"),      WORD("RESET"),
    WORD("QUIT"),    WORD("SUBSCRIBE"), WORD("PSUBSCRIBE"), WORD("SSUBSCRIBE"),
    WORD("MONITOR"), WORD("READONLY"),  WORD("READWRITE"),  WORD("ASKING"),
    {NULL, 0}};

/* Commands that block their connection until something happens (or a
 * timeout the command gives): on a shared connection every caller's
 * command behind them would wait as long. */
static const struct word blocking[] = {
    WORD("BLPOP"),  WORD("BRPOP"),    WORD("BLMOVE"),   WORD("BRPOPLPUSH"),
    WORD("BLMPOP"), WORD("BZPOPMIN"), WORD("BZPOPMAX"), WORD("BZMPOP"),
    WORD("WAIT"),   WORD("WAITAOF"),  {NULL, 0}};

/* XREAD and XREADGROUP block only with a BLOCK argument. */
static bool blocks(int argc, const char *const *argv, const size_t *argvlen)
{
    size_t len = tide__redis_arg_len(argv, argvlen, 0);
    if (any(argv[0], len, blocking))
        return true;
    if (!is(argv[0], len, "XREAD") && !is(argv[0], len, "XREADGROUP"))
        return false;
    for (int i = 1; i < argc; i++)
        if (is(argv[i], tide__redis_arg_len(argv, argvlen, i), "BLOCK"))
            return true;
    return false;
}

/* CLIENT's subcommands that do. */
static const struct word client_changing[] = {
    WORD("SETNAME"),  WORD("REPLY"),    WORD("TRACKING"), WORD("CACHING"),
    WORD("NO-EVICT"), WORD("NO-TOUCH"), WORD("SETINFO"),  {NULL, 0}};

void tide__redis_session_note(struct tide__redis_session *s, int argc,
                              const char *const *argv, const size_t *argvlen)
{
    size_t len = tide__redis_arg_len(argv, argvlen, 0);
    const char *word = argv[0];
    if (blocks(argc, argv, argvlen))
        s->alone = true;
    if (is(word, len, "MULTI")) {
        s->multi = true;
        s->alone = true;
    } else if (is(word, len, "EXEC") || is(word, len, "DISCARD")) {
        /* either ends the transaction and every WATCH (an EXEC that
         * aborts discards it too) */
        s->multi = false;
        s->watch = false;
    } else if (is(word, len, "WATCH")) {
        s->watch = true;
        s->alone = true;
    } else if (is(word, len, "UNWATCH")) {
        s->watch = false;
    } else if (any(word, len, changing)) {
        s->changed = true;
        s->alone = true;
    } else if (is(word, len, "CLIENT") && argc > 1) {
        if (any(argv[1], tide__redis_arg_len(argv, argvlen, 1),
                client_changing))
            s->changed = s->alone = true;
    }
}

bool tide__redis_answerable(int argc, const char *const *argv,
                            const size_t *argvlen)
{
    size_t len = tide__redis_arg_len(argv, argvlen, 0);
    size_t len1 = argc > 1 ? tide__redis_arg_len(argv, argvlen, 1) : 0;
    /* replies are matched to commands by their order: a command that
     * silences its own reply (and the next one's, or all that follow)
     * would hand each later reply to the command before it */
    if (argc > 2 && is(argv[0], len, "CLIENT") && is(argv[1], len1, "REPLY")) {
        size_t len2 = tide__redis_arg_len(argv, argvlen, 2);
        return !is(argv[2], len2, "OFF") && !is(argv[2], len2, "SKIP");
    }
    /* hiredis 0.14's reader knows RESP2 only: a RESP3 reply (HELLO's own
     * first) is a protocol error that would cost the connection */
    if (argc > 1 && is(argv[0], len, "HELLO"))
        return is(argv[1], len1, "2");
    return true;
}

bool tide__redis_session_clean(const struct tide__redis_session *s)
{
    return !s->multi && !s->watch && !s->changed;
}
