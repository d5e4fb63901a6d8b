/* Gate: a count with a ceiling. */
#include <stdlib.h>

#include "core_internal.h"

struct tide_gate {
    int64_t ceiling;
    int64_t held;
};

int tide_gate_new(int64_t ceiling, struct tide_gate **out)
{
    if (!out)
        return TIDE_EINVAL;
    *out = NULL;
    if (ceiling < 1)
        return TIDE_EINVAL;
    struct tide_gate *g = malloc(sizeof *g);
    if (!g)
        return TIDE_ENOMEM;
    g->ceiling = ceiling;
    g->held = 0;
    *out = g;
    return 0;
}

void tide_gate_free(struct tide_gate *g)
{
    free(g);
}

bool tide_gate_enter(struct tide_gate *g)
{
    if (!g)
        return false;
    if (g->held >= g->ceiling)
        return false;
    g->held++;
    return true;
}

int tide_gate_leave(struct tide_gate *g)
{
    if (!g)
        return TIDE_EINVAL;
    if (g->held == 0)
        return TIDE_EGATE;
    g->held--;
    return 0;
}

int64_t tide_gate_held(const struct tide_gate *g)
{
    if (!g)
        return 0;
    return g->held;
}
