//! A switch under way as the status reads it (what the old workloads still serve, which way a
//! zone layout changes), and how the counts a workload's status reports are added up.

/// A count a workload's status reports, as the layout adds it up: absent or negative (a forged
/// or broken status) counts 0.
#[must_use]
pub fn count(reported: Option<i32>) -> i32 {
    reported.unwrap_or(0).max(0)
}

/// `counts` added up without wrapping: at most `i32::MAX`.
pub fn total(counts: impl IntoIterator<Item = i32>) -> i32 {
    counts.into_iter().fold(0, i32::saturating_add)
}

/// A switch under way: the old workloads still serve.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Switching<'a> {
    /// Kind of the old workload.
    pub from: &'a str,
    /// Its ready pods.
    pub ready: i32,
    /// The zone layout change, when the switch is one (else a switch of workload kind).
    pub zones: Option<ZoneSwitch>,
}

/// A change of the zone layout: the workloads of the old layout serve until the new ones are
/// ready.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZoneSwitch {
    /// `spec.zones` turned on: the workload without zones serves.
    On,
    /// `spec.zones` turned off: the zones' workloads serve.
    Off,
    /// A zone name removed or changed: the workloads of the zones no longer named serve.
    Names,
}
