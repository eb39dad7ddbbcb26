//! The NATS transport: [`Transport`] over an `async-nats` client.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_nats::{ConnectOptions, Event, HeaderMap};
use bytes::Bytes;
use futures_util::StreamExt;

use crate::config::{Config, Credentials};
use crate::stats::{bump, Counters};
use crate::transport::{Inbound, Meta, Transport, HDR_ERROR, HDR_ORIGIN, HDR_TYPE, HDR_VERSION};
use crate::RemoteError;

/// [`Transport`] over one NATS connection (it reconnects by itself and
/// re-subscribes; see the crate docs for what a reconnect loses).
#[derive(Clone, Debug)]
pub struct Nats {
    client: async_nats::Client,
    headers: Arc<Mutex<HeaderCache>>,
}

/// Header blocks prepared once per [`Meta`] `Arc` (keyed by its address;
/// the entry holds the `Arc`, so the address cannot be reused while cached).
#[derive(Debug, Default)]
struct HeaderCache {
    by_meta: HashMap<usize, (Arc<Meta>, HeaderMap)>,
}

/// More distinct metas than this means a caller makes them per message:
/// the cache then starts over rather than grow.
const HEADER_CACHE_MAX: usize = 4096;

impl HeaderCache {
    fn get(&mut self, meta: &Arc<Meta>) -> HeaderMap {
        let key = Arc::as_ptr(meta) as usize;
        if let Some((_, h)) = self.by_meta.get(&key) {
            return h.clone();
        }
        if self.by_meta.len() >= HEADER_CACHE_MAX {
            self.by_meta.clear();
        }
        let h = headers(meta);
        self.by_meta.insert(key, (meta.clone(), h.clone()));
        h
    }
}

type MapFn = fn(async_nats::Message) -> Inbound;

impl Nats {
    /// Connects as `cfg` says; engine events go to `counters`.
    pub(crate) async fn connect(
        cfg: &Config,
        counters: Arc<Counters>,
    ) -> Result<Nats, RemoteError> {
        let mut opts = match &cfg.credentials {
            Credentials::None => ConnectOptions::new(),
            Credentials::Token(t) => ConnectOptions::with_token(t.clone()),
            Credentials::UserPassword { user, password } => {
                ConnectOptions::with_user_and_password(user.clone(), password.clone())
            }
            Credentials::NKey(seed) => ConnectOptions::with_nkey(seed.clone()),
        };
        if cfg.tls.required {
            opts = opts.require_tls(true);
        }
        if let Some(ca) = &cfg.tls.ca {
            opts = opts.add_root_certificates(ca.clone());
        }
        if let Some((cert, key)) = &cfg.tls.client {
            opts = opts.add_client_certificate(cert.clone(), key.clone());
        }
        let seen_connect = Arc::new(std::sync::atomic::AtomicBool::new(false));
        opts = opts
            .name(format!("takt-remote {}", cfg.node))
            .connection_timeout(cfg.connect_timeout)
            .max_reconnects(None)
            .subscription_capacity(cfg.subscription_capacity)
            .event_callback(move |ev| {
                let counters = counters.clone();
                let seen = seen_connect.clone();
                async move {
                    match ev {
                        Event::Connected => {
                            if seen.swap(true, std::sync::atomic::Ordering::Relaxed) {
                                bump(&counters.reconnects);
                            }
                        }
                        Event::Disconnected => {
                            seen.store(true, std::sync::atomic::Ordering::Relaxed);
                            bump(&counters.disconnects)
                        }
                        Event::SlowConsumer(_) => bump(&counters.slow_consumer),
                        Event::ServerError(_) | Event::ClientError(_) => {
                            bump(&counters.engine_errors)
                        }
                        Event::LameDuckMode | Event::Draining | Event::Closed => {}
                    }
                }
            });
        let client = opts
            .connect(cfg.url.as_str())
            .await
            .map_err(|e| RemoteError::Connect {
                url: cfg.url.clone(),
                reason: e.to_string(),
            })?;
        Ok(Nats {
            client,
            headers: Arc::default(),
        })
    }
}

fn headers(meta: &Meta) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert(HDR_TYPE, meta.type_name.as_str());
    h.insert(HDR_VERSION, meta.version.to_string().as_str());
    h.insert(HDR_ORIGIN, meta.origin.as_str());
    if let Some(e) = &meta.error {
        h.insert(HDR_ERROR, e.as_str());
    }
    h
}

fn meta(h: &HeaderMap) -> Option<Meta> {
    let get = |n: &str| h.get(n).map(|v| v.as_str().to_string());
    Some(Meta {
        type_name: get(HDR_TYPE)?,
        version: get(HDR_VERSION)?.parse().ok()?,
        origin: get(HDR_ORIGIN)?,
        error: get(HDR_ERROR),
    })
}

fn inbound(m: async_nats::Message) -> Inbound {
    Inbound {
        no_responders: m.status == Some(async_nats::StatusCode::NO_RESPONDERS),
        meta: m.headers.as_ref().and_then(meta),
        subject: m.subject.to_string(),
        reply: m.reply.map(|r| r.to_string()),
        payload: m.payload,
    }
}

impl Transport for Nats {
    type Subscription = futures_util::stream::Map<async_nats::Subscriber, MapFn>;

    fn max_payload(&self) -> usize {
        self.client.server_info().max_payload
    }

    async fn publish(
        &self,
        subject: String,
        reply: Option<String>,
        meta: &Arc<Meta>,
        payload: Bytes,
    ) -> Result<(), RemoteError> {
        let h = self
            .headers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(meta);
        let r = match reply {
            Some(r) => {
                self.client
                    .publish_with_reply_and_headers(subject, r, h, payload)
                    .await
            }
            None => self.client.publish_with_headers(subject, h, payload).await,
        };
        r.map_err(|e| RemoteError::Engine(format!("publish: {e}")))
    }

    async fn subscribe(&self, subject: String) -> Result<Self::Subscription, RemoteError> {
        let s = self
            .client
            .subscribe(subject.clone())
            .await
            .map_err(|e| RemoteError::Engine(format!("subscribe {subject}: {e}")))?;
        Ok(s.map(inbound as MapFn))
    }

    async fn flush(&self) -> Result<(), RemoteError> {
        self.client
            .flush()
            .await
            .map_err(|e| RemoteError::Engine(format!("flush: {e}")))
    }
}
