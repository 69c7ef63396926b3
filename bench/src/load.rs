//! The load generator: a fixed number of concurrent workers, each sending one
//! request at a time over its own keep-alive connection ([`crate::http1`]) for a
//! fixed duration, and recording each request's latency (send to last body
//! byte).

use crate::dataset::Rng;
use crate::http1::{Conn, Request};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Builds the `seq`-th request of a run (`seq` is unique within the run).
pub type MakeRequest = Arc<dyn Fn(&mut Rng, u64) -> Request + Send + Sync>;

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

    /// Counts one failed request, keeping the first message.
    pub fn fail(&mut self, message: String) {
        self.errors += 1;
        self.first_error.get_or_insert(message);
    }
}

/// One success in this many is read whole (the first of each worker too).
const SAMPLE_EVERY: u64 = 32;

/// Whether a 2xx body is what the workloads ask for: a record (an object with
/// its `id`) or a page (an object with `items`), and no error envelope.
pub fn plausible(body: &[u8]) -> Result<(), String> {
    let value: serde_json::Value = serde_json::from_slice(body).map_err(|e| format!("a body that is no JSON ({e})"))?;
    let object = value.as_object().ok_or("a body that is no JSON object")?;
    if object.get("ok") == Some(&serde_json::Value::Bool(false)) {
        return Err("an error envelope".into());
    }
    let record = object.get("id").and_then(serde_json::Value::as_str).is_some_and(|id| !id.is_empty());
    let page = object.get("items").is_some_and(serde_json::Value::is_array);
    if record || page { Ok(()) } else { Err("neither a record nor a page".into()) }
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

/// How long one request may take before it counts as an error. One timer per
/// worker, not per request: a worker still busy this long after its run
/// ended is stopped and its unanswered request counted as an error.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// Drives `make`'s requests to the server at `url` from `concurrency`
/// workers for `duration`, all on one thread of their own (as `wrk -t1`):
/// one event loop, no wake-ups across threads on the generator's side.
pub async fn drive(url: &str, make: &MakeRequest, concurrency: usize, duration: Duration, seed: u64) -> Sample {
    let (url, make) = (url.to_owned(), Arc::clone(make));
    let run = tokio::task::spawn_blocking(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        Ok::<Sample, std::io::Error>(runtime.block_on(drive_here(&url, &make, concurrency, duration, seed)))
    });
    match run.await {
        Ok(Ok(sample)) => sample,
        Ok(Err(e)) => failed(format!("cannot start the load generator's runtime: {e}")),
        Err(e) => failed(format!("the load generator failed: {e}")),
    }
}

fn failed(message: String) -> Sample {
    let mut sample = Sample::default();
    sample.fail(message);
    sample
}

async fn drive_here(url: &str, make: &MakeRequest, concurrency: usize, duration: Duration, seed: u64) -> Sample {
    let seq = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let deadline = started + duration;
    let mut workers = tokio::task::JoinSet::new();
    for w in 0..concurrency {
        let (url, make, seq) = (url.to_owned(), Arc::clone(make), Arc::clone(&seq));
        workers.spawn(async move {
            let rng = Rng::new(seed.wrapping_mul(1_000_003).wrapping_add(w as u64));
            let out = Arc::new(std::sync::Mutex::new(Sample::default()));
            let run = worker(&url, &make, &seq, deadline, rng, Arc::clone(&out));
            let timed_out = tokio::time::timeout(duration + REQUEST_TIMEOUT, run).await.is_err();
            let mut out = std::mem::take(&mut *out.lock().unwrap_or_else(|e| e.into_inner()));
            if timed_out {
                out.fail(format!("a request took longer than {REQUEST_TIMEOUT:?}"));
            }
            out
        });
    }
    let mut total = Sample::default();
    while let Some(done) = workers.join_next().await {
        match done {
            Ok(s) => total.merge(s),
            Err(e) => total.fail(format!("a load worker failed: {e}")),
        }
    }
    total.elapsed = started.elapsed();
    total
}

/// One worker: requests back to back until `deadline`, reconnecting after a
/// failed one.
async fn worker(
    url: &str,
    make: &MakeRequest,
    seq: &AtomicU64,
    deadline: Instant,
    mut rng: Rng,
    out: Arc<std::sync::Mutex<Sample>>,
) {
    let mut conn: Option<Conn> = None;
    let mut answered: u64 = 0;
    while Instant::now() < deadline {
        let request = make(&mut rng, seq.fetch_add(1, Ordering::Relaxed));
        let t = Instant::now();
        let answer = match conn.as_mut() {
            Some(c) => c.send(&request).await,
            None => match Conn::open(url).await {
                Ok(c) => conn.insert(c).send(&request).await,
                Err(e) => Err(e),
            },
        };
        let latency = t.elapsed();
        let mut out = out.lock().unwrap_or_else(|e| e.into_inner());
        out.latencies.push(latency);
        match answer {
            Ok((status, body)) if (200..300).contains(&status) => {
                // A sample of the successes is read, so a fast wrong answer
                // (an empty page, an error shaped as 200) cannot count.
                answered += 1;
                if answered % SAMPLE_EVERY == 1
                    && let Err(why) = plausible(&body)
                {
                    out.fail(format!("{status} with {why}: {}", String::from_utf8_lossy(&body[..body.len().min(300)])));
                }
            }
            Ok((status, body)) => {
                out.fail(format!("{status}: {}", String::from_utf8_lossy(&body[..body.len().min(300)])))
            }
            Err(e) => {
                out.fail(format!("{e:#}"));
                conn = None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_records_and_pages_are_plausible() {
        assert_eq!(plausible(br#"{"id": "abc", "title": "x"}"#), Ok(()));
        assert_eq!(plausible(br#"{"page": 1, "items": []}"#), Ok(()));
        assert!(plausible(br#"{"a2app": true, "ok": false, "code": "internal", "id": "x"}"#).is_err());
        assert!(plausible(br#"{"title": "x"}"#).is_err());
        assert!(plausible(br#"{"id": ""}"#).is_err());
        assert!(plausible(b"[]").is_err());
        assert!(plausible(b"").is_err());
    }

    #[test]
    fn quantiles_are_nearest_rank() {
        let v: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        assert_eq!(quantile(&v, 0.5), Duration::from_millis(50));
        assert_eq!(quantile(&v, 0.99), Duration::from_millis(99));
        assert_eq!(quantile(&v, 1.0), Duration::from_millis(100));
        assert_eq!(quantile(&[], 0.5), Duration::ZERO);
    }
}
