"""libx264 (preset veryfast, no B-frames, 2 s GOP) through PyAV at each bit rate, on raw
rgb24 frames: prints one line per bit rate with the bit rate reached, the mean PSNR over
rgb24 (decoded by PyAV's h264 decoder) and the encode CPU time per frame.

Usage: x264_psnr.py FRAMES.rgb WIDTH HEIGHT FPS BITRATE...
"""

import math
import sys
import time
from fractions import Fraction

import av
import numpy as np


def run(frames: np.ndarray, width: int, height: int, fps: float, bitrate: int) -> str:
    encoder = av.CodecContext.create("libx264", "w")
    encoder.width, encoder.height, encoder.pix_fmt = width, height, "yuv420p"
    encoder.time_base = Fraction(1, round(fps))
    encoder.bit_rate = bitrate
    encoder.options = {"preset": "veryfast", "bf": "0", "g": str(round(2 * fps)), "threads": "1"}
    decoder = av.CodecContext.create("h264", "r")
    total_bytes, psnr_sum, count, cpu = 0, 0.0, 0, 0.0
    decoded = []

    def take(packets):
        nonlocal total_bytes
        for packet in packets:
            total_bytes += packet.size
            decoded.extend(decoder.decode(packet))

    for index, rgb in enumerate(frames):
        frame = av.VideoFrame.from_ndarray(rgb, format="rgb24").reformat(format="yuv420p")
        frame.pts = index
        start = time.process_time()
        packets = encoder.encode(frame)
        cpu += time.process_time() - start
        take(packets)
    take(encoder.encode(None))
    decoded.extend(decoder.decode(None))
    for index, frame in enumerate(decoded[: len(frames)]):
        back = frame.to_ndarray(format="rgb24").astype(np.float64)
        mse = float(np.mean((back - frames[index].astype(np.float64)) ** 2))
        psnr_sum += 100.0 if mse == 0 else 10 * math.log10(255 * 255 / mse)
        count += 1
    mbps = total_bytes * 8 * fps / len(frames) / 1e6
    return (f"libx264 {bitrate / 1e6:>5.1f} Mbit/s  {mbps:>7.2f} Mbit/s  {psnr_sum / max(count, 1):>6.2f} dB"
            f"  encode {cpu * 1e3 / len(frames):.1f} ms (CPU, veryfast, incl. colour conversion)")


def main() -> None:
    path, width, height, fps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
    frames = np.fromfile(path, dtype=np.uint8).reshape(-1, height, width, 3)
    for bitrate in sys.argv[5:]:
        print(run(frames, width, height, fps, int(bitrate)), flush=True)


if __name__ == "__main__":
    main()
