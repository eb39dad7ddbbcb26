//! From a `postgres://` URL and the environment to a connected client:
//! credentials, defaults and TLS.
//!
//! The URL is libpq's (`postgres://USER:PASSWORD@HOST:PORT/DATABASE?k=v`,
//! a Unix socket directory as `host=/path`); what it leaves out comes from
//! libpq's environment variables, as `psql` would take it:
//!
//! | setting | URL | environment | otherwise |
//! |---|---|---|---|
//! | user | `USER@` or `user=` | `PGUSER` | the login name (`USER`, `LOGNAME`) |
//! | password | `:PASSWORD@` or `password=` | `PGPASSWORD`, then the password file (`PGPASSFILE`, else `~/.pgpass`) | none |
//! | host | `@HOST` or `host=` | `PGHOST` | the socket directory `/var/run/postgresql` |
//! | port | `:PORT` or `port=` | `PGPORT` | 5432 |
//! | database | `/DATABASE` or `dbname=` | `PGDATABASE` | the user's name |
//! | TLS | `sslmode=` | `PGSSLMODE` | `prefer` |
//! | CA certificates | `sslrootcert=` | `PGSSLROOTCERT` | none |
//!
//! `sslmode` is libpq's: `disable`; `prefer` (TLS when the server offers
//! it); `require` (TLS or no connection; the certificate is checked
//! against `sslrootcert` when one is given, as libpq does, else not at
//! all); `verify-ca` (the certificate must chain to `sslrootcert`);
//! `verify-full` (and name the host). TLS is rustls with ring.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use postgres::config::{Host, SslMode};
use postgres::Config;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};

use crate::error::{chain, Error, Result};
use crate::location::Location;

/// How long connecting may take unless the URL says (`connect_timeout=`).
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Where Debian's server puts its socket: libpq's default host.
const DEFAULT_SOCKET_DIR: &str = "/var/run/postgresql";

/// How much of the server's certificate is checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verify {
    /// Encryption only (`prefer`, `require` without CA certificates).
    Nothing,
    /// The chain to the CA certificates (`verify-ca`, `require` with them).
    Chain,
    /// The chain and the host name (`verify-full`).
    Full,
}

/// Connects to the database `url` names; `store` is for messages.
pub(crate) fn connect(store: &Location, url: &str) -> Result<postgres::Client> {
    let bad = |reason: String| Error::Config {
        store: store.clone(),
        reason,
    };
    let (config, verify, root_cert) = settings(url).map_err(bad)?;
    let refused = |e: postgres::Error| Error::Connect {
        store: store.clone(),
        reason: chain(&e),
    };
    if config.get_ssl_mode() == SslMode::Disable {
        return config.connect(postgres::NoTls).map_err(refused);
    }
    let tls = tls_config(verify, root_cert.as_deref()).map_err(bad)?;
    config
        .connect(tokio_postgres_rustls::MakeRustlsConnect::new(tls))
        .map_err(refused)
}

/// The client configuration of `url` completed from the environment, and
/// the TLS checks asked for.
fn settings(url: &str) -> std::result::Result<(Config, Verify, Option<PathBuf>), String> {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    // tokio-postgres knows sslmode up to `require` and no sslrootcert:
    // take both out of the query and hand it the rest.
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let mut kept = Vec::new();
    let mut mode = None;
    let mut root_cert = None;
    for kv in query.split('&').filter(|kv| !kv.is_empty()) {
        match kv.split_once('=') {
            Some(("sslmode", v)) => mode = Some(percent_decode(v)?),
            Some(("sslrootcert", v)) => root_cert = Some(PathBuf::from(percent_decode(v)?)),
            _ => kept.push(kv),
        }
    }
    let mode = mode.or_else(|| env("PGSSLMODE")).unwrap_or("prefer".into());
    let root_cert = root_cert.or_else(|| env("PGSSLROOTCERT").map(PathBuf::from));
    let (ssl, verify) = match mode.as_str() {
        "disable" => (SslMode::Disable, Verify::Nothing),
        "allow" | "prefer" => (SslMode::Prefer, Verify::Nothing),
        "require" if root_cert.is_some() => (SslMode::Require, Verify::Chain),
        "require" => (SslMode::Require, Verify::Nothing),
        "verify-ca" => (SslMode::Require, Verify::Chain),
        "verify-full" => (SslMode::Require, Verify::Full),
        other => {
            return Err(format!(
                "sslmode={other}: use disable, prefer, require, verify-ca or verify-full"
            ))
        }
    };
    if verify != Verify::Nothing && root_cert.is_none() {
        return Err(format!(
            "sslmode={mode} needs the CA certificates to check the server's against \
             (sslrootcert=FILE in the URL, or PGSSLROOTCERT)"
        ));
    }
    let rebuilt = if kept.is_empty() {
        base.to_string()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    let mut config: Config = rebuilt.parse().map_err(|e| chain(&e))?;
    config.ssl_mode(ssl);
    if config.get_user().is_none() {
        let user = env("PGUSER")
            .or_else(|| env("USER"))
            .or_else(|| env("LOGNAME"))
            .ok_or("no user: give one in the URL (postgres://USER@HOST/DB) or in PGUSER")?;
        config.user(&user);
    }
    if config.get_hosts().is_empty() {
        let host = env("PGHOST").unwrap_or(DEFAULT_SOCKET_DIR.into());
        config.host(&host);
    }
    if config.get_ports().is_empty() {
        if let Some(p) = env("PGPORT") {
            config.port(p.parse().map_err(|_| format!("PGPORT={p}: not a port"))?);
        }
    }
    if config.get_dbname().is_none() {
        if let Some(db) = env("PGDATABASE") {
            config.dbname(&db);
        }
    }
    if config.get_password().is_none() {
        if let Some(p) = env("PGPASSWORD").or_else(|| password_file(&config)) {
            config.password(p);
        }
    }
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(CONNECT_TIMEOUT);
    }
    Ok((config, verify, root_cert))
}

/// `%XX` escapes decoded.
fn percent_decode(s: &str) -> std::result::Result<String, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("bad %-escape in {s:?}"))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("{s:?} is not UTF-8"))
}

/// The password of the first line of libpq's password file
/// (`host:port:database:user:password`, `*` matching anything) that
/// matches `config`; a socket directory matches `localhost`, as in libpq.
/// The file is ignored when others may read it, as libpq does.
fn password_file(config: &Config) -> Option<String> {
    let path = std::env::var_os("PGPASSFILE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".pgpass")))?;
    let meta = std::fs::metadata(&path).ok()?;
    if std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o077 != 0 {
        return None;
    }
    let text = std::fs::read_to_string(&path).ok()?;
    let host = match config.get_hosts().first()? {
        Host::Tcp(h) => h.clone(),
        Host::Unix(_) => "localhost".into(),
    };
    let port = config
        .get_ports()
        .first()
        .copied()
        .unwrap_or(5432)
        .to_string();
    let user = config.get_user()?.to_string();
    let db = config.get_dbname().map_or(user.clone(), str::to_string);
    let wanted = [host, port, db, user];
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|line| {
            let fields = split_pgpass(line);
            (fields.len() == 5
                && fields[..4]
                    .iter()
                    .zip(&wanted)
                    .all(|(f, w)| f == "*" || f == w))
            .then(|| fields[4].clone())
        })
}

/// A password-file line's fields: `:` separates, `\` escapes.
fn split_pgpass(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => fields.last_mut().unwrap().extend(chars.next()),
            ':' => fields.push(String::new()),
            c => fields.last_mut().unwrap().push(c),
        }
    }
    fields
}

/// The rustls client configuration for `verify`.
fn tls_config(
    verify: Verify,
    root_cert: Option<&Path>,
) -> std::result::Result<rustls::ClientConfig, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let verifier: Arc<dyn ServerCertVerifier> = match (verify, root_cert) {
        (Verify::Nothing, _) | (_, None) => Arc::new(Unchecked(provider)),
        (_, Some(file)) => {
            let roots = read_roots(file)?;
            let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|e| e.to_string())?;
            if verify == Verify::Full {
                webpki
            } else {
                Arc::new(ChainOnly(webpki))
            }
        }
    };
    Ok(builder
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth())
}

fn read_roots(file: &Path) -> std::result::Result<RootCertStore, String> {
    let text = std::fs::read(file).map_err(|e| format!("sslrootcert {}: {e}", file.display()))?;
    let mut roots = RootCertStore::empty();
    for cert in rustls_pemfile::certs(&mut text.as_slice()) {
        let cert = cert.map_err(|e| format!("sslrootcert {}: {e}", file.display()))?;
        roots
            .add(cert)
            .map_err(|e| format!("sslrootcert {}: {e}", file.display()))?;
    }
    if roots.is_empty() {
        return Err(format!(
            "sslrootcert {}: no PEM certificate in it",
            file.display()
        ));
    }
    Ok(roots)
}

/// `sslmode=require` without CA certificates: any certificate is taken
/// (libpq's meaning), but the handshake's signatures are still checked,
/// so the session is encrypted with the holder of the certificate's key.
#[derive(Debug)]
struct Unchecked(Arc<CryptoProvider>);

impl ServerCertVerifier for Unchecked {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// `sslmode=verify-ca`: the chain is checked, the name is not.
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            r => r,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verify_modes_are_taken_out_of_the_url_and_need_a_ca() {
        let (c, v, root) =
            settings("postgres://u@h:5433/db?sslmode=verify-full&sslrootcert=%2Ftmp%2Fca.pem")
                .unwrap();
        assert_eq!(v, Verify::Full);
        assert_eq!(root.as_deref(), Some(Path::new("/tmp/ca.pem")));
        assert_eq!(c.get_ssl_mode(), SslMode::Require);
        assert_eq!(c.get_ports(), [5433]);
        let (_, v, _) = settings("postgres://u@h/db?sslmode=require&sslrootcert=/x").unwrap();
        assert_eq!(v, Verify::Chain, "require with a CA checks the chain");
        let (c, v, _) = settings("postgres://u@h/db?sslmode=require").unwrap();
        assert_eq!((c.get_ssl_mode(), v), (SslMode::Require, Verify::Nothing));
        let e = settings("postgres://u@h/db?sslmode=verify-ca").unwrap_err();
        assert!(e.contains("sslrootcert"), "{e}");
        let e = settings("postgres://u@h/db?sslmode=always").unwrap_err();
        assert!(e.contains("verify-full"), "{e}");
    }

    #[test]
    fn password_file_lines_split_on_unescaped_colons() {
        assert_eq!(
            split_pgpass(r"db.lab:5432:*:takt:pa\:ss\\word"),
            ["db.lab", "5432", "*", "takt", r"pa:ss\word"]
        );
    }
}
