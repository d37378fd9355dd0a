//! Which traces are recorded: the standard `OTEL_TRACES_SAMPLER` (and `_ARG`) samplers.

/// A sampler, as `OTEL_TRACES_SAMPLER` names it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Sampler {
    /// `always_on`: every trace.
    AlwaysOn,
    /// `always_off`: none.
    AlwaysOff,
    /// `traceidratio`: a trace when its id's low 63 bits fall below the bound (ratio × 2^63),
    /// so every service sampling by the same ratio keeps the same traces.
    Ratio(u64),
    /// `parentbased_*`: what the caller decided when there is a caller, else the root
    /// sampler (the default: `parentbased_always_on`).
    ParentBased(Root),
}

/// The root sampler of a parent-based one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Root {
    /// Every trace.
    AlwaysOn,
    /// None.
    AlwaysOff,
    /// By trace id (see [`Sampler::Ratio`]).
    Ratio(u64),
}

impl Sampler {
    /// The sampler `name` and `arg` (the variables' values) configure; `Err` names what is
    /// wrong (the caller warns and keeps the default).
    pub fn from_settings(name: Option<&str>, arg: Option<&str>) -> Result<Self, String> {
        let ratio = || -> Result<u64, String> {
            let Some(arg) = arg else { return Ok(bound(1.0)) };
            match arg.trim().parse::<f64>() {
                Ok(r) if (0.0..=1.0).contains(&r) => Ok(bound(r)),
                _ => Err(format!("OTEL_TRACES_SAMPLER_ARG {arg:?} is not a ratio between 0 and 1")),
            }
        };
        Ok(match name.map(str::trim).unwrap_or("parentbased_always_on") {
            "always_on" => Sampler::AlwaysOn,
            "always_off" => Sampler::AlwaysOff,
            "traceidratio" => Sampler::Ratio(ratio()?),
            "parentbased_always_on" => Sampler::ParentBased(Root::AlwaysOn),
            "parentbased_always_off" => Sampler::ParentBased(Root::AlwaysOff),
            "parentbased_traceidratio" => Sampler::ParentBased(Root::Ratio(ratio()?)),
            other => return Err(format!("OTEL_TRACES_SAMPLER {other:?} is not one this service knows")),
        })
    }

    /// Whether a new server span of trace `trace_id` is recorded, given the caller's
    /// decision (`None` when it starts the trace).
    pub fn sample(&self, caller_sampled: Option<bool>, trace_id: &[u8; 16]) -> bool {
        let by_ratio = |bound: u64| {
            let low = u64::from_be_bytes(trace_id[8..].try_into().unwrap_or([0; 8]));
            (low >> 1) < bound
        };
        match (self, caller_sampled) {
            (Sampler::AlwaysOn, _) => true,
            (Sampler::AlwaysOff, _) => false,
            (Sampler::Ratio(bound), _) => by_ratio(*bound),
            (Sampler::ParentBased(_), Some(sampled)) => sampled,
            (Sampler::ParentBased(Root::AlwaysOn), None) => true,
            (Sampler::ParentBased(Root::AlwaysOff), None) => false,
            (Sampler::ParentBased(Root::Ratio(bound)), None) => by_ratio(*bound),
        }
    }
}

/// The bound of [`Sampler::Ratio`] for `ratio` (as the reference SDKs compute it).
fn bound(ratio: f64) -> u64 {
    (ratio * (1u64 << 63) as f64) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_follows_the_caller_and_records_new_traces() {
        let sampler = Sampler::from_settings(None, None).expect("default");
        assert!(sampler.sample(None, &[1; 16]));
        assert!(!sampler.sample(Some(false), &[1; 16]));
        assert!(sampler.sample(Some(true), &[1; 16]));
    }

    #[test]
    fn a_ratio_keeps_about_that_share_of_random_traces() {
        let sampler = Sampler::from_settings(Some("parentbased_traceidratio"), Some("0.1")).expect("valid");
        let kept = (0..20_000).filter(|_| sampler.sample(None, &fastrand::u128(..).to_be_bytes())).count();
        assert!((1_600..2_400).contains(&kept), "{kept} of 20 000 kept at 0.1");
        assert!(sampler.sample(Some(true), &[0xff; 16]), "the caller's decision wins");
    }

    #[test]
    fn unknown_samplers_and_ratios_are_refused() {
        assert!(Sampler::from_settings(Some("jaeger_remote"), None).is_err());
        assert!(Sampler::from_settings(Some("traceidratio"), Some("1.5")).is_err());
        assert!(Sampler::from_settings(Some("traceidratio"), Some("half")).is_err());
        assert_eq!(Sampler::from_settings(Some("always_off"), None), Ok(Sampler::AlwaysOff));
    }
}
