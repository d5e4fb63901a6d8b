/* The engine's parameters: their names and presets, one table, so the
 * native program's arguments and the page's controls cannot drift apart. */
#include <string.h>

#include "engine.h"

struct param {
    const char *name;
    double preset;
};

/* The presets are the terminal simulator's run (demos/sim): a pool of 8
 * with 2 kept open, echo requests of about 15 ms, 60 a second calm and 700
 * in the burst (about 11 connections' worth), five failed outcomes in a row
 * opening the breaker for a second. */
static const struct param params[WEB_PARAMS] = {
    [WEB_P_SEED] = {"seed", 1},
    [WEB_P_SECONDS] = {"seconds", 24},
    [WEB_P_SIZE] = {"size", 8},
    [WEB_P_IDLE] = {"idle", 0},
    [WEB_P_KEEP_S] = {"keep_s", 5},
    [WEB_P_LIFE_S] = {"life_s", 0},
    [WEB_P_SPREAD] = {"spread", 0},
    [WEB_P_MIN] = {"min", 2},
    [WEB_P_QUEUE_MAX] = {"queue_max", 256},
    [WEB_P_ACQUIRE_TIMEOUT_MS] = {"acquire_timeout_ms", 500},
    [WEB_P_BREAKER] = {"breaker", 2},
    [WEB_P_BREAKER_K] = {"breaker_k", 2},
    [WEB_P_BREAKER_WINDOW_S] = {"breaker_window_s", 120},
    [WEB_P_STRIKES] = {"strikes", 5},
    [WEB_P_COOLDOWN_MS] = {"cooldown_ms", 1000},
    [WEB_P_PROBES] = {"probes", 1},
    [WEB_P_BUCKET_RATE] = {"bucket_rate", 0},
    [WEB_P_BUCKET_BURST] = {"bucket_burst", 0},
    [WEB_P_BACKOFF] = {"backoff", 1},
    [WEB_P_BACKOFF_BASE_MS] = {"backoff_base_ms", 100},
    [WEB_P_BACKOFF_CAP_MS] = {"backoff_cap_ms", 1000},
    [WEB_P_SHEDDER] = {"shedder", 1},
    [WEB_P_LOAN_TARGET_MS] = {"loan_target_ms", 0},
    [WEB_P_BURST_LAG_MS] = {"burst_lag_ms", 0},
    [WEB_P_RATE_CALM] = {"rate_calm", 60},
    [WEB_P_RATE_BURST] = {"rate_burst", 700},
    [WEB_P_SERVICE_MS] = {"service_ms", 15},
    [WEB_P_SERVICE_SPREAD] = {"service_spread", 0.5},
    [WEB_P_SLOW_SHARE] = {"slow_share", 0},
    [WEB_P_CONNECT_MS] = {"connect_ms", 1},
    [WEB_P_FAIL_SHARE] = {"fail_share", 0},
    [WEB_P_BURST_START_S] = {"burst_start_s", 6},
    [WEB_P_BURST_LEN_S] = {"burst_len_s", 4},
    [WEB_P_OUTAGE_START_S] = {"outage_start_s", 14},
    [WEB_P_OUTAGE_LEN_S] = {"outage_len_s", 4},
    [WEB_P_SERVER_IDLE_S] = {"server_idle_s", 0},
    [WEB_P_DEMAND_S] = {"demand_s", 0},
    [WEB_P_RETIRE] = {"retire", 0},
    [WEB_P_PRECONNECT] = {"preconnect", 0},
    [WEB_P_WAVE_S] = {"wave_s", 0},
};

void web_params_preset(double *out)
{
    for (int i = 0; i < WEB_PARAMS; i++)
        out[i] = params[i].preset;
}

const char *web_param_name(int i)
{
    return i >= 0 && i < WEB_PARAMS ? params[i].name : NULL;
}

int web_param_find(const char *name)
{
    for (int i = 0; i < WEB_PARAMS; i++)
        if (!strcmp(params[i].name, name))
            return i;
    return -1;
}
