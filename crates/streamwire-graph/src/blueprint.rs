//! The blueprint builder: module instances, namespaces, remaps, placement, connections
//! and settings. `build()` turns it into a [`Plan`](crate::Plan).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::ops::Deref;
use std::sync::atomic::{AtomicU64, Ordering};

use streamwire_core::{
    InputPort, InstanceId, Module, ModuleValue, OutputPort, PortHandle, PortInfo, PortType,
    SameMessage,
};

use crate::error::{BuildError, Problem};
use crate::names::{self, join};
use crate::settings::{AutoTable, Compression, Placement, Report, Settings, StreamSettings};

/// Every blueprint gets its own id so that a handle from another one is caught.
static NEXT_BLUEPRINT_ID: AtomicU64 = AtomicU64::new(1);

/// A set of module instances and how they are wired.
///
/// ```
/// # use streamwire::prelude::*;
/// #[derive(Module)]
/// struct Camera { color_image: Out<Compressed<Image>> }
///
/// #[derive(Module)]
/// struct Viewer { #[port(name = "color_image")] frames: In<Image> }
///
/// let mut blueprint = Blueprint::new();
/// blueprint.add("front_cam", Camera { color_image: Out::new() });
/// let viewer = blueprint.add("viewer", Viewer { frames: In::new() });
/// blueprint.place(&viewer, Placement::process("ui").on_host("laptop"));
/// blueprint.autoconnect();
///
/// let plan = blueprint.build()?;
/// // The viewer is on another host: one JPEG encode, one decode.
/// assert_eq!(plan.codec_nodes().count(), 2);
/// # Ok::<(), streamwire::BuildError>(())
/// ```
pub struct Blueprint {
    id: u64,
    pub(crate) instances: Vec<InstanceEntry>,
    pub(crate) connections: Vec<Connection>,
    pub(crate) autoconnect: bool,
    pub(crate) settings: Settings,
    pub(crate) stream_settings: BTreeMap<String, StreamSettings>,
    /// Mistakes found while adding (reported by `build`, with everything else).
    pub(crate) problems: Vec<Problem>,
    /// Inputs (instance, port) of explicit connections that failed: not also reported
    /// as fed by nobody.
    pub(crate) failed_inputs: BTreeSet<(usize, usize)>,
}

/// One module instance.
pub(crate) struct InstanceEntry {
    pub(crate) name: String,
    pub(crate) namespace: String,
    pub(crate) module_type: &'static str,
    pub(crate) ports: &'static [PortInfo],
    /// Per port (same order as `ports`): the remapped stream name, if any.
    pub(crate) remaps: Vec<Option<String>>,
    pub(crate) placement: Placement,
    /// The module value, handed to the runtime by [`Blueprint::into_runnable`].
    pub(crate) module: Box<dyn ModuleValue>,
}

/// An explicit `connect(from, to)`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Connection {
    pub(crate) from: (u32, usize),
    pub(crate) to: (u32, usize),
}

/// A module instance in a blueprint. Dereferences to the module's generated
/// `<Module>Ports` struct, so its ports are `instance.port_name`.
pub struct Instance<M: Module> {
    id: InstanceId,
    ports: M::Ports,
}

impl<M: Module> Instance<M> {
    /// The instance's id.
    pub fn id(&self) -> InstanceId {
        self.id
    }

    /// The typed handles of its ports.
    pub fn ports(&self) -> M::Ports {
        self.ports
    }
}

impl<M: Module> Deref for Instance<M> {
    type Target = M::Ports;
    fn deref(&self) -> &M::Ports {
        &self.ports
    }
}

impl<M: Module> Clone for Instance<M> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<M: Module> Copy for Instance<M> {}

impl<M: Module> fmt::Debug for Instance<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Instance")
            .field("module", &M::TYPE_NAME)
            .field("id", &self.id)
            .finish()
    }
}

impl Default for Blueprint {
    fn default() -> Self {
        Blueprint::new()
    }
}

impl fmt::Debug for Blueprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Blueprint")
            .field(
                "instances",
                &self.instances.iter().map(|i| &i.name).collect::<Vec<_>>(),
            )
            .field("connections", &self.connections.len())
            .field("autoconnect", &self.autoconnect)
            .finish_non_exhaustive()
    }
}

impl Blueprint {
    /// An empty blueprint: one process (`localhost/main`), compression `auto`.
    pub fn new() -> Blueprint {
        Blueprint {
            id: NEXT_BLUEPRINT_ID.fetch_add(1, Ordering::Relaxed),
            instances: Vec::new(),
            connections: Vec::new(),
            autoconnect: false,
            settings: Settings::default(),
            stream_settings: BTreeMap::new(),
            problems: Vec::new(),
            failed_inputs: BTreeSet::new(),
        }
    }

    /// Adds an instance of `module` named `name` (unique in the blueprint), in the
    /// default process. Its streams are named after its ports (`color_image`).
    pub fn add<M: Module>(&mut self, name: &str, module: M) -> Instance<M> {
        self.add_in_namespace("", name, module)
    }

    /// A namespace: instances added through it are named `prefix/name` and their
    /// relative stream names are prefixed too (`left/color_image`), as ROS namespaces do.
    ///
    /// ```
    /// # use streamwire::prelude::*;
    /// # #[derive(Module)]
    /// # struct Camera { color_image: Out<Image> }
    /// let mut blueprint = Blueprint::new();
    /// let left = blueprint.namespace("left").add("cam", Camera { color_image: Out::new() });
    /// let right = blueprint.namespace("right").add("cam", Camera { color_image: Out::new() });
    /// // Two cameras, streams `left/color_image` and `right/color_image`: no conflict.
    /// # let _ = (left, right);
    /// assert!(blueprint.build().is_ok());
    /// ```
    pub fn namespace(&mut self, prefix: &str) -> Namespace<'_> {
        if let Some(reason) = names::instance_name_problem(prefix) {
            self.problems.push(Problem::InvalidInstanceName {
                name: prefix.to_owned(),
                reason,
            });
        }
        Namespace {
            blueprint: self,
            prefix: prefix.to_owned(),
        }
    }

    /// Adds a module value whose type is known only at run time (one loaded from a
    /// blueprint file), in namespace `namespace` (`""` for none). Returns its id.
    pub fn add_value(
        &mut self,
        namespace: &str,
        name: &str,
        module: Box<dyn ModuleValue>,
    ) -> InstanceId {
        self.add_entry(namespace, name, module)
    }

    /// Each instance's full name and module value, in the order added: what a tool reads
    /// a code blueprint's settings from (its instances' `#[config]` fields).
    pub fn instance_values(&self) -> impl Iterator<Item = (&str, &dyn ModuleValue)> {
        self.instances
            .iter()
            .map(|entry| (entry.name.as_str(), &*entry.module))
    }

    /// Gives instance `name` (its full name) the `#[config]` fields of `module`, a value
    /// of its module type with its settings changed (by `-o`): its ports, state,
    /// placement and connections stay. False when no instance `name` of that type exists.
    pub fn set_config(&mut self, name: &str, module: &mut dyn ModuleValue) -> bool {
        self.instances
            .iter_mut()
            .find(|entry| entry.name == name)
            .is_some_and(|entry| entry.module.take_config(module))
    }

    fn add_in_namespace<M: Module>(
        &mut self,
        namespace: &str,
        name: &str,
        module: M,
    ) -> Instance<M> {
        let id = self.add_entry(namespace, name, Box::new(module));
        Instance {
            id,
            ports: M::port_handles(id),
        }
    }

    fn add_entry(
        &mut self,
        namespace: &str,
        name: &str,
        module: Box<dyn ModuleValue>,
    ) -> InstanceId {
        let module_type = module.module_type();
        let ports = module.ports();
        if let Some(reason) = names::instance_name_problem(name) {
            self.problems.push(Problem::InvalidInstanceName {
                name: name.to_owned(),
                reason,
            });
        }
        let full_name = join(namespace, name);
        if let Some(first) = self.instances.iter().find(|i| i.name == full_name) {
            self.problems.push(Problem::DuplicateInstance {
                name: full_name.clone(),
                first_module: first.module_type,
                second_module: module_type,
            });
        }
        let index = u32::try_from(self.instances.len()).unwrap_or(u32::MAX);
        let id = InstanceId::new(self.id, index);
        self.instances.push(InstanceEntry {
            name: full_name,
            namespace: namespace.to_owned(),
            module_type,
            ports,
            remaps: vec![None; ports.len()],
            placement: Placement::default(),
            module,
        });
        id
    }

    /// Connects `from` (an output) to `to` (an input) explicitly, whatever their stream
    /// names. The compiler checks that `from` is an output, `to` an input, and that they
    /// carry the same message type.
    ///
    /// An input connected explicitly is not autoconnected.
    pub fn connect<O, I>(&mut self, from: PortHandle<O>, to: PortHandle<I>) -> &mut Self
    where
        O: OutputPort,
        I: InputPort,
        I::Message: SameMessage<O::Message>,
    {
        if self.owns_port(from) && self.owns_port(to) {
            self.connections.push(Connection {
                from: (from.instance().index(), from.port_index()),
                to: (to.instance().index(), to.port_index()),
            });
        } else {
            self.problems
                .push(Problem::ForeignHandle { context: "connect" });
            if self.owns_port(to) {
                self.failed_inputs
                    .insert((to.instance().index() as usize, to.port_index()));
            }
        }
        self
    }

    /// Connects output `from` to input `to`, both written `instance.port` (the port's
    /// field name), as blueprint files give them. Unlike [`connect`](Blueprint::connect)
    /// the messages are checked when the blueprint is built; a bad name is reported with
    /// the valid ones.
    ///
    /// ```
    /// # use streamwire::prelude::*;
    /// # #[derive(Module)]
    /// # struct Camera { color_image: Out<Image> }
    /// # #[derive(Module)]
    /// # struct Viewer { frames: In<Image> }
    /// let mut blueprint = Blueprint::new();
    /// blueprint.add("cam", Camera { color_image: Out::new() });
    /// blueprint.add("viewer", Viewer { frames: In::new() });
    /// blueprint.connect_named("cam.color_image", "viewer.frames");
    /// assert!(blueprint.build().is_ok());
    /// ```
    pub fn connect_named(&mut self, from: &str, to: &str) -> &mut Self {
        let bad = |reason: String| Problem::BadNamedConnection {
            from: from.to_owned(),
            to: to.to_owned(),
            reason,
        };
        let out = self.named_port(from, streamwire_core::Direction::Output);
        let inp = self.named_port(to, streamwire_core::Direction::Input);
        match (out, inp) {
            (Ok(o), Ok(i)) => {
                let om = self.instances[o.0].ports[o.1].message();
                let im = self.instances[i.0].ports[i.1].message();
                if om != im {
                    self.problems.push(bad(format!(
                        "an output of `{}` cannot feed an input of `{}`",
                        om.rust_name(),
                        im.rust_name()
                    )));
                    self.failed_inputs.insert(i);
                } else {
                    self.connections.push(Connection {
                        from: (u32::try_from(o.0).unwrap_or(u32::MAX), o.1),
                        to: (u32::try_from(i.0).unwrap_or(u32::MAX), i.1),
                    });
                }
            }
            (o, i) => {
                let reasons: Vec<String> =
                    [o.err(), i.clone().err()].into_iter().flatten().collect();
                self.problems.push(bad(reasons.join("; ")));
                if let Ok(i) = i {
                    self.failed_inputs.insert(i);
                }
            }
        }
        self
    }

    /// (instance index, port index) of `instance.port` in direction `direction`, or
    /// what is wrong with the name.
    fn named_port(
        &self,
        name: &str,
        direction: streamwire_core::Direction,
    ) -> Result<(usize, usize), String> {
        let what = match direction {
            streamwire_core::Direction::Output => "output",
            streamwire_core::Direction::Input => "input",
        };
        let Some((instance, port)) = name.rsplit_once('.') else {
            return Err(format!("`{name}` is not `instance.port`"));
        };
        let Some(index) = self.instances.iter().position(|i| i.name == instance) else {
            let names: Vec<&str> = self.instances.iter().map(|i| i.name.as_str()).collect();
            let hint = names::did_you_mean(instance, names.iter().copied())
                .map(|s| format!(" (did you mean `{s}`?)"))
                // infallible: no close name is no hint, not a failure
                .unwrap_or_default();
            return Err(format!(
                "no instance `{instance}`{hint}; the instances are: {}",
                names.join(", ")
            ));
        };
        let entry = &self.instances[index];
        let valid: Vec<&str> = entry
            .ports
            .iter()
            .filter(|p| p.direction() == direction)
            .map(|p| p.field())
            .collect();
        match entry
            .ports
            .iter()
            .position(|p| p.field() == port && p.direction() == direction)
        {
            Some(p) => Ok((index, p)),
            None => {
                let hint = names::did_you_mean(port, valid.iter().copied())
                    .map(|s| format!(" (did you mean `{s}`?)"))
                    // infallible: no close name is no hint, not a failure
                    .unwrap_or_default();
                Err(format!(
                    "`{instance}` ({}) has no {what} `{port}`{hint}; its {what}s are: {}",
                    entry.module_type,
                    if valid.is_empty() {
                        "none".to_owned()
                    } else {
                        valid.join(", ")
                    }
                ))
            }
        }
    }

    /// Renames the stream of one port: relative names are resolved in the instance's
    /// namespace, absolute ones (`/front/color`) are taken as they are.
    pub fn remap<P: PortType>(&mut self, port: PortHandle<P>, stream: &str) -> &mut Self {
        if !self.owns_port(port) {
            self.problems
                .push(Problem::ForeignHandle { context: "remap" });
            return self;
        }
        if let Some(entry) = self.instances.get_mut(port.instance().index() as usize)
            && let Some(slot) = entry.remaps.get_mut(port.port_index())
        {
            *slot = Some(stream.to_owned());
        }
        self
    }

    /// Renames stream `from` to `to` for every port of instance `instance` that uses it
    /// (a ROS-style `from:=to` remap), for blueprints assembled from names.
    pub fn remap_stream(&mut self, instance: &str, from: &str, to: &str) -> &mut Self {
        let Some(index) = self.instance_index("a stream remap", instance) else {
            return self;
        };
        let entry = &mut self.instances[index];
        let mut found = false;
        for (port, slot) in entry.ports.iter().zip(entry.remaps.iter_mut()) {
            let current = slot.as_deref().unwrap_or(port.stream());
            if current == from {
                *slot = Some(to.to_owned());
                found = true;
            }
        }
        if !found {
            let mut known: Vec<String> = entry
                .ports
                .iter()
                .zip(&entry.remaps)
                .map(|(p, r)| r.clone().unwrap_or_else(|| p.stream().to_owned()))
                .collect();
            known.sort();
            known.dedup();
            self.problems.push(Problem::UnknownPortStream {
                instance: instance.to_owned(),
                stream: from.to_owned(),
                known,
            });
        }
        self
    }

    /// Runs `instance` in `placement` (default: `localhost/main`).
    pub fn place<M: Module>(&mut self, instance: &Instance<M>, placement: Placement) -> &mut Self {
        if !self.owns(instance.id()) {
            self.problems
                .push(Problem::ForeignHandle { context: "place" });
            return self;
        }
        if let Some(entry) = self.instances.get_mut(instance.id().index() as usize) {
            entry.placement = placement;
        }
        self
    }

    /// Runs the instance named `instance` in `placement`.
    pub fn place_named(&mut self, instance: &str, placement: Placement) -> &mut Self {
        if let Some(index) = self.instance_index("a placement", instance) {
            self.instances[index].placement = placement;
        }
        self
    }

    /// Connects, when the blueprint is built, every input not connected explicitly to
    /// the output of the same stream name and message type. Its errors (two producers of
    /// one stream, one name with two message types, an input nobody feeds) come from
    /// `build`, naming instances and ports.
    pub fn autoconnect(&mut self) -> &mut Self {
        self.autoconnect = true;
        self
    }

    /// Global compression of `Out<Compressed<..>>` outputs (default `auto`). A plain
    /// `Out<M>` compresses only when a per-stream setting asks.
    pub fn compression(&mut self, compression: Compression) -> &mut Self {
        self.settings.compression = compression;
        self
    }

    /// A blueprint-wide default of a codec parameter (`"jpeg_quality", 60`,
    /// `"max_width", 640`): every stream whose codec has the parameter uses it unless the
    /// stream's own settings ([`stream`](Blueprint::stream)) set it. Checked by the codec
    /// when the blueprint is built, like a per-stream parameter.
    ///
    /// ```
    /// # use streamwire::prelude::*;
    /// # #[derive(Module)]
    /// # struct Camera { color_image: Out<Compressed<Image>> }
    /// # #[derive(Module)]
    /// # struct Viewer { #[port(name = "color_image")] frames: In<Image> }
    /// let mut blueprint = Blueprint::new();
    /// blueprint.add("cam", Camera { color_image: Out::new() });
    /// let viewer = blueprint.add("viewer", Viewer { frames: In::new() });
    /// blueprint.place(&viewer, Placement::process("ui").on_host("laptop"));
    /// blueprint.autoconnect().codec_default("jpeg_quality", 60);
    /// let plan = blueprint.build()?;
    /// assert!(plan.to_string().contains("jpeg_quality=60"));
    /// # Ok::<(), streamwire::BuildError>(())
    /// ```
    pub fn codec_default(&mut self, key: impl Into<String>, value: impl ToString) -> &mut Self {
        self.settings.codec_defaults.set(key, value);
        self
    }

    /// The locality table of `auto` compression (default: [`AutoTable::default`], raw in
    /// one host, compressed between hosts).
    ///
    /// ```
    /// # use streamwire::prelude::*;
    /// # #[derive(Module)]
    /// # struct Camera { color_image: Out<Compressed<Image>> }
    /// # #[derive(Module)]
    /// # struct Viewer { #[port(name = "color_image")] frames: In<Image> }
    /// let mut blueprint = Blueprint::new();
    /// blueprint.add("cam", Camera { color_image: Out::new() });
    /// let viewer = blueprint.add("viewer", Viewer { frames: In::new() });
    /// blueprint.place(&viewer, Placement::process("ui"));
    /// assert_eq!(blueprint.autoconnect().build()?.codec_nodes().count(), 0);
    /// // Compress between the processes of one host too (where memory bandwidth is
    /// // scarcer than CPU, say).
    /// blueprint.auto_table(AutoTable::default().with(Locality::SameHost, WireFormat::Compressed));
    /// assert_eq!(blueprint.build()?.codec_nodes().count(), 2);
    /// # Ok::<(), streamwire::BuildError>(())
    /// ```
    pub fn auto_table(&mut self, table: AutoTable) -> &mut Self {
        self.settings.auto_table = table;
        self
    }

    /// Settings of one stream (by its resolved name, e.g. `left/color_image`); they beat
    /// the global ones.
    pub fn stream(&mut self, stream: &str, settings: StreamSettings) -> &mut Self {
        self.stream_settings.insert(stream.to_owned(), settings);
        self
    }

    /// Settings of one stream merged over what the blueprint already has for it (a later
    /// layer of configuration: the environment, `-o streams.color_image.jpeg_quality=60`).
    pub fn stream_override(&mut self, stream: &str, settings: &StreamSettings) -> &mut Self {
        let merged = self
            .stream_settings
            .get(stream)
            .map(|old| old.merged(settings))
            .unwrap_or_else(|| settings.clone());
        self.stream_settings.insert(stream.to_owned(), merged);
        self
    }

    /// What to do about inputs that receive lossy or downscaled pixels (default `Warn`:
    /// listed in the plan and logged).
    pub fn lossy_pixels(&mut self, report: Report) -> &mut Self {
        self.settings.lossy_pixels = report;
        self
    }

    /// What a distributed run does when a worker process dies (default
    /// [`Supervision::Stop`](crate::Supervision::Stop): the run stops, naming it).
    pub fn supervision(&mut self, supervision: crate::Supervision) -> &mut Self {
        self.settings.supervision = supervision;
        self
    }

    /// What to do about optional inputs that nobody feeds (default `Ignore`: listed in
    /// the plan only).
    pub fn unfed_optional(&mut self, report: Report) -> &mut Self {
        self.settings.unfed_optional = report;
        self
    }

    /// What to do about an output whose QoS cannot satisfy the input it feeds: a
    /// best-effort output feeding a reliable input, a volatile output feeding a
    /// transient-local one (default `Error`: ROS only reports these at run time, as
    /// silence).
    pub fn incompatible_qos(&mut self, report: Report) -> &mut Self {
        self.settings.incompatible_qos = report;
        self
    }

    /// What to do about a `keep_all` input fed from another process by a `best_effort`
    /// output: the wire may lose frames the input promised to keep, and nothing resends
    /// them (default `Error`; with `Warn` or `Ignore` each lost frame is still counted as
    /// `lost_on_wire` on the input's row).
    pub fn lossy_path(&mut self, report: Report) -> &mut Self {
        self.settings.lossy_path = report;
        self
    }

    /// Wires the blueprint: matches ports, inserts codec nodes, checks every rule.
    /// Reports every problem at once. The blueprint stays usable (to print, change and
    /// build again); [`into_runnable`](Blueprint::into_runnable) is the form a runtime
    /// takes.
    pub fn build(&self) -> Result<crate::Plan, BuildError> {
        crate::planner::plan(self)
    }

    /// Checks what must hold before any worker starts, without planning: every instance's
    /// settings against its module's declared ranges (and its own check), every placement's
    /// names. `build` checks the same, with everything else.
    pub fn check_settings(&self) -> Result<(), BuildError> {
        let problems = crate::planner::settings_problems(self);
        if problems.is_empty() {
            Ok(())
        } else {
            Err(BuildError { problems })
        }
    }

    /// Builds the plan and hands over the module values with it: what a runtime runs.
    pub fn into_runnable(self) -> Result<crate::RunnablePlan, BuildError> {
        let plan = crate::planner::plan(&self)?;
        let modules = self.instances.into_iter().map(|i| i.module).collect();
        Ok(crate::RunnablePlan::new(plan, modules))
    }

    fn owns(&self, instance: InstanceId) -> bool {
        instance.blueprint() == self.id && (instance.index() as usize) < self.instances.len()
    }

    /// A handle of this blueprint whose port exists. Handles made by the derive always
    /// are; checking keeps the planner's indexing panic-free for hand-made ones too.
    fn owns_port<P>(&self, port: PortHandle<P>) -> bool {
        self.owns(port.instance())
            && self
                .instances
                .get(port.instance().index() as usize)
                .is_some_and(|entry| port.port_index() < entry.ports.len())
    }

    fn instance_index(&mut self, context: &'static str, name: &str) -> Option<usize> {
        let found = self.instances.iter().position(|i| i.name == name);
        if found.is_none() {
            let suggestion =
                names::did_you_mean(name, self.instances.iter().map(|i| i.name.as_str()))
                    .map(str::to_owned);
            self.problems.push(Problem::UnknownInstance {
                name: name.to_owned(),
                context,
                suggestion,
            });
        }
        found
    }
}

/// Adds instances under a name prefix; see [`Blueprint::namespace`].
pub struct Namespace<'a> {
    blueprint: &'a mut Blueprint,
    prefix: String,
}

impl Namespace<'_> {
    /// Adds `module` as `prefix/name`; its relative stream names get the prefix too.
    pub fn add<M: Module>(&mut self, name: &str, module: M) -> Instance<M> {
        let prefix = self.prefix.clone();
        self.blueprint.add_in_namespace(&prefix, name, module)
    }

    /// A nested namespace `prefix/inner`.
    pub fn namespace(&mut self, inner: &str) -> Namespace<'_> {
        if let Some(reason) = names::instance_name_problem(inner) {
            self.blueprint.problems.push(Problem::InvalidInstanceName {
                name: inner.to_owned(),
                reason,
            });
        }
        Namespace {
            prefix: join(&self.prefix, inner),
            blueprint: self.blueprint,
        }
    }
}
