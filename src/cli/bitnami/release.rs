//! The release being replaced: its objects' names and its pods' labels, which the Memcached's
//! must not take, since both run side by side until clients have moved.

use anyhow::bail;
use serde_json::Value;

use super::chart::{self, Generation};

/// A release of the chart: what its objects are called and how its selectors read.
#[derive(Debug)]
pub struct Release {
    /// The release's name (`app.kubernetes.io/instance` of its pods).
    pub name: String,
    /// Its objects' name (the chart's `fullname`).
    pub fullname: String,
    /// `app.kubernetes.io/name` of its pods.
    pub app_name: String,
    /// The chart generation it was installed from.
    pub generation: Generation,
}

impl Release {
    /// The release `name` with the values `values` of a chart of `generation`.
    #[must_use]
    pub fn of(values: &Value, name: &str, generation: Generation) -> Self {
        Self {
            name: name.to_owned(),
            fullname: chart::fullname(values, name),
            app_name: chart::app_name(values).to_owned(),
            generation,
        }
    }

    /// The Secret holding the chart's SASL password (key `memcached-password`).
    #[must_use]
    pub fn password_secret<'a>(&'a self, existing: Option<&'a str>) -> &'a str {
        existing.unwrap_or(&self.fullname)
    }

    /// Refuses a Memcached name whose objects would take a name of the release's (its workload,
    /// Service, budget, Secret and NetworkPolicy are `<fullname>`, its metrics Service
    /// `<fullname>-metrics`), or whose pods its Service and budget would select
    /// (`app.kubernetes.io/name` and `app.kubernetes.io/instance`, the Memcached's pods carrying
    /// `memcached` and the Memcached's name).
    ///
    /// # Errors
    /// The name and the object or selector it collides with.
    pub fn check_apart(&self, name: &str) -> anyhow::Result<()> {
        let full = &self.fullname;
        let taken = [full.clone(), format!("{full}-metrics")];
        // The Memcached's children are `<name>` and `<name>-sasl` (the converter's Secret).
        for ours in [name.to_owned(), format!("{name}-sasl")] {
            if taken.contains(&ours) {
                bail!(
                    "--name {name}: the Memcached's object {ours} would take the name of the \
                     release {}'s own, and neither could run beside the other; choose another \
                     name (the default is {full}-cache)",
                    self.name
                );
            }
        }
        if name == self.name && self.app_name == memcached_hook::children::labels::APP_NAME {
            bail!(
                "--name {name}: the Memcached's pods would carry app.kubernetes.io/name=memcached \
                 and app.kubernetes.io/instance={name}, which the release {}'s Service and \
                 budget select: its clients would reach the new, empty pods; choose another name",
                self.name
            );
        }
        Ok(())
    }
}
