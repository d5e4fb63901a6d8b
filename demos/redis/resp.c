/* RESP for a command: an array of bulk strings, "*<n>\r\n" then
 * "$<len>\r\n<bytes>\r\n" per argument. Written here rather than by
 * redisFormatCommandArgv so that a pipeline goes out as one buffer, sized
 * once, in one write (one TLS record for small pipelines). */
#include <string.h>

#include "redis_internal.h"

static size_t digits(size_t n)
{
    size_t d = 1;
    while (n >= 10) {
        n /= 10;
        d++;
    }
    return d;
}

size_t tide__redis_arg_len(const char *const *argv, const size_t *argvlen,
                           int i)
{
    return argvlen ? argvlen[i] : strlen(argv[i]);
}

size_t tide__redis_resp_size(int argc, const char *const *argv,
                             const size_t *argvlen)
{
    size_t n = 1 + digits((size_t)argc) + 2;
    for (int i = 0; i < argc; i++) {
        size_t len = tide__redis_arg_len(argv, argvlen, i);
        size_t framing = 1 + digits(len) + 2 + 2;
        /* lengths no memory could hold (a caller's wrong argvlen) would
         * wrap the sum, and the copy would run past the buffer */
        if (len > SIZE_MAX / 2 - framing || n > SIZE_MAX / 2 - framing - len)
            return 0;
        n += framing + len;
    }
    return n;
}

static char *header(char *out, char kind, size_t n)
{
    char num[24];
    size_t d = digits(n);
    for (size_t i = d; i > 0; i--) {
        num[i - 1] = (char)('0' + n % 10);
        n /= 10;
    }
    *out++ = kind;
    memcpy(out, num, d);
    out += d;
    *out++ = '\r';
    *out++ = '\n';
    return out;
}

char *tide__redis_resp_write(char *out, int argc, const char *const *argv,
                             const size_t *argvlen)
{
    out = header(out, '*', (size_t)argc);
    for (int i = 0; i < argc; i++) {
        size_t len = tide__redis_arg_len(argv, argvlen, i);
        out = header(out, '$', len);
        if (len > 0)
            memcpy(out, argv[i], len);
        out += len;
        *out++ = '\r';
        *out++ = '\n';
    }
    return out;
}
