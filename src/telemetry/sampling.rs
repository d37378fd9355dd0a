//! Which spans are recorded: the sampler the environment names (`OTEL_TRACES_SAMPLER`
//! and `_ARG`, read by the SDK); and a warning for a sampler setting the SDK falls back
//! from ([`fallback`]), which it would otherwise do in silence (its own internal logs are
//! not compiled in).

/// What the SDK does instead of what `sampler` (`OTEL_TRACES_SAMPLER`) and `arg`
/// (`OTEL_TRACES_SAMPLER_ARG`) ask, when it does not do that; `None` when it does.
pub fn fallback(sampler: Option<&str>, arg: Option<&str>) -> Option<String> {
    let sampler = sampler?;
    match sampler {
        "always_on" | "always_off" | "parentbased_always_on" | "parentbased_always_off" => None,
        "traceidratio" | "parentbased_traceidratio" => match arg.map(|a| a.parse::<f64>()) {
            Some(Ok(ratio)) if (0.0..=1.0).contains(&ratio) => None,
            Some(Ok(ratio)) => Some(format!(
                "OTEL_TRACES_SAMPLER_ARG {ratio} is outside 0 to 1: {sampler} samples {} trace",
                if ratio > 1.0 { "every" } else { "no" }
            )),
            _ => Some(format!(
                "OTEL_TRACES_SAMPLER {sampler} needs OTEL_TRACES_SAMPLER_ARG, a ratio from 0 to 1 (0.1 for \
                 10 %), not {arg:?}: every trace is sampled"
            )),
        },
        other => Some(format!(
            "OTEL_TRACES_SAMPLER {other:?} is not one of always_on, always_off, traceidratio, \
             parentbased_always_on, parentbased_always_off, parentbased_traceidratio: \
             parentbased_always_on is used (every trace without a caller's decision is sampled)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_setting_the_sdk_takes_as_it_is_needs_no_warning() {
        assert_eq!(fallback(None, Some("0.1")), None);
        assert_eq!(fallback(Some("parentbased_always_on"), None), None);
        assert_eq!(fallback(Some("parentbased_traceidratio"), Some("0.1")), None);
        assert_eq!(fallback(Some("traceidratio"), Some("1")), None);
    }

    #[test]
    fn a_setting_the_sdk_falls_back_from_is_named_with_what_it_does_instead() {
        let percent = fallback(Some("parentbased_traceidratio"), Some("10%")).expect("a warning");
        assert!(percent.contains("\"10%\"") && percent.contains("every trace is sampled"), "{percent}");
        let missing = fallback(Some("traceidratio"), None).expect("a warning");
        assert!(missing.contains("None"), "{missing}");
        let above = fallback(Some("traceidratio"), Some("2")).expect("a warning");
        assert!(above.contains("every trace"), "{above}");
        let unknown = fallback(Some("jaeger_remote"), None).expect("a warning");
        assert!(unknown.contains("parentbased_always_on is used"), "{unknown}");
    }
}
