//! Payloads on the wire: `payload` (any JSON value, kept as its exact text)
//! or `payload_base64` (bytes, standard alphabet, padded).
//!
//! The JSON text is never parsed into numbers, so integers of any size and
//! every JSON type come back exactly as given (docs/spec.md §7). A payload stored as
//! JSON that is not valid JSON (a library caller's mistake) is answered as
//! base64 rather than as broken JSON.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;
use spool_core::{Payload, PayloadFormat, StoreError};

/// The two payload fields of a request, borrowed from its body.
#[derive(Debug, Default)]
pub(crate) struct PayloadIn<'a> {
    pub json: Option<&'a RawValue>,
    pub base64: Option<String>,
}

/// `deserialize_with` for `payload`: a present `null` is the JSON value null,
/// not an absent field.
pub(crate) fn present_raw<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// The payload a request gives, if any; both fields at once is refused.
pub(crate) fn payload_in(p: PayloadIn<'_>) -> Result<Option<Payload>, StoreError> {
    match (p.json, p.base64) {
        (Some(_), Some(_)) => Err(StoreError::bad_request(
            "payload and payload_base64 are exclusive: give one",
        )),
        (Some(raw), None) => Ok(Some(Payload::json(raw.get().as_bytes().to_vec()))),
        (None, Some(b64)) => STANDARD
            .decode(b64.as_bytes())
            .map(|b| Some(Payload::binary(b)))
            .map_err(|e| StoreError::bad_request(format!("payload_base64: {e}"))),
        (None, None) => Ok(None),
    }
}

/// A payload as it goes out: exactly one of the two fields is set.
pub(crate) fn payload_out(p: &Payload) -> (Option<Box<RawValue>>, Option<String>) {
    if p.format == PayloadFormat::Json {
        if let Ok(text) = std::str::from_utf8(&p.bytes) {
            if let Ok(raw) = RawValue::from_string(text.to_owned()) {
                return (Some(raw), None);
            }
        }
        tracing::warn!("a payload stored as JSON is not valid JSON; answering it as base64");
    }
    (None, Some(STANDARD.encode(&p.bytes)))
}

#[cfg(test)]
#[allow(clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn json_text_round_trips_exactly() {
        let text = r#"{"big":9223372036854775807,"neg":-9223372036854775808,"f":1.50}"#;
        let raw: &RawValue = serde_json::from_str(text).expect("valid JSON");
        let p = payload_in(PayloadIn {
            json: Some(raw),
            base64: None,
        })
        .expect("accepted")
        .expect("present");
        let (json, b64) = payload_out(&p);
        assert_eq!(
            json.map(|r| r.get().to_string()),
            Some(raw.get().to_string())
        );
        assert_eq!(b64, None);
    }

    #[test]
    fn bad_base64_and_both_fields_are_refused() {
        let bad = |b: &str| {
            payload_in(PayloadIn {
                json: None,
                base64: Some(b.into()),
            })
            .is_err()
        };
        assert!(bad("not base64!"));
        assert!(bad("AAA"));
        assert!(!bad("AAA="));
        let both = PayloadIn {
            json: Some(RawValue::NULL),
            base64: Some(String::new()),
        };
        assert!(payload_in(both).is_err());
    }

    #[test]
    fn invalid_stored_json_goes_out_as_base64() {
        let (json, b64) = payload_out(&Payload::json(&b"{nope"[..]));
        assert!(json.is_none());
        assert_eq!(b64.as_deref(), Some("e25vcGU="));
    }
}
