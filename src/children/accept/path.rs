//! A field path written out only when a violation needs it: the check walks every child of
//! every sync, and formatting each path it passes would cost more than the checks themselves.

use std::fmt;

/// `Deployment/cache.spec.template.spec.tolerations[0].key`, as a chain of borrowed parts.
#[derive(Clone, Copy)]
pub(super) struct Path<'a> {
    parent: Option<&'a Path<'a>>,
    part: Part<'a>,
}

#[derive(Clone, Copy)]
enum Part<'a> {
    /// `<kind>/<name>`.
    Child(&'a str, &'a str),
    /// `.field`.
    Field(&'a str),
    /// `[index]`.
    Index(usize),
    /// `[name]` (a container).
    Named(&'a str),
}

impl<'a> Path<'a> {
    /// The child of `kind` named `name`.
    pub(super) fn child(kind: &'a str, name: &'a str) -> Self {
        Self {
            parent: None,
            part: Part::Child(kind, name),
        }
    }

    fn then(&'a self, part: Part<'a>) -> Self {
        Self {
            parent: Some(self),
            part,
        }
    }

    /// `self.field`.
    pub(super) fn at(&'a self, field: &'a str) -> Self {
        self.then(Part::Field(field))
    }

    /// `self[index]`.
    pub(super) fn index(&'a self, index: usize) -> Self {
        self.then(Part::Index(index))
    }

    /// `self[name]`.
    pub(super) fn named(&'a self, name: &'a str) -> Self {
        self.then(Part::Named(name))
    }
}

impl fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(parent) = self.parent {
            parent.fmt(f)?;
        }
        match self.part {
            Part::Child(kind, name) => write!(f, "{kind}/{name}"),
            Part::Field(field) => write!(f, ".{field}"),
            Part::Index(index) => write!(f, "[{index}]"),
            Part::Named(name) => write!(f, "[{name}]"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_reads_like_a_field_path() {
        let child = Path::child("Deployment", "cache");
        let spec = child.at("spec.template.spec");
        let list = spec.at("tolerations");
        let item = list.index(2);
        assert_eq!(
            item.at("key").to_string(),
            "Deployment/cache.spec.template.spec.tolerations[2].key"
        );
        assert_eq!(
            spec.at("containers").named("memcached").to_string(),
            "Deployment/cache.spec.template.spec.containers[memcached]"
        );
    }
}
