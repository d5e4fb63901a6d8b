// The runs both engines are held to: each guard and each backend fault at
// least once, on more than one seed. Shared by the differential test and
// the browser test.
export const SCENARIOS = [
  { seed: 1 },
  { seed: 7 },
  { seed: 42, size: 16 },
  { seed: 3, breaker: 1, fail_share: 0.2 },
  { seed: 5, bucket_rate: 20, bucket_burst: 4, min: 0 },
  { seed: 9, server_idle_s: 2, keep_s: 10 },
  { seed: 11, loan_target_ms: 20, slow_share: 0.1 },
  { seed: 23, burst_lag_ms: 80 },
  { seed: 13, life_s: 3, spread: 0.3, backoff: 0 },
  { seed: 17, breaker: 0, shedder: 0, queue_max: 32, acquire_timeout_ms: 100 },
  { seed: 19, seconds: 60, rate_burst: 2000, size: 32, probes: 2 },
];

export function args(s) {
  return Object.entries(s).map(([k, v]) => `${k}=${v}`);
}
