//! `Wire`, a non-blocking connection that the caller's event loop drives (the calls made on it
//! are `wire_calls`'s), and `RedisWire`, the plain socket to the server that is one. `resp`
//! splits its replies and decodes them.
//!
//! It speaks RESP2, which a connection gets until it says HELLO: the replies of our scripts
//! are the same in both. TLS is left to the ordinary connection (`open` refuses it).

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::time::Duration;

use lanemq_core::{CoreError, CoreResult};

use crate::resp::frame;
use redis::{ConnectionAddr, ConnectionInfo};

/// A non-blocking connection to the backend's server, speaking its protocol.
pub trait Wire: Send {
    /// The descriptor the event loop watches.
    fn fileno(&self) -> i32;
    /// The server, for messages (never with a password).
    fn address(&self) -> &str;
    /// Writes what the socket takes now (`WouldBlock` when it takes nothing).
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize>;
    /// Reads what has arrived (`Ok(0)`: the server closed the connection).
    fn read(&mut self, into: &mut [u8]) -> io::Result<usize>;
    /// The length of the first whole reply in `buffered`, `None` while it is incomplete, or an
    /// error if the bytes are not the protocol (the connection is then unusable).
    fn frame(&self, buffered: &[u8]) -> Result<Option<usize>, String>;
}

enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

pub struct RedisWire {
    stream: Stream,
    address: String,
}

impl RedisWire {
    /// Connects (blocking, each step bounded by `timeout`), authenticates and selects the
    /// database as `info` says, then turns non-blocking. `address` names the server in errors.
    pub fn open(info: &ConnectionInfo, address: &str, timeout: Duration) -> CoreResult<Self> {
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
                        match TcpStream::connect_timeout(&addr, timeout) {
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
        wire.set_timeout(Some(timeout))
            .map_err(|e| failed("cannot set a timeout", &e))?;
        let settings = info.redis_settings();
        if let Some(password) = settings.password() {
            let mut auth = redis::cmd("AUTH");
            if let Some(user) = settings.username() {
                auth.arg(user);
            }
            auth.arg(password);
            wire.handshake(&auth).map_err(|e| {
                CoreError::Authentication(format!("redis at {address}: authentication failed: {e}"))
            })?;
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
