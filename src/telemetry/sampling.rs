//! Which spans are recorded: the sampler the environment names (`OTEL_TRACES_SAMPLER`
//! and `_ARG`, read by the SDK), except the SQLite writer's batch span, which is recorded
//! whenever it is made ([`Sampling`]); and a warning for a sampler setting the SDK falls
//! back from ([`fallback`]), which it would otherwise do in silence (its own internal logs
//! are not compiled in).

use opentelemetry::trace::{Link, SpanKind, TraceContextExt, TraceId};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::trace::{SamplingDecision, SamplingResult, ShouldSample};

/// The name of the writer's batch span: made only for a batch that carried a sampled
/// write (`record_batch`), so always recorded, whatever the sampler says of a new trace.
pub const BATCH_SPAN: &str = "sqlite writer batch";

/// The environment's sampler, with the batch span recorded whenever it is made. A batch
/// span starts a trace of its own (a batch serves many traces, so it belongs to none):
/// left to a ratio sampler it would be kept as rarely as any new trace, and the links from
/// the sampled writes it carried would point at nothing.
#[derive(Debug, Clone)]
pub struct Sampling(pub Box<dyn ShouldSample>);

impl ShouldSample for Sampling {
    fn should_sample(
        &self,
        parent_context: Option<&Context>,
        trace_id: TraceId,
        name: &str,
        span_kind: &SpanKind,
        attributes: &[KeyValue],
        links: &[Link],
    ) -> SamplingResult {
        // The name first: for every other span that is all this costs (its length differs
        // from most names', so the comparison rarely reads a byte).
        let root = || parent_context.is_none_or(|cx| !cx.span().span_context().is_valid());
        if name == BATCH_SPAN && root() {
            return SamplingResult {
                decision: SamplingDecision::RecordAndSample,
                attributes: Vec::new(),
                trace_state: Default::default(),
            };
        }
        self.0.should_sample(parent_context, trace_id, name, span_kind, attributes, links)
    }
}

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
    use opentelemetry::trace::{SpanContext, SpanId, TraceFlags, TraceState};
    use opentelemetry_sdk::trace::Sampler;

    fn decide(sampling: &Sampling, parent: Option<&Context>, name: &str) -> SamplingDecision {
        let trace_id = TraceId::from_bytes([7; 16]);
        sampling.should_sample(parent, trace_id, name, &SpanKind::Internal, &[], &[]).decision
    }

    #[test]
    fn the_batch_span_is_recorded_when_the_sampler_keeps_no_new_trace() {
        let sampling = Sampling(Box::new(Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(0.0)))));

        assert_eq!(decide(&sampling, Some(&Context::new()), BATCH_SPAN), SamplingDecision::RecordAndSample);
        assert_eq!(decide(&sampling, None, BATCH_SPAN), SamplingDecision::RecordAndSample);
        assert_eq!(decide(&sampling, Some(&Context::new()), "PUT /x"), SamplingDecision::Drop);
    }

    #[test]
    fn a_span_under_a_parent_is_the_samplers_to_decide_whatever_its_name() {
        let sampling = Sampling(Box::new(Sampler::ParentBased(Box::new(Sampler::AlwaysOn))));
        let unsampled = SpanContext::new(
            TraceId::from_bytes([1; 16]),
            SpanId::from_bytes([2; 8]),
            TraceFlags::default(),
            true,
            TraceState::NONE,
        );
        let parent = Context::new().with_remote_span_context(unsampled);

        assert_eq!(decide(&sampling, Some(&parent), BATCH_SPAN), SamplingDecision::Drop);
    }

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
