//! How each pod last started, as its warm-restart guard reported it: the guard's one-line
//! result (`restore: ...` or `cold: ...`) is its termination message, which the kubelet keeps
//! in the pod's status and Metacontroller sends as a related object (the customize hook asks
//! for the Memcached's pods when warm restart is on).

use super::pods::{self, named};
use crate::children::warm_restart::{GUARD, GUARD_COLD, GUARD_RESTORE};
use crate::hook::{Observed, RelatedObject};

/// The pods' last starts, each list in pod order (by name length, then name).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Starts<'a> {
    /// Pods whose guard kept the saved items.
    pub restored: Vec<&'a str>,
    /// Pods whose guard started them cold, with its reason.
    pub cold: Vec<(&'a str, &'a str)>,
    /// Pods whose guard has not ended (or ended without a result).
    pub starting: Vec<&'a str>,
}

impl<'a> Starts<'a> {
    /// The related Pods of `namespace` and how their guards ended.
    #[must_use]
    pub fn of(related: &'a Observed<RelatedObject>, namespace: &str) -> Self {
        let mut starts = Self::default();
        for pod in related.iter().filter(|o| pods::is_pod_of(o, namespace)) {
            let name = pod.metadata.name.as_str();
            let result = pod
                .init_containers
                .iter()
                .find(|c| c.name == GUARD)
                .and_then(|c| c.message.as_deref())
                .map(str::trim);
            match result {
                Some(line) if line.starts_with(GUARD_RESTORE) => starts.restored.push(name),
                Some(line) => match line.strip_prefix(GUARD_COLD) {
                    Some(reason) => starts.cold.push((name, reason.trim_start())),
                    None => starts.starting.push(name),
                },
                None => starts.starting.push(name),
            }
        }
        starts.restored.sort_unstable_by_key(|p| pods::order(p));
        starts.cold.sort_unstable_by_key(|(p, _)| pods::order(p));
        starts.starting.sort_unstable_by_key(|p| pods::order(p));
        starts
    }

    /// One sentence for the `WarmRestart` condition; `None` when no pod was seen.
    #[must_use]
    pub fn summary(&self) -> Option<String> {
        let total = self.restored.len() + self.cold.len() + self.starting.len();
        if total == 0 {
            return None;
        }
        let mut parts = vec![format!(
            "{} of {total} pods restored their items at their last start{}",
            self.restored.len(),
            named(self.restored.iter().map(|p| (*p).to_owned()))
        )];
        if !self.cold.is_empty() {
            let cold = self.cold.iter().map(|(p, why)| format!("{p}: {why}"));
            parts.push(format!("started empty{}", named(cold)));
        }
        if !self.starting.is_empty() {
            let starting = self.starting.iter().map(|p| (*p).to_owned());
            parts.push(format!("not started yet{}", named(starting)));
        }
        Some(parts.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hook::EndedContainer;

    fn pod(name: &str, ns: &str, guard: Option<&str>) -> RelatedObject {
        RelatedObject {
            init_containers: guard
                .map(|m| EndedContainer {
                    name: GUARD.into(),
                    message: Some(m.into()),
                })
                .into_iter()
                .collect(),
            ..pods::test_pod(name, ns)
        }
    }

    #[test]
    fn sorts_pods_by_how_their_guard_ended() {
        let related = Observed(vec![
            pod(
                "c-2",
                "ns",
                Some("cold: items saved 400 s ago, more than 300\n"),
            ),
            pod("c-0", "ns", Some("restore: items saved 2 s ago\n")),
            pod("c-1", "ns", None),
            pod("other", "elsewhere", Some("restore: items saved 1 s ago")),
        ]);
        let starts = Starts::of(&related, "ns");
        assert_eq!(starts.restored, ["c-0"]);
        assert_eq!(
            starts.cold,
            [("c-2", "items saved 400 s ago, more than 300")]
        );
        assert_eq!(starts.starting, ["c-1"]);
        assert_eq!(
            starts.summary().as_deref(),
            Some(
                "1 of 3 pods restored their items at their last start (c-0); started empty \
                 (c-2: items saved 400 s ago, more than 300); not started yet (c-1)"
            )
        );
    }

    #[test]
    fn reads_what_the_guard_writes() {
        use crate::pod::warm::guard::Verdict;
        let restore = Verdict::Restore { age: 7, wait: 0 }.line();
        let cold = Verdict::Cold("no saved items".into()).line();
        let related = Observed(vec![
            pod("c-0", "ns", Some(&restore)),
            pod("c-1", "ns", Some(&cold)),
        ]);
        let starts = Starts::of(&related, "ns");
        assert_eq!(starts.restored, ["c-0"]);
        assert_eq!(starts.cold, [("c-1", "no saved items")]);
        assert!(starts.starting.is_empty());
    }

    #[test]
    fn no_pods_no_summary_and_long_lists_are_counted() {
        assert_eq!(Starts::of(&Observed(Vec::new()), "ns").summary(), None);
        let many: Vec<_> = (0..10)
            .map(|i| {
                pod(
                    &format!("c-{i}"),
                    "ns",
                    Some("restore: items saved 1 s ago"),
                )
            })
            .collect();
        let related = Observed(many);
        let summary = Starts::of(&related, "ns").summary().expect("pods");
        assert_eq!(
            summary,
            "10 of 10 pods restored their items at their last start \
             (c-0, c-1, c-2, c-3, c-4, c-5, c-6, c-7 and 2 more)"
        );
    }
}
