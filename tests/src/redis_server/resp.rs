//! A minimal blocking RESP2 client over `std::net::TcpStream`, so the harness and the tests can
//! send `PING`, `CONFIG`, `INFO`, `CLUSTER` and `SENTINEL` commands without a Redis client crate.
//!
//! It speaks only what Redis answers to a client that never sends `HELLO`: simple strings,
//! errors, integers, bulk strings, arrays and the two nulls.

use std::collections::BTreeMap;
use std::fmt;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// How long [`RespConnection::connect`] waits for the TCP handshake.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// The default read and write timeout of a [`RespConnection`].
const IO_TIMEOUT: Duration = Duration::from_secs(10);

/// One RESP2 value, as Redis sends it.
///
/// `Debug` shows bulk strings as (lossy) text rather than bytes, so failed assertions read well.
#[derive(Clone, PartialEq, Eq)]
pub enum RespValue {
    /// A simple string, such as `+OK`.
    Simple(String),
    /// An error reply, such as `-ERR unknown command`, without the leading `-`.
    /// [`RespConnection::command`] returns a top-level error as `Err`; this variant appears
    /// nested in arrays and in what [`RespConnection::read_reply`] returns.
    Error(String),
    /// An integer, such as `:1`.
    Integer(i64),
    /// A bulk string.
    Bulk(Vec<u8>),
    /// An array.
    Array(Vec<RespValue>),
    /// The null bulk string or the null array.
    Nil,
}

impl RespValue {
    /// The text of a simple or (UTF-8) bulk string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Self::Simple(text) => Some(text),
            Self::Bulk(bytes) => std::str::from_utf8(bytes).ok(),
            _ => None,
        }
    }

    /// The value of an integer.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Self::Integer(n) => Some(*n),
            _ => None,
        }
    }

    /// The elements of an array.
    pub fn as_array(&self) -> Option<&[RespValue]> {
        match self {
            Self::Array(items) => Some(items),
            _ => None,
        }
    }

    /// Whether this is the simple string `OK`.
    pub fn is_ok(&self) -> bool {
        matches!(self, Self::Simple(text) if text == "OK")
    }

    /// Reads an array of alternating field names and values (what `SENTINEL REPLICAS`,
    /// `CONFIG GET` and friends return) into a map. Non-text entries are skipped.
    pub fn to_map(&self) -> BTreeMap<String, String> {
        let items = self.as_array().unwrap_or_default();
        items
            .chunks_exact(2)
            .filter_map(|pair| Some((pair[0].as_str()?.to_owned(), pair[1].as_str()?.to_owned())))
            .collect()
    }
}

impl fmt::Debug for RespValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Simple(text) => f.debug_tuple("Simple").field(text).finish(),
            Self::Error(text) => f.debug_tuple("Error").field(text).finish(),
            Self::Integer(n) => f.debug_tuple("Integer").field(n).finish(),
            Self::Bulk(bytes) => f.debug_tuple("Bulk").field(&String::from_utf8_lossy(bytes)).finish(),
            Self::Array(items) => f.debug_tuple("Array").field(items).finish(),
            Self::Nil => f.write_str("Nil"),
        }
    }
}

/// Parses the text of an `INFO` reply into `field -> value`, skipping section headers.
pub(crate) fn parse_info(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| line.split_once(':'))
        .map(|(field, value)| (field.to_owned(), value.trim_end().to_owned()))
        .collect()
}

/// One blocking connection to a Redis server (or sentinel).
///
/// Errors are `String`s that name the address, ready for a panic message.
#[derive(Debug)]
pub struct RespConnection {
    addr: String,
    stream: BufReader<TcpStream>,
}

impl RespConnection {
    /// Connects to `addr` (such as `127.0.0.1:6390`), waiting at most a second, with a 10 s
    /// read and write timeout.
    pub fn connect(addr: &str) -> Result<Self, String> {
        let socket: SocketAddr = addr.parse().map_err(|e| format!("bad address {addr:?}: {e}"))?;
        let stream = TcpStream::connect_timeout(&socket, CONNECT_TIMEOUT)
            .map_err(|e| format!("could not connect to {addr}: {e}"))?;
        stream.set_nodelay(true).map_err(|e| format!("{addr}: {e}"))?;
        let mut connection = Self { addr: addr.to_owned(), stream: BufReader::new(stream) };
        connection.set_timeout(IO_TIMEOUT)?;
        Ok(connection)
    }

    /// Sets the read and write timeout, for example before a blocking command.
    pub fn set_timeout(&mut self, timeout: Duration) -> Result<(), String> {
        let stream = self.stream.get_ref();
        stream
            .set_read_timeout(Some(timeout))
            .and_then(|()| stream.set_write_timeout(Some(timeout)))
            .map_err(|e| format!("{}: {e}", self.addr))
    }

    /// Sends one command and reads its reply. An error reply becomes `Err` with its text (such
    /// as `"NOAUTH Authentication required."`); so does a broken connection.
    pub fn command<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Result<RespValue, String> {
        self.send(args)?;
        match self.read_reply()? {
            RespValue::Error(message) => Err(message),
            reply => Ok(reply),
        }
    }

    /// Sends one command without reading the reply (for pipelining or `SUBSCRIBE`).
    pub fn send<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Result<(), String> {
        let request = encode_command(args);
        self.stream.get_mut().write_all(&request).map_err(|e| format!("could not write to {}: {e}", self.addr))
    }

    /// Reads one reply; an error reply is returned as [`RespValue::Error`].
    pub fn read_reply(&mut self) -> Result<RespValue, String> {
        read_value(&mut self.stream).map_err(|e| format!("could not read a reply from {}: {e}", self.addr))
    }
}

/// Encodes a command as a RESP array of bulk strings.
pub(crate) fn encode_command<A: AsRef<[u8]>>(args: &[A]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        let arg = arg.as_ref();
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Reads one RESP2 value.
pub(crate) fn read_value<R: BufRead>(reader: &mut R) -> Result<RespValue, String> {
    let line = read_line(reader)?;
    let Some(rest) = line.get(1..) else { return Err(format!("unexpected RESP2 line {line:?}")) };
    match line.as_bytes()[0] {
        b'+' => Ok(RespValue::Simple(rest.to_owned())),
        b'-' => Ok(RespValue::Error(rest.to_owned())),
        b':' => rest.parse().map(RespValue::Integer).map_err(|e| format!("bad integer {rest:?}: {e}")),
        b'$' => {
            let Some(len) = parse_len(rest)? else { return Ok(RespValue::Nil) };
            let mut data = vec![0; len + 2];
            reader.read_exact(&mut data).map_err(|e| e.to_string())?;
            if !data.ends_with(b"\r\n") {
                return Err(format!("bulk string of {len} bytes not followed by CRLF"));
            }
            data.truncate(len);
            Ok(RespValue::Bulk(data))
        }
        b'*' => {
            let Some(len) = parse_len(rest)? else { return Ok(RespValue::Nil) };
            (0..len).map(|_| read_value(reader)).collect::<Result<_, _>>().map(RespValue::Array)
        }
        _ => Err(format!("unexpected RESP2 line {line:?}")),
    }
}

/// Reads a CRLF-terminated, non-empty line, without the CRLF.
fn read_line<R: BufRead>(reader: &mut R) -> Result<String, String> {
    let mut line = Vec::new();
    reader.read_until(b'\n', &mut line).map_err(|e| e.to_string())?;
    if line.is_empty() {
        return Err("connection closed".to_owned());
    }
    if !line.ends_with(b"\r\n") || line.len() < 3 {
        return Err(format!("malformed line {:?}", String::from_utf8_lossy(&line)));
    }
    line.truncate(line.len() - 2);
    String::from_utf8(line).map_err(|e| format!("line is not UTF-8: {e}"))
}

/// Parses a bulk or array length; `-1` is the null.
fn parse_len(text: &str) -> Result<Option<usize>, String> {
    match text.parse::<i64>() {
        Ok(-1) => Ok(None),
        Ok(n) => usize::try_from(n).map(Some).map_err(|_| format!("bad length {text:?}")),
        Err(e) => Err(format!("bad length {text:?}: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(bytes: &[u8]) -> Result<RespValue, String> {
        read_value(&mut &bytes[..])
    }

    #[test]
    fn encodes_commands_as_arrays_of_bulk_strings() {
        assert_eq!(encode_command(&["PING"]), b"*1\r\n$4\r\nPING\r\n");
        assert_eq!(encode_command(&["SET", "k", ""]), b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n");
    }

    #[test]
    fn decodes_every_resp2_type() {
        assert_eq!(decode(b"+PONG\r\n"), Ok(RespValue::Simple("PONG".into())));
        assert_eq!(decode(b"-LOADING busy\r\n"), Ok(RespValue::Error("LOADING busy".into())));
        assert_eq!(decode(b":-42\r\n"), Ok(RespValue::Integer(-42)));
        assert_eq!(decode(b"$5\r\na\r\nbc\r\n"), Ok(RespValue::Bulk(b"a\r\nbc".to_vec())));
        assert_eq!(decode(b"$0\r\n\r\n"), Ok(RespValue::Bulk(Vec::new())));
        assert_eq!(decode(b"$-1\r\n"), Ok(RespValue::Nil));
        assert_eq!(decode(b"*-1\r\n"), Ok(RespValue::Nil));
        assert_eq!(
            decode(b"*3\r\n:1\r\n*1\r\n$1\r\nx\r\n-ERR no\r\n"),
            Ok(RespValue::Array(vec![
                RespValue::Integer(1),
                RespValue::Array(vec![RespValue::Bulk(b"x".to_vec())]),
                RespValue::Error("ERR no".into()),
            ]))
        );
    }

    #[test]
    fn rejects_malformed_input() {
        assert!(decode(b"").is_err());
        assert!(decode(b"+OK\n").is_err());
        assert!(decode(b"?what\r\n").is_err());
        assert!(decode(b"$3\r\nab").is_err());
        assert!(decode(b"$2\r\nabcd").is_err());
        assert!(decode(b":x\r\n").is_err());
        assert!(decode(b"*2\r\n:1\r\n").is_err());
    }

    #[test]
    fn reads_info_fields_and_field_value_arrays() {
        let info = parse_info("# Replication\r\nrole:slave\r\nmaster_link_status:up\r\n\r\n");
        assert_eq!(info.get("role").map(String::as_str), Some("slave"));
        assert_eq!(info.get("master_link_status").map(String::as_str), Some("up"));
        let pairs = RespValue::Array(vec![
            RespValue::Bulk(b"port".to_vec()),
            RespValue::Bulk(b"6390".to_vec()),
            RespValue::Bulk(b"flags".to_vec()),
        ]);
        assert_eq!(pairs.to_map(), [("port".to_owned(), "6390".to_owned())].into());
        assert!(RespValue::Simple("OK".into()).is_ok());
        assert_eq!(format!("{:?}", RespValue::Bulk(b"v".to_vec())), r#"Bulk("v")"#);
    }
}
