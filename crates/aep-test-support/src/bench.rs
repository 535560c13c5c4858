//! What the benches share: their knobs (event counts, rounds), read from the
//! environment so a run on a slow machine can ask for less.

use std::str::FromStr;

/// The environment variable `name` parsed as a `T`, or `default` when it is unset or
/// does not parse.
///
/// ```
/// use aep_test_support::bench::env_or;
///
/// let rounds: usize = env_or("AEP_BENCH_NO_SUCH_KNOB", 3);
/// assert_eq!(rounds, 3);
/// ```
pub fn env_or<T: FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}
