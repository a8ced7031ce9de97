//! The `tracing` span of every thread a run starts, made where the plan is at hand: a log
//! line from a module, a codec node or a sender names its `process`, `instance`, `stream`
//! and `port` (the failure policy in ARCHITECTURE.md). A span made here is the child of
//! whatever span starts the run (a cluster worker's `worker` span, say).

use streamwire_graph::{CodecKind, CodecNode, Endpoint, InstanceNode, Plan};

/// The span of instance `node`'s thread.
pub(super) fn instance(node: &InstanceNode) -> tracing::Span {
    tracing::info_span!(
        "instance",
        process = %node.placement,
        instance = %node.name,
        module = node.module_type,
    )
}

/// The span of codec node `node`'s thread; `port` is the producer's port for an encoder,
/// the consumers' ports for a decoder.
pub(super) fn codec(plan: &Plan, node: &CodecNode) -> tracing::Span {
    let at = Endpoint::Codec(node.id);
    let ports: Vec<String> = match node.kind {
        CodecKind::Decode => plan
            .links_from(at)
            .map(|link| plan.endpoint_name(link.to))
            .collect(),
        _ => plan
            .feed(at)
            .map(|link| plan.endpoint_name(link.from))
            .into_iter()
            .collect(),
    };
    tracing::info_span!(
        "codec",
        process = %node.placement,
        stream = %node.stream,
        port = %ports.join(", "),
        role = %node.kind,
        codec = node.codec.name(),
    )
}

/// The span of the encoder that offers `instance.port`'s bytes to taps.
pub(super) fn tap_encoder(
    process: &str,
    instance: &str,
    field: &str,
    stream: &str,
) -> tracing::Span {
    tracing::info_span!(
        "codec",
        process = %process,
        stream = %stream,
        port = %format!("{instance}.{field}"),
        role = "encode for taps",
    )
}

/// The span of the sender of `stream` out of `process`; `port` names its producers.
pub(super) fn sender(plan: &Plan, process: &str, stream: &str) -> tracing::Span {
    // An encoded stream's producer is the port that feeds its encoder.
    let encoders: Vec<Endpoint> = plan
        .codec_nodes()
        .filter(|c| c.kind == CodecKind::Encode && c.encoded_stream == stream)
        .map(|c| Endpoint::Codec(c.id))
        .collect();
    let mut ports: Vec<String> = plan
        .links()
        .filter(|link| link.stream == stream || encoders.contains(&link.to))
        .filter(|link| matches!(link.from, Endpoint::Port { .. }))
        .map(|link| plan.endpoint_name(link.from))
        .collect();
    ports.sort();
    ports.dedup();
    tracing::info_span!(
        "sender",
        process = %process,
        stream = %stream,
        port = %ports.join(", "),
    )
}
