//! Batches read with their size limit checked while parsing: a body of
//! tiny items (`{}` is 3 bytes) would otherwise become millions of parsed
//! items, gigabytes in memory, before the limit could refuse it.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{Deserializer, Error, SeqAccess, Visitor};
use serde::Deserialize;
use spool_core::store::MAX_BATCH;

/// `deserialize_with` for a batch's array: stops at item
/// [`MAX_BATCH`] + 1 with an error.
pub(crate) fn at_most_max_batch<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    d.deserialize_seq(Bounded(PhantomData))
}

struct Bounded<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for Bounded<T> {
    type Value = Vec<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "an array of at most {MAX_BATCH} items")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            if items.len() == MAX_BATCH {
                return Err(A::Error::custom(format!(
                    "a batch holds at most {MAX_BATCH} items"
                )));
            }
            items.push(item);
        }
        Ok(items)
    }
}
