//! The layers of ARCHITECTURE.md hold: its table of crates names every package of the
//! workspace once, with a layer, and every normal dependency (optional ones included) of a
//! package on another of ours points to a lower layer. Dev-dependencies may point up (the
//! crates below the facade take it as one so their doc examples read as a user writes).

use std::collections::BTreeMap;

#[path = "common/metadata.rs"]
mod metadata;

use metadata::workspace;

/// ARCHITECTURE.md's table of crates: package name to layer, from the rows of the table in
/// its section "The crates" (`| 3 | `streamwire-graph` | ... |`).
fn layers_in_architecture() -> BTreeMap<String, u32> {
    let text = std::fs::read_to_string(workspace().join("ARCHITECTURE.md"))
        .expect("ARCHITECTURE.md is readable");
    let section = text
        .split("\n## ")
        .find(|section| section.starts_with("The crates"))
        .expect("ARCHITECTURE.md has a section \"The crates\"");
    let mut layers = BTreeMap::new();
    for row in section.lines().filter(|line| line.starts_with('|')) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        // `| layer | crate | what it holds |` splits into five cells, empty at both ends.
        let (Some(layer), Some(krate)) = (cells.get(1), cells.get(2)) else {
            continue;
        };
        let Some(layer) = layer.split_whitespace().next().and_then(|n| n.parse().ok()) else {
            continue; // the header and the separator
        };
        let krate = krate.trim_matches('`').to_owned();
        let previous = layers.insert(krate.clone(), layer);
        assert!(previous.is_none(), "`{krate}` is in the table twice");
    }
    layers
}

/// Every package of the workspace with its normal dependencies on packages of the
/// workspace, from `cargo metadata --no-deps` (no resolution, no network).
fn workspace_dependencies() -> BTreeMap<String, Vec<String>> {
    let metadata = metadata::cargo_metadata();
    let packages = metadata["packages"].as_array().expect("a list of packages");
    let name = |value: &serde_json::Value| value["name"].as_str().expect("a name").to_owned();
    let ours: Vec<String> = packages.iter().map(name).collect();
    packages
        .iter()
        .map(|package| {
            let dependencies = package["dependencies"]
                .as_array()
                .expect("a list of dependencies")
                .iter()
                // `kind` is null for a normal dependency, "dev" or "build" otherwise.
                .filter(|dependency| dependency["kind"].is_null())
                .map(name)
                .filter(|dependency| ours.contains(dependency))
                .collect();
            (name(package), dependencies)
        })
        .collect()
}

#[test]
fn the_table_of_crates_names_every_package_once() {
    let layers = layers_in_architecture();
    let packages = workspace_dependencies();
    let missing: Vec<&String> = packages
        .keys()
        .filter(|p| !layers.contains_key(*p))
        .collect();
    let unknown: Vec<&String> = layers
        .keys()
        .filter(|c| !packages.contains_key(*c))
        .collect();
    assert!(
        missing.is_empty() && unknown.is_empty(),
        "ARCHITECTURE.md's table of crates lacks {missing:?} and names {unknown:?}, \
         which are not packages of the workspace"
    );
}

#[test]
fn dependencies_point_to_lower_layers() {
    let layers = layers_in_architecture();
    let mut upward = Vec::new();
    for (package, dependencies) in workspace_dependencies() {
        let Some(&layer) = layers.get(&package) else {
            continue; // the test above names it
        };
        for dependency in dependencies {
            match layers.get(&dependency) {
                Some(&below) if below < layer => {}
                found => upward.push(format!(
                    "{package} (layer {layer}) -> {dependency} (layer {found:?})"
                )),
            }
        }
    }
    assert!(
        upward.is_empty(),
        "dependencies that do not point down (ARCHITECTURE.md, \"The crates\"):\n{}",
        upward.join("\n")
    );
}
