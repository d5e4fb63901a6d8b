/* A program on tidepool's Redis client as installed, through
 * dependency('tidepool-redis'). Commands on shared connections (four in
 * flight on each) go to a port nothing listens on: each must be answered
 * exactly once, from the loop, with a failure, and the client must free
 * cleanly. That runs the library's client, its pool and the TCP factory
 * without a Redis server. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>
#include <hiredis/hiredis.h>
#include <tidepool/redis.h>

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
    int failures;
    int status;
};

static void on_reply(struct tide_redis_client *c, int status,
                     const struct redisReply *reply, const char *message,
                     void *arg)
{
    (void)c;
    (void)message;
    struct outcome *o = arg;
    o->answers++;
    if (status != 0 && !reply)
        o->failures++;
    o->status = status;
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    int port = closed_port();
    struct event_base *base = event_base_new();
    if (port < 0 || !base)
        return 1;
    struct tide_redis_options o = {
        .tcp = {.host = "127.0.0.1", .port = port},
        .pool = {.limits = TIDE_LIMITS(.size = 2, .streams = 4)},
        .timeout = TIDE_SEC(3),
    };
    struct tide_redis_client *c;
    if (tide_redis_client_new(base, &o, &c) != 0)
        return 1;
    struct outcome out = {0};
    const char *get[] = {"GET", "key"};
    const char *set[] = {"SET", "key", "value"};
    struct tide_redis_cmd cmds[] = {
        {.argc = 3, .argv = set, .cb = on_reply, .arg = &out},
        {.argc = 2, .argv = get, .cb = on_reply, .arg = &out},
    };
    if (tide_redis_command(c, 2, get, NULL, on_reply, &out) != 0 ||
        tide_redis_pipeline(c, 2, cmds) != 0)
        return 1;
    while (out.answers < 3 && event_base_loop(base, EVLOOP_ONCE) == 0)
        ;
    tide_redis_client_free(c);
    event_base_loop(base, EVLOOP_NONBLOCK);
    event_base_free(base);
    if (out.answers != 3 || out.failures != 3) {
        fprintf(stderr, "%d answers, %d failures\n", out.answers, out.failures);
        return 1;
    }
    printf("tidepool-redis %s: 3 commands to a closed port failed: %s\n",
           tide_version(), tide_redis_strerror(out.status));
    return 0;
}
