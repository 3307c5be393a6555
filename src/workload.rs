//! The layout of a cache: which workloads run its pods (a Deployment or a StatefulSet, one per
//! zone with `spec.zones`), the switch between layouts, the zones' budgets and rollout order.

pub mod budgets;
mod plan;
pub mod rollout;

pub use plan::{Plan, other};
