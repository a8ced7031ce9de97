//! A plan together with the module values it wires: what a runtime takes.

use std::fmt;

use streamwire_core::ModuleValue;

use crate::Plan;

/// A [`Plan`] with the module values of its instances, made by
/// [`Blueprint::into_runnable`](crate::Blueprint::into_runnable).
///
/// Module `i` is the value of the plan's instance `i` (instances keep the order in which
/// they were added).
pub struct RunnablePlan {
    plan: Plan,
    modules: Vec<Box<dyn ModuleValue>>,
}

impl RunnablePlan {
    pub(crate) fn new(plan: Plan, modules: Vec<Box<dyn ModuleValue>>) -> RunnablePlan {
        RunnablePlan { plan, modules }
    }

    /// The plan, to print or inspect.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// The plan and the module values, in instance order.
    pub fn into_parts(self) -> (Plan, Vec<Box<dyn ModuleValue>>) {
        (self.plan, self.modules)
    }
}

impl fmt::Debug for RunnablePlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunnablePlan")
            .field(
                "modules",
                &self
                    .modules
                    .iter()
                    .map(|m| m.module_type())
                    .collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}
