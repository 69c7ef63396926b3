//! The load generator: a fixed number of concurrent workers, each sending one
//! request at a time over a keep-alive connection for a fixed duration, and
//! recording each request's latency (send to last body byte).

use crate::dataset::Rng;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Builds the `seq`-th request of a run (`seq` is unique within the run).
pub type MakeRequest = Arc<dyn Fn(&reqwest::Client, &mut Rng, u64) -> reqwest::RequestBuilder + Send + Sync>;

/// The raw outcome of one or more runs.
#[derive(Debug, Default, Clone)]
pub struct Sample {
    pub latencies: Vec<Duration>,
    pub errors: u64,
    pub elapsed: Duration,
    pub first_error: Option<String>,
}

impl Sample {
    pub fn merge(&mut self, other: Sample) {
        self.latencies.extend(other.latencies);
        self.errors += other.errors;
        self.elapsed += other.elapsed;
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
    }

    /// Completed requests (answered, errors included) per second.
    pub fn throughput(&self) -> f64 {
        let secs = self.elapsed.as_secs_f64();
        if secs == 0.0 { 0.0 } else { self.latencies.len() as f64 / secs }
    }

    /// The latency at `q` (0..=1), nearest rank.
    pub fn quantile(&self, q: f64) -> Duration {
        quantile(&self.latencies, q)
    }
}

pub fn quantile(values: &[Duration], q: f64) -> Duration {
    if values.is_empty() {
        return Duration::ZERO;
    }
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// How long one request may take before it counts as an error.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// Drives `make`'s requests from `concurrency` workers for `duration`.
pub async fn drive(
    client: &reqwest::Client,
    make: &MakeRequest,
    concurrency: usize,
    duration: Duration,
    seed: u64,
) -> Sample {
    let seq = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let deadline = started + duration;
    let mut workers = tokio::task::JoinSet::new();
    for w in 0..concurrency {
        let (client, make, seq) = (client.clone(), Arc::clone(make), Arc::clone(&seq));
        workers.spawn(async move {
            let mut rng = Rng::new(seed.wrapping_mul(1_000_003).wrapping_add(w as u64));
            let mut out = Sample::default();
            while Instant::now() < deadline {
                let n = seq.fetch_add(1, Ordering::Relaxed);
                let request = make(&client, &mut rng, n).timeout(REQUEST_TIMEOUT);
                let t = Instant::now();
                let failure = match request.send().await {
                    Ok(resp) => {
                        let status = resp.status();
                        match resp.bytes().await {
                            Ok(_) if status.is_success() => None,
                            Ok(body) => {
                                Some(format!("{status}: {}", String::from_utf8_lossy(&body[..body.len().min(300)])))
                            }
                            Err(e) => Some(format!("reading the body: {e}")),
                        }
                    }
                    Err(e) => Some(format!("{e}")),
                };
                out.latencies.push(t.elapsed());
                if let Some(f) = failure {
                    out.errors += 1;
                    out.first_error.get_or_insert(f);
                }
            }
            out
        });
    }
    let mut total = Sample::default();
    while let Some(done) = workers.join_next().await {
        match done {
            Ok(s) => total.merge(s),
            Err(e) => {
                total.errors += 1;
                total.first_error.get_or_insert(format!("a load worker failed: {e}"));
            }
        }
    }
    total.elapsed = started.elapsed();
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_are_nearest_rank() {
        let v: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        assert_eq!(quantile(&v, 0.5), Duration::from_millis(50));
        assert_eq!(quantile(&v, 0.99), Duration::from_millis(99));
        assert_eq!(quantile(&v, 1.0), Duration::from_millis(100));
        assert_eq!(quantile(&[], 0.5), Duration::ZERO);
    }
}
