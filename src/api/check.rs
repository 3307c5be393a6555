//! The building blocks of validation: field errors worded like the API server's, and the checks
//! every spec block shares (ranges, lengths, list and map sizes, quantities).
//!
//! A value is repeated only up to [`SHOWN_VALUE_LENGTH`] characters (an over-long one not at
//! all) and a list or map is checked entry by entry only up to its bound, so a status stays
//! small whatever the spec.

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::api::core::v1::ResourceRequirements;

use super::bounded::Bounded;
use super::quantity::Quantity;
use super::{apiserver, bounds};

/// One broken rule, with the JSON path of the offending field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// JSON path, e.g. `spec.replicas`.
    pub field: String,
    /// The kind of error, as the API server names it.
    pub reason: Reason,
    /// The offending value, rendered (`None` for a missing or an over-long value).
    pub value: Option<String>,
    /// What is wrong.
    pub detail: String,
}

/// The kinds of field error the hook reports, named like the API server's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// A value that breaks a rule: `Invalid value`.
    Invalid,
    /// A missing value: `Required value`.
    Required,
    /// A string over its length: `Too long` (the value is not repeated).
    TooLong,
    /// A list or map over its size: `Too many` (with the count).
    TooMany,
}

impl Reason {
    /// The API server's words for it.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Invalid => "Invalid value",
            Self::Required => "Required value",
            Self::TooLong => "Too long",
            Self::TooMany => "Too many",
        }
    }
}

impl Violation {
    /// A value that breaks a rule.
    pub(crate) fn invalid(
        field: impl Into<String>,
        value: impl fmt::Display,
        detail: impl Into<String>,
    ) -> Self {
        Self {
            field: field.into(),
            reason: Reason::Invalid,
            value: Some(value.to_string()),
            detail: detail.into(),
        }
    }

    /// A missing value.
    pub(crate) fn required(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            reason: Reason::Required,
            value: None,
            detail: detail.into(),
        }
    }

    /// A string over `max` characters, worded like the API server's `maxLength` error.
    pub(crate) fn too_long(field: impl Into<String>, max: usize) -> Self {
        Self {
            field: field.into(),
            reason: Reason::TooLong,
            value: None,
            detail: format!("may not be more than {max} bytes"),
        }
    }

    /// A list or map of `count` entries over `max`, worded like the API server's `maxItems`
    /// and `maxProperties` errors.
    pub(crate) fn too_many(field: impl Into<String>, count: usize, max: usize) -> Self {
        Self {
            field: field.into(),
            reason: Reason::TooMany,
            value: Some(count.to_string()),
            detail: format!("must have at most {max} items"),
        }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}: ", self.field, self.reason.as_str())?;
        if let Some(value) = &self.value {
            write!(f, "{value}: ")?;
        }
        f.write_str(&self.detail)
    }
}

/// Where a block's checks write their violations.
pub(crate) type Out = Vec<Violation>;

/// Longest value a violation repeats; a longer one is cut (with `...`).
pub(crate) const SHOWN_VALUE_LENGTH: usize = 128;

/// `text` as a JSON string, cut after [`SHOWN_VALUE_LENGTH`] characters.
pub(crate) fn quoted(text: &str) -> String {
    let (shown, cut) = match text.char_indices().nth(SHOWN_VALUE_LENGTH) {
        Some((end, _)) => (&text[..end], "..."),
        None => (text, ""),
    };
    let json = serde_json::to_string(shown).unwrap_or_else(|_| format!("{shown:?}"));
    format!("{json}{cut}")
}

/// Whether `text` has more than `max` characters (what the API server's `maxLength` counts).
#[must_use]
pub fn is_too_long(text: &str, max: usize) -> bool {
    text.len() > max && text.chars().count() > max
}

/// `spec.image`-like strings: at most `max` characters.
pub(crate) fn length(out: &mut Out, field: &str, value: Option<&str>, max: usize) {
    if value.is_some_and(|v| is_too_long(v, max)) {
        out.push(Violation::too_long(field, max));
    }
}

/// An image reference: at most [`bounds::IMAGE_LENGTH`] characters, no leading or trailing
/// whitespace and no control character (an empty one is each caller's to report).
pub(crate) fn image(out: &mut Out, field: &str, value: Option<&str>) {
    length(out, field, value, bounds::IMAGE_LENGTH);
    if let Some(error) = value.and_then(apiserver::image_error) {
        out.push(Violation::invalid(
            field,
            quoted(value.unwrap_or_default()),
            error,
        ));
    }
}

/// A list of at most `max` entries; returns the entries within the bound, to check one by one.
pub(crate) fn items<'a, T>(
    out: &mut Out,
    field: &str,
    items: Option<&'a [T]>,
    max: usize,
) -> &'a [T] {
    let items = items.unwrap_or_default();
    if items.len() > max {
        out.push(Violation::too_many(field, items.len(), max));
        &items[..max]
    } else {
        items
    }
}

/// A list decoded up to its bound of `MAX` entries ([`Bounded`]); returns the entries within
/// the bound, to check one by one.
pub(crate) fn bounded<'a, T, const MAX: usize>(
    out: &mut Out,
    field: &str,
    list: Option<&'a Bounded<T, MAX>>,
) -> &'a [T] {
    let Some(list) = list else { return &[] };
    if list.count() > MAX {
        out.push(Violation::too_many(field, list.count(), MAX));
    }
    &list[..list.len().min(MAX)]
}

/// A label or annotation map: at most [`bounds::MAP_ENTRIES`] entries, keys of at most
/// [`bounds::KEY_LENGTH`] and values of at most `max_value` characters. Keys beyond the bound
/// are not checked one by one (`Too many` covers them).
pub(crate) fn map(
    out: &mut Out,
    field: &str,
    map: Option<&BTreeMap<String, String>>,
    max_value: usize,
) {
    let Some(map) = map else { return };
    if map.len() > bounds::MAP_ENTRIES {
        out.push(Violation::too_many(field, map.len(), bounds::MAP_ENTRIES));
    }
    let mut long_key = false;
    for (key, value) in map.iter().take(bounds::MAP_ENTRIES) {
        if is_too_long(key, bounds::KEY_LENGTH) {
            long_key = true;
        } else if is_too_long(value, max_value) {
            out.push(Violation::too_long(format!("{field}.{key}"), max_value));
        }
    }
    if long_key {
        // Worded like the API server's answer to the CRD's CEL rule on the map.
        out.push(Violation::invalid(
            field,
            "\"object\"",
            bounds::key_message(),
        ));
    }
}

/// Whether a value `0` stands for "use the default" (the memcached settings) or is checked.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Zero {
    /// `0` means the default and is never out of range.
    MeansDefault,
    /// `0` is checked like any other value.
    IsAValue,
}

/// An integer within `min..=max`.
pub(crate) fn range(
    out: &mut Out,
    field: &str,
    value: Option<i64>,
    (min, max): (i64, i64),
    zero: Zero,
) {
    let Some(v) = value else { return };
    if zero == Zero::MeansDefault && v == 0 {
        return;
    }
    if v < min {
        let detail = format!("should be greater than or equal to {min}");
        out.push(Violation::invalid(field, v, detail));
    } else if v > max {
        let detail = format!("should be less than or equal to {max}");
        out.push(Violation::invalid(field, v, detail));
    }
}

/// Every quantity of a container's resources is well-formed and not negative.
pub(crate) fn resources(out: &mut Out, field: &str, resources: Option<&ResourceRequirements>) {
    let Some(resources) = resources else { return };
    for (part, list) in [
        ("limits", &resources.limits),
        ("requests", &resources.requests),
    ] {
        for (name, quantity) in list.iter().flatten() {
            // The path is written only for a violation: valid resources allocate nothing.
            let path = || format!("{field}.{part}.{name}");
            match Quantity::parse(&quantity.0) {
                Err(e) => out.push(Violation::invalid(
                    path(),
                    quoted(&quantity.0),
                    e.to_string(),
                )),
                Ok(q) if q.is_negative() => {
                    let detail = "must be greater than or equal to 0";
                    out.push(Violation::invalid(path(), quoted(&quantity.0), detail));
                }
                Ok(_) => {}
            }
        }
    }
}

/// A quantity that must parse (an HPA target): the error of a malformed one.
pub(crate) fn quantity(out: &mut Out, field: String, text: &str) {
    if let Err(e) = Quantity::parse(text) {
        out.push(Violation::invalid(field, quoted(text), e.to_string()));
    }
}

/// A volume size (`warmRestart.size`, `extstore.size`): well formed, greater than 0 and a
/// number of bytes the hook can compute with.
pub(crate) fn positive_quantity(out: &mut Out, field: &'static str, text: &str) {
    match Quantity::parse(text) {
        Err(e) => out.push(Violation::invalid(field, quoted(text), e.to_string())),
        Ok(q) if q.ceil().is_none() => {
            out.push(Violation::invalid(
                field,
                quoted(text),
                "is too large: a volume size must be below 2^128 bytes",
            ));
        }
        Ok(q) if q.is_negative() || q.ceil() == Some(0) => {
            out.push(Violation::invalid(
                field,
                quoted(text),
                "must be greater than 0",
            ));
        }
        Ok(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_values_are_cut_when_repeated() {
        assert_eq!(quoted("50 %"), "\"50 %\"");
        let cut = quoted(&"é".repeat(1000));
        assert_eq!(cut, format!("\"{}\"...", "é".repeat(SHOWN_VALUE_LENGTH)));
    }

    #[test]
    fn lengths_count_characters() {
        assert!(!is_too_long(&"é".repeat(63), 63));
        assert!(is_too_long(&"é".repeat(64), 63));
    }
}
