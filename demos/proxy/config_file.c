/* The proxy's configuration file (see px_config_read in config.h): each
 * line becomes the option it names and goes through the same parser as the
 * command line, so a file takes exactly what the options take, checked the
 * same way. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* s without the blanks at its ends (s is changed: the end is cut). */
static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

/* One line, neither blank nor a comment: "name" or "name value". */
static int read_line(struct px_config *c, char *line, char *err, size_t errlen)
{
    char *value = line;
    while (*value && !isspace((unsigned char)*value))
        value++;
    if (*value)
        *value++ = '\0';
    value = trim(value);
    char option[64];
    if (strncmp(line, "--", 2) == 0) {
        snprintf(err, errlen,
                 "'%s' is no option (write it without the "
                 "dashes: 'pool-size 16')",
                 line);
        return -1;
    }
    if (strlen(line) + 3 > sizeof option) {
        snprintf(err, errlen, "unknown option '%.*s...'", 60, line);
        return -1;
    }
    /* "--" and the name, which fits (above); not snprintf, of which GCC
     * under -fsanitize=undefined believes line may be NULL */
    memcpy(option, "--", 2);
    memcpy(option + 2, line, strlen(line) + 1);
    if (strcmp(line, "help") == 0 || strcmp(line, "h") == 0 ||
        strcmp(line, "version") == 0 || strcmp(line, "config") == 0) {
        snprintf(err, errlen, "'%s' is an option of the command line only",
                 line);
        return -1;
    }
    bool takes = px_config_takes_value(option);
    char *argv[] = {"", option, value, NULL};
    int rc = px_config_options(c, takes && *value ? 3 : 2, argv, err, errlen);
    if (rc == 0 && !takes && *value) { /* a known flag, with a value */
        snprintf(err, errlen, "%s takes no value (given '%s')", line, value);
        return -1;
    }
    if (rc > 0) /* not reached: help and version are refused above */
        return -1;
    if (rc == 0 && strcmp(line, "ca") == 0) {
        /* the value is this line's, which is about to go: keep a copy */
        if (strlen(value) >= sizeof c->ca_file) {
            snprintf(err, errlen, "ca: the path is longer than %zu bytes",
                     sizeof c->ca_file - 1);
            return -1;
        }
        strcpy(c->ca_file, value);
        c->ca = c->ca_file;
    }
    return rc;
}

int px_config_read(struct px_config *c, const char *path, char *err,
                   size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "--config: cannot read '%s': %s", path,
                 strerror(errno));
        return -1;
    }
    char *buf = NULL;
    size_t cap = 0;
    int rc = 0;
    for (long n = 1; rc == 0 && getline(&buf, &cap, f) >= 0; n++) {
        char *line = trim(buf);
        if (*line == '\0' || *line == '#')
            continue;
        char why[512];
        if (read_line(c, line, why, sizeof why)) {
            snprintf(err, errlen, "%s:%ld: %s", path, n, why);
            rc = -1;
        }
    }
    if (rc == 0 && ferror(f)) {
        snprintf(err, errlen, "--config: cannot read '%s': %s", path,
                 strerror(errno));
        rc = -1;
    }
    free(buf);
    fclose(f);
    return rc;
}
