//! Validated names: queues, kinds, idempotency keys and task groups.
//!
//! A value of these types is valid by construction, so stores and handlers
//! never re-check it. Queue names and kinds are 1–128 characters of
//! `[A-Za-z0-9._:-]`; `.` and `..` are refused as queue names because they
//! would be path segments in URLs. Keys are 1–256 bytes of any UTF-8, and
//! groups 1–128 bytes of any UTF-8 (a customer id, an API host).

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// Why a name was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// Empty, or longer than the most allowed.
    #[error("{what} must be 1 to {max} characters long, got {len}")]
    Length {
        /// What was being named: `queue name`, `kind`, `key` or `group`.
        what: &'static str,
        /// The most allowed: 128 for names and groups, 256 for keys.
        max: usize,
        /// The length found: in characters for names, in bytes for keys
        /// and groups.
        len: usize,
    },
    /// A character outside `[A-Za-z0-9._:-]`.
    #[error("{what} may contain only A-Z a-z 0-9 . _ : - (found {found:?})")]
    Charset {
        /// What was being named: `queue name` or `kind`.
        what: &'static str,
        /// The first character outside the charset.
        found: char,
    },
    /// `.` or `..`, which HTTP clients would resolve away as path segments.
    #[error("{0:?} is reserved")]
    Reserved(String),
}

const NAME_MAX: usize = 128;
const KEY_MAX: usize = 256;
const GROUP_MAX: usize = 128;

fn check_charset(what: &'static str, s: &str) -> Result<(), NameError> {
    if s.is_empty() || s.len() > NAME_MAX {
        return Err(NameError::Length {
            what,
            max: NAME_MAX,
            len: s.chars().count(),
        });
    }
    match s
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-')))
    {
        Some(found) => Err(NameError::Charset { what, found }),
        None => Ok(()),
    }
}

macro_rules! string_newtype {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        ///
        /// Shared, immutable text: cloning is a reference-count increment,
        /// which matters on the claim path where every task carries two.
        #[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(Arc<str>);

        impl Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.0)
            }
        }

        impl $name {
            /// The text, valid by construction.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{:?}", self.0)
            }
        }

        impl std::str::FromStr for $name {
            type Err = NameError;
            fn from_str(s: &str) -> Result<Self, NameError> {
                $name::new(s)
            }
        }

        impl TryFrom<String> for $name {
            type Error = NameError;
            fn try_from(s: String) -> Result<Self, NameError> {
                $name::new(s)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                $name::new(s).map_err(serde::de::Error::custom)
            }
        }
    };
}

string_newtype!(
    /// The name of a queue.
    QueueName
);
string_newtype!(
    /// The handler name of a task inside its queue.
    Kind
);
string_newtype!(
    /// An idempotency key, unique per queue (docs/spec.md §3.1).
    TaskKey
);
string_newtype!(
    /// The group a task belongs to inside its queue, for per-group
    /// concurrency and fair claims (docs/spec.md §4).
    TaskGroup
);

impl QueueName {
    /// Checks a queue name: 1–128 characters of `[A-Za-z0-9._:-]`, neither
    /// `.` nor `..`.
    pub fn new(s: impl Into<String>) -> Result<Self, NameError> {
        let s = s.into();
        check_charset("queue name", &s)?;
        if s == "." || s == ".." {
            return Err(NameError::Reserved(s));
        }
        Ok(QueueName(Arc::from(s)))
    }
}

impl Kind {
    /// Checks a kind: 1–128 characters of `[A-Za-z0-9._:-]`.
    pub fn new(s: impl Into<String>) -> Result<Self, NameError> {
        let s = s.into();
        check_charset("kind", &s)?;
        Ok(Kind(Arc::from(s)))
    }
}

impl From<&QueueName> for Kind {
    /// A task's kind defaults to its queue's name; the charsets are equal.
    fn from(q: &QueueName) -> Kind {
        Kind(q.0.clone())
    }
}

/// Checks free text of 1 to `max` bytes that is neither `.` nor `..`: as
/// URL path segments (`/keys/{key}`) every HTTP client resolves those
/// away, so such a name could not be addressed.
fn check_text(what: &'static str, max: usize, s: String) -> Result<Arc<str>, NameError> {
    if s.is_empty() || s.len() > max {
        return Err(NameError::Length {
            what,
            max,
            len: s.len(),
        });
    }
    if s == "." || s == ".." {
        return Err(NameError::Reserved(s));
    }
    Ok(Arc::from(s))
}

impl TaskKey {
    /// Checks a key: 1–256 bytes of any UTF-8, neither `.` nor `..`.
    pub fn new(s: impl Into<String>) -> Result<Self, NameError> {
        check_text("key", KEY_MAX, s.into()).map(TaskKey)
    }
}

impl TaskGroup {
    /// Checks a group: 1–128 bytes of any UTF-8, neither `.` nor `..`
    /// (refused as for keys, so a group can be a URL path segment).
    pub fn new(s: impl Into<String>) -> Result<Self, NameError> {
        check_text("group", GROUP_MAX, s.into()).map(TaskGroup)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_names_follow_the_charset() {
        assert!(QueueName::new("emails.v2:high-prio_1").is_ok());
        assert!(QueueName::new("").is_err());
        assert!(QueueName::new("a b").is_err());
        assert!(QueueName::new("é").is_err());
        assert!(QueueName::new("x".repeat(128)).is_ok());
        assert!(QueueName::new("x".repeat(129)).is_err());
        assert_eq!(
            QueueName::new(".."),
            Err(NameError::Reserved("..".to_string()))
        );
    }

    #[test]
    fn groups_are_bounded_in_bytes() {
        assert!(TaskGroup::new("customer:42 ü").is_ok());
        assert!(TaskGroup::new("g".repeat(128)).is_ok());
        assert!(TaskGroup::new("g".repeat(129)).is_err());
        assert!(TaskGroup::new("").is_err());
        assert!(TaskGroup::new("..").is_err());
    }

    #[test]
    fn keys_are_bounded_in_bytes() {
        assert!(TaskKey::new("k".repeat(256)).is_ok());
        assert!(TaskKey::new("k".repeat(257)).is_err());
        assert!(TaskKey::new("").is_err());
        assert!(TaskKey::new("any thing/ü").is_ok());
        assert!(TaskKey::new("..").is_err());
    }
}
