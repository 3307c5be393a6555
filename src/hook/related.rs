//! Related objects from the customize hook: a Secret's identity and data, a Pod's identity, how
//! its init containers ended and its reload agent's condition, and for an object named like one
//! of the Memcached's children, its controller. Nothing else of them is read, and their errors
//! never repeat what they hold.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde::de::Deserializer;

/// A related object from the customize hook (a Secret or a Pod): identity, a Secret's data
/// and how a Pod's init containers ended.
#[derive(Debug)]
pub struct RelatedObject {
    /// e.g. `v1`.
    pub api_version: String,
    /// e.g. `Secret`.
    pub kind: String,
    /// Name and namespace.
    pub metadata: RelatedMeta,
    /// Base64-encoded data of a Secret.
    pub data: Option<BTreeMap<String, String>>,
    /// A Pod's init containers that have ended, with their termination messages.
    pub init_containers: Vec<EndedContainer>,
    /// A Pod's reload agent's last outcome: its condition [`RELOAD_CONDITION`], if written.
    pub reload: Option<ReloadReport>,
}

/// The Pod condition in which the reload agent writes each reload's outcome.
pub const RELOAD_CONDITION: &str = "memcached.c5c3.io/SecretReload";

/// The reload agent's condition on its Pod.
#[derive(Debug, PartialEq, Eq)]
pub struct ReloadReport {
    /// `status: "True"`: memcached took the mounted Secrets.
    pub ok: bool,
    /// Why not, when it failed.
    pub message: Option<String>,
}

/// An init container of a related Pod that has ended.
#[derive(Debug, PartialEq, Eq)]
pub struct EndedContainer {
    /// The container's name.
    pub name: String,
    /// Its termination message (`terminationMessagePath`), if it wrote one.
    pub message: Option<String>,
}

/// A related object's metadata: its name, namespace and owners, nothing else (a Secret's
/// annotations, which may hold its content, are not looked at).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RelatedMeta {
    /// Object name.
    pub name: String,
    /// Object namespace.
    #[serde(default)]
    pub namespace: Option<String>,
    /// Its owners, as far as who controls it.
    #[serde(default, deserialize_with = "super::null_as_default")]
    pub owner_references: Vec<RelatedOwner>,
}

impl RelatedMeta {
    /// The owner that controls the object, if any.
    #[must_use]
    pub fn controller(&self) -> Option<&RelatedOwner> {
        self.owner_references
            .iter()
            .find(|o| o.controller == Some(true))
    }
}

/// One owner of a related object: who it is, and whether it is the object's controller.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RelatedOwner {
    /// e.g. `memcached.c5c3.io/v1beta1`.
    #[serde(default)]
    pub api_version: String,
    /// e.g. `Memcached`.
    #[serde(default)]
    pub kind: String,
    /// The owner's name.
    #[serde(default)]
    pub name: String,
    /// `controller: true` marks the one owner that manages the object.
    #[serde(default)]
    pub controller: Option<bool>,
}

/// What a related object of the wrong shape is told, whatever is wrong with it.
pub const RELATED_ERROR: &str = "a related object must be an object with apiVersion, kind, metadata.name, and for a Secret data of base64 strings (each key once), for a Pod its status (its content is not shown)";

/// The part of a related Pod's status that is read: each init container's state and its
/// conditions' type, status and message.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PodStatus {
    #[serde(default)]
    init_container_statuses: Option<Vec<InitStatus>>,
    #[serde(default)]
    conditions: Option<Vec<PodCondition>>,
}

#[derive(Deserialize)]
struct PodCondition {
    #[serde(rename = "type", default)]
    type_: String,
    #[serde(default)]
    status: String,
    #[serde(default)]
    message: Option<String>,
}

#[derive(Deserialize)]
struct InitStatus {
    name: String,
    #[serde(default)]
    state: Option<InitState>,
}

#[derive(Deserialize)]
struct InitState {
    #[serde(default)]
    terminated: Option<Terminated>,
}

#[derive(Deserialize)]
struct Terminated {
    #[serde(default)]
    message: Option<String>,
}

impl PodStatus {
    /// The agent's condition; the last one of its type, as the API server would keep it.
    fn reload(&mut self) -> Option<ReloadReport> {
        let conditions = self.conditions.take()?;
        let condition = conditions
            .into_iter()
            .rfind(|c| c.type_ == RELOAD_CONDITION)?;
        Some(ReloadReport {
            ok: condition.status == "True",
            message: condition.message,
        })
    }

    fn ended(self) -> Vec<EndedContainer> {
        let statuses = self.init_container_statuses.unwrap_or_default();
        statuses
            .into_iter()
            .filter_map(|c| {
                let terminated = c.state?.terminated?;
                Some(EndedContainer {
                    name: c.name,
                    message: terminated.message,
                })
            })
            .collect()
    }
}

/// A related object's errors never repeat what it holds: serde's would quote a value of the
/// wrong type (`invalid type: string "c2VjcmV0"`), in the answer and in the log. The error's
/// path still names the object (and the field, when serde got that far).
impl<'de> Deserialize<'de> for RelatedObject {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Fields {
            api_version: String,
            kind: String,
            metadata: RelatedMeta,
            #[serde(default)]
            data: Option<BTreeMap<String, String>>,
            #[serde(default)]
            status: Option<PodStatus>,
        }
        let Fields {
            api_version,
            kind,
            metadata,
            data,
            status,
        } = Fields::deserialize(deserializer)
            .map_err(|_| serde::de::Error::custom(RELATED_ERROR))?;
        let (reload, init_containers) = match status {
            Some(mut status) => (status.reload(), status.ended()),
            None => (None, Vec::new()),
        };
        Ok(Self {
            api_version,
            kind,
            metadata,
            data,
            init_containers,
            reload,
        })
    }
}
