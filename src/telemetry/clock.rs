//! The spans' clock: now, in nanoseconds since the Unix epoch, read twice per span (eight
//! times per request when every request is traced).
//!
//! `clock_gettime(CLOCK_REALTIME)`, even through the vDSO, is an ordered read of the CPU's
//! time-stamp counter, the kernel's sequence lock and a conversion: the eight readings were
//! ~0.7 % of the server's CPU per answer (`perf record`, 2026-11-27). Where the kernel
//! keeps time with the time-stamp counter itself (its clocksource is `tsc`, which it
//! chooses only for a counter that runs at a constant rate and agrees across CPUs), a
//! thread reads the counter and converts it from the last real-clock reading it made,
//! at a rate it measured between two such readings. It reads the real clock again after
//! [`REFRESH_NS`] (so a stepped or slewed clock is followed within that), and whenever a
//! reading looks wrong; anywhere else it reads the real clock every time.
//!
//! Two readings of one thread may go backwards by the error of the measured rate (well
//! under a microsecond over [`REFRESH_NS`]) when the real clock is read again between
//! them: a span's end is never put before its start ([`super::span::SpanRecord`]'s
//! writers take the later of the two).

use std::cell::Cell;
use std::sync::OnceLock;
use std::time::SystemTime;

/// How long a thread converts counter readings from one real-clock reading.
pub const REFRESH_NS: u64 = 1_000_000_000;

/// How long apart two real-clock readings must be at least for the rate between them to
/// be trusted (their own uncertainty, tens of nanoseconds, is then under 10⁻⁵ of it).
const CALIBRATION_NS: u64 = 10_000_000;

/// The most counter ticks a real-clock reading may take (at ~1–5 GHz, 10–50 µs) for the
/// pair to be an anchor: a thread descheduled in between would skew it.
const READ_TICKS: u64 = 50_000;

/// The rates a counter is believed at, in nanoseconds per tick (32.32 fixed point):
/// 250 MHz to 16 GHz.
const PLAUSIBLE_RATES: std::ops::Range<u64> = (1 << 32) / 16..(1 << 32) * 4;

/// Now, in nanoseconds since the Unix epoch.
pub fn now() -> u64 {
    if counter_keeps_time() { COUNTER.with(Counter::now) } else { real() }
}

/// The real clock: `unix_nanos(SystemTime::now())`, read with `clock_gettime` directly
/// (the checked `Duration` arithmetic of the `SystemTime` path costs about as much as
/// reading the clock).
pub fn real() -> u64 {
    let mut time = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime only writes the timespec it is given.
    if unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut time) } != 0 {
        return super::span::unix_nanos(SystemTime::now());
    }
    u64::try_from(time.tv_sec).unwrap_or(0).saturating_mul(1_000_000_000).saturating_add(time.tv_nsec as u64)
}

/// Whether the kernel keeps time with the time-stamp counter (read once).
fn counter_keeps_time() -> bool {
    static TSC: OnceLock<bool> = OnceLock::new();
    *TSC.get_or_init(|| {
        cfg!(target_arch = "x86_64")
            && std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
                .is_ok_and(|source| source.trim() == "tsc")
    })
}

/// The time-stamp counter.
#[cfg(target_arch = "x86_64")]
fn ticks() -> u64 {
    // SAFETY: RDTSC is on every x86_64 CPU; it reads a counter and touches no memory.
    unsafe { core::arch::x86_64::_rdtsc() }
}

#[cfg(not(target_arch = "x86_64"))]
fn ticks() -> u64 {
    0
}

/// One thread's conversion of counter ticks into real time.
struct Counter {
    /// The counter at the last real-clock reading, and that reading.
    anchor_ticks: Cell<u64>,
    anchor_ns: Cell<u64>,
    /// Nanoseconds per tick, in 32.32 fixed point (0 until measured).
    rate: Cell<u64>,
    /// How many ticks past the anchor readings are converted ([`REFRESH_NS`]'s worth).
    span: Cell<u64>,
}

thread_local! {
    static COUNTER: Counter = const {
        Counter { anchor_ticks: Cell::new(0), anchor_ns: Cell::new(0), rate: Cell::new(0), span: Cell::new(0) }
    };
}

impl Counter {
    fn now(&self) -> u64 {
        let ticks = ticks();
        let since = ticks.wrapping_sub(self.anchor_ticks.get());
        if since < self.span.get() {
            let elapsed = (u128::from(since) * u128::from(self.rate.get())) >> 32;
            return self.anchor_ns.get() + elapsed as u64;
        }
        self.reanchor(ticks)
    }

    /// Reads the real clock, measures the counter's rate against the last anchor when it
    /// is far enough back, and makes the reading the anchor when it was quick. Returns it.
    #[cold]
    fn reanchor(&self, before: u64) -> u64 {
        let ns = real();
        let after = ticks();
        let read = after.wrapping_sub(before);
        if read > READ_TICKS {
            return ns;
        }
        let at = before.wrapping_add(read / 2);
        let (anchor_ticks, anchor_ns) = (self.anchor_ticks.get(), self.anchor_ns.get());
        let ticks = at.wrapping_sub(anchor_ticks);
        let measured = match ns.checked_sub(anchor_ns) {
            Some(elapsed) if anchor_ns != 0 && elapsed >= CALIBRATION_NS && ticks < 1 << 62 => {
                u64::try_from((u128::from(elapsed) << 32) / u128::from(ticks.max(1)))
                    .ok()
                    .filter(|rate| PLAUSIBLE_RATES.contains(rate))
            }
            // Too close to the first anchor to measure the rate from: keep it.
            Some(_) if anchor_ns != 0 && self.rate.get() == 0 => return ns,
            _ => None,
        };
        match measured {
            Some(rate) => {
                self.rate.set(rate);
                let span = (u128::from(REFRESH_NS) << 32) / u128::from(rate);
                self.span.set(u64::try_from(span).unwrap_or(0));
            }
            // The first reading, a clock or counter that went back, a rate no counter
            // runs at: measure again from here.
            None => {
                self.rate.set(0);
                self.span.set(0);
            }
        }
        self.anchor_ticks.set(at);
        self.anchor_ns.set(ns);
        ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_real_clock_is_the_one_system_time_reads() {
        let before = super::super::span::unix_nanos(SystemTime::now());
        let now = real();
        let after = super::super::span::unix_nanos(SystemTime::now());
        assert!(before <= now && now <= after, "{before} {now} {after}");
    }

    #[test]
    fn readings_converted_from_the_counter_stay_within_microseconds_of_the_real_clock() {
        // Arrange: a thread of its own, whose counter is measured after 10 ms.
        std::thread::spawn(|| {
            now();
            std::thread::sleep(std::time::Duration::from_millis(20));
            now();
            // Act and assert: over half a second, every reading is within 50 µs of the
            // real clock's around it, and readings never go back.
            let started = real();
            let mut last = 0;
            while real() - started < 500_000_000 {
                let (before, reading, after) = (real(), now(), real());
                assert!(
                    reading + 50_000 >= before && reading <= after + 50_000,
                    "{before} {reading} {after}"
                );
                assert!(reading >= last, "{reading} after {last}");
                last = reading;
            }
            if counter_keeps_time() {
                assert_ne!(COUNTER.with(|counter| counter.rate.get()), 0, "the counter's rate was measured");
            }
        })
        .join()
        .expect("the thread passed");
    }
}
