//! A minimal blocking RESP2 client over `std::net::TcpStream`: enough for the few commands the
//! benchmark sends to its own Redis (`PING`, `INFO`, `CONFIG`, `FLUSHALL`, `SLOWLOG`), so xtask
//! needs no Redis client crate.

use std::io::{BufRead, BufReader, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use anyhow::{Context as _, bail};

/// How long to wait for a connection, a write or a reply (`FLUSHALL` of a large data set
/// included).
const TIMEOUT: Duration = Duration::from_secs(60);

/// A reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reply {
    /// A simple or bulk string (bytes that are not UTF-8 replaced, as `SLOWLOG` may echo
    /// binary arguments).
    Text(String),
    /// An integer.
    Integer(i64),
    /// An array.
    Array(Vec<Reply>),
    /// The null bulk string or array.
    Nil,
}

impl Reply {
    /// The text of a string reply.
    pub(crate) fn into_text(self) -> anyhow::Result<String> {
        match self {
            Reply::Text(text) => Ok(text),
            other => bail!("expected a string reply, got {other:?}"),
        }
    }
}

/// One connection to a Redis server.
#[derive(Debug)]
pub(crate) struct Connection {
    stream: BufReader<TcpStream>,
}

impl Connection {
    /// Connects to `addr`.
    pub(crate) fn connect(addr: SocketAddr) -> anyhow::Result<Self> {
        let stream = TcpStream::connect_timeout(&addr, TIMEOUT).with_context(|| format!("cannot connect to {addr}"))?;
        stream.set_read_timeout(Some(TIMEOUT))?;
        stream.set_write_timeout(Some(TIMEOUT))?;
        stream.set_nodelay(true)?;
        Ok(Self { stream: BufReader::new(stream) })
    }

    /// Sends `args` as one command and reads its reply; an error reply is an `Err`.
    pub(crate) fn command(&mut self, args: &[&str]) -> anyhow::Result<Reply> {
        self.stream.get_mut().write_all(&encode(args)).with_context(|| format!("cannot send {args:?}"))?;
        read_reply(&mut self.stream).with_context(|| format!("bad reply to {args:?}"))
    }
}

/// Encodes a command as a RESP array of bulk strings.
fn encode(args: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        out.extend_from_slice(format!("${}\r\n{arg}\r\n", arg.len()).as_bytes());
    }
    out
}

/// Reads one reply.
fn read_reply(reader: &mut impl BufRead) -> anyhow::Result<Reply> {
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let Some(body) = line.strip_suffix("\r\n").filter(|body| !body.is_empty()) else {
        bail!("malformed or missing reply line {line:?}");
    };
    let (kind, rest) = body.split_at(1);
    match kind {
        "+" => Ok(Reply::Text(rest.to_owned())),
        "-" => bail!("Redis replied with an error: {rest}"),
        ":" => Ok(Reply::Integer(rest.parse().with_context(|| format!("bad integer {rest:?}"))?)),
        "$" | "*" if rest == "-1" => Ok(Reply::Nil),
        "*" => {
            let len: usize = rest.parse().with_context(|| format!("bad array length {rest:?}"))?;
            (0..len).map(|_| read_reply(reader)).collect::<anyhow::Result<_>>().map(Reply::Array)
        }
        "$" => {
            let len: usize = rest.parse().with_context(|| format!("bad bulk length {rest:?}"))?;
            let mut data = vec![0; len + 2];
            reader.read_exact(&mut data)?;
            if !data.ends_with(b"\r\n") {
                bail!("bulk string of {len} bytes not followed by CRLF");
            }
            data.truncate(len);
            Ok(Reply::Text(String::from_utf8_lossy(&data).into_owned()))
        }
        _ => bail!("unsupported reply {body:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(bytes: &[u8]) -> anyhow::Result<Reply> {
        read_reply(&mut &bytes[..])
    }

    #[test]
    fn encodes_commands_as_arrays_of_bulk_strings() {
        assert_eq!(encode(&["PING"]), b"*1\r\n$4\r\nPING\r\n");
        assert_eq!(encode(&["CONFIG", "RESETSTAT"]), b"*2\r\n$6\r\nCONFIG\r\n$9\r\nRESETSTAT\r\n");
    }

    #[test]
    fn decodes_strings_integers_nil_and_errors() {
        assert_eq!(decode(b"+PONG\r\n").unwrap(), Reply::Text("PONG".into()));
        assert_eq!(decode(b":42\r\n").unwrap(), Reply::Integer(42));
        assert_eq!(decode(b"$-1\r\n").unwrap(), Reply::Nil);
        assert_eq!(decode(b"$10\r\n# CPU\r\na:1\r\n").unwrap(), Reply::Text("# CPU\r\na:1".into()));
        let error = decode(b"-ERR unknown command\r\n").unwrap_err();
        assert!(error.to_string().contains("ERR unknown command"), "{error}");
        assert!(decode(b"").is_err());
        assert!(decode(b"$5\r\nab\r\n").is_err());
        let nested = decode(b"*2\r\n:1\r\n*1\r\n$2\r\nok\r\n").unwrap();
        assert_eq!(nested, Reply::Array(vec![Reply::Integer(1), Reply::Array(vec![Reply::Text("ok".into())])]));
        assert_eq!(decode(b"*-1\r\n").unwrap(), Reply::Nil);
        assert!(decode(b"*2\r\n:1\r\n").is_err());
    }
}
