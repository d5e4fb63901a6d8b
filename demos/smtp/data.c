/* A message made ready for DATA (RFC 5321 4.5.2 and 2.3.8): the text as
 * given, with every line end (LF, CR or CRLF) sent as CRLF, a "." at the
 * start of a line doubled so the server does not take it for the end, the
 * last line ended, and ".\r\n" after it. A bare LF or CR cannot be sent as
 * it is: servers reject it or, worse, some read it as a line end and others
 * do not (the "SMTP smuggling" of 2023). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "smtp_internal.h"

bool tide__smtp_data(const char *msg, size_t len, char **out, size_t *out_len)
{
    /* at worst every byte is a "." on a line of its own or a bare line end:
     * twice the size, and the end; a length past half of what a size_t
     * holds would wrap that to a small room, overrun below */
    if (len > (SIZE_MAX - 6) / 2)
        return false;
    char *w = malloc(2 * len + 6);
    if (!w)
        return false;
    size_t o = 0;
    bool line_start = true;
    for (size_t i = 0; i < len; i++) {
        char c = msg[i];
        if (c == '\r' || c == '\n') {
            if (c == '\r' && i + 1 < len && msg[i + 1] == '\n')
                i++; /* CRLF: one line end */
            w[o++] = '\r';
            w[o++] = '\n';
            line_start = true;
            continue;
        }
        if (line_start && c == '.')
            w[o++] = '.';
        w[o++] = c;
        line_start = false;
    }
    if (!line_start) {
        w[o++] = '\r';
        w[o++] = '\n';
    }
    memcpy(w + o, ".\r\n", 3);
    o += 3;
    *out = w;
    *out_len = o;
    return true;
}
