/* Every external name the frozen core defines, renamed, so the frozen copy
 * and the live core link into one test. Included first by oracle.c, which
 * compiles the whole copy as one translation unit: a name missing here is
 * then defined twice (here and in the live core) and the link fails, rather
 * than the copy quietly calling the live code. */
#ifndef TIDEPOOL_ORACLE_RENAME_H
#define TIDEPOOL_ORACLE_RENAME_H

#define tide__breaker_blocks      oracle__tide__breaker_blocks
#define tide__breaker_check       oracle__tide__breaker_check
#define tide__breaker_decide      oracle__tide__breaker_decide
#define tide__breaker_init        oracle__tide__breaker_init
#define tide__breaker_listen      oracle__tide__breaker_listen
#define tide__breaker_resolve     oracle__tide__breaker_resolve
#define tide__bucket_check        oracle__tide__bucket_check
#define tide__bucket_full_from    oracle__tide__bucket_full_from
#define tide__bucket_init         oracle__tide__bucket_init
#define tide__bucket_resolve      oracle__tide__bucket_resolve
#define tide__itemmap_bind        oracle__tide__itemmap_bind
#define tide__itemmap_dispose     oracle__tide__itemmap_dispose
#define tide__itemmap_init        oracle__tide__itemmap_init
#define tide__itemmap_insert      oracle__tide__itemmap_insert
#define tide__itemmap_remove      oracle__tide__itemmap_remove
#define tide__itemmap_reserve     oracle__tide__itemmap_reserve
#define tide__itemmap_shift       oracle__tide__itemmap_shift
#define tide__shedder_check       oracle__tide__shedder_check
#define tide__shedder_feed        oracle__tide__shedder_feed
#define tide__shedder_init        oracle__tide__shedder_init
#define tide__shedder_resolve     oracle__tide__shedder_resolve
#define tide__shedder_settle_from oracle__tide__shedder_settle_from
#define tide_backoff_ceiling      oracle__tide_backoff_ceiling
#define tide_backoff_check        oracle__tide_backoff_check
#define tide_backoff_delay        oracle__tide_backoff_delay
#define tide_backoff_more         oracle__tide_backoff_more
#define tide_backoff_resolve      oracle__tide_backoff_resolve
#define tide_backoff_schedule     oracle__tide_backoff_schedule
#define tide_breaker_activate     oracle__tide_breaker_activate
#define tide_breaker_admit        oracle__tide_breaker_admit
#define tide_breaker_deactivate   oracle__tide_breaker_deactivate
#define tide_breaker_failure      oracle__tide_breaker_failure
#define tide_breaker_free         oracle__tide_breaker_free
#define tide_breaker_new          oracle__tide_breaker_new
#define tide_breaker_refusal      oracle__tide_breaker_refusal
#define tide_breaker_retry_after  oracle__tide_breaker_retry_after
#define tide_breaker_set_strategy oracle__tide_breaker_set_strategy
#define tide_breaker_state        oracle__tide_breaker_state
#define tide_breaker_success      oracle__tide_breaker_success
#define tide_bucket_free          oracle__tide_bucket_free
#define tide_bucket_new           oracle__tide_bucket_new
#define tide_bucket_next          oracle__tide_bucket_next
#define tide_bucket_take          oracle__tide_bucket_take
#define tide_bucket_tokens        oracle__tide_bucket_tokens
#define tide_limits_check         oracle__tide_limits_check
#define tide_limits_resolve       oracle__tide_limits_resolve
#define tide_pool_breaker         oracle__tide_pool_breaker
#define tide_pool_busy            oracle__tide_pool_busy
#define tide_pool_close           oracle__tide_pool_close
#define tide_pool_drop            oracle__tide_pool_drop
#define tide_pool_evict           oracle__tide_pool_evict
#define tide_pool_free            oracle__tide_pool_free
#define tide_pool_give            oracle__tide_pool_give
#define tide_pool_give_at         oracle__tide_pool_give_at
#define tide_pool_grow            oracle__tide_pool_grow
#define tide_pool_guards          oracle__tide_pool_guards
#define tide_pool_hold            oracle__tide_pool_hold
#define tide_pool_idle            oracle__tide_pool_idle
#define tide_pool_limits          oracle__tide_pool_limits
#define tide_pool_live            oracle__tide_pool_live
#define tide_pool_made            oracle__tide_pool_made
#define tide_pool_made_untried    oracle__tide_pool_made_untried
#define tide_pool_must_wait       oracle__tide_pool_must_wait
#define tide_pool_new             oracle__tide_pool_new
#define tide_pool_overload        oracle__tide_pool_overload
#define tide_pool_refusal         oracle__tide_pool_refusal
#define tide_pool_report          oracle__tide_pool_report
#define tide_pool_slot            oracle__tide_pool_slot
#define tide_pool_take            oracle__tide_pool_take
#define tide_pool_take_idle       oracle__tide_pool_take_idle
#define tide_pool_tried           oracle__tide_pool_tried
#define tide_pool_unmade          oracle__tide_pool_unmade

#endif
