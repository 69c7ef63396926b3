//! The crawler's clock, injected: check times, the robots cache's age and
//! the failure window are read from it, so tests move time by hand.

/// Unix seconds now.
pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> i64;
}

/// This machine's clock (the binary's choice; a clock before 1970 reads 0).
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
    }
}
