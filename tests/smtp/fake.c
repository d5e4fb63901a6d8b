/* The scripted SMTP server of fake.h: one bufferevent per connection on
 * the test's loop, lines read as they come, each command answered by the
 * first rule that names it (and this connection), else by its preset. */
#include "fake.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/listener.h>

#include "demo_list.h"

struct fake_conn {
    struct fake_conn *prev;
    struct fake_conn *next;
    struct fake_server *f;
    struct bufferevent *bev;
    int number;          /* 1 for the first accepted */
    bool in_data;        /* between DATA's 354 and the "." */
    bool silent;         /* a HANG rule ran: nothing more is answered */
    bool closing;        /* QUIT answered: closed once that is written */
    size_t body;         /* bytes of the message so far */
    int seen[FAKE_CMDS]; /* commands received on this connection */
};

static const char *const presets[FAKE_CMDS] = {
    [FAKE_GREETING] = "220 fake.test ESMTP\r\n",
    [FAKE_EHLO] = "250-fake.test\r\n250 8BITMIME\r\n",
    [FAKE_MAIL] = "250 2.1.0 OK\r\n",
    [FAKE_RCPT] = "250 2.1.5 OK\r\n",
    [FAKE_DATA] = "354 End data with <CR><LF>.<CR><LF>\r\n",
    [FAKE_DOT] = "250 2.0.0 accepted\r\n", /* with the size: see answer */
    [FAKE_RSET] = "250 2.0.0 OK\r\n",
    [FAKE_NOOP] = "250 2.0.0 OK\r\n",
    [FAKE_QUIT] = "221 2.0.0 bye\r\n",
    [FAKE_STARTTLS] = "454 4.7.0 TLS not available\r\n",
    [FAKE_HELO] = "250 fake.test\r\n",
};

static void conn_free(struct fake_conn *c)
{
    struct fake_server *f = c->f;
    TIDE_DEMO_UNLINK(&f->conns, c);
    bufferevent_free(c->bev);
    free(c);
    f->closed++;
}

static const struct fake_rule *rule_for(const struct fake_conn *c,
                                        enum fake_cmd cmd)
{
    const struct fake_server *f = c->f;
    for (size_t i = 0; i < f->nrules; i++)
        if (f->rules[i].cmd == cmd &&
            (f->rules[i].conn == 0 || f->rules[i].conn == c->number) &&
            c->seen[cmd] > f->rules[i].after &&
            (f->rules[i].times == 0 ||
             c->seen[cmd] <= f->rules[i].after + f->rules[i].times))
            return &f->rules[i];
    return NULL;
}

/* Answers cmd; false when the connection is gone. */
static bool answer(struct fake_conn *c, enum fake_cmd cmd)
{
    c->f->seen[cmd]++;
    c->seen[cmd]++;
    const struct fake_rule *r = rule_for(c, cmd);
    const char *reply = r && r->reply ? r->reply : presets[cmd];
    char verdict[64];
    if (cmd == FAKE_DOT && reply == presets[cmd]) {
        /* the preset verdict names the message by its size, so a test can
         * tell whose verdict a caller got */
        snprintf(verdict, sizeof verdict, "250 2.0.0 accepted %zu bytes\r\n",
                 c->body);
        reply = verdict;
    }
    if (r && r->act == FAKE_RESET) {
        struct linger lg = {.l_onoff = 1, .l_linger = 0};
        setsockopt(bufferevent_getfd(c->bev), SOL_SOCKET, SO_LINGER, &lg,
                   sizeof lg);
        conn_free(c);
        return false;
    }
    if (reply && (!r || r->reply || r->act == FAKE_REPLY))
        bufferevent_write(c->bev, reply, strlen(reply));
    if (r && r->act == FAKE_HANG)
        c->silent = true;
    if (r && r->act == FAKE_STALL) {
        c->silent = true;
        bufferevent_disable(c->bev, EV_READ);
    }
    if (cmd == FAKE_DATA && !c->silent && reply[0] == '3') {
        c->in_data = true;
        c->body = 0;
    }
    if (cmd == FAKE_QUIT)
        c->closing = true;
    return true;
}

static enum fake_cmd command(const char *line)
{
    static const struct {
        const char *verb;
        enum fake_cmd cmd;
    } verbs[] = {
        {"EHLO", FAKE_EHLO}, {"MAIL", FAKE_MAIL},         {"RCPT", FAKE_RCPT},
        {"DATA", FAKE_DATA}, {"RSET", FAKE_RSET},         {"NOOP", FAKE_NOOP},
        {"QUIT", FAKE_QUIT}, {"STARTTLS", FAKE_STARTTLS}, {"HELO", FAKE_HELO},
    };
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
        if (strncasecmp(line, verbs[i].verb, strlen(verbs[i].verb)) == 0)
            return verbs[i].cmd;
    return FAKE_CMDS;
}

static void on_read(struct bufferevent *bev, void *arg)
{
    struct fake_conn *c = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    size_t n;
    char *line;
    while (!c->closing && (line = evbuffer_readln(in, &n, EVBUFFER_EOL_CRLF))) {
        bool go_on = true;
        if (c->in_data && strcmp(line, ".") == 0) {
            c->in_data = false;
            c->f->last_body = c->body;
            go_on = answer(c, FAKE_DOT);
        } else if (c->in_data) {
            c->body += n + 2;
        } else if (!c->silent) {
            enum fake_cmd cmd = command(line);
            if (cmd == FAKE_CMDS)
                bufferevent_write(bev, "502 5.5.2 what?\r\n", 17);
            else
                go_on = answer(c, cmd);
        }
        free(line);
        if (!go_on || c->silent)
            return;
    }
}

static void on_write(struct bufferevent *bev, void *arg)
{
    struct fake_conn *c = arg;
    if (c->closing && evbuffer_get_length(bufferevent_get_output(bev)) == 0)
        conn_free(c);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    (void)bev;
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
        conn_free(arg);
}

static void on_accept(struct evconnlistener *l, evutil_socket_t fd,
                      struct sockaddr *sa, int len, void *arg)
{
    (void)sa;
    (void)len;
    struct fake_server *f = arg;
    struct fake_conn *c = calloc(1, sizeof *c);
    if (c)
        c->bev = bufferevent_socket_new(evconnlistener_get_base(l), fd,
                                        BEV_OPT_CLOSE_ON_FREE);
    if (!c || !c->bev) {
        evutil_closesocket(fd);
        free(c);
        return;
    }
    c->f = f;
    c->number = ++f->accepted;
    TIDE_DEMO_LINK(&f->conns, c);
    bufferevent_setcb(c->bev, on_read, on_write, on_event, c);
    bufferevent_enable(c->bev, EV_READ | EV_WRITE);
    answer(c, FAKE_GREETING);
}

bool fake_start(struct fake_server *f, struct event_base *base,
                const struct fake_rule *rules, size_t nrules)
{
    memset(f, 0, sizeof *f);
    f->rules = rules;
    f->nrules = nrules;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return false;
    /* small, so a message the server stops reading stays with the sender
     * instead of vanishing into the kernel's buffers */
    int rcvbuf = 4096;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    struct sockaddr_in sin = {.sin_family = AF_INET,
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof sin;
    if (bind(fd, (struct sockaddr *)&sin, sizeof sin) != 0 ||
        listen(fd, 16) != 0 ||
        getsockname(fd, (struct sockaddr *)&sin, &sl) != 0) {
        close(fd);
        return false;
    }
    f->port = ntohs(sin.sin_port);
    f->listener =
        evconnlistener_new(base, on_accept, f, LEV_OPT_CLOSE_ON_FREE, -1, fd);
    if (!f->listener) {
        close(fd);
        return false;
    }
    return true;
}

void fake_stop(struct fake_server *f)
{
    while (f->conns)
        conn_free(f->conns);
    if (f->listener)
        evconnlistener_free(f->listener);
    f->listener = NULL;
}
