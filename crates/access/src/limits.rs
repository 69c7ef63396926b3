//! Per-caller rate limits: a token bucket per credential, never per IP
//! (every local agent shares 127.0.0.1).
//!
//! A caller's key is what it proved, not what it claims: the agent token (all
//! holders share it), a user id, the app's own page, or anonymous. The agent
//! name is self-asserted and would let anyone mint fresh buckets.

use crate::caller::Caller;
use crate::caller::Intent;
use a2app_definition::config::Limits;
use jiff::Timestamp;
use std::collections::HashMap;
use std::sync::Mutex;

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Timestamp,
}

pub struct Limiter {
    limits: Limits,
    buckets: Mutex<HashMap<(String, bool), Bucket>>,
}

impl Limiter {
    pub fn new(limits: Limits) -> Limiter {
        Limiter { limits, buckets: Mutex::new(HashMap::new()) }
    }

    /// Takes one token; on refusal, the whole seconds until one is available.
    pub fn take(&self, caller: &Caller, intent: Intent, now: Timestamp) -> Result<(), u64> {
        let per_minute = match intent {
            Intent::Write => self.limits.writes_per_minute,
            Intent::Read => self.limits.reads_per_minute,
        };
        if per_minute == 0 {
            return Ok(());
        }
        let key = match (&caller.grant, &caller.user) {
            (Some(grant), _) => format!("grant:{}", grant.id),
            (None, Some(user)) => format!("user:{}", user.id),
            (None, None) => caller.kind.as_str().to_owned(),
        };
        let capacity = f64::from(per_minute);
        let rate = capacity / 60.0;
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        let bucket = buckets.entry((key, intent == Intent::Write)).or_insert(Bucket { tokens: capacity, at: now });
        let elapsed = now.duration_since(bucket.at).as_secs_f64().max(0.0);
        bucket.tokens = (bucket.tokens + elapsed * rate).min(capacity);
        bucket.at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Ok(())
        } else {
            Err(((1.0 - bucket.tokens) / rate).ceil().max(1.0) as u64)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::caller::CallerKind;

    #[test]
    fn a_bucket_empties_then_refills_per_caller() {
        let limiter = Limiter::new(Limits { writes_per_minute: 3, reads_per_minute: 0 });
        let t0: Timestamp = "2026-07-30T09:00:00Z".parse().unwrap();
        let agent = Caller::agent(Some("a".into()));
        for _ in 0..3 {
            assert_eq!(limiter.take(&agent, Intent::Write, t0), Ok(()));
        }
        assert_eq!(limiter.take(&agent, Intent::Write, t0), Err(20));
        // Another credential has its own bucket; reads are unlimited here.
        let user = Caller {
            kind: CallerKind::Agent,
            agent: None,
            user: Some(crate::caller::User { id: "u1".into(), record: Default::default() }),
            grant: None,
            request: None,
        };
        assert_eq!(limiter.take(&user, Intent::Write, t0), Ok(()));
        assert_eq!(limiter.take(&agent, Intent::Read, t0), Ok(()));
        // Renaming the agent does not help: the bucket belongs to the token.
        assert_eq!(limiter.take(&Caller::agent(Some("b".into())), Intent::Write, t0), Err(20));
        let t1 = t0.checked_add(jiff::SignedDuration::from_secs(20)).unwrap();
        assert_eq!(limiter.take(&agent, Intent::Write, t1), Ok(()));
    }
}
