"""Decodes an Annex B H.264 file with PyAV (FFmpeg's h264 decoder) and compares each
frame, as yuv420p, with the original planes: prints one JSON object with the frame count
and each frame's PSNR (dB, over Y, U and V together).

Usage: pyav_decode.py STREAM.h264 ORIGINAL.yuv WIDTH HEIGHT
ORIGINAL.yuv holds the frames' I420 planes back to back (what the encoder was given)."""

import math
import sys

import av
import numpy as np


def main() -> None:
    stream_path, original_path, width, height = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    frame_len = width * height * 3 // 2
    original = np.fromfile(original_path, dtype=np.uint8)
    psnrs = []
    with av.open(stream_path, format="h264") as container:
        for index, frame in enumerate(container.decode(video=0)):
            planes = frame.to_ndarray(format="yuv420p").reshape(-1)
            reference = original[index * frame_len:(index + 1) * frame_len]
            if planes.size != reference.size:
                raise SystemExit(f"frame {index}: {planes.size} samples, expected {reference.size}")
            mse = float(np.mean((planes.astype(np.float64) - reference.astype(np.float64)) ** 2))
            psnrs.append(math.inf if mse == 0 else 10 * math.log10(255 * 255 / mse))
    print(len(psnrs))
    print(" ".join(f"{p:.6f}" for p in psnrs))


if __name__ == "__main__":
    main()
