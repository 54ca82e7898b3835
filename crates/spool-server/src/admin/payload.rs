//! A task's payload as a page shows it: JSON indented, bytes as base64.
//!
//! JSON is re-indented as text, never parsed into numbers, so what the page
//! shows is exactly what was stored (big integers included). Payloads can be
//! up to 64 MiB: only the first [`SHOWN`] bytes are rendered, and nesting
//! indents at most [`MAX_INDENT`] levels, so a hostile payload cannot make a
//! page of hundreds of megabytes.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde_json::value::RawValue;
use spool_core::{Payload, PayloadFormat};

/// Most payload bytes a page renders.
pub(super) const SHOWN: usize = 64 * 1024;
/// Deepest nesting that still indents further.
const MAX_INDENT: usize = 32;

/// What the page shows of a payload.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Shown {
    /// `JSON`, `bytes, base64`, …
    pub format: &'static str,
    pub text: String,
    /// The payload's size when only its first [`SHOWN`] bytes are shown.
    pub cut_from: Option<usize>,
}

pub(super) fn show(p: &Payload) -> Shown {
    let total = p.bytes.len();
    let cut_from = (total > SHOWN).then_some(total);
    let head = &p.bytes[..total.min(SHOWN)];
    if p.format == PayloadFormat::Json {
        if let Ok(text) = std::str::from_utf8(&p.bytes) {
            if cut_from.is_some() {
                // Too large to check and indent: the start of the text as stored.
                return Shown {
                    format: "JSON, as stored",
                    text: text[..char_floor(text, SHOWN)].to_string(),
                    cut_from,
                };
            }
            if serde_json::from_str::<&RawValue>(text).is_ok() {
                return Shown {
                    format: "JSON",
                    text: pretty(text),
                    cut_from,
                };
            }
        }
        return Shown {
            format: "bytes, base64 (stored as JSON, but not valid JSON)",
            text: STANDARD.encode(head),
            cut_from,
        };
    }
    Shown {
        format: "bytes, base64",
        text: STANDARD.encode(head),
        cut_from,
    }
}

/// The largest char boundary of `s` at or below `at`.
fn char_floor(s: &str, at: usize) -> usize {
    let mut i = at.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Where a scan of JSON text stands: in a string or between tokens.
#[derive(Default)]
struct Scan {
    in_string: bool,
    escaped: bool,
}

impl Scan {
    /// Whether `c`, the next character, belongs to a string, its quotes
    /// included.
    fn in_string(&mut self, c: char) -> bool {
        if self.in_string {
            if self.escaped {
                self.escaped = false;
            } else if c == '\\' {
                self.escaped = true;
            } else if c == '"' {
                self.in_string = false;
            }
            true
        } else {
            self.in_string = c == '"';
            self.in_string
        }
    }
}

/// Indents valid JSON text by two spaces per level, keeping every token
/// (strings, numbers) exactly as written.
pub(super) fn pretty(json: &str) -> String {
    let mut out = String::with_capacity(json.len() * 2);
    let mut depth = 0usize;
    let mut scan = Scan::default();
    let mut chars = json.chars().peekable();
    while let Some(c) = chars.next() {
        if scan.in_string(c) {
            out.push(c);
            continue;
        }
        match c {
            '{' | '[' => {
                let close = if c == '{' { '}' } else { ']' };
                while chars.peek().is_some_and(|n| n.is_ascii_whitespace()) {
                    chars.next();
                }
                out.push(c);
                if chars.peek() == Some(&close) {
                    chars.next();
                    out.push(close);
                } else {
                    depth += 1;
                    newline(&mut out, depth);
                }
            }
            '}' | ']' => {
                depth = depth.saturating_sub(1);
                newline(&mut out, depth);
                out.push(c);
            }
            ',' => {
                out.push(c);
                newline(&mut out, depth);
            }
            ':' => out.push_str(": "),
            c if c.is_ascii_whitespace() => {}
            c => out.push(c),
        }
    }
    out
}

/// Valid JSON text with the whitespace between its tokens removed, every
/// token (strings, numbers) kept exactly as written.
pub(super) fn compact(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    let mut scan = Scan::default();
    for c in json.chars() {
        if !scan.in_string(c) && c.is_ascii_whitespace() {
            continue;
        }
        out.push(c);
    }
    out
}

fn newline(out: &mut String, depth: usize) {
    out.push('\n');
    for _ in 0..depth.min(MAX_INDENT) {
        out.push_str("  ");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_is_indented_and_exact() {
        let text =
            r#"{"big":9223372036854775807,"f":1.50,"s":"a, b: {c}","e":[],"o":{ },"q":"\"x\\"}"#;
        assert_eq!(
            pretty(text),
            "{\n  \"big\": 9223372036854775807,\n  \"f\": 1.50,\n  \"s\": \"a, b: {c}\",\n  \
             \"e\": [],\n  \"o\": {},\n  \"q\": \"\\\"x\\\\\"\n}"
        );
        assert_eq!(pretty("[1, [2,3]]"), "[\n  1,\n  [\n    2,\n    3\n  ]\n]");
        assert_eq!(pretty("\"top\""), "\"top\"");
    }

    #[test]
    fn compact_json_keeps_every_token() {
        let text = " { \"a b\" : [ 1.50 , \"x \\\" y\" ] ,\n \"n\": 9223372036854775807 } ";
        assert_eq!(
            compact(text),
            r#"{"a b":[1.50,"x \" y"],"n":9223372036854775807}"#
        );
        assert_eq!(compact("\"top\""), "\"top\"");
    }

    #[test]
    fn payloads_show_by_format() {
        let s = show(&Payload::json(&br#"{"a":1}"#[..]));
        assert_eq!((s.format, s.text.as_str()), ("JSON", "{\n  \"a\": 1\n}"));
        let s = show(&Payload::binary(&b"\x00\xff"[..]));
        assert_eq!((s.format, s.text.as_str()), ("bytes, base64", "AP8="));
        let s = show(&Payload::json(&b"{nope"[..]));
        assert!(s.format.contains("not valid JSON"));
    }

    #[test]
    fn large_payloads_are_cut() {
        let big = Payload::binary(vec![7u8; SHOWN * 3]);
        let s = show(&big);
        assert_eq!(s.cut_from, Some(SHOWN * 3));
        assert!(s.text.len() <= SHOWN * 4 / 3 + 4);
        let deep = format!("{}{}", "[".repeat(100), "]".repeat(100));
        assert!(pretty(&deep).len() < 100 * (2 * MAX_INDENT + 2) * 2);
    }
}
