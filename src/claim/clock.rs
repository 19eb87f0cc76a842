//! Time, behind a trait so tests control it (freshness, delays) without sleeping.

use std::time::Duration;

/// Milliseconds since the Unix epoch (UTC). Here, at the bottom of the domain, so that
/// every module can name a time without depending on [`super::model`].
pub type Millis = i64;

/// A source of wall-clock time and a way to wait.
pub trait Clock: Send + Sync {
    /// Milliseconds since the Unix epoch.
    fn now(&self) -> Millis;
    /// Blocks for `d` (a test clock advances itself instead).
    fn sleep(&self, d: Duration);
    /// The real time `d` of this clock lasts (what [`Clock::sleep`] would block for).
    fn real_duration(&self, d: Duration) -> Duration {
        d
    }
}

/// The system clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Millis {
        let d = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
    }

    fn sleep(&self, d: Duration) {
        std::thread::sleep(d)
    }
}

/// A clock that only moves when told to (or when something sleeps on it); records sleeps.
#[derive(Debug, Default)]
pub struct ManualClock {
    now: std::sync::Mutex<(Millis, Vec<Duration>)>,
}

impl ManualClock {
    /// A clock reading `start`.
    pub fn at(start: Millis) -> ManualClock {
        ManualClock { now: std::sync::Mutex::new((start, Vec::new())) }
    }

    /// Moves time forward by `ms`.
    pub fn advance(&self, ms: i64) {
        self.now.lock().unwrap_or_else(|p| p.into_inner()).0 += ms;
    }

    /// Every sleep so far, in order.
    pub fn sleeps(&self) -> Vec<Duration> {
        self.now.lock().unwrap_or_else(|p| p.into_inner()).1.clone()
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Millis {
        self.now.lock().unwrap_or_else(|p| p.into_inner()).0
    }

    fn sleep(&self, d: Duration) {
        let mut g = self.now.lock().unwrap_or_else(|p| p.into_inner());
        g.0 += i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
        g.1.push(d);
    }
}

/// The system clock running `scale` times faster from the moment it was made: one real
/// second reads as `scale` seconds. For drills (`coordinator serve --time-scale 60` runs a
/// 30-minute exercise in 30 seconds); never for production, where every TTL, freshness
/// threshold and throttle delay would shrink by the same factor.
#[derive(Debug, Clone, Copy)]
pub struct ScaledClock {
    origin_ms: Millis,
    origin: std::time::Instant,
    scale: u32,
}

impl ScaledClock {
    /// Starts now, at the system time, running `scale` (>= 1) times faster.
    pub fn new(scale: u32) -> ScaledClock {
        ScaledClock { origin_ms: SystemClock.now(), origin: std::time::Instant::now(), scale: scale.max(1) }
    }
}

impl Clock for ScaledClock {
    fn now(&self) -> Millis {
        let real = i64::try_from(self.origin.elapsed().as_millis()).unwrap_or(i64::MAX);
        self.origin_ms.saturating_add(real.saturating_mul(i64::from(self.scale)))
    }

    fn sleep(&self, d: Duration) {
        std::thread::sleep(self.real_duration(d))
    }

    fn real_duration(&self, d: Duration) -> Duration {
        d / self.scale
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scaled_clock_runs_faster_and_never_backwards() {
        let c = ScaledClock::new(1000);
        let a = c.now();
        std::thread::sleep(Duration::from_millis(20));
        let b = c.now();
        // 20 ms of real time is at least 20 s of scaled time.
        assert!(b - a >= 20_000, "{a} -> {b}");
        assert_eq!(ScaledClock::new(0).scale, 1);
    }
}
