//! Raw TCP peers: a length-prefixed echo over loopback, with
//! `TCP_NODELAY` (the physical floor) or with Nagle's algorithm on and
//! each frame written in two parts, header then payload (the seed's
//! failure: the second write waits for the ACK of the first, which the
//! peer delays).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::error::RemoteBenchError;

/// How frames are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Mode {
    /// `TCP_NODELAY`, one write per frame.
    NoDelay,
    /// Nagle on, header and payload in two writes.
    NagleSplit,
}

fn write_frame(s: &mut TcpStream, payload: &[u8], mode: Mode) -> std::io::Result<()> {
    let len = (payload.len() as u32).to_le_bytes();
    match mode {
        Mode::NoDelay => {
            let mut buf = Vec::with_capacity(4 + payload.len());
            buf.extend_from_slice(&len);
            buf.extend_from_slice(payload);
            s.write_all(&buf)
        }
        Mode::NagleSplit => {
            s.write_all(&len)?;
            s.write_all(payload)
        }
    }
}

fn read_frame(s: &mut TcpStream, buf: &mut Vec<u8>) -> std::io::Result<()> {
    let mut len = [0u8; 4];
    s.read_exact(&mut len)?;
    buf.resize(u32::from_le_bytes(len) as usize, 0);
    s.read_exact(buf)
}

/// An echo server and a connected client.
#[derive(Debug)]
pub(super) struct TcpEcho {
    client: TcpStream,
    mode: Mode,
    buf: Vec<u8>,
    server: Option<JoinHandle<()>>,
}

impl TcpEcho {
    /// Starts the echo server on a free loopback port and connects.
    pub(super) fn start(mode: Mode) -> Result<TcpEcho, RemoteBenchError> {
        let l = TcpListener::bind("127.0.0.1:0").map_err(RemoteBenchError::io("tcp echo: bind"))?;
        let addr = l
            .local_addr()
            .map_err(RemoteBenchError::io("tcp echo: its address"))?;
        let server = std::thread::spawn(move || {
            let Ok((mut s, _)) = l.accept() else { return };
            let _ = s.set_nodelay(mode == Mode::NoDelay);
            let mut buf = Vec::new();
            while read_frame(&mut s, &mut buf).is_ok() {
                if write_frame(&mut s, &buf, mode).is_err() {
                    break;
                }
            }
        });
        let client = TcpStream::connect(addr).map_err(RemoteBenchError::io("tcp echo: connect"))?;
        client
            .set_nodelay(mode == Mode::NoDelay)
            .and_then(|()| client.set_read_timeout(Some(Duration::from_secs(10))))
            .map_err(RemoteBenchError::io("tcp echo: socket options"))?;
        Ok(TcpEcho {
            client,
            mode,
            buf: Vec::new(),
            server: Some(server),
        })
    }

    /// One round trip of `payload`.
    pub(super) fn round_trip(&mut self, payload: &[u8]) -> Result<Duration, RemoteBenchError> {
        let t0 = Instant::now();
        write_frame(&mut self.client, payload, self.mode)
            .and_then(|()| read_frame(&mut self.client, &mut self.buf))
            .map_err(RemoteBenchError::io("tcp echo"))?;
        if self.buf.len() != payload.len() {
            return Err(RemoteBenchError::WrongReply("tcp echo"));
        }
        Ok(t0.elapsed())
    }
}

impl Drop for TcpEcho {
    fn drop(&mut self) {
        let _ = self.client.shutdown(std::net::Shutdown::Both);
        if let Some(s) = self.server.take() {
            let _ = s.join();
        }
    }
}
