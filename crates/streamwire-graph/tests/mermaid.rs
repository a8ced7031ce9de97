//! `Plan::to_mermaid`: a plan with processes on two hosts and codec nodes, as a person
//! reads it in a Mermaid flowchart.

use streamwire_core::{Compressed, In, Out};
use streamwire_graph::{Blueprint, Placement};
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
    insta::assert_snapshot!(mermaid);
}
