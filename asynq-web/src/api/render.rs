//! Payloads and results for people: JSON pretty-printed (keeping the original key order and
//! number spelling), anything else as a hex dump with an ASCII column; short previews for lists.

use serde::Serialize;

/// The most bytes rendered in full; a larger payload is shown as a hex dump of its start.
const MAX_RENDERED: usize = 256 * 1024;
/// The bytes a hex dump of a too-large payload shows.
const TRUNCATED_HEX: usize = 4 * 1024;
/// The characters of a list preview.
const PREVIEW_CHARS: usize = 120;

/// Bytes rendered for display.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Rendered {
    /// `json` or `hex`.
    pub(crate) format: &'static str,
    /// The text to show.
    pub(crate) text: String,
    /// The size of the bytes, rendered or not.
    pub(crate) size: usize,
    /// True when only the start is shown.
    pub(crate) truncated: bool,
}

/// `bytes` as pretty JSON when they hold one JSON value, as a hex dump otherwise.
pub(crate) fn render(bytes: &[u8]) -> Rendered {
    if bytes.len() <= MAX_RENDERED
        && let Some(text) = json_text(bytes)
    {
        return Rendered { format: "json", text: pretty_json(text), size: bytes.len(), truncated: false };
    }
    let shown = if bytes.len() <= MAX_RENDERED { bytes } else { &bytes[..TRUNCATED_HEX] };
    Rendered { format: "hex", text: hex_dump(shown), size: bytes.len(), truncated: shown.len() < bytes.len() }
}

/// A one-line preview: compact JSON or text, else hex of the first bytes.
pub(crate) fn preview(bytes: &[u8]) -> String {
    let text = match std::str::from_utf8(bytes) {
        Ok(text) if !text.chars().any(|c| c.is_control() && !c.is_whitespace()) => {
            text.split_whitespace().collect::<Vec<_>>().join(" ")
        }
        _ => {
            let hex: Vec<String> = bytes.iter().take(PREVIEW_CHARS / 3).map(|b| format!("{b:02x}")).collect();
            hex.join(" ")
        }
    };
    if text.chars().count() > PREVIEW_CHARS {
        let mut cut: String = text.chars().take(PREVIEW_CHARS).collect();
        cut.push('…');
        cut
    } else {
        text
    }
}

fn json_text(bytes: &[u8]) -> Option<&str> {
    let text = std::str::from_utf8(bytes).ok()?;
    serde_json::from_str::<serde::de::IgnoredAny>(text).ok()?;
    Some(text)
}

/// Re-indents valid JSON text by two spaces, leaving strings, numbers and key order as written.
fn pretty_json(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    let mut depth = 0usize;
    let (mut in_string, mut escaped) = (false, false);
    let mut chars = text.trim().chars().peekable();
    let newline = |out: &mut String, depth: usize| {
        out.push('\n');
        out.extend(std::iter::repeat_n("  ", depth));
    };
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => {
                in_string = true;
                out.push(c);
            }
            '{' | '[' => {
                out.push(c);
                while chars.peek().is_some_and(|c| c.is_whitespace()) {
                    chars.next();
                }
                if matches!(chars.peek(), Some('}' | ']')) {
                    if let Some(close) = chars.next() {
                        out.push(close);
                    }
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
            c if c.is_whitespace() => {}
            c => out.push(c),
        }
    }
    out
}

/// `hexdump -C`'s layout: offset, 16 bytes in hex, the printable ones as ASCII.
fn hex_dump(bytes: &[u8]) -> String {
    let mut out = String::new();
    for (row, chunk) in bytes.chunks(16).enumerate() {
        out.push_str(&format!("{:08x}  ", row * 16));
        for i in 0..16 {
            match chunk.get(i) {
                Some(b) => out.push_str(&format!("{b:02x} ")),
                None => out.push_str("   "),
            }
            if i == 7 {
                out.push(' ');
            }
        }
        out.push_str(" |");
        out.extend(chunk.iter().map(|&b| if b.is_ascii_graphic() || b == b' ' { char::from(b) } else { '.' }));
        out.push_str("|\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_is_indented_in_its_own_key_order() {
        let rendered = render(br#"{"z":1,"a":[1, 2.50],"s":"x,{y}:\"","e":{}}"#);
        assert_eq!(rendered.format, "json");
        assert_eq!(
            rendered.text,
            "{\n  \"z\": 1,\n  \"a\": [\n    1,\n    2.50\n  ],\n  \"s\": \"x,{y}:\\\"\",\n  \"e\": {}\n}"
        );
    }

    #[test]
    fn anything_else_is_a_hex_dump() {
        let rendered = render(b"hello\x00world, this is more than 16");
        assert_eq!(rendered.format, "hex");
        assert!(
            rendered
                .text
                .starts_with("00000000  68 65 6c 6c 6f 00 77 6f  72 6c 64 2c 20 74 68 69  |hello.world, thi|\n")
        );
        assert_eq!(render(b"not json").format, "hex");
        let big = vec![0u8; MAX_RENDERED + 1];
        assert!(render(&big).truncated);
    }

    #[test]
    fn previews_are_short_single_lines() {
        assert_eq!(preview(b"{\"a\":\n 1}"), "{\"a\": 1}");
        assert_eq!(preview(&[0, 255]), "00 ff");
        assert!(preview("x".repeat(500).as_bytes()).ends_with('…'));
    }
}
