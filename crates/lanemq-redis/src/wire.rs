//! `RedisWire`: a plain non-blocking socket to the server for calls an event loop drives (see
//! `lanemq_core::jobs::Wire`), and the RESP framing that splits its replies.
//!
//! It speaks RESP2, which a connection gets until it says HELLO: the replies of our scripts
//! are the same in both. TLS is left to the ordinary connection (`open` refuses it).

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::time::Duration;

use lanemq_core::jobs::Wire;
use lanemq_core::{CoreError, CoreResult};
use redis::{ConnectionAddr, ConnectionInfo};

/// How long connecting and the handshake may take.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

pub struct RedisWire {
    stream: Stream,
    address: String,
}

impl RedisWire {
    /// Connects (blocking, bounded by `HANDSHAKE_TIMEOUT`), authenticates and selects the
    /// database as `info` says, then turns non-blocking. `address` names the server in errors.
    pub fn open(info: &ConnectionInfo, address: &str) -> CoreResult<Self> {
        let failed = |what: &str, e: &dyn std::fmt::Display| {
            CoreError::Connection(format!("redis at {address}: {what}: {e}"))
        };
        let stream =
            match info.addr() {
                ConnectionAddr::Tcp(host, port) => {
                    let addrs = std::net::ToSocketAddrs::to_socket_addrs(&(host.as_str(), *port))
                        .map_err(|e| failed("cannot resolve", &e))?;
                    let mut last = None;
                    let mut connected = None;
                    for addr in addrs {
                        match TcpStream::connect_timeout(&addr, HANDSHAKE_TIMEOUT) {
                            Ok(s) => {
                                connected = Some(s);
                                break;
                            }
                            Err(e) => last = Some(e),
                        }
                    }
                    let stream = connected.ok_or_else(|| {
                        let e = last.unwrap_or_else(|| io::Error::other("no address"));
                        failed("cannot connect", &e)
                    })?;
                    stream
                        .set_nodelay(true)
                        .map_err(|e| failed("cannot set TCP_NODELAY", &e))?;
                    Stream::Tcp(stream)
                }
                ConnectionAddr::Unix(path) => Stream::Unix(
                    UnixStream::connect(path).map_err(|e| failed("cannot connect", &e))?,
                ),
                _ => return Err(CoreError::Refused(
                    "no wire over TLS (or another transport): the ordinary connection serves it"
                        .into(),
                )),
            };
        let mut wire = Self {
            stream,
            address: address.to_owned(),
        };
        wire.set_timeout(Some(HANDSHAKE_TIMEOUT))
            .map_err(|e| failed("cannot set a timeout", &e))?;
        let settings = info.redis_settings();
        if let Some(password) = settings.password() {
            let mut auth = redis::cmd("AUTH");
            if let Some(user) = settings.username() {
                auth.arg(user);
            }
            auth.arg(password);
            wire.handshake(&auth)
                .map_err(|e| failed("authentication failed", &e))?;
        }
        if settings.db() != 0 {
            wire.handshake(redis::cmd("SELECT").arg(settings.db()))
                .map_err(|e| failed("cannot select the database", &e))?;
        }
        wire.set_timeout(None)
            .and_then(|()| wire.set_nonblocking())
            .map_err(|e| failed("cannot switch to non-blocking", &e))?;
        Ok(wire)
    }

    /// Sends `command` and reads its reply (blocking): an error reply is an error.
    fn handshake(&mut self, command: &redis::Cmd) -> Result<(), String> {
        self.write_all(&command.get_packed_command())
            .map_err(|e| e.to_string())?;
        let mut buffered = Vec::new();
        let mut chunk = [0u8; 512];
        loop {
            if let Some(end) = frame(&buffered)? {
                let reply = redis::parse_redis_value(&buffered[..end]).map_err(|e| e.to_string());
                return reply?
                    .extract_error()
                    .map(|_| ())
                    .map_err(|e| e.to_string());
            }
            match self.read(&mut chunk) {
                Ok(0) => return Err("connection closed".into()),
                Ok(n) => buffered.extend_from_slice(&chunk[..n]),
                Err(e) => return Err(e.to_string()),
            }
        }
    }

    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        match &mut self.stream {
            Stream::Tcp(s) => s.write_all(bytes),
            Stream::Unix(s) => s.write_all(bytes),
        }
    }

    fn set_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        match &self.stream {
            Stream::Tcp(s) => s
                .set_read_timeout(timeout)
                .and(s.set_write_timeout(timeout)),
            Stream::Unix(s) => s
                .set_read_timeout(timeout)
                .and(s.set_write_timeout(timeout)),
        }
    }

    fn set_nonblocking(&self) -> io::Result<()> {
        match &self.stream {
            Stream::Tcp(s) => s.set_nonblocking(true),
            Stream::Unix(s) => s.set_nonblocking(true),
        }
    }
}

impl Wire for RedisWire {
    fn fileno(&self) -> i32 {
        match &self.stream {
            Stream::Tcp(s) => s.as_raw_fd(),
            Stream::Unix(s) => s.as_raw_fd(),
        }
    }

    fn address(&self) -> &str {
        &self.address
    }

    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        match &mut self.stream {
            Stream::Tcp(s) => s.write(bytes),
            Stream::Unix(s) => s.write(bytes),
        }
    }

    fn read(&mut self, into: &mut [u8]) -> io::Result<usize> {
        match &mut self.stream {
            Stream::Tcp(s) => s.read(into),
            Stream::Unix(s) => s.read(into),
        }
    }

    fn frame(&self, buffered: &[u8]) -> Result<Option<usize>, String> {
        frame(buffered)
    }
}

/// The length of the first whole RESP2 reply in `bytes`, `None` while it is incomplete.
pub(crate) fn frame(bytes: &[u8]) -> Result<Option<usize>, String> {
    reply_end(bytes, 0)
}

fn reply_end(bytes: &[u8], start: usize) -> Result<Option<usize>, String> {
    let Some(&kind) = bytes.get(start) else {
        return Ok(None);
    };
    let Some(line) = bytes[start..].windows(2).position(|w| w == b"\r\n") else {
        return Ok(None);
    };
    let line_end = start + line;
    let after_line = line_end + 2;
    let count = || -> Result<i64, String> {
        std::str::from_utf8(&bytes[start + 1..line_end])
            .ok()
            .and_then(|t| t.parse().ok())
            .ok_or_else(|| format!("bad RESP length after {:?}", kind as char))
    };
    match kind {
        b'+' | b'-' | b':' => Ok(Some(after_line)),
        b'$' => {
            let len = count()?;
            if len < 0 {
                return Ok(Some(after_line));
            }
            let end = after_line + len as usize + 2;
            Ok((bytes.len() >= end).then_some(end))
        }
        b'*' => {
            let len = count()?;
            let mut at = after_line;
            for _ in 0..len.max(0) {
                match reply_end(bytes, at)? {
                    Some(end) => at = end,
                    None => return Ok(None),
                }
            }
            Ok(Some(at))
        }
        other => Err(format!("unexpected RESP type byte {other:#04x}")),
    }
}

#[cfg(test)]
mod tests {
    use super::frame;

    #[test]
    fn frames_whole_replies_and_waits_for_the_rest() {
        let reply = b"*3\r\n$3\r\nabc\r\n*2\r\n:1\r\n$-1\r\n-ERR x\r\n";
        assert_eq!(frame(reply), Ok(Some(reply.len())));
        for cut in 0..reply.len() {
            assert_eq!(frame(&reply[..cut]), Ok(None), "cut at {cut}");
        }
        let two = b"+OK\r\n:5\r\n";
        assert_eq!(frame(two), Ok(Some(5)));
        assert_eq!(frame(b"*-1\r\n"), Ok(Some(5)));
        // A bulk string may hold CR LF.
        assert_eq!(frame(b"$4\r\na\r\nb\r\n"), Ok(Some(10)));
    }

    #[test]
    fn refuses_what_is_not_resp2() {
        assert!(frame(b"%1\r\n").is_err());
        assert!(frame(b"$x\r\n").is_err());
    }
}
