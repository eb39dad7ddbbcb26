//! The NATS transport: [`Transport`] over an `async-nats` client.

use std::sync::Arc;

use async_nats::{ConnectOptions, Event, Subject};
use bytes::Bytes;
use futures_util::StreamExt;

use crate::config::{Config, Credentials};
use crate::stats::{bump, Counters};
use crate::transport::{Inbound, Transport};
use crate::RemoteError;

/// [`Transport`] over one NATS connection (it reconnects by itself and
/// re-subscribes; see the crate docs for what a reconnect loses).
#[derive(Clone, Debug)]
pub struct Nats {
    client: async_nats::Client,
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
        Ok(Nats { client })
    }
}

fn inbound(m: async_nats::Message) -> Inbound {
    Inbound {
        no_responders: m.status == Some(async_nats::StatusCode::NO_RESPONDERS),
        subject: Bytes::copy_from_slice(m.subject.as_bytes()),
        reply: m.reply.map(|r| Bytes::copy_from_slice(r.as_bytes())),
        payload: m.payload,
    }
}

/// A subject the bridge made (always UTF-8).
fn subject(b: Bytes) -> Result<Subject, RemoteError> {
    Subject::from_utf8(b).map_err(|e| RemoteError::Engine(format!("subject: {e}")))
}

impl Transport for Nats {
    type Subscription = futures_util::stream::Map<async_nats::Subscriber, MapFn>;

    fn max_payload(&self) -> usize {
        self.client.server_info().max_payload
    }

    async fn publish(
        &self,
        to: Bytes,
        reply: Option<Bytes>,
        payload: Bytes,
    ) -> Result<(), RemoteError> {
        let to = subject(to)?;
        let r = match reply {
            Some(r) => {
                self.client
                    .publish_with_reply(to, subject(r)?, payload)
                    .await
            }
            None => self.client.publish(to, payload).await,
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
