//! A PostgreSQL server for one test: Debian's binaries
//! (`/usr/lib/postgresql/*/bin`), a cluster made by `initdb` in a
//! temporary directory, the server listening on a Unix socket in that
//! directory and on 127.0.0.1 at a free port, stopped by its PID when the
//! fixture is dropped (also when the test panics) and by the kernel if the
//! test process dies first (the parent-death signal).
//!
//! initdb and the server refuse to run as root; as root (CI), the fixture
//! gives the directory to the `postgres` user and runs both as it.
//!
//! The cluster's superuser is `takt` with password [`PASSWORD`]: local
//! (socket) connections are trusted, TCP ones need the password
//! (SCRAM-SHA-256).

#![allow(dead_code)]

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The password of the cluster's user `takt` over TCP.
pub const PASSWORD: &str = "fixture-secret";

/// A running server and its directory.
pub struct Postgres {
    dir: PathBuf,
    server: Option<Child>,
    /// Its TCP port on 127.0.0.1.
    pub port: u16,
}

/// The newest installed server's binary directory.
pub fn bin_dir() -> PathBuf {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .expect("PostgreSQL is not installed (scripts/setup.sh installs Debian's postgresql)")
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|b| b.join("initdb").exists())
        .collect();
    dirs.sort_by_key(|d| {
        d.parent()
            .and_then(|v| v.file_name())
            .and_then(|v| v.to_str())
            .and_then(|v| v.parse::<u32>().ok())
            .unwrap_or(0)
    });
    dirs.pop().expect("no /usr/lib/postgresql/*/bin/initdb")
}

/// (uid, gid) to run the server as: `postgres` when we are root, else
/// ourselves (`None`).
fn server_user() -> Option<(u32, u32)> {
    // SAFETY: geteuid has no memory effects.
    if unsafe { libc::geteuid() } != 0 {
        return None;
    }
    let name = std::ffi::CString::new("postgres").unwrap();
    // SAFETY: getpwnam returns a pointer to static storage or null; we read
    // two integers from it at once, in this thread.
    let pw = unsafe { libc::getpwnam(name.as_ptr()) };
    assert!(!pw.is_null(), "no postgres user to run the server as");
    // SAFETY: pw is non-null and points at a passwd entry.
    Some(unsafe { ((*pw).pw_uid, (*pw).pw_gid) })
}

fn as_server_user(cmd: &mut Command, user: Option<(u32, u32)>) -> &mut Command {
    if let Some((uid, gid)) = user {
        cmd.uid(uid).gid(gid).env("HOME", "/tmp");
    }
    cmd
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Postgres {
    /// A server without TLS.
    pub fn start(tag: &str) -> Postgres {
        Postgres::start_with(tag, None)
    }

    /// A server; with `tls`, (certificate chain PEM, key PEM) it accepts
    /// TLS with that certificate.
    pub fn start_with(tag: &str, tls: Option<(&str, &str)>) -> Postgres {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        // Short: the socket path must fit in 107 bytes.
        let dir = PathBuf::from(format!("/tmp/takt-pg-{tag}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let user = server_user();
        let chown = |p: &Path| {
            if let Some((uid, gid)) = user {
                std::os::unix::fs::chown(p, Some(uid), Some(gid)).unwrap();
            }
        };
        chown(&dir);
        let mut fixture = Postgres {
            dir: dir.clone(),
            server: None,
            port: free_port(),
        };
        let pwfile = dir.join("pw");
        std::fs::write(&pwfile, PASSWORD).unwrap();
        chown(&pwfile);
        let bin = bin_dir();
        let out = as_server_user(&mut Command::new(bin.join("initdb")), user)
            .args(["-D", "data", "-U", "takt", "--auth-local=trust"])
            .args(["--auth-host=scram-sha-256", "--no-sync", "-E", "UTF8"])
            .arg(format!("--pwfile={}", pwfile.display()))
            .current_dir(&dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "initdb: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut args: Vec<String> = [
            "-D",
            "data",
            "-k",
            dir.to_str().unwrap(),
            "-p",
            &fixture.port.to_string(),
            "-c",
            "listen_addresses=127.0.0.1",
            "-c",
            "fsync=off",
            "-c",
            "shared_buffers=16MB",
            "-c",
            "max_connections=40",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        if let Some((cert, key)) = tls {
            for (name, pem, mode) in [("server.crt", cert, 0o644), ("server.key", key, 0o600)] {
                let p = dir.join(name);
                std::fs::write(&p, pem).unwrap();
                std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(mode))
                    .unwrap();
                chown(&p);
            }
            for c in [
                "ssl=on".to_string(),
                format!("ssl_cert_file={}", dir.join("server.crt").display()),
                format!("ssl_key_file={}", dir.join("server.key").display()),
            ] {
                args.push("-c".into());
                args.push(c);
            }
        }
        let log = std::fs::File::create(dir.join("server.log")).unwrap();
        chown(&dir.join("server.log"));
        let mut cmd = Command::new(bin.join("postgres"));
        as_server_user(&mut cmd, user)
            .args(&args)
            .current_dir(&dir)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log);
        // SAFETY: prctl is async-signal-safe; the closure allocates nothing.
        // It runs after the uid change, which would clear the setting.
        unsafe {
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGQUIT) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        fixture.server = Some(cmd.spawn().unwrap());
        fixture.wait_ready();
        fixture
    }

    fn wait_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        let socket = self.dir.join(format!(".s.PGSQL.{}", self.port));
        loop {
            if socket.exists()
                && Command::new(bin_dir().join("pg_isready"))
                    .args(self.client_args())
                    .args(["-d", "postgres", "-q"])
                    .status()
                    .is_ok_and(|s| s.success())
            {
                return;
            }
            if let Some(status) = self.server.as_mut().unwrap().try_wait().unwrap() {
                panic!("postgres exited ({status}): {}", self.log());
            }
            assert!(
                Instant::now() < deadline,
                "postgres did not start: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
    }

    /// The fixture's directory (the socket's too).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn client_args(&self) -> Vec<String> {
        vec![
            "-h".into(),
            self.dir.display().to_string(),
            "-p".into(),
            self.port.to_string(),
            "-U".into(),
            "takt".into(),
        ]
    }

    /// A new empty database; returns its name.
    pub fn create_db(&self, name: &str) -> String {
        let out = Command::new(bin_dir().join("createdb"))
            .args(self.client_args())
            .arg(name)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "createdb {name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        name.to_string()
    }

    /// Runs `sql` in database `db` with psql; returns its unaligned output.
    pub fn psql(&self, db: &str, sql: &str) -> String {
        let out = Command::new(bin_dir().join("psql"))
            .args(self.client_args())
            .args(["-d", db, "-XAtq", "-v", "ON_ERROR_STOP=1", "-c", sql])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "psql {sql}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    }

    /// `db` over the Unix socket, trusted, without TLS.
    pub fn socket_url(&self, db: &str) -> String {
        format!(
            "postgres:///{db}?host={}&port={}&user=takt&sslmode=disable",
            self.dir.display(),
            self.port
        )
    }

    /// `db` over TCP with the password in the URL.
    pub fn tcp_url(&self, db: &str) -> String {
        format!(
            "postgres://takt:{PASSWORD}@127.0.0.1:{}/{db}?sslmode=disable",
            self.port
        )
    }

    /// `db` over TCP without credentials (they come from the environment).
    pub fn tcp_url_no_password(&self, db: &str) -> String {
        format!("postgres://takt@127.0.0.1:{}/{db}", self.port)
    }

    /// Stops the server now (fast shutdown, then SIGKILL after 10 s).
    pub fn stop(&mut self) {
        let Some(mut child) = self.server.take() else {
            return;
        };
        // SAFETY: kill(2) on our own child's pid has no memory effects.
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
        let deadline = Instant::now() + Duration::from_secs(10);
        while child.try_wait().ok().flatten().is_none() {
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
