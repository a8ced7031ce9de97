//! A FIFO with bytes in it: the proof that a reader refused it unread (the bytes are all
//! still there afterwards), with no timing involved.

use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Linux's `O_NONBLOCK`.
const O_NONBLOCK: i32 = 0o4000;

/// A FIFO holding bytes, and its writing end.
#[derive(Debug)]
pub struct Fifo {
    end: File,
}

impl Fifo {
    /// Makes a FIFO at `path` (`mkfifo`) and puts `bytes` in it. Its end is opened
    /// read-write, so opening waits for no reader, and non-blocking, so reading it back
    /// once empty fails instead of hanging.
    pub fn holding(path: &Path, bytes: &[u8]) -> std::io::Result<Fifo> {
        let made = std::process::Command::new("mkfifo").arg(path).status()?;
        if !made.success() {
            return Err(std::io::Error::other(format!(
                "mkfifo {}: {made}",
                path.display()
            )));
        }
        let mut end = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(O_NONBLOCK)
            .open(path)?;
        end.write_all(bytes)?;
        Ok(Fifo { end })
    }

    /// The bytes still in the FIFO (read back: call it once, at the end).
    pub fn left(&mut self) -> Vec<u8> {
        let mut left = Vec::new();
        let mut buffer = [0u8; 4096];
        while let Ok(n @ 1..) = self.end.read(&mut buffer) {
            left.extend_from_slice(&buffer[..n]);
        }
        left
    }
}
