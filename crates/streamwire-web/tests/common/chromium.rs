//! Debian's headless chromium for the browser tests, behind a guard.

#![allow(
    dead_code,
    unreachable_pub,
    reason = "each test file uses part of this"
)]

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use headless_chrome::{Browser, LaunchOptions, Tab};
use serde_json::Value;

pub const CHROMIUM: &str = "/usr/bin/chromium";

/// Chromium and its profile directory: on every exit path (a failed assertion included)
/// the browser is killed and the directory removed.
pub struct Chromium {
    browser: Option<Browser>,
    profile: PathBuf,
}

impl Chromium {
    pub fn launch() -> anyhow::Result<Chromium> {
        let profile = std::env::temp_dir().join(format!(
            "streamwire-web-chromium-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0)
        ));
        std::fs::create_dir_all(&profile)?;
        let mut guard = Chromium {
            browser: None,
            profile,
        };
        // As root chromium needs the sandbox off; the background services are off so
        // that nothing tries to reach the (closed) network.
        let args: Vec<&OsStr> = [
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ]
        .iter()
        .map(OsStr::new)
        .collect();
        let options = LaunchOptions::default_builder()
            .path(Some(PathBuf::from(CHROMIUM)))
            .headless(true)
            .sandbox(false)
            .user_data_dir(Some(guard.profile.clone()))
            .window_size(Some((1400, 1000)))
            .idle_browser_timeout(Duration::from_secs(120))
            .args(args)
            .build()
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        guard.browser = Some(Browser::new(options)?);
        Ok(guard)
    }

    pub fn tab(&self) -> anyhow::Result<std::sync::Arc<Tab>> {
        let browser = self
            .browser
            .as_ref()
            .ok_or_else(|| anyhow::anyhow!("no browser"))?;
        browser.new_tab()
    }
}

impl Drop for Chromium {
    fn drop(&mut self) {
        if let Some(browser) = self.browser.take() {
            let pid = browser.get_process_id();
            drop(browser); // headless_chrome kills the process it started
            if let Some(pid) = pid {
                // In case it outlived its handle: end it by its own id, and wait (bounded)
                // until it is gone, so that it writes nothing into its profile afterwards.
                let _ = std::process::Command::new("kill")
                    .args(["-9", &pid.to_string()])
                    .stderr(std::process::Stdio::null())
                    .status();
                let proc = PathBuf::from(format!("/proc/{pid}"));
                let deadline = std::time::Instant::now() + Duration::from_secs(5);
                while proc.exists() && std::time::Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
        }
        // Its helper processes may still flush a file or two as they exit: retry, bounded.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while self.profile.exists() && std::time::Instant::now() < deadline {
            let _ = std::fs::remove_dir_all(&self.profile);
            if self.profile.exists() {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
}

pub fn chromium_present() -> bool {
    if Path::new(CHROMIUM).exists() {
        return true;
    }
    streamwire_testdata::skip(format!("{CHROMIUM} is absent (apt-get install chromium)"));
    false
}

pub fn eval(tab: &Tab, js: &str) -> anyhow::Result<Value> {
    let result = tab.evaluate(js, false)?;
    let text = result
        .value
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    Ok(serde_json::from_str(&text).unwrap_or(Value::Null))
}
