//! The plan is the runtime's input: a throwaway runtime, written here against the erased
//! port seam only, binds a derived module's `Out<Image>` and `In<Image>` and moves one
//! message between them without naming either module type.

use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use streamwire_core::{
    AnyMessage, AnyPort, Context, Counter, Direction, DropReason, Envelope, Header, In,
    InputBinding, ModuleValue, Node, NodeResult, Out, OutputBinding, PortError, RunContext,
    Timestamp,
};
use streamwire_graph::{Blueprint, Endpoint};
use streamwire_macros::Module;
use streamwire_msgs::{Image, ImageEncoding};

#[derive(Module)]
#[module(crate = streamwire_core)]
struct Camera {
    color_image: Out<Image>,
}

impl Node for Camera {
    fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        let image = Image::from_packed(2, 1, ImageEncoding::Mono8, vec![7u8, 9])?
            .with_stamp(Timestamp::from_nanos(5));
        self.color_image.publish(image)?;
        Ok(())
    }
}

#[derive(Module)]
#[module(crate = streamwire_core)]
struct Viewer {
    #[port(name = "color_image")]
    frames: In<Image>,
    #[state]
    seen: Vec<(u64, Vec<u8>)>,
}

impl Node for Viewer {
    fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        while let Some(frame) = self.frames.recv()? {
            self.seen
                .push((frame.header.seq, frame.message.data().to_vec()));
        }
        Ok(())
    }
}

/// One queue shared by the output and the input of the one link.
#[derive(Default)]
struct Queue {
    items: Mutex<VecDeque<Envelope>>,
    seq: AtomicU64,
}

impl InputBinding for Queue {
    fn pop(&self) -> Option<Envelope> {
        self.items.lock().pop_front()
    }
    fn peek(&self) -> Option<Envelope> {
        self.items.lock().front().cloned()
    }
    fn len(&self) -> usize {
        self.items.lock().len()
    }
    fn is_closed(&self) -> bool {
        false
    }
    fn count_drop(&self, _: DropReason) {}
}

impl OutputBinding for Queue {
    fn publish(&self, message: Arc<dyn AnyMessage>) -> Result<Header, PortError> {
        let header = Header {
            seq: self.seq.fetch_add(1, Ordering::Relaxed),
            publish_time: Timestamp::from_nanos(10),
        };
        self.items.lock().push_back(Envelope { header, message });
        Ok(header)
    }
    fn has_consumers(&self) -> bool {
        true
    }
}

struct Services;

impl RunContext for Services {
    fn instance_name(&self) -> &str {
        "test"
    }
    fn now(&self) -> Timestamp {
        Timestamp::ZERO
    }
    fn is_stopping(&self) -> bool {
        false
    }
    fn finish(&self) {}
    fn counter(&self, _: &str) -> Counter {
        Counter::new()
    }
    fn sleep_until(&self, _: Timestamp) -> bool {
        true
    }
}

#[test]
fn a_throwaway_runtime_moves_one_message_through_erased_ports() {
    let mut blueprint = Blueprint::new();
    blueprint.add(
        "camera",
        Camera {
            color_image: Out::new(),
        },
    );
    blueprint.add(
        "viewer",
        Viewer {
            frames: In::new(),
            seen: Vec::new(),
        },
    );
    blueprint.autoconnect();
    let runnable = blueprint.into_runnable().unwrap();
    let (plan, mut modules) = runnable.into_parts();
    assert_eq!(modules.len(), 2);

    // The runtime's view: the plan's one link, and module values it cannot name.
    let link = plan.links().next().unwrap();
    assert!(matches!(link.from, Endpoint::Port { .. }));
    let queue = Arc::new(Queue::default());
    let mut bound = Vec::new();
    for module in &mut modules {
        let mut bind = |index: usize, port: &mut dyn AnyPort| {
            let result = match port.direction() {
                Direction::Output => port.bind_output(index, queue.clone()),
                Direction::Input => port.bind_input(index, queue.clone()),
            };
            bound.push((
                port.type_name().rsplit("::").next().map(str::to_owned),
                result.is_ok(),
            ));
        };
        module.visit_ports(&mut bind);
    }
    assert_eq!(bound.len(), 2);
    assert!(bound.iter().all(|(_, ok)| *ok), "{bound:?}");

    // Step the producer, then the consumer, through the erased behaviour.
    let services = Services;
    for module in &mut modules {
        let node = module.behaviour().expect("both modules implement Node");
        node.step(&mut Context::new(&services)).unwrap();
    }

    let viewer: &mut dyn ModuleValue = modules[1].as_mut();
    let viewer = viewer.as_any_mut().downcast_mut::<Viewer>().unwrap();
    assert_eq!(viewer.seen, vec![(0, vec![7, 9])]);
}

#[test]
fn binding_a_port_the_wrong_way_round_is_an_error() {
    let mut input: In<Image> = In::new();
    let queue = Arc::new(Queue::default());
    assert!(AnyPort::bind_output(&mut input, 0, queue.clone()).is_err());
    let mut output: Out<Image> = Out::new();
    assert!(AnyPort::bind_input(&mut output, 0, queue).is_err());
}

#[test]
fn an_unbound_port_is_an_error_not_a_panic() {
    let mut input: In<Image> = In::new();
    assert!(matches!(input.recv(), Err(PortError::Unbound { .. })));
    let output: Out<Image> = Out::new();
    let image = Image::from_packed(1, 1, ImageEncoding::Mono8, vec![0u8]).unwrap();
    assert!(matches!(
        output.publish(image),
        Err(PortError::Unbound { .. })
    ));
}
