//! The statistics endpoint: a tiny HTTP/1.0 responder on loopback (or a
//! Unix socket). `GET /metrics` gives Prometheus text, `GET /stats` (or
//! `/`) the JSON snapshot, `GET /counters` the same JSON without the
//! distributions (cheap enough to poll many times a second: see
//! [`Registry::counters`]). One thread, one request per connection; it
//! blocks in `accept` and costs nothing between requests.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use takt_sched::{TaktThread, ThreadSpec};

use super::Registry;

/// Where the endpoint listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EndpointAddr {
    /// A TCP address (loopback unless explicitly asked otherwise).
    Tcp(SocketAddr),
    /// A Unix socket path.
    Unix(PathBuf),
}

/// An endpoint address that is neither `ip:port` nor `unix:/path`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad endpoint address {given:?} (want ip:port or unix:/path): {source}")]
pub struct BadEndpointAddr {
    /// The text given.
    pub given: String,
    /// Why it is not a socket address.
    pub source: std::net::AddrParseError,
}

impl std::str::FromStr for EndpointAddr {
    type Err = BadEndpointAddr;
    fn from_str(s: &str) -> Result<Self, BadEndpointAddr> {
        if let Some(p) = s.strip_prefix("unix:") {
            return Ok(EndpointAddr::Unix(p.into()));
        }
        s.parse()
            .map(EndpointAddr::Tcp)
            .map_err(|source| BadEndpointAddr {
                given: s.to_string(),
                source,
            })
    }
}

impl std::fmt::Display for EndpointAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EndpointAddr::Tcp(a) => write!(f, "http://{a}"),
            EndpointAddr::Unix(p) => write!(f, "unix:{}", p.display()),
        }
    }
}

/// A running endpoint; dropping it stops the thread.
#[derive(Debug)]
pub struct Endpoint {
    addr: EndpointAddr,
    stop: Arc<AtomicBool>,
    thread: Option<TaktThread<()>>,
}

impl Endpoint {
    /// Where it listens (with the real port when 0 was asked for).
    pub fn addr(&self) -> &EndpointAddr {
        &self.addr
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        // Release pairs with the Acquire load after accept returns.
        self.stop.store(true, Ordering::Release);
        // wake the blocking accept
        match &self.addr {
            EndpointAddr::Tcp(a) => {
                let _ = TcpStream::connect_timeout(a, Duration::from_millis(200));
            }
            EndpointAddr::Unix(p) => {
                let _ = UnixStream::connect(p);
            }
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        if let EndpointAddr::Unix(p) = &self.addr {
            let _ = std::fs::remove_file(p);
        }
    }
}

fn respond(stream: &mut dyn ReadWrite, reg: &Registry) {
    let mut line = String::new();
    {
        let mut r = BufReader::new(&mut *stream);
        if r.read_line(&mut line).is_err() {
            return;
        }
        // drain the request headers
        let mut h = String::new();
        while r.read_line(&mut h).map(|n| n > 2).unwrap_or(false) {
            h.clear();
        }
    }
    let path = line.split_whitespace().nth(1).unwrap_or("/");
    let (status, ctype, body) = match path {
        "/metrics" => (
            "200 OK",
            "text/plain; version=0.0.4",
            reg.snapshot().prometheus(),
        ),
        "/" | "/stats" | "/stats.json" => ("200 OK", "application/json", reg.snapshot().json()),
        "/counters" => ("200 OK", "application/json", reg.counters().json()),
        _ => ("404 Not Found", "text/plain", "not found\n".to_string()),
    };
    let _ = write!(
        stream,
        "HTTP/1.0 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

trait ReadWrite: std::io::Read + Write {}
impl<T: std::io::Read + Write> ReadWrite for T {}

/// Starts the endpoint on a thread made from `spec`.
pub fn serve(
    addr: EndpointAddr,
    reg: Arc<Registry>,
    spec: &ThreadSpec,
) -> std::io::Result<Endpoint> {
    let stop = Arc::new(AtomicBool::new(false));
    let st = stop.clone();
    let (addr, thread) = match addr {
        EndpointAddr::Tcp(a) => {
            let l = TcpListener::bind(a)?;
            let real = l.local_addr()?;
            let t = spec
                .spawn(move || {
                    for s in l.incoming() {
                        // Acquire pairs with the Release store in Drop.
                        if st.load(Ordering::Acquire) {
                            break;
                        }
                        if let Ok(mut s) = s {
                            let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
                            respond(&mut s, &reg);
                        }
                    }
                })
                .map_err(std::io::Error::other)?;
            (EndpointAddr::Tcp(real), t)
        }
        EndpointAddr::Unix(p) => {
            let _ = std::fs::remove_file(&p);
            let l = UnixListener::bind(&p)?;
            let t = spec
                .spawn(move || {
                    for s in l.incoming() {
                        // Acquire pairs with the Release store in Drop.
                        if st.load(Ordering::Acquire) {
                            break;
                        }
                        if let Ok(mut s) = s {
                            let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
                            respond(&mut s, &reg);
                        }
                    }
                })
                .map_err(std::io::Error::other)?;
            (EndpointAddr::Unix(p), t)
        }
    };
    Ok(Endpoint {
        addr,
        stop,
        thread: Some(thread),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn serves_metrics_and_json_on_loopback() {
        let reg = Arc::new(Registry::new());
        let ep = serve(
            "127.0.0.1:0".parse().unwrap(),
            reg,
            &ThreadSpec::new("stats-test"),
        )
        .unwrap();
        let EndpointAddr::Tcp(a) = ep.addr().clone() else {
            panic!()
        };
        for (path, want) in [
            ("/metrics", "takt_sip_transactions"),
            ("/stats", "\"distributions\": true"),
            ("/counters", "\"distributions\": false"),
            ("/nope", "404"),
        ] {
            let mut s = TcpStream::connect(a).unwrap();
            write!(s, "GET {path} HTTP/1.0\r\n\r\n").unwrap();
            let mut body = String::new();
            s.read_to_string(&mut body).unwrap();
            assert!(body.contains(want), "{path}: {body}");
        }
        drop(ep);
    }
}
