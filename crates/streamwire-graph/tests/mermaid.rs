//! `Plan::to_mermaid`: a plan with processes on two hosts and codec nodes, as a person
//! reads it in a Mermaid flowchart; its nodes are DOT's and the JSON summary's.

use std::collections::BTreeSet;

use streamwire_core::{Compressed, In, Out};
use streamwire_graph::{Blueprint, Placement, Plan};
use streamwire_macros::Module;
use streamwire_msgs::Image;

#[derive(Module)]
#[module(crate = streamwire_core)]
struct Camera {
    color_image: Out<Compressed<Image>>,
}

#[derive(Module)]
#[module(crate = streamwire_core)]
struct Viewer {
    #[port(name = "color_image")]
    frames: In<Image>,
}

#[test]
fn a_plan_across_hosts_as_mermaid() {
    let mut blueprint = Blueprint::new();
    blueprint.add(
        "cam",
        Camera {
            color_image: Out::new(),
        },
    );
    let near = blueprint.add("near_viewer", Viewer { frames: In::new() });
    blueprint.place(&near, Placement::process("ui"));
    let far = blueprint.add("far_viewer", Viewer { frames: In::new() });
    blueprint.place(&far, Placement::process("ui").on_host("laptop"));
    let plan = blueprint.autoconnect().build().unwrap();
    let mermaid = plan.to_mermaid();
    // Compressed across hosts only: one encode by the camera, one decode on the laptop.
    assert_eq!(mermaid.matches("{{\"encode").count(), 1, "{mermaid}");
    assert_eq!(mermaid.matches("{{\"decode").count(), 1, "{mermaid}");
    assert_every_edge_names_a_declared_node(&mermaid);
    insta::assert_snapshot!(mermaid);
}

/// The ids a Mermaid flowchart declares (`id["label"]`, `id{{"label"}}`), and its edges'
/// ends (`from -->|"label"| to`): every end is declared.
pub fn assert_every_edge_names_a_declared_node(mermaid: &str) {
    let declared: BTreeSet<&str> = mermaid
        .lines()
        .map(str::trim)
        .filter(|l| !l.contains("-->") && !l.starts_with("subgraph"))
        .filter_map(|l| l.split_once(['[', '{']).map(|(id, _)| id))
        .collect();
    let mut edges = 0;
    for line in mermaid.lines().filter(|l| l.contains("-->")) {
        let line = line.trim();
        let from = line.split(" -->").next().unwrap_or_default();
        let to = line.rsplit("| ").next().unwrap_or_default();
        assert!(
            declared.contains(from),
            "`{from}` is not declared: {line}\n{mermaid}"
        );
        assert!(
            declared.contains(to),
            "`{to}` is not declared: {line}\n{mermaid}"
        );
        edges += 1;
    }
    assert!(edges > 0, "{mermaid}");
}

/// Two pixel consumers in two processes of the laptop: a decoder each, two nodes in
/// every rendering (they were one in Mermaid, and its edges named undeclared ids).
fn two_decoders() -> Plan {
    let mut blueprint = Blueprint::new();
    blueprint.add(
        "cam",
        Camera {
            color_image: Out::new(),
        },
    );
    let left = blueprint.add("left", Viewer { frames: In::new() });
    blueprint.place(&left, Placement::process("ui").on_host("laptop"));
    let right = blueprint.add("right", Viewer { frames: In::new() });
    blueprint.place(&right, Placement::process("tools").on_host("laptop"));
    blueprint.autoconnect().build().expect("the plan builds")
}

#[test]
fn two_decoders_are_two_nodes_in_mermaid_dot_and_json() {
    let plan = two_decoders();
    let mermaid = plan.to_mermaid();
    assert_eq!(mermaid.matches("{{\"decode").count(), 2, "{mermaid}");
    assert_every_edge_names_a_declared_node(&mermaid);
    insta::assert_snapshot!(mermaid);
    // One identity: the summary's nodes are DOT's node ids, and its links' ends are
    // among them, as DOT's edges' are.
    let summary = plan.summary();
    let nodes: BTreeSet<String> = summary
        .instances
        .iter()
        .map(|i| i.node.clone())
        .chain(summary.codec_nodes.iter().map(|c| c.node.clone()))
        .collect();
    assert_eq!(
        nodes.len(),
        summary.instances.len() + summary.codec_nodes.len()
    );
    let dot = plan.to_dot();
    for node in &nodes {
        assert!(
            dot.contains(&format!("\"{node}\" [")),
            "{node} not in\n{dot}"
        );
    }
    for link in &summary.links {
        assert!(nodes.contains(&link.from_node) && nodes.contains(&link.to_node));
        let edge = format!("\"{}\" -> \"{}\"", link.from_node, link.to_node);
        assert!(dot.contains(&edge), "{edge} not in\n{dot}");
    }
}
