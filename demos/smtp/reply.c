/* SMTP replies (RFC 5321 4.2): one or more lines "ddd-text", the last one
 * "ddd text" or "ddd", all with the same code. Read line by line as the
 * bytes come, so a reply split over many reads is built up in place; EHLO's
 * extensions are picked out of the lines after the first as they pass. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "smtp_internal.h"

void tide__smtp_reply_clear(struct tide__smtp_reply *r)
{
    memset(r, 0, sizeof *r);
}

/* "AUTH PLAIN LOGIN" or the old "AUTH=PLAIN LOGIN": the mechanisms. */
static void read_auth(struct tide__smtp_reply *r, const char *p)
{
    while (*p) {
        while (*p == ' ')
            p++;
        size_t n = strcspn(p, " ");
        if (n == 5 && strncasecmp(p, "PLAIN", 5) == 0)
            r->auth_plain = true;
        else if (n == 5 && strncasecmp(p, "LOGIN", 5) == 0)
            r->auth_login = true;
        p += n;
    }
}

static void read_extension(struct tide__smtp_reply *r, const char *text)
{
    if (strcasecmp(text, "STARTTLS") == 0)
        r->starttls = true;
    else if (strncasecmp(text, "AUTH", 4) == 0 &&
             (text[4] == ' ' || text[4] == '='))
        read_auth(r, text + 5);
}

static void add_text(struct tide__smtp_reply *r, const char *text)
{
    size_t room = sizeof r->text - 1 - r->len;
    if (r->len > 0 && room > 0) {
        r->text[r->len++] = '\n';
        room--;
    }
    size_t n = strlen(text);
    if (n > room)
        n = room;
    memcpy(r->text + r->len, text, n);
    r->len += n;
    r->text[r->len] = '\0';
}

/* One line into r: 1 it was the last, 0 more lines follow, -1 not SMTP. */
static int take_line(struct tide__smtp_reply *r, const char *line, size_t n)
{
    if (n < 3 || !isdigit((unsigned char)line[0]) ||
        !isdigit((unsigned char)line[1]) || !isdigit((unsigned char)line[2]))
        return -1;
    if (n > 3 && line[3] != ' ' && line[3] != '-')
        return -1;
    int code = (line[0] - '0') * 100 + (line[1] - '0') * 10 + (line[2] - '0');
    if (code < 200 || code > 599 || (r->lines > 0 && code != r->code) ||
        r->lines == TIDE__SMTP_LINES)
        return -1;
    r->code = code;
    const char *text = n > 4 ? line + 4 : "";
    if (r->lines > 0)
        read_extension(r, text);
    add_text(r, text);
    r->lines++;
    return n > 3 && line[3] == '-' ? 0 : 1;
}

int tide__smtp_reply_read(struct evbuffer *in, struct tide__smtp_reply *r)
{
    for (;;) {
        size_t n;
        /* a bare LF ends a line too: some servers send them */
        char *line = evbuffer_readln(in, &n, EVBUFFER_EOL_CRLF);
        /* a line not yet ended is too long once even its last byte, which
         * may be the CR of its CRLF, leaves more than a line may hold:
         * refused the same whatever reads its bytes came in */
        if (!line)
            return evbuffer_get_length(in) > TIDE__SMTP_LINE + 1 ? -1 : 0;
        int rc = n > TIDE__SMTP_LINE ? -1 : take_line(r, line, n);
        free(line);
        if (rc != 0)
            return rc;
    }
}
