//! The TCP and UDP checksums of a frame the relay forwards: a veth leaves them to the
//! "hardware" (checksum offload), and a frame leaving through a raw socket has none.

/// Writes the full TCP or UDP checksum of an unfragmented IPv4 or IPv6 (no extension
/// headers) frame; leaves any other frame as it is. Correct whether the frame carried a
/// full checksum or only the pseudo-header's sum a checksum offload leaves.
pub(crate) fn fix_checksum(frame: &mut [u8]) {
    const ETH: usize = 14;
    if frame.len() < ETH + 20 {
        return;
    }
    let ethertype = u16::from_be_bytes([frame[12], frame[13]]);
    let (l4_start, l4_end, protocol, pseudo) = match ethertype {
        0x0800 => {
            let ihl = usize::from(frame[ETH] & 0x0f) * 4;
            let total = usize::from(u16::from_be_bytes([frame[ETH + 2], frame[ETH + 3]]));
            let fragment = u16::from_be_bytes([frame[ETH + 6], frame[ETH + 7]]) & 0x3fff;
            if frame[ETH] >> 4 != 4
                || ihl < 20
                || total < ihl
                || ETH + total > frame.len()
                || fragment != 0
            {
                return;
            }
            let mut pseudo = sum(&frame[ETH + 12..ETH + 20]);
            pseudo += u32::from(frame[ETH + 9]) + (total - ihl) as u32;
            (ETH + ihl, ETH + total, frame[ETH + 9], pseudo)
        }
        0x86dd => {
            let payload = usize::from(u16::from_be_bytes([frame[ETH + 4], frame[ETH + 5]]));
            if frame.len() < ETH + 40 || ETH + 40 + payload > frame.len() {
                return;
            }
            let mut pseudo = sum(&frame[ETH + 8..ETH + 40]);
            pseudo += u32::from(frame[ETH + 6]) + payload as u32;
            (ETH + 40, ETH + 40 + payload, frame[ETH + 6], pseudo)
        }
        _ => return,
    };
    let field = match protocol {
        6 => l4_start + 16,
        17 => l4_start + 6,
        _ => return,
    };
    if field + 2 > l4_end {
        return;
    }
    if protocol == 17 && ethertype == 0x0800 && frame[field] == 0 && frame[field + 1] == 0 {
        return; // an IPv4 UDP datagram without a checksum
    }
    frame[field] = 0;
    frame[field + 1] = 0;
    let mut total = pseudo + sum(&frame[l4_start..l4_end]);
    while total > 0xffff {
        total = (total & 0xffff) + (total >> 16);
    }
    let mut checksum = !(total as u16);
    if protocol == 17 && checksum == 0 {
        checksum = 0xffff;
    }
    frame[field..field + 2].copy_from_slice(&checksum.to_be_bytes());
}

/// The 16-bit one's-complement sum's terms, not yet folded.
fn sum(bytes: &[u8]) -> u32 {
    let mut total: u32 = 0;
    let mut chunks = bytes.chunks_exact(2);
    for pair in &mut chunks {
        total += u32::from(u16::from_be_bytes([pair[0], pair[1]]));
    }
    if let [last] = chunks.remainder() {
        total += u32::from(*last) << 8;
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An Ethernet + IPv4 + TCP frame (20-byte headers) carrying `payload`, checksum 0.
    fn tcp_frame(payload: &[u8]) -> Vec<u8> {
        let mut frame = vec![0u8; 14 + 20 + 20];
        frame[12..14].copy_from_slice(&[0x08, 0x00]);
        let ip = &mut frame[14..34];
        ip[0] = 0x45;
        ip[2..4].copy_from_slice(&((40 + payload.len()) as u16).to_be_bytes());
        ip[8] = 64;
        ip[9] = 6;
        ip[12..16].copy_from_slice(&[10, 203, 0, 1]);
        ip[16..20].copy_from_slice(&[10, 203, 0, 2]);
        let tcp = &mut frame[34..54];
        tcp[0..4].copy_from_slice(&[0x1f, 0x90, 0xc3, 0x50]);
        tcp[4..8].copy_from_slice(&[1, 2, 3, 4]);
        tcp[12] = 0x50;
        tcp[13] = 0x18;
        frame.extend_from_slice(payload);
        frame
    }

    /// The checksum as RFC 793 defines it, written out the long way.
    fn reference(frame: &[u8]) -> u16 {
        let segment = &frame[34..];
        let mut words: Vec<u16> = Vec::new();
        let mut pseudo = frame[26..34].to_vec();
        pseudo.extend_from_slice(&[0, 6]);
        pseudo.extend_from_slice(&(segment.len() as u16).to_be_bytes());
        let mut bytes = pseudo;
        let mut segment = segment.to_vec();
        segment[16] = 0;
        segment[17] = 0;
        bytes.extend_from_slice(&segment);
        if bytes.len() % 2 == 1 {
            bytes.push(0);
        }
        for pair in bytes.chunks(2) {
            words.push(u16::from_be_bytes([pair[0], pair[1]]));
        }
        let mut total: u64 = words.iter().map(|&w| u64::from(w)).sum();
        while total > 0xffff {
            total = (total & 0xffff) + (total >> 16);
        }
        !(total as u16)
    }

    #[test]
    fn the_relay_writes_the_full_tcp_checksum() {
        for payload in [&b"hello"[..], b"", &[0xff; 1460]] {
            let mut frame = tcp_frame(payload);
            let expected = reference(&frame);
            // As a checksum offload leaves it: some partial sum; or garbage.
            for field in [[0x12, 0x34], [0, 0], [0xff, 0xff]] {
                frame[50..52].copy_from_slice(&field);
                fix_checksum(&mut frame);
                assert_eq!(u16::from_be_bytes([frame[50], frame[51]]), expected);
            }
        }
    }

    #[test]
    fn frames_the_relay_cannot_check_cross_as_they_are() {
        // ARP, a fragment, a truncated frame, an IPv4 UDP datagram without checksum.
        let arp = {
            let mut f = vec![0u8; 42];
            f[12..14].copy_from_slice(&[0x08, 0x06]);
            f
        };
        let mut fragment = tcp_frame(b"abc");
        fragment[20] = 0x20; // more fragments
        let truncated = tcp_frame(b"abc")[..50].to_vec();
        let mut udp = tcp_frame(b"abcdefgh");
        udp[23] = 17;
        udp[40] = 0;
        udp[41] = 0;
        for frame in [arp, fragment, truncated, udp] {
            let mut copy = frame.clone();
            fix_checksum(&mut copy);
            assert_eq!(copy, frame);
        }
    }
}
