//! Reading a blueprint file with every mistake reported at once.
//!
//! serde stops at a file's first mistake, so the text is first read into a tree whose keys
//! know where they are written ([`Node`]); then each part (a setting, an instance, a
//! placement, a connection) is checked and read on its own, and each mistake becomes a
//! [`FileProblem`] with its line, column and the key it is about. Module types and their
//! settings are checked against the registry ([`streamwire_core::registration`]) before a
//! module is read, so an unknown type or setting is named with a close valid one.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, DeserializeOwned, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use serde_saphyr::Spanned;
use streamwire_core::{ModuleConfig, ModuleRegistration, registered_modules, registration};

use super::{BlueprintFile, Instances, NamedConnection};
use crate::keys::{GlobalKey, GlobalValues, global_key, global_keys};
use crate::names::did_you_mean;

/// One mistake in a blueprint file, where it is written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileProblem {
    /// The line, 1-based.
    pub line: usize,
    /// The column, 1-based.
    pub column: usize,
    /// How many characters the caret underlines (the key or value it is about).
    pub width: usize,
    /// What is wrong, and what to write instead.
    pub message: String,
    /// The text of that line, for the caret.
    pub source_line: String,
}

impl FileProblem {
    /// `file:line:column: message`, the line and a caret under the offending key.
    pub fn render(&self, f: &mut fmt::Formatter<'_>, path: &str) -> fmt::Result {
        writeln!(f, "{path}:{}:{}: {}", self.line, self.column, self.message)?;
        let number = self.line.to_string();
        let pad = " ".repeat(number.len());
        writeln!(f, "{pad} |")?;
        writeln!(f, "{number} | {}", self.source_line)?;
        write!(
            f,
            "{pad} | {}{}",
            " ".repeat(self.column.saturating_sub(1)),
            "^".repeat(self.width.max(1))
        )
    }
}

/// Where a key or value starts, 1-based, and how long it is.
#[derive(Clone, Copy, Debug, Default)]
struct Place {
    line: usize,
    column: usize,
    width: usize,
}

impl Place {
    fn of<T>(spanned: &Spanned<T>, width: usize) -> Place {
        let l = spanned.referenced;
        Place {
            line: usize::try_from(l.line()).unwrap_or(0),
            column: usize::try_from(l.column()).unwrap_or(0),
            width,
        }
    }
}

/// A YAML document: maps keep their keys' places and order, scalars their value.
enum Node {
    Map(Vec<Entry>),
    Seq(Vec<Spanned<Node>>),
    /// A scalar read as a boolean, kept apart: YAML 1.1 reads `off` as `false`, but a
    /// setting such as `compression: off` means the word (see [`Node::to_value`]).
    Bool(bool),
    Scalar(Value),
}

/// A map entry: its key (with its place) and value.
struct Entry {
    key: Spanned<String>,
    value: Spanned<Node>,
}

impl Entry {
    fn key(&self) -> &str {
        &self.key.value
    }

    fn key_place(&self) -> Place {
        Place::of(&self.key, self.key.value.chars().count())
    }
}

impl Node {
    /// As JSON, for serde: a boolean keeps its word (`off`, `yes`) unless it was written
    /// `true` or `false`, so text settings read the word as the file's author wrote it.
    fn to_value(node: &Spanned<Node>, text: &str) -> Value {
        match &node.value {
            Node::Map(entries) => Value::Object(
                entries
                    .iter()
                    .map(|e| (e.key.value.clone(), Node::to_value(&e.value, text)))
                    .collect(),
            ),
            Node::Seq(items) => {
                Value::Array(items.iter().map(|i| Node::to_value(i, text)).collect())
            }
            Node::Bool(b) => match raw_text(node, text) {
                Some(word)
                    if !word.eq_ignore_ascii_case("true")
                        && !word.eq_ignore_ascii_case("false") =>
                {
                    Value::String(word.to_owned())
                }
                _ => Value::Bool(*b),
            },
            Node::Scalar(v) => v.clone(),
        }
    }
}

/// The source text of a plain scalar, from its byte span.
fn raw_text<'t>(node: &Spanned<Node>, text: &'t str) -> Option<&'t str> {
    let span = node.referenced.span();
    let start = usize::try_from(span.byte_offset()?).ok()?;
    let len = usize::try_from(span.byte_len()?).ok()?;
    text.get(start..start.checked_add(len)?)
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<Spanned<String>>()? {
            let value = map.next_value::<Spanned<Node>>()?;
            entries.push(Entry { key, value });
        }
        Ok(Node::Map(entries))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Spanned<Node>>()? {
            items.push(item);
        }
        Ok(Node::Seq(items))
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Node, D::Error> {
        Node::deserialize(d)
    }
    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Node, D::Error> {
        Node::deserialize(d)
    }
    fn visit_bool<E>(self, v: bool) -> Result<Node, E> {
        Ok(Node::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Node, E> {
        Ok(Node::Scalar(Value::from(v)))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Node, E> {
        Ok(Node::Scalar(Value::from(v)))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Node, E> {
        Ok(Node::Scalar(Value::from(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Node, E> {
        Ok(Node::Scalar(Value::from(v)))
    }
    fn visit_string<E>(self, v: String) -> Result<Node, E> {
        Ok(Node::Scalar(Value::from(v)))
    }
    fn visit_unit<E>(self) -> Result<Node, E> {
        Ok(Node::Scalar(Value::Null))
    }
    fn visit_none<E>(self) -> Result<Node, E> {
        Ok(Node::Scalar(Value::Null))
    }
}

/// The top-level sections of a blueprint file other than its global keys: the other
/// fields of [`BlueprintFile`], each read in `read_section` (a new field is one more entry
/// here and one more arm there; a new global key is a row of [`global_keys`]).
const FILE_SECTIONS: &[&str] = &[
    "auto_table",
    "supervision",
    "instances",
    "placement",
    "streams",
    "connect",
    "remap",
];

/// The top-level keys of a blueprint file: `autoconnect`, the global keys, then its
/// sections.
fn file_keys() -> Vec<&'static str> {
    let globals = global_keys().map(|g| g.key);
    std::iter::once("autoconnect")
        .chain(globals)
        .chain(FILE_SECTIONS.iter().copied())
        .collect()
}

/// The problems found so far, and the text they point into.
struct Problems<'t> {
    text: &'t str,
    found: Vec<FileProblem>,
}

impl Problems<'_> {
    fn at(&mut self, place: Place, message: impl Into<String>) {
        let source_line = self
            .text
            .lines()
            .nth(place.line.saturating_sub(1))
            // infallible: a place past the text (the end of the file) shows no line
            .unwrap_or_default()
            .to_owned();
        self.found.push(FileProblem {
            line: place.line.max(1),
            column: place.column.max(1),
            width: place.width,
            message: message.into(),
            source_line,
        });
    }

    /// `T` from the value of `entry` (`what`, "`compression`"); a mistake is reported on
    /// its key.
    fn read<T: DeserializeOwned>(&mut self, entry: &Entry, what: &str) -> Option<T> {
        match serde_json::from_value(Node::to_value(&entry.value, self.text)) {
            Ok(value) => Some(value),
            Err(e) => {
                self.at(entry.key_place(), format!("{what}: {e}"));
                None
            }
        }
    }

    /// The value of global key `row` into `globals`, read by its row; a mistake is
    /// reported on its key.
    fn read_global(&mut self, globals: &mut GlobalValues, row: &'static GlobalKey, entry: &Entry) {
        match row.read_file_value(Node::to_value(&entry.value, self.text)) {
            Ok(value) => globals.insert_read(row, value),
            Err(e) => self.at(entry.key_place(), format!("{}: {e}", row.file_label)),
        }
    }
}

/// `; did you mean `x`?` when one of `known` is close to `word`.
fn hint<'a>(word: &str, known: impl IntoIterator<Item = &'a str>) -> String {
    did_you_mean(word, known)
        .map(|s| format!(" (did you mean `{s}`?)"))
        // infallible: no close name, no hint
        .unwrap_or_default()
}

/// Reads `text` into a [`BlueprintFile`], or every mistake found in it.
pub(super) fn load(text: &str) -> Result<BlueprintFile, Vec<FileProblem>> {
    let mut problems = Problems {
        text,
        found: Vec::new(),
    };
    let root: Spanned<Node> = match serde_saphyr::from_str(text) {
        Ok(root) => root,
        Err(e) => {
            syntax_problem(&mut problems, &e);
            return Err(problems.found);
        }
    };
    let Node::Map(entries) = &root.value else {
        problems.at(
            Place::of(&root, 1),
            "a blueprint file is a map of settings, with at least `instances:`",
        );
        return Err(problems.found);
    };
    let mut file = BlueprintFile {
        autoconnect: true,
        ..BlueprintFile::default()
    };
    let instances = entries.iter().find(|e| e.key() == "instances");
    let names = instances.map_or_else(Vec::new, instance_names);
    match instances {
        Some(entry) => file.instances = read_instances(&mut problems, entry),
        None => problems.at(
            Place::of(&root, 1),
            "the file has no `instances:` (the module instances, by name)",
        ),
    }
    for entry in entries {
        read_section(&mut problems, &mut file, &names, entry);
    }
    if problems.found.is_empty() {
        Ok(file)
    } else {
        problems.found.sort_by_key(|p| (p.line, p.column));
        Err(problems.found)
    }
}

/// The one problem of text that is not YAML: where the parser stopped and why.
fn syntax_problem(problems: &mut Problems<'_>, error: &serde_saphyr::Error) {
    let (line, column) = error
        .location()
        .map(|l| (l.line(), l.column()))
        // infallible: a syntax error without a place is reported at the start
        .unwrap_or((1, 1));
    // The message alone: the error's own rendering repeats the place and a snippet.
    let message = error.without_snippet().to_string();
    let message = message
        .split_once(": ")
        .filter(|(head, _)| head.starts_with("line "))
        .map_or(message.as_str(), |(_, rest)| rest);
    let message = message
        .rsplit_once(" at line ")
        .map_or(message, |(head, _)| head)
        .to_owned();
    problems.at(
        Place {
            line: usize::try_from(line).unwrap_or(1),
            column: usize::try_from(column).unwrap_or(1),
            width: 1,
        },
        format!("not valid YAML: {message}"),
    );
}

/// The names under `instances:`, those with mistakes too (so that a placement of an
/// instance whose type is misspelt is not a second mistake).
fn instance_names(section: &Entry) -> Vec<String> {
    match &section.value.value {
        Node::Map(entries) => entries.iter().map(|e| e.key().to_owned()).collect(),
        _ => Vec::new(),
    }
}

/// One top-level entry other than `instances` (read before, as the others name them).
fn read_section(
    problems: &mut Problems<'_>,
    file: &mut BlueprintFile,
    names: &[String],
    entry: &Entry,
) {
    let key = entry.key();
    match key {
        "instances" => {}
        "autoconnect" => {
            if let Some(v) = problems.read(entry, "`autoconnect` is true or false") {
                file.autoconnect = v;
            }
        }
        "auto_table" => file.auto_table = problems.read(entry, "`auto_table`"),
        "supervision" => file.supervision = problems.read(entry, "`supervision`"),
        "placement" => file.placement = read_by_instance(problems, names, entry, "placement"),
        "remap" => {
            file.remap = read_by_instance(problems, names, entry, "stream remap");
            check_remaps(problems, file, entry);
        }
        "streams" => file.streams = read_map(problems, entry, "stream settings"),
        "connect" => file.connect = read_connections(problems, file, names, entry),
        _ => match global_key(key) {
            Some(row) => problems.read_global(&mut file.globals, row, entry),
            None => {
                let keys = file_keys();
                problems.at(
                    entry.key_place(),
                    format!(
                        "unknown setting `{key}`{}; a blueprint file's settings are: {}",
                        hint(key, keys.iter().copied()),
                        keys.join(", ")
                    ),
                );
            }
        },
    }
}

/// A map section whose values are each read on their own (one mistake each).
fn read_map<T: DeserializeOwned>(
    problems: &mut Problems<'_>,
    section: &Entry,
    what: &str,
) -> BTreeMap<String, T> {
    let Node::Map(entries) = &section.value.value else {
        problems.at(
            section.key_place(),
            format!("`{}` is a map of name to {what}", section.key()),
        );
        return BTreeMap::new();
    };
    entries
        .iter()
        .filter_map(|e| {
            let what = format!("{what} of `{}`", e.key());
            Some((e.key().to_owned(), problems.read(e, &what)?))
        })
        .collect()
}

/// A map section keyed by instance name (`placement`, `remap`): each name checked.
fn read_by_instance<T: DeserializeOwned>(
    problems: &mut Problems<'_>,
    names: &[String],
    section: &Entry,
    what: &str,
) -> BTreeMap<String, T> {
    if let Node::Map(entries) = &section.value.value {
        for e in entries {
            if let Some(message) = unknown_instance(names, e.key(), &format!("a {what}")) {
                problems.at(e.key_place(), message);
            }
        }
    }
    read_map(problems, section, what)
}

/// "`what` names instance `name`, which the file does not have", unless it has it.
fn unknown_instance(names: &[String], name: &str, what: &str) -> Option<String> {
    if names.iter().any(|n| n == name) {
        return None;
    }
    Some(format!(
        "{what} names instance `{name}`, which the file does not have{}",
        hint(name, names.iter().map(String::as_str))
    ))
}

/// Each stream a remap renames is a stream of one of the instance's ports.
fn check_remaps(problems: &mut Problems<'_>, file: &BlueprintFile, section: &Entry) {
    let Node::Map(instances) = &section.value.value else {
        return;
    };
    for instance in instances {
        let (Some(module), Node::Map(streams)) =
            (file.instances.get(instance.key()), &instance.value.value)
        else {
            continue;
        };
        let known: Vec<&str> = module.ports().iter().map(|p| p.stream()).collect();
        for stream in streams.iter().filter(|s| !known.contains(&s.key())) {
            problems.at(
                stream.key_place(),
                format!(
                    "a stream remap names stream `{}` of instance `{}`, which has no port on \
                     it{}; its ports use: {}",
                    stream.key(),
                    instance.key(),
                    hint(stream.key(), known.iter().copied()),
                    known.join(", ")
                ),
            );
        }
    }
}

/// `connect:`, a list of `{ from: instance.port, to: instance.port }`.
fn read_connections(
    problems: &mut Problems<'_>,
    file: &BlueprintFile,
    names: &[String],
    section: &Entry,
) -> Vec<NamedConnection> {
    let Node::Seq(items) = &section.value.value else {
        problems.at(
            section.key_place(),
            "`connect` is a list of `{ from: instance.port, to: instance.port }`",
        );
        return Vec::new();
    };
    let mut out = Vec::new();
    for item in items {
        let value = Node::to_value(item, problems.text);
        let connection: NamedConnection = match serde_json::from_value(value) {
            Ok(c) => c,
            Err(e) => {
                problems.at(Place::of(item, 1), format!("invalid connection: {e}"));
                continue;
            }
        };
        if let Node::Map(entries) = &item.value {
            for entry in entries {
                if let Value::String(end) = Node::to_value(&entry.value, problems.text) {
                    let place = Place::of(&entry.value, end.chars().count());
                    check_port(problems, file, names, place, &end);
                }
            }
        }
        out.push(connection);
    }
    out
}

/// `instance.port` of a connection: the instance exists and has that port (a field;
/// checked when the instance could be read).
fn check_port(
    problems: &mut Problems<'_>,
    file: &BlueprintFile,
    names: &[String],
    place: Place,
    end: &str,
) {
    let Some((instance, port)) = end.rsplit_once('.') else {
        problems.at(
            place,
            format!("`{end}` is not `instance.port` (a port is named by its field)"),
        );
        return;
    };
    if let Some(message) = unknown_instance(names, instance, "a connection") {
        problems.at(place, message);
        return;
    }
    let Some(module) = file.instances.get(instance) else {
        return;
    };
    let ports: Vec<&str> = module.ports().iter().map(|p| p.field()).collect();
    if !ports.contains(&port) {
        problems.at(
            place,
            format!(
                "instance `{instance}` (`{}`) has no port `{port}`{}; its ports are: {}",
                module.tag(),
                hint(port, ports.iter().copied()),
                ports.join(", ")
            ),
        );
    }
}

/// `instances:`: each entry checked (type, settings) and read on its own.
fn read_instances(problems: &mut Problems<'_>, section: &Entry) -> Instances {
    let Node::Map(entries) = &section.value.value else {
        problems.at(
            section.key_place(),
            "`instances` is a map of instance name to `{ type: <module type>, <settings>... }`",
        );
        return Instances::default();
    };
    let mut out = Instances::default();
    for entry in entries {
        let name = entry.key();
        if out.get(name).is_some() {
            problems.at(
                entry.key_place(),
                format!("instance `{name}` is defined twice"),
            );
            continue;
        }
        if let Some(module) = read_instance(problems, entry) {
            out.0.push((name.to_owned(), module));
        }
    }
    out
}

/// One instance: its `type` is a registered module, its keys are that module's settings,
/// the settings it needs are there; then the module is read.
fn read_instance(problems: &mut Problems<'_>, entry: &Entry) -> Option<Box<dyn ModuleConfig>> {
    let name = entry.key();
    let Node::Map(fields) = &entry.value.value else {
        problems.at(
            entry.key_place(),
            format!("instance `{name}` is `{{ type: <module type>, <settings>... }}`"),
        );
        return None;
    };
    let registration = module_type(problems, entry, fields)?;
    let before = problems.found.len();
    // The values of the known settings are read even after a misspelt one (so a bad value
    // is reported with it), unless a setting is missing: serde would say so a second time.
    if !check_settings(problems, entry, fields, registration) {
        return None;
    }
    let known: Vec<&Entry> = fields
        .iter()
        .filter(|f| f.key() != "type" && registration.config_fields.contains(&f.key()))
        .collect();
    // (NaN and infinities never get here: the YAML reader refuses them on their line.)
    let module = read_module(problems, entry, &known, registration.tag)?;
    // Then the declared ranges and the module's own check, each on its setting's line.
    for problem in module.check_config() {
        let place = problem
            .field()
            .and_then(|f| known.iter().find(|e| e.key() == f))
            .map_or_else(|| entry.key_place(), |e| e.key_place());
        let message = match (&problem, problem.field()) {
            (streamwire_core::ConfigProblem::OutOfRange { value, accepts, .. }, Some(field)) => {
                let given = if known.iter().any(|e| e.key() == field) {
                    ""
                } else {
                    " (its default)"
                };
                format!(
                    "setting `{field}` of instance `{name}`: {value}{given} is out of range: it \
                     accepts {accepts}"
                )
            }
            _ => format!("instance `{name}` (`{}`): {problem}", registration.tag),
        };
        problems.at(place, message);
    }
    if problems.found.len() > before {
        return None;
    }
    Some(module)
}

/// `; it accepts <range>` when `field` declares one.
fn accepts_note(registration: &ModuleRegistration, field: &str) -> String {
    registration
        .accepts(field)
        .map(|a| format!("; it accepts {a}"))
        // infallible: a setting without a declared range has nothing more to say
        .unwrap_or_default()
}

/// Every key of an instance is a setting of its module, and every setting the module
/// needs is there; returns whether none is missing.
fn check_settings(
    problems: &mut Problems<'_>,
    entry: &Entry,
    fields: &[Entry],
    registration: &ModuleRegistration,
) -> bool {
    // A misspelt setting stands for the one it is close to: that one is not also missing.
    let mut meant = Vec::new();
    for field in fields.iter().filter(|f| f.key() != "type") {
        let key = field.key();
        if !registration.config_fields.contains(&key) {
            problems.at(field.key_place(), unknown_field(registration, key));
            meant.extend(did_you_mean(
                key,
                registration.config_fields.iter().copied(),
            ));
        }
    }
    let missing: Vec<&str> = registration
        .required_fields()
        .into_iter()
        .filter(|f| !fields.iter().any(|e| e.key() == *f))
        .collect();
    for field in missing.iter().filter(|f| !meant.contains(f)) {
        problems.at(
            entry.key_place(),
            format!(
                "instance `{}` needs `{field}` (module `{}` gives it no default): add \
                 `{field}: <value>`",
                entry.key(),
                registration.tag
            ),
        );
    }
    missing.is_empty()
}

/// The registration of an instance's `type:`, or the problem with it.
fn module_type(
    problems: &mut Problems<'_>,
    entry: &Entry,
    fields: &[Entry],
) -> Option<&'static ModuleRegistration> {
    let tags: Vec<&str> = registered_modules().iter().map(|r| r.tag).collect();
    let Some(type_entry) = fields.iter().find(|f| f.key() == "type") else {
        problems.at(
            entry.key_place(),
            format!(
                "instance `{}` has no `type:` (its module type: one of {})",
                entry.key(),
                tags.join(", ")
            ),
        );
        return None;
    };
    let tag = match Node::to_value(&type_entry.value, problems.text) {
        Value::String(tag) => tag,
        other => other.to_string(),
    };
    let found = registration(&tag);
    if found.is_none() {
        problems.at(
            Place::of(&type_entry.value, tag.chars().count()),
            format!(
                "unknown module type `{tag}`{}; the module types are: {}",
                hint(&tag, tags.iter().copied()),
                tags.join(", ")
            ),
        );
    }
    found
}

fn unknown_field(registration: &ModuleRegistration, key: &str) -> String {
    let fields = registration.config_fields;
    if fields.is_empty() {
        return format!(
            "module `{}` has no settings, so not `{key}`",
            registration.tag
        );
    }
    format!(
        "module `{}` has no setting `{key}`{}; its settings are: {}",
        registration.tag,
        hint(key, fields.iter().copied()),
        fields.join(", ")
    )
}

/// The module, through its registered deserializer; a bad value is reported on its key,
/// every bad value of the instance: serde stops at the first, so the instance is read
/// again without each setting found bad until none is left.
fn read_module(
    problems: &mut Problems<'_>,
    entry: &Entry,
    fields: &[&Entry],
    tag: &str,
) -> Option<Box<dyn ModuleConfig>> {
    let mut bad: Vec<String> = Vec::new();
    loop {
        let (field, message) = match read_module_once(problems.text, fields, tag, &bad) {
            Ok(module) if bad.is_empty() => return Some(module),
            Ok(_) => return None,
            Err(found) => found,
        };
        match field {
            // A setting left out above is then missing: it was reported as bad already.
            None if !bad.is_empty() => return None,
            None => {
                problems.at(
                    entry.key_place(),
                    format!("setting of instance `{}`: {message}", entry.key()),
                );
                return None;
            }
            Some(field) => {
                let place = fields
                    .iter()
                    .find(|f| f.key() == field)
                    .map_or_else(|| entry.key_place(), |f| f.key_place());
                let note = registration(tag)
                    .map(|r| accepts_note(r, &field))
                    // infallible: an unregistered module has no declared ranges to show
                    .unwrap_or_default();
                problems.at(
                    place,
                    format!(
                        "setting `{field}` of instance `{}`: {message}{note}",
                        entry.key()
                    ),
                );
                if bad.contains(&field) {
                    return None;
                }
                bad.push(field);
            }
        }
    }
}

/// One read of the module from `fields`, those named in `skip` left out; on an error,
/// the setting it is about (if serde's path names one) and what is wrong.
fn read_module_once(
    text: &str,
    fields: &[&Entry],
    tag: &str,
    skip: &[String],
) -> Result<Box<dyn ModuleConfig>, (Option<String>, String)> {
    // `type` first, so the module's fields are read as they come and the path of a
    // mistake names its field.
    let pairs: Vec<(String, Value)> = std::iter::once(("type".to_owned(), Value::from(tag)))
        .chain(
            fields
                .iter()
                .filter(|f| !skip.iter().any(|s| s == f.key()))
                .map(|f| (f.key().to_owned(), Node::to_value(&f.value, text))),
        )
        .collect();
    let deserializer = de::value::MapDeserializer::<_, serde_json::Error>::new(pairs.into_iter());
    serde_path_to_error::deserialize::<_, Box<dyn ModuleConfig>>(deserializer).map_err(|e| {
        let field = e.path().iter().find_map(|segment| match segment {
            serde_path_to_error::Segment::Map { key } => Some(key.clone()),
            _ => None,
        });
        (field, e.inner().to_string())
    })
}
