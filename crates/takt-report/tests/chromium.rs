//! The report opened in a real headless Chromium (Debian `chromium`,
//! installed by `scripts/setup.sh`; a missing browser fails the test).
//!
//! The page is served by a recording HTTP server on an ephemeral port, and
//! the browser's host resolver maps every host name to that server, so any
//! request the page makes — to itself or to any site — is recorded. The
//! browser logs console messages to stderr. A control page with a console
//! error and an external image proves both detectors see what they should.
//!
//! The layout is measured at a 1280-pixel-wide window by a script injected
//! into a copy of the page (the page itself has no scripts): the document
//! does not scroll sideways, every table fits its box (no column cut off
//! behind a scroll bar), no row is taller than a few lines, every section
//! is there and every plot is drawn with its points.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use takt_report::input::Stage;

/// Longest a browser run may take (a loaded CI machine is slow to start it).
const BROWSER_TIMEOUT: Duration = Duration::from_secs(90);

/// Finds `tool` on `PATH`.
fn find_tool(tool: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(tool))
        .find(|p| p.is_file())
}

fn chromium() -> PathBuf {
    ["chromium", "chromium-browser"]
        .iter()
        .find_map(|t| find_tool(t))
        .expect("chromium is not installed: run scripts/setup.sh (Debian package `chromium`)")
}

/// One connection the server saw.
#[derive(Clone, Debug)]
struct Seen {
    /// The request line, or for a TLS connection the host names in its
    /// ClientHello (the SNI).
    first: String,
    /// The `Host` header of an HTTP request.
    host: String,
    /// The `Referer` header of an HTTP request.
    referer: String,
    tls: bool,
}

/// Printable runs of `bytes` that look like host names (the SNI of a TLS
/// ClientHello; a run may carry a following length byte that happens to be
/// printable, so names are matched as substrings).
fn host_names(bytes: &[u8]) -> String {
    let mut names = Vec::new();
    for run in bytes.split(|b| !(b.is_ascii_alphanumeric() || *b == b'.' || *b == b'-')) {
        let s = String::from_utf8_lossy(run);
        if s.len() > 4 && s.contains('.') && s.chars().any(|c| c.is_ascii_alphabetic()) {
            names.push(s.into_owned());
        }
    }
    names.join(",")
}

/// Serves the files of `dir`; records every connection.
fn serve(dir: PathBuf) -> (u16, Arc<Mutex<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
            let mut peek = [0u8; 1];
            if stream.peek(&mut peek).is_ok_and(|n| n == 1) && peek[0] == 0x16 {
                // A TLS ClientHello: read its whole record (5-byte header,
                // then the length it states) for the SNI.
                let mut hello = vec![0u8; 5];
                let _ = stream.read_exact(&mut hello);
                let len = usize::from(u16::from_be_bytes([hello[3], hello[4]]));
                let mut body = vec![0u8; len];
                let _ = stream.read_exact(&mut body);
                log.lock().unwrap().push(Seen {
                    first: host_names(&body),
                    host: String::new(),
                    referer: String::new(),
                    tls: true,
                });
                continue;
            }
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut first = Vec::new();
            let _ = reader.by_ref().take(8192).read_until(b'\n', &mut first);
            let line = String::from_utf8_lossy(&first).trim().to_string();
            let (mut host, mut referer) = (String::new(), String::new());
            let mut header = String::new();
            while reader.read_line(&mut header).is_ok_and(|n| n > 2) {
                let lower = header.to_ascii_lowercase();
                if let Some(v) = lower.strip_prefix("host:") {
                    host = v.trim().to_string();
                } else if let Some(v) = lower.strip_prefix("referer:") {
                    referer = v.trim().to_string();
                }
                header.clear();
            }
            log.lock().unwrap().push(Seen {
                first: line.clone(),
                host,
                referer,
                tls: false,
            });
            let path = line
                .split_whitespace()
                .nth(1)
                .unwrap_or("/")
                .trim_start_matches('/');
            let file = dir.join(if path.is_empty() { "index.html" } else { path });
            let response = match std::fs::read(&file) {
                Ok(body) if !path.contains("..") => {
                    let mut r = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    )
                    .into_bytes();
                    r.extend(body);
                    r
                }
                _ => b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    .to_vec(),
            };
            let _ = stream.write_all(&response);
        }
    });
    (port, seen)
}

/// Chromium's own services, which it contacts whatever the page does
/// (component updates, network time, accounts) despite the flags that
/// quiet most of them. A page's fonts or scripts on Google hosts
/// (fonts.googleapis.com, fonts.gstatic.com, ...) are not among them.
const BROWSER_SERVICES: [&str; 5] = [
    "update.googleapis.com",
    "accounts.google.com",
    "clients2.google.com",
    "optimizationguide-pa.googleapis.com",
    "content-autofill.googleapis.com",
];

fn browser(port: u16, extra: &[String], url: &str) -> Output {
    let profile = common::temp_dir("chromium-profile");
    let mut child = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--disable-default-apps",
            "--disable-domain-reliability",
            "--disable-client-side-phishing-detection",
            "--no-pings",
            "--disable-features=NetworkTimeServiceQuerying,OptimizationHints,Translate,MediaRouter",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--host-resolver-rules=MAP * 127.0.0.1:{port}"))
        .args(extra)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cannot start chromium");
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = stdout.read_to_end(&mut b);
        b
    });
    let err = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = stderr.read_to_end(&mut b);
        b
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > BROWSER_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish in {BROWSER_TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let _ = std::fs::remove_dir_all(&profile);
    Output {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

fn console_lines(stderr: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(stderr)
        .lines()
        .filter(|l| l.contains("CONSOLE"))
        .map(str::to_string)
        .collect()
}

/// Connections the page caused beyond loading itself: any HTTP request
/// the page referred (its `Referer` is our server) or that went to our
/// server for another path, and any TLS connection not to one of the
/// browser's own services. The browser's favicon probe is not the page's.
fn foreign(seen: &Mutex<Vec<Seen>>, port: u16, page: &str) -> Vec<String> {
    let ours = format!("127.0.0.1:{port}");
    seen.lock()
        .unwrap()
        .iter()
        .filter(|s| {
            if s.tls {
                return !s
                    .first
                    .split(',')
                    .any(|h| BROWSER_SERVICES.iter().any(|b| h.contains(b)));
            }
            let page_load = s.first == format!("GET /{page} HTTP/1.1") && s.host == ours;
            let favicon = s.first.starts_with("GET /favicon.ico ");
            let referred = s.referer.contains(&ours);
            (referred || s.host == ours) && !page_load && !favicon
        })
        .map(|s| format!("{} (host {}, referer {})", s.first, s.host, s.referer))
        .collect()
}

/// The window the layout is measured at, and the README's screenshot
/// width.
const WINDOW_WIDTH: u32 = 1280;
/// The tallest row a table may have, px: ten lines of table text. A row
/// taller than that is a narrow column forced to wrap a long text word by
/// word, and mostly empty space.
const MAX_ROW_PX: u32 = 200;

/// Measures the page as laid out, every `<details>` opened, and writes one
/// fact per line into `<pre id="layout-probe">`.
const PROBE: &str = r#"<script>
(function () {
  var d = document.documentElement, out = [];
  var flat = function (s) { return s.replace(/\s+/g, " ").trim().slice(0, 160); };
  document.querySelectorAll("details").forEach(function (e) { e.open = true; });
  out.push("window " + window.innerWidth + " " + d.scrollWidth);
  document.querySelectorAll("table").forEach(function (t) {
    var box = t.parentElement;
    if (box.scrollWidth > box.clientWidth + 1) {
      out.push("wide " + box.scrollWidth + " " + box.clientWidth + " " + flat(t.rows[0].textContent));
    }
  });
  document.querySelectorAll("tr").forEach(function (tr) {
    out.push("row " + Math.round(tr.getBoundingClientRect().height) + " " + flat(tr.textContent));
  });
  document.querySelectorAll("section").forEach(function (s) {
    var h = s.querySelector("h2");
    out.push("section " + s.id + " " + Math.round(s.getBoundingClientRect().height) + " " + (h ? flat(h.textContent) : ""));
  });
  document.querySelectorAll("figure.plot svg").forEach(function (svg) {
    var r = svg.getBoundingClientRect();
    out.push("plot " + Math.round(r.width) + " " + Math.round(r.height) + " " + svg.querySelectorAll("circle").length);
  });
  var pre = document.createElement("pre");
  pre.id = "layout-probe";
  pre.textContent = out.join("\n");
  document.body.appendChild(pre);
})();
</script>"#;

/// The probe's lines from a dumped DOM.
fn probe_lines(dom: &str) -> Vec<String> {
    let start = dom
        .find("<pre id=\"layout-probe\">")
        .expect("the probe wrote nothing: did the script run?");
    let body = &dom[start..];
    let body = &body[body.find('>').unwrap() + 1..body.find("</pre>").unwrap()];
    body.lines()
        .map(|l| {
            l.replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&quot;", "\"")
                .replace("&amp;", "&")
        })
        .collect()
}

/// The fixtures' report with the scheduler study measured too (a trimmed
/// `takt sip sweep --quick` document of three targets: its tables and
/// plots are the report's centre).
fn write_report() -> PathBuf {
    let dir = common::temp_dir("chromium");
    let mut input = common::full_input();
    let sweep = input.attach(
        common::fixture("sweep"),
        Some("takt sip sweep --quick --json".into()),
    );
    assert_eq!(sweep, Some(Stage::Sweep));
    takt_report::render::write(&dir, &input).unwrap();
    dir
}

#[test]
fn the_report_renders_in_chromium_without_errors_or_requests() {
    let dir = write_report();
    let (port, seen) = serve(dir.clone());
    let url = format!("http://127.0.0.1:{port}/index.html");

    let dom = browser(port, &["--dump-dom".into()], &url);
    assert!(
        dom.status.success(),
        "chromium: {}",
        String::from_utf8_lossy(&dom.stderr)
    );
    let html = String::from_utf8_lossy(&dom.stdout);
    assert!(
        html.contains("<h1>takt report</h1>"),
        "the DOM is not the report"
    );
    assert!(
        console_lines(&dom.stderr).is_empty(),
        "console: {:?}",
        console_lines(&dom.stderr)
    );
    let foreign_requests = foreign(&seen, port, "index.html");
    assert!(
        foreign_requests.is_empty(),
        "requests: {foreign_requests:?}"
    );
    // every plot is a non-empty SVG with data points, in the rendered DOM
    let figures: Vec<&str> = html.split("<figure class=\"plot\">").skip(1).collect();
    assert!(figures.len() >= 6, "{} figures", figures.len());
    for f in figures {
        let f = &f[..f.find("</figure>").unwrap()];
        assert!(
            f.contains("<svg") && f.contains("</svg>"),
            "a figure without an SVG"
        );
        assert!(
            f.matches("<circle").count() >= 2,
            "a figure without data points"
        );
    }

    let shot = dir.join("screenshot.png");
    let out = browser(
        port,
        &[
            format!("--screenshot={}", shot.display()),
            format!("--window-size={WINDOW_WIDTH},2400"),
            "--hide-scrollbars".into(),
        ],
        &url,
    );
    assert!(
        out.status.success(),
        "chromium: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let png = std::fs::read(&shot).expect("no screenshot written");
    assert!(png.len() > 10_000, "screenshot of {} bytes", png.len());
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    // Kept for a person to look at: under the target directory, and where
    // TAKT_REPORT_SCREENSHOT names a path.
    let kept = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-screenshot.png");
    std::fs::copy(&shot, &kept).unwrap();
    println!("screenshot: {}", kept.display());
    if let Some(keep) = std::env::var_os("TAKT_REPORT_SCREENSHOT") {
        std::fs::copy(&shot, Path::new(&keep)).unwrap();
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_report_fits_a_1280_pixel_window() {
    let dir = write_report();
    let page = std::fs::read_to_string(dir.join("index.html")).unwrap();
    assert!(page.contains("</body>") && !page.contains("<script"));
    std::fs::write(
        dir.join("probe.html"),
        page.replace("</body>", &format!("{PROBE}</body>")),
    )
    .unwrap();
    let (port, _) = serve(dir.clone());
    let out = browser(
        port,
        &[
            "--dump-dom".into(),
            format!("--window-size={WINDOW_WIDTH},900"),
            "--hide-scrollbars".into(),
        ],
        &format!("http://127.0.0.1:{port}/probe.html"),
    );
    assert!(
        out.status.success(),
        "chromium: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = probe_lines(&String::from_utf8_lossy(&out.stdout));
    let facts = |kind: &str| -> Vec<Vec<String>> {
        lines
            .iter()
            .filter_map(|l| l.strip_prefix(kind)?.strip_prefix(' '))
            .map(|l| l.splitn(4, ' ').map(str::to_string).collect())
            .collect()
    };
    let px = |s: &str| -> u32 { s.parse().unwrap() };

    // the document is as wide as the window
    let window = &facts("window")[0];
    assert_eq!(px(&window[0]), WINDOW_WIDTH, "{lines:?}");
    assert!(
        px(&window[1]) <= WINDOW_WIDTH,
        "the document scrolls sideways: {} px wide in a {WINDOW_WIDTH}-pixel window",
        window[1]
    );
    // every table fits its box: no column hidden behind a scroll bar
    let wide: Vec<String> = facts("wide")
        .iter()
        .map(|f| format!("{} px in a {} px box: {}", f[0], f[1], f[2..].join(" ")))
        .collect();
    assert!(wide.is_empty(), "tables wider than the page: {wide:#?}");
    // no row taller than a few lines
    let rows = facts("row");
    assert!(rows.len() > 100, "{} table rows", rows.len());
    let tall: Vec<String> = rows
        .iter()
        .filter(|f| px(&f[0]) > MAX_ROW_PX)
        .map(|f| f.join(" "))
        .collect();
    assert!(
        tall.is_empty(),
        "rows taller than {MAX_ROW_PX} px: {tall:#?}"
    );
    // every section there, with its heading and a body
    let sections = facts("section");
    let expected: Vec<&str> = Stage::ALL
        .iter()
        .map(|s| s.name())
        .chain([
            "beyond",
            takt_report::render::ANSWER,
            takt_report::render::CHANGES,
        ])
        .collect();
    for id in expected {
        let s = sections
            .iter()
            .find(|f| f[0] == id)
            .unwrap_or_else(|| panic!("no section {id}: {sections:?}"));
        let heading = s.get(2).is_some_and(|t| !t.is_empty());
        assert!(px(&s[1]) > 100 && heading, "section {id}: {s:?}");
    }
    // every plot drawn, within the page, with its points
    let plots = facts("plot");
    assert!(plots.len() >= 6, "{} plots", plots.len());
    for p in &plots {
        let (w, h, points) = (px(&p[0]), px(&p[1]), px(&p[2]));
        assert!(
            w > 300 && w <= WINDOW_WIDTH && h > 150,
            "a plot of {w} × {h} px"
        );
        assert!(points >= 2, "a plot with {points} points");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_detectors_see_a_console_error_and_a_foreign_request() {
    let dir = common::temp_dir("chromium-control");
    std::fs::write(
        dir.join("control.html"),
        "<!DOCTYPE html><html><body><p>control</p>\
         <img src=\"http://fonts.example.com/x.png\">\
         <script>console.error('control error');</script></body></html>",
    )
    .unwrap();
    let (port, seen) = serve(dir.clone());
    let out = browser(
        port,
        &["--dump-dom".into(), "--virtual-time-budget=2000".into()],
        &format!("http://127.0.0.1:{port}/control.html"),
    );
    assert!(out.status.success());
    let console = console_lines(&out.stderr);
    assert!(
        console.iter().any(|l| l.contains("control error")),
        "console error not seen: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let foreign_requests = foreign(&seen, port, "control.html");
    assert!(
        foreign_requests.iter().any(|l| l.contains("/x.png")),
        "foreign request not seen: {foreign_requests:?}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
