//! A websocket by hand over a blocking TCP socket: for what a well-behaved client library
//! never sends (unmasked frames, reserved opcodes, text that is not UTF-8) and for a client
//! that never answers a ping.

#![allow(
    dead_code,
    unreachable_pub,
    reason = "each test file uses part of this"
)]

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// How long any read may block: a test fails rather than hangs.
const READ_WAIT: Duration = Duration::from_secs(20);

/// Sends a websocket upgrade for `path` (with `extra` header lines, each ending in
/// `\r\n`) and reads the answer's head: (status, socket).
pub fn upgrade(addr: SocketAddr, path: &str, extra: &str) -> std::io::Result<(u16, TcpStream)> {
    let mut stream = TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(READ_WAIT))?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n{extra}\r\n"
    )?;
    // The head, byte by byte: nothing of the frames after it is read here.
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte)? == 0 {
            break;
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head);
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    Ok((status, stream))
}

/// A frame as a client writes it: `masked` as the protocol asks (a fixed key).
pub fn frame(opcode: u8, payload: &[u8], masked: bool) -> Vec<u8> {
    let mut out = vec![0x80 | opcode];
    let mask_bit = if masked { 0x80 } else { 0 };
    match payload.len() {
        n if n < 126 => out.push(mask_bit | n as u8),
        n if n <= 0xFFFF => {
            out.push(mask_bit | 126);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            out.push(mask_bit | 127);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    if masked {
        let key = [0x12, 0x34, 0x56, 0x78];
        out.extend_from_slice(&key);
        out.extend(payload.iter().enumerate().map(|(i, b)| b ^ key[i % 4]));
    } else {
        out.extend_from_slice(payload);
    }
    out
}

/// Every frame the server sends until it closes the connection: (opcode, payload).
/// Never answers anything (a ping stays unanswered).
pub fn frames_until_closed(stream: &mut TcpStream) -> Vec<(u8, Vec<u8>)> {
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 16384];
    loop {
        match stream.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => bytes.extend_from_slice(&chunk[..n]),
            // A reset after the close frame is a close too.
            Err(e) if e.kind() == ErrorKind::ConnectionReset => break,
            Err(e) => panic!("the connection was not closed: {e}"),
        }
    }
    parse_frames(&bytes)
}

/// Server frames (unmasked) in `bytes`; a cut last one is left out.
pub fn parse_frames(bytes: &[u8]) -> Vec<(u8, Vec<u8>)> {
    let mut frames = Vec::new();
    let mut at = 0;
    while at + 2 <= bytes.len() {
        let opcode = bytes[at] & 0x0F;
        let (len, head) = match bytes[at + 1] & 0x7F {
            126 if at + 4 <= bytes.len() => (
                u16::from_be_bytes([bytes[at + 2], bytes[at + 3]]) as usize,
                4,
            ),
            127 if at + 10 <= bytes.len() => {
                let mut n = [0u8; 8];
                n.copy_from_slice(&bytes[at + 2..at + 10]);
                (u64::from_be_bytes(n) as usize, 10)
            }
            126 | 127 => break,
            n => (n as usize, 2),
        };
        let Some(payload) = bytes.get(at + head..at + head + len) else {
            break;
        };
        frames.push((opcode, payload.to_vec()));
        at += head + len;
    }
    frames
}

/// The close frame's code and reason among `frames`.
pub fn close_of(frames: &[(u8, Vec<u8>)]) -> Option<(u16, String)> {
    frames
        .iter()
        .find(|(opcode, _)| *opcode == 0x8)
        .and_then(|(_, payload)| {
            let code = u16::from_be_bytes([*payload.first()?, *payload.get(1)?]);
            Some((code, String::from_utf8_lossy(&payload[2..]).into_owned()))
        })
}

/// Reads until the peer closes: true when it did (EOF or reset), false if the read timed out.
pub fn closed_by_peer(stream: &mut TcpStream) -> bool {
    let mut chunk = [0u8; 4096];
    loop {
        match stream.read(&mut chunk) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}
