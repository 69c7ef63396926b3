//! The app's clock, injectable so no test depends on the wall clock.

use jiff::Timestamp;
use std::sync::Mutex;

pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> Timestamp;
}

/// The real clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }
}

/// A clock that shows a set instant until told otherwise (tests).
#[derive(Debug)]
pub struct FixedClock(Mutex<Timestamp>);

impl FixedClock {
    pub fn new(at: Timestamp) -> Self {
        FixedClock(Mutex::new(at))
    }

    pub fn set(&self, at: Timestamp) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = at;
    }
}

impl Clock for FixedClock {
    fn now(&self) -> Timestamp {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}
