//! Closed runs: who may join a run, and what each member may say in it.
//!
//! **Credentials.** The coordinator makes a certificate authority for each run (a fresh
//! key, held in its memory only) and issues one TLS certificate per member: each planned
//! process (common name `host/process`), itself (`coordinator`) and the tools
//! (`tool`). A member holds its own key and the authority's certificate, nothing else: it
//! cannot pass for another member. Every link of the run is mutual TLS (`tls/`
//! endpoints): both ends show a certificate of the run's authority, so a session without
//! one connects to nothing, and each end knows the other's common name.
//!
//! **Access control**, enforced by zenoh on every session of the run, generated from the
//! plan ([`AccessRules::from_plan`]), `default_permission: deny`: what a member may send
//! a session is listed by its common name. A process may put only on the streams it
//! produces and subscribe only to those it consumes or its instances declare they tap
//! (a recorder's, `Node::taps`); only the coordinator may answer
//! on the control keys, and each worker may ask only its own
//! (`streamwire/<run>/@cluster/{join,state,report}/<host>/<process>`); every member
//! (the coordinator included) may put its own log records
//! (`streamwire/<run>/@log/<host>/<process>`, `@log/coordinator`) and a process that taps
//! may subscribe to everyone's; a tool may only read. What a session sends is not restricted (the receiver judges it).
//!
//! A user/password pair (zenoh's `usrpwd`) was the other candidate: zenoh checks it only
//! on the accepting end of a link, so the end that connected cannot name its peer, and
//! every worker would have to hold every other's password to accept their connections.

use std::collections::BTreeSet;
use std::fmt;
use std::io::{BufRead, Write as _};
use std::path::{Path, PathBuf};

use base64::Engine as _;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use serde_json::json;
use streamwire_core::Taps;
use streamwire_core::port::Direction;
use streamwire_graph::{CodecKind, Plan};

use crate::ClusterError;

/// The common name of the coordinator's certificate.
pub const COORDINATOR: &str = "coordinator";

/// The common name of the tools' certificate (`topic`, `bench`): read-only.
pub const TOOL: &str = "tool";

/// The first line of a credential's text.
const HEADER: &str = "streamwire-credential 1";

/// The line that ends a credential's text (a worker reads it from its standard input,
/// which stays open after it).
const END: &str = "end";

/// A run's certificate authority: the coordinator's, for the run's life only.
pub struct RunAuthority {
    run_id: String,
    issuer: Issuer<'static, KeyPair>,
    certificate_pem: String,
}

impl fmt::Debug for RunAuthority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunAuthority")
            .field("run_id", &self.run_id)
            .finish_non_exhaustive()
    }
}

impl RunAuthority {
    /// A fresh authority for run `run_id`.
    pub fn new(run_id: &str) -> Result<RunAuthority, ClusterError> {
        let key = KeyPair::generate().map_err(credential("a run key"))?;
        let mut params = CertificateParams::default();
        params
            .distinguished_name
            .push(DnType::CommonName, format!("streamwire run {run_id}"));
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let certificate = params
            .self_signed(&key)
            .map_err(credential("the run's certificate"))?;
        Ok(RunAuthority {
            run_id: run_id.to_owned(),
            issuer: Issuer::new(params, key),
            certificate_pem: certificate.pem(),
        })
    }

    /// A credential for `subject` (a process `host/process`, [`COORDINATOR`] or
    /// [`TOOL`]): its own key and certificate, and the authority's certificate.
    pub fn issue(&self, subject: &str) -> Result<Credential, ClusterError> {
        let key = KeyPair::generate().map_err(credential("a member's key"))?;
        let mut params = CertificateParams::default();
        params.distinguished_name.push(DnType::CommonName, subject);
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        let certificate = params
            .signed_by(&key, &self.issuer)
            .map_err(credential("a member's certificate"))?;
        Ok(Credential {
            run_id: self.run_id.clone(),
            subject: subject.to_owned(),
            authority_pem: self.certificate_pem.clone(),
            certificate_pem: certificate.pem(),
            key_pem: key.serialize_pem(),
        })
    }
}

fn credential(what: &'static str) -> impl FnOnce(rcgen::Error) -> ClusterError {
    move |source| ClusterError::Credential {
        what: what.to_owned(),
        source: Box::new(source),
    }
}

/// One member's credential in a closed run: its run, its common name, its key and
/// certificate, and the run's authority. Its text form is what a secret file holds and
/// what a local worker reads from its standard input; `Debug` never shows the key.
#[derive(Clone, PartialEq, Eq)]
pub struct Credential {
    run_id: String,
    subject: String,
    authority_pem: String,
    certificate_pem: String,
    key_pem: String,
}

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credential")
            .field("run_id", &self.run_id)
            .field("subject", &self.subject)
            .finish_non_exhaustive()
    }
}

impl Credential {
    /// The run it joins.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// Whom it names: `host/process`, [`COORDINATOR`] or [`TOOL`].
    pub fn subject(&self) -> &str {
        &self.subject
    }

    /// Its text: a header, `run:` and `subject:` lines, the authority's certificate, the
    /// member's certificate and key (PEM), and a line `end`.
    pub fn to_text(&self) -> String {
        format!(
            "{HEADER}\nrun: {}\nsubject: {}\n{}{}{}{END}\n",
            self.run_id, self.subject, self.authority_pem, self.certificate_pem, self.key_pem
        )
    }

    /// Reads a credential's text from `reader`, up to its `end` line (what follows is
    /// left unread).
    pub fn read_from(reader: &mut dyn BufRead) -> Result<Credential, ClusterError> {
        let bad = |why: &str| ClusterError::BadCredential(why.to_owned());
        let mut lines = Vec::new();
        loop {
            let mut line = String::new();
            let read = reader
                .read_line(&mut line)
                .map_err(|source| ClusterError::CredentialInput { source })?;
            if read == 0 {
                return Err(bad("it ends before its `end` line"));
            }
            let line = line.trim_end().to_owned();
            if line == END {
                break;
            }
            lines.push(line);
        }
        if lines.first().map(String::as_str) != Some(HEADER) {
            return Err(bad(&format!("it does not start with `{HEADER}`")));
        }
        let field = |name: &str, index: usize| {
            lines
                .get(index)
                .and_then(|l| l.strip_prefix(name))
                .map(str::to_owned)
                .ok_or_else(|| bad(&format!("line {} is not `{name}...`", index + 1)))
        };
        let run_id = field("run: ", 1)?;
        let subject = field("subject: ", 2)?;
        let blocks = pem_blocks(&lines[3..]);
        let [authority_pem, certificate_pem, key_pem] = <[String; 3]>::try_from(blocks)
            .map_err(|_| bad("it does not hold three PEM blocks"))?;
        Ok(Credential {
            run_id,
            subject,
            authority_pem,
            certificate_pem,
            key_pem,
        })
    }

    /// Reads a secret file.
    pub fn read_file(path: &Path) -> Result<Credential, ClusterError> {
        let file = std::fs::File::open(path).map_err(|source| ClusterError::SecretFile {
            path: path.to_owned(),
            source,
        })?;
        Credential::read_from(&mut std::io::BufReader::new(file))
    }

    /// Writes it to `path`, readable by its owner only (0600), in a folder made 0700 if
    /// it is missing.
    pub fn write_file(&self, path: &Path) -> Result<(), ClusterError> {
        use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
        let error = |source| ClusterError::SecretFile {
            path: path.to_owned(),
            source,
        };
        if let Some(folder) = path.parent() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(folder)
                .map_err(error)?;
            // In a shared temporary folder another user may have made ours first.
            for dir in [Some(folder), folder.parent()].into_iter().flatten() {
                check_private(dir)?;
            }
        }
        // Written beside, then renamed: a worker (or a script waiting for the file) that
        // finds it finds it whole.
        let mut partial = path.as_os_str().to_owned();
        partial.push(".partial");
        let partial = PathBuf::from(partial);
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&partial)
            .map_err(error)?;
        file.write_all(self.to_text().as_bytes()).map_err(error)?;
        drop(file);
        std::fs::rename(&partial, path).map_err(error)
    }

    /// The zenoh settings of a session holding this credential: mutual TLS with the
    /// run's authority (the peer's name is its certificate's common name, not an
    /// address) and `rules` as zenoh's access control.
    pub fn zenoh_settings(&self, rules: &AccessRules) -> Vec<(&'static str, String)> {
        let mut settings = self.tls_settings();
        settings.push(("access_control", rules.to_json().to_string()));
        settings
    }

    /// The mutual TLS settings alone (a tool's session: the run's members judge what it
    /// sends by their rules).
    pub fn tls_settings(&self) -> Vec<(&'static str, String)> {
        let b64 = |pem: &str| {
            serde_json::Value::String(base64::engine::general_purpose::STANDARD.encode(pem))
                .to_string()
        };
        vec![
            (
                "transport/link/tls/root_ca_certificate_base64",
                b64(&self.authority_pem),
            ),
            (
                "transport/link/tls/listen_certificate_base64",
                b64(&self.certificate_pem),
            ),
            (
                "transport/link/tls/listen_private_key_base64",
                b64(&self.key_pem),
            ),
            (
                "transport/link/tls/connect_certificate_base64",
                b64(&self.certificate_pem),
            ),
            (
                "transport/link/tls/connect_private_key_base64",
                b64(&self.key_pem),
            ),
            ("transport/link/tls/enable_mtls", "true".to_owned()),
            // Members are named by their certificates' common names, which the access
            // control checks; an address says nothing about who listens there.
            (
                "transport/link/tls/verify_name_on_connect",
                "false".to_owned(),
            ),
        ]
    }
}

/// Refuses a folder for secret files that is not this user's alone.
fn check_private(dir: &Path) -> Result<(), ClusterError> {
    use std::os::unix::fs::MetadataExt as _;
    let metadata = std::fs::metadata(dir).map_err(|source| ClusterError::SecretFile {
        path: dir.to_owned(),
        source,
    })?;
    let mine = metadata.uid() == rustix::process::getuid().as_raw();
    if mine && metadata.mode() & 0o022 == 0 {
        return Ok(());
    }
    Err(ClusterError::SecretFile {
        path: dir.to_owned(),
        source: std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            "this folder for secret files is another user's or writable by others",
        ),
    })
}

/// A closed run's endpoints: TLS where `tcp/` was asked (the address kept).
pub fn closed_endpoints(endpoints: &[String]) -> Vec<String> {
    endpoints
        .iter()
        .map(|e| match e.strip_prefix("tcp/") {
            Some(address) => format!("tls/{address}"),
            None => e.clone(),
        })
        .collect()
}

/// The PEM blocks of `lines`, each with its BEGIN and END lines.
fn pem_blocks(lines: &[String]) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current = String::new();
    for line in lines {
        current.push_str(line);
        current.push('\n');
        if line.starts_with("-----END ") {
            blocks.push(std::mem::take(&mut current));
        }
    }
    blocks
}

/// The folder of a run's secret files on this host: `$XDG_RUNTIME_DIR/streamwire/<run>`,
/// or `<temp>/streamwire-<uid>/<run>` without it. A tool finds the run's `tool` file
/// there by the run's id.
pub fn run_folder(run_id: &str) -> PathBuf {
    let base = match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir).join("streamwire"),
        _ => {
            std::env::temp_dir().join(format!("streamwire-{}", rustix::process::getuid().as_raw()))
        }
    };
    base.join(run_id)
}

/// The secret file of `subject` in `folder` (`robot/sensors` → `robot-sensors.credential`).
pub fn secret_file(folder: &Path, subject: &str) -> PathBuf {
    folder.join(format!("{}.credential", subject.replace('/', "-")))
}

/// Who may say what in a run, by common name: zenoh's access control, generated from the
/// plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccessRules {
    prefix: String,
    members: Vec<Member>,
}

/// One planned process and the streams it produces and consumes.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Member {
    process: String,
    produces: BTreeSet<String>,
    consumes: BTreeSet<String>,
    /// Whether one of its instances taps the run's streams (a relay, a recorder): it
    /// receives the run's log records too.
    taps: bool,
}

impl AccessRules {
    /// The rules of run `run_id` of `plan`: each process may put on the streams its
    /// instances' outputs and its encoders produce, and subscribe to the streams that
    /// reach it from another process and to those its instances tap
    /// ([`InstanceNode::taps`](streamwire_graph::InstanceNode::taps): a recorder's), in
    /// every form they travel.
    pub fn from_plan(plan: &Plan, run_id: &str) -> AccessRules {
        let mut members: Vec<Member> = plan
            .processes()
            .iter()
            .map(|p| Member {
                process: p.placement().to_string(),
                produces: BTreeSet::new(),
                consumes: BTreeSet::new(),
                taps: false,
            })
            .collect();
        let member_of = |members: &[Member], placement: String| {
            members.iter().position(|m| m.process == placement)
        };
        for instance in plan.instances() {
            let placement = instance.placement.to_string();
            let Some(at) = member_of(&members, placement) else {
                continue;
            };
            for port in instance.ports() {
                if port.direction() == Direction::Output {
                    members[at].produces.insert(port.stream.clone());
                }
            }
        }
        // An encoder publishes its encoded stream; a decoder's output stays in its process
        // (it has the producer's name, which its process must not put).
        for node in plan.codec_nodes() {
            if node.kind == CodecKind::Encode
                && let Some(at) = member_of(&members, node.placement.to_string())
            {
                members[at].produces.insert(node.encoded_stream.clone());
            }
        }
        for link in plan.links() {
            let from = plan.placement_of(link.from).map(ToString::to_string);
            let to = plan.placement_of(link.to).map(ToString::to_string);
            if from != to
                && let Some(at) = to.and_then(|p| member_of(&members, p))
            {
                members[at].consumes.insert(link.stream.clone());
            }
        }
        // One copy per link: a process the host's receiver hands a stream on to subscribes
        // to the forwarded key only, and the receiver may put on it only what the host's
        // other processes are planned to get.
        for crossing in plan.crossings() {
            let key = crossing.forwarded_key();
            for placement in &crossing.forwarded_to {
                if let Some(at) = member_of(&members, placement.to_string()) {
                    members[at].consumes.remove(&crossing.stream);
                    members[at].consumes.insert(key.clone());
                }
            }
            if !crossing.forwarded_to.is_empty()
                && let Some(at) = member_of(&members, crossing.receiver.to_string())
            {
                members[at].produces.insert(key);
            }
        }
        // A module that taps streams while it runs (a recorder) declares them in the plan:
        // its process may subscribe to each where another process puts it, in every form
        // it travels (`color_image/compressed` from the encoder of `color_image`).
        let encoded_from: Vec<(&str, &str)> = plan
            .codec_nodes()
            .filter(|node| node.kind == CodecKind::Encode)
            .map(|node| (node.encoded_stream.as_str(), node.stream.as_str()))
            .collect();
        let tapped = |taps: &Taps, stream: &str| {
            taps.covers(stream)
                || encoded_from
                    .iter()
                    .any(|(encoded, raw)| *encoded == stream && taps.covers(raw))
        };
        for instance in plan.instances().filter(|i| !i.taps().is_none()) {
            let placement = instance.placement.to_string();
            let Some(at) = member_of(&members, placement.clone()) else {
                continue;
            };
            let elsewhere: Vec<String> = members
                .iter()
                .filter(|m| m.process != placement)
                .flat_map(|m| &m.produces)
                .filter(|stream| tapped(instance.taps(), stream))
                .cloned()
                .collect();
            members[at].consumes.extend(elsewhere);
            members[at].taps = true;
        }
        AccessRules {
            prefix: format!("streamwire/{run_id}"),
            members,
        }
    }

    /// zenoh's `access_control` section.
    pub fn to_json(&self) -> serde_json::Value {
        let p = &self.prefix;
        let mut rules = Vec::new();
        let mut subjects = Vec::new();
        let mut policies = Vec::new();
        let mut add = |id: String, name: &str, grants: Vec<(Vec<&str>, Vec<String>)>| {
            let mut rule_ids = Vec::new();
            for (n, (messages, keys)) in grants.into_iter().enumerate() {
                if keys.is_empty() {
                    continue;
                }
                let rule_id = format!("{id}-{n}");
                rules.push(json!({
                    "id": rule_id, "messages": messages, "flows": ["ingress"],
                    "permission": "allow", "key_exprs": keys,
                }));
                rule_ids.push(rule_id);
            }
            subjects.push(json!({ "id": id, "cert_common_names": [name] }));
            policies.push(json!({ "id": id, "rules": rule_ids, "subjects": [id] }));
        };
        let control = ["join", "state", "report"];
        add(
            "coordinator".to_owned(),
            COORDINATOR,
            vec![
                (
                    vec!["declare_queryable", "reply"],
                    control
                        .iter()
                        .map(|c| format!("{p}/@cluster/{c}/**"))
                        .collect(),
                ),
                (
                    vec!["declare_liveliness_subscriber"],
                    vec![format!("{p}/@cluster/worker/**")],
                ),
                (vec!["put"], vec![format!("{p}/@log/{COORDINATOR}")]),
                // A receiver that came late asks for the records sent before it.
                (
                    vec!["declare_queryable", "reply"],
                    vec![format!("{p}/@log/{COORDINATOR}")],
                ),
            ],
        );
        add(
            "tool".to_owned(),
            TOOL,
            vec![
                (
                    vec!["declare_subscriber"],
                    vec![format!("{p}/**"), format!("{p}/@log/**")],
                ),
                (
                    vec!["liveliness_query", "declare_liveliness_subscriber"],
                    vec![format!("{p}/@sub/**/@/**"), format!("{p}/@pub/**/@/**")],
                ),
                (vec!["query"], vec![format!("{p}/@history/**")]),
            ],
        );
        for (n, m) in self.members.iter().enumerate() {
            add(format!("process{n}"), &m.process, member_grants(p, m));
        }
        // What a session sends is not restricted: its peer's own rules judge it.
        rules.push(json!({
            "id": "send", "flows": ["egress"], "permission": "allow",
            "messages": ["put", "delete", "declare_subscriber", "query", "declare_queryable",
                "reply", "liveliness_token", "declare_liveliness_subscriber", "liveliness_query"],
            "key_exprs": [format!("{p}/**"), format!("{p}/@cluster/**"),
                format!("{p}/@sub/**/@/**"), format!("{p}/@pub/**/@/**"),
                format!("{p}/@history/**"), format!("{p}/@log/**"),
                // Streams handed on inside a host (a verbatim chunk `**` never matches).
                format!("{p}/@host/**"), format!("{p}/@sub/@host/**/@/**"),
                format!("{p}/@pub/@host/**/@/**"), format!("{p}/@history/@host/**")],
        }));
        let everyone: Vec<serde_json::Value> = subjects.iter().map(|s| s["id"].clone()).collect();
        policies.push(json!({ "id": "send", "rules": ["send"], "subjects": everyone }));
        json!({
            "enabled": true,
            "default_permission": "deny",
            "rules": rules,
            "subjects": subjects,
            "policies": policies,
        })
    }
}

/// What a worker may send: its streams and its own log records, its subscriptions (the
/// run's log records when it taps) and their announcements, its own control keys and
/// liveliness token, the history of what it produces, and of its log records (asked
/// when it taps).
fn member_grants<'a>(p: &str, m: &Member) -> Vec<(Vec<&'a str>, Vec<String>)> {
    let own = &m.process;
    let produces = || m.produces.iter().map(|s| s.trim_start_matches('/'));
    let consumes = || m.consumes.iter().map(|s| s.trim_start_matches('/'));
    vec![
        (
            vec!["put"],
            produces()
                .map(|s| format!("{p}/{s}"))
                .chain([format!("{p}/@log/{own}")])
                .collect(),
        ),
        (
            vec!["declare_subscriber"],
            consumes()
                .map(|s| format!("{p}/{s}"))
                .chain(m.taps.then(|| format!("{p}/@log/**")))
                .collect(),
        ),
        (
            vec!["liveliness_token"],
            consumes()
                .map(|s| format!("{p}/@sub/{s}/@/{own}"))
                .chain(produces().map(|s| format!("{p}/@pub/{s}/@/{own}")))
                .chain([format!("{p}/@cluster/worker/{own}")])
                .collect(),
        ),
        (
            vec!["liveliness_query"],
            produces().map(|s| format!("{p}/@sub/{s}/@/**")).collect(),
        ),
        (
            vec!["query"],
            ["join", "state", "report"]
                .iter()
                .map(|c| format!("{p}/@cluster/{c}/{own}"))
                .chain(consumes().map(|s| format!("{p}/@history/{s}/**")))
                .collect(),
        ),
        (
            vec!["declare_queryable"],
            produces().map(|s| format!("{p}/@history/{s}/**")).collect(),
        ),
        // One chunk (the frame's number): `color_image/*` is not `color_image/compressed/*`.
        (
            vec!["reply"],
            produces().map(|s| format!("{p}/@history/{s}/*")).collect(),
        ),
        // Its log records sent before a receiver came, for that receiver, which asks.
        (
            vec!["declare_queryable", "reply"],
            vec![format!("{p}/@log/{own}")],
        ),
        (
            vec!["query"],
            m.taps.then(|| format!("{p}/@log/**")).into_iter().collect(),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use streamwire_core::{Compressed, Context, In, Node, NodeResult, Out};
    use streamwire_graph::{Blueprint, Placement};
    use streamwire_macros::Module;
    use streamwire_msgs::{Image, Odometry};

    #[derive(Module)]
    #[module(crate = streamwire_core)]
    struct Camera {
        color_image: Out<Compressed<Image>>,
        odometry: Out<Odometry>,
    }

    #[derive(Module)]
    #[module(crate = streamwire_core)]
    struct Viewer {
        color_image: In<Image>,
    }

    /// Taps the streams it names (every stream when none), as a recorder does.
    #[derive(Module)]
    #[module(crate = streamwire_core)]
    struct Tapper {
        #[config]
        streams: Vec<String>,
    }

    impl Node for Tapper {
        fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
            Ok(())
        }

        fn taps(&self) -> Taps {
            Taps::streams_or_all(&self.streams)
        }
    }

    /// Taps nothing it declares: a module without `Node::taps`.
    #[derive(Module)]
    #[module(crate = streamwire_core)]
    struct Silent {}

    impl Node for Silent {
        fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
            Ok(())
        }
    }

    /// A camera on the robot (its colour encoded for the laptop's viewer, its odometry
    /// read by nobody), and `tapper` on the base station.
    fn rules_with(tapper: Option<Tapper>) -> AccessRules {
        let mut blueprint = Blueprint::new();
        let camera = blueprint.add(
            "camera",
            Camera {
                color_image: Out::new(),
                odometry: Out::new(),
            },
        );
        let viewer = blueprint.add(
            "viewer",
            Viewer {
                color_image: In::new(),
            },
        );
        blueprint.place(&camera, Placement::process("sensors").on_host("robot"));
        blueprint.place(&viewer, Placement::process("ui").on_host("laptop"));
        let base = Placement::process("base").on_host("base_station");
        match tapper {
            Some(tapper) => {
                let tapper = blueprint.add("tapper", tapper);
                blueprint.place(&tapper, base);
            }
            None => {
                let silent = blueprint.add("silent", Silent {});
                blueprint.place(&silent, base);
            }
        }
        blueprint.autoconnect();
        AccessRules::from_plan(&blueprint.build().unwrap(), "lab")
    }

    fn consumes(rules: &AccessRules, process: &str) -> Vec<String> {
        let member = rules.members.iter().find(|m| m.process == process).unwrap();
        member.consumes.iter().cloned().collect()
    }

    #[test]
    fn a_tapping_instance_may_subscribe_to_the_streams_it_taps_in_every_form() {
        let rules = rules_with(Some(Tapper {
            streams: vec!["color_image".to_owned()],
        }));
        // The colour in both forms, not the odometry it does not record.
        assert_eq!(
            consumes(&rules, "base_station/base"),
            ["color_image", "color_image/compressed"]
        );
        // The viewer's process keeps what its link brings it, nothing more.
        assert_eq!(consumes(&rules, "laptop/ui"), ["color_image/compressed"]);
        assert!(consumes(&rules, "robot/sensors").is_empty());
        // As zenoh reads it: the base station's process may declare the subscriptions.
        let json = rules.to_json();
        let subscribe = json["rules"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == "process0-1")
            .unwrap();
        assert_eq!(
            subscribe["key_exprs"],
            json!([
                "streamwire/lab/color_image",
                "streamwire/lab/color_image/compressed",
                "streamwire/lab/@log/**"
            ])
        );
        assert_eq!(
            json["subjects"][2],
            json!({ "id": "process0", "cert_common_names": ["base_station/base"] })
        );
    }

    /// One copy per link: of three viewer processes on the laptop, the first by name
    /// (`laptop/a`) subscribes across the link and may put the forwarded key; the two
    /// others may subscribe only to that key, not to the stream on the link.
    #[test]
    fn processes_fed_by_their_hosts_receiver_subscribe_only_to_what_it_hands_on() {
        let mut blueprint = Blueprint::new();
        let camera = blueprint.add(
            "camera",
            Camera {
                color_image: Out::new(),
                odometry: Out::new(),
            },
        );
        blueprint.place(&camera, Placement::process("sensors").on_host("robot"));
        for name in ["a", "b", "c"] {
            let viewer = blueprint.add(
                name,
                Viewer {
                    color_image: In::new(),
                },
            );
            blueprint.place(&viewer, Placement::process(name).on_host("laptop"));
        }
        blueprint.autoconnect();
        let rules = AccessRules::from_plan(&blueprint.build().unwrap(), "lab");
        let forwarded = "@host/laptop/color_image/compressed";
        assert_eq!(consumes(&rules, "laptop/a"), ["color_image/compressed"]);
        for other in ["laptop/b", "laptop/c"] {
            assert_eq!(consumes(&rules, other), [forwarded], "{other}");
        }
        let receiver = rules
            .members
            .iter()
            .find(|m| m.process == "laptop/a")
            .unwrap();
        assert!(
            receiver.produces.contains(forwarded),
            "{:?}",
            receiver.produces
        );
        let robot = rules
            .members
            .iter()
            .find(|m| m.process == "robot/sensors")
            .unwrap();
        assert!(!robot.produces.contains(forwarded), "{:?}", robot.produces);
    }

    /// The `key_exprs` of rule `id` that contain `@log`.
    fn log_keys(json: &serde_json::Value, id: &str) -> Vec<String> {
        let rule = json["rules"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == id);
        rule.map(|r| r["key_exprs"].as_array().unwrap().clone())
            .unwrap_or_default()
            .iter()
            .filter_map(|k| k.as_str().filter(|k| k.contains("@log")).map(str::to_owned))
            .collect()
    }

    #[test]
    fn each_member_puts_only_its_own_log_records_and_only_a_tapping_process_reads_them() {
        let json = rules_with(None).to_json();
        let subjects = json["subjects"].as_array().unwrap();
        let id_of = |name: &str| {
            subjects
                .iter()
                .find(|s| s["cert_common_names"][0] == name)
                .map(|s| s["id"].as_str().unwrap().to_owned())
                .unwrap()
        };
        for process in ["base_station/base", "laptop/ui", "robot/sensors"] {
            let id = id_of(process);
            assert_eq!(
                log_keys(&json, &format!("{id}-0")),
                [format!("streamwire/lab/@log/{process}")]
            );
            // Nobody taps in this plan: nobody reads the log records.
            assert!(log_keys(&json, &format!("{id}-1")).is_empty());
        }
        assert_eq!(
            log_keys(&json, "coordinator-2"),
            ["streamwire/lab/@log/coordinator"]
        );
        let tapping = rules_with(Some(Tapper { streams: vec![] })).to_json();
        let base = id_of("base_station/base");
        assert_eq!(
            log_keys(&tapping, &format!("{base}-1")),
            ["streamwire/lab/@log/**"]
        );
    }

    #[test]
    fn a_tap_of_every_stream_may_subscribe_to_every_other_process_stream() {
        let rules = rules_with(Some(Tapper { streams: vec![] }));
        assert_eq!(
            consumes(&rules, "base_station/base"),
            ["color_image", "color_image/compressed", "odometry"]
        );
    }

    #[test]
    fn an_instance_that_declares_no_tap_may_subscribe_to_nothing_more() {
        let rules = rules_with(None);
        assert!(consumes(&rules, "base_station/base").is_empty());
    }

    #[test]
    fn a_credential_reads_back_from_its_text_and_leaves_what_follows() {
        let authority = RunAuthority::new("lab").unwrap();
        let issued = authority.issue("robot/sensors").unwrap();
        let text = format!("{}more\n", issued.to_text());
        let mut reader = std::io::Cursor::new(text.into_bytes());
        let read = Credential::read_from(&mut reader).unwrap();
        assert_eq!(read, issued);
        assert_eq!((read.run_id(), read.subject()), ("lab", "robot/sensors"));
        let mut rest = String::new();
        reader.read_line(&mut rest).unwrap();
        assert_eq!(rest, "more\n");
    }

    #[test]
    fn a_credential_never_shows_its_key_in_debug() {
        let issued = RunAuthority::new("lab").unwrap().issue(TOOL).unwrap();
        let shown = format!("{issued:?}");
        assert!(!shown.contains("PRIVATE"), "{shown}");
        assert!(shown.contains("tool"), "{shown}");
    }

    #[test]
    fn a_truncated_credential_is_an_error() {
        let text = RunAuthority::new("lab")
            .unwrap()
            .issue(TOOL)
            .unwrap()
            .to_text();
        let cut = &text[..text.len() / 2];
        let error = Credential::read_from(&mut cut.as_bytes()).unwrap_err();
        assert_eq!(
            error.to_string(),
            "bad credential: it ends before its `end` line"
        );
    }

    #[test]
    fn a_secret_file_is_for_its_owner_only() {
        use std::os::unix::fs::PermissionsExt as _;
        let folder = std::env::temp_dir().join(format!("sw-access-{}", std::process::id()));
        let path = secret_file(&folder.join("lab"), "robot/sensors");
        let issued = RunAuthority::new("lab")
            .unwrap()
            .issue("robot/sensors")
            .unwrap();
        issued.write_file(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        let folder_mode = std::fs::metadata(folder.join("lab"))
            .unwrap()
            .permissions()
            .mode();
        let read = Credential::read_file(&path);
        std::fs::remove_dir_all(&folder).unwrap();
        assert_eq!((mode & 0o777, folder_mode & 0o777), (0o600, 0o700));
        assert_eq!(read.unwrap(), issued);
        assert!(path.ends_with("lab/robot-sensors.credential"));
    }

    #[test]
    fn a_secret_file_is_not_written_in_a_folder_others_may_write() {
        use std::os::unix::fs::PermissionsExt as _;
        let outer = std::env::temp_dir().join(format!("sw-shared-{}", std::process::id()));
        let shared = outer.join("shared");
        std::fs::create_dir_all(&shared).unwrap();
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
        let path = secret_file(&shared.join("lab"), TOOL);
        let issued = RunAuthority::new("lab").unwrap().issue(TOOL).unwrap();
        let result = issued.write_file(&path);
        let written = path.exists();
        std::fs::remove_dir_all(&outer).unwrap();
        let error = result.unwrap_err();
        assert!(!written, "the secret was written");
        assert_eq!(
            error.to_string(),
            format!("secret file {}", shared.display())
        );
        assert_eq!(
            streamwire_core::log::chain(&error).to_string(),
            format!(
                "secret file {}: this folder for secret files is another user's or writable by \
                 others",
                shared.display()
            )
        );
    }
}
