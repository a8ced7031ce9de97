//! The relay's settings are plain keys of its instance: a blueprint file names the relay
//! alone (every setting has a default) or gives any setting flat, durations as text.

use std::path::Path;

use streamwire::{BlueprintFile, FileFormat};
use streamwire_web::WebRelay;

/// `yaml` read as a blueprint file.
fn parse(yaml: &str) -> Result<BlueprintFile, String> {
    BlueprintFile::parse(yaml, FileFormat::Yaml, Path::new("relay.yaml"))
        .map_err(|error| error.to_string())
}

/// The relay's settings as a file holds them (and `config` lists them).
fn settings_of(file: &BlueprintFile) -> serde_json::Value {
    let (_, module) = file.instances.0.first().expect("one instance");
    serde_json::to_value(&**module).expect("serializes")
}

#[test]
fn a_file_names_the_relay_alone_and_gives_its_settings_as_plain_keys() {
    // Linked, so that `type: WebRelay` is registered.
    let _ = WebRelay::default();
    let alone = parse("instances:\n  web: { type: WebRelay }\n").expect("no `config: {}` needed");
    let defaults = serde_json::to_string_pretty(&settings_of(&alone)).expect("prints");
    insta::assert_snapshot!("relay_defaults", defaults);
    alone.into_blueprint().build().expect("plans");

    let flat = parse(
        "instances:\n  web:\n    type: WebRelay\n    port: 0\n    idle_timeout: 1m 30s\n    \
         allowed_origins: [\"https://app.foxglove.dev\"]\n",
    )
    .expect("plain keys");
    let settings = settings_of(&flat);
    assert_eq!(
        (
            &settings["port"],
            &settings["idle_timeout"],
            &settings["listen"]
        ),
        (&0.into(), &"1m 30s".into(), &"127.0.0.1".into())
    );

    let nested = parse("instances:\n  web:\n    type: WebRelay\n    config:\n      port: 0\n")
        .expect_err("the nested form is gone");
    assert!(nested.contains("config"), "{nested}");
    let too_short =
        parse("instances:\n  web:\n    type: WebRelay\n    idle_timeout: 1ms\n").map(|file| {
            file.into_blueprint()
                .check_settings()
                .map_err(|e| e.to_string())
        });
    let refused = match too_short {
        Ok(Err(error)) | Err(error) => error,
        Ok(Ok(())) => panic!("a 1ms idle timeout was taken"),
    };
    assert!(
        refused.contains("`idle_timeout` = 1ms is out of range"),
        "{refused}"
    );
}
