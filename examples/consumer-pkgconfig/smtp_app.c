/* A program on tidepool's SMTP sender as installed, through
 * dependency('tidepool-smtp'). It sends one message to a port nothing
 * listens on: the sender must answer it exactly once, from the loop, with
 * a failure, and free cleanly. That runs the library's sender, its pool
 * and the TCP factory without a mail server. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>
#include <tidepool/smtp.h>

/* A loopback port that was free a moment ago and has no listener now. */
static int closed_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0)
        return -1;
    close(fd);
    return ntohs(a.sin_port);
}

struct outcome {
    int answers;
    int status;
};

static void on_sent(struct tide_smtp_sender *s, int status,
                    const struct tide_smtp_result *r, void *arg)
{
    (void)s;
    (void)r;
    struct outcome *o = arg;
    o->answers++;
    o->status = status;
}

int main(void)
{
    int port = closed_port();
    struct event_base *base = event_base_new();
    if (port < 0 || !base)
        return 1;
    struct tide_smtp_options o = {
        .tcp = {.host = "127.0.0.1", .port = port},
        .timeout = TIDE_SEC(3),
    };
    struct tide_smtp_sender *s;
    if (tide_smtp_sender_new(base, &o, &s) != 0)
        return 1;
    const char *to[] = {"b@example.com"};
    const char text[] = "Subject: hi\n\nhello\n";
    struct outcome out = {0};
    if (tide_smtp_send(s, "a@example.com", to, 1, text, strlen(text), on_sent,
                       &out) != 0)
        return 1;
    while (out.answers == 0 && event_base_loop(base, EVLOOP_ONCE) == 0)
        ;
    tide_smtp_sender_free(s);
    event_base_loop(base, EVLOOP_NONBLOCK);
    event_base_free(base);
    if (out.answers != 1 || out.status == 0) {
        fprintf(stderr, "%d answers, status %d\n", out.answers, out.status);
        return 1;
    }
    printf("tidepool-smtp %s: a message to a closed port failed: %s\n",
           tide_version(), tide_smtp_strerror(out.status));
    return 0;
}
