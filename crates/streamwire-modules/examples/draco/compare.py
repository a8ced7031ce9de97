"""DracoPy (Google's Draco) on the clouds `measure_clouds` dumps, at the quantization of
cloudini at 1 mm: a step of at most 1 mm on each axis (max error 0.5 mm), that is
quantization_bits = ceil(log2(extent / 0.001 + 1)) over the cloud's largest extent.

    cargo run --release -p streamwire-modules --example measure_clouds -- --dump /tmp/clouds
    cd crates/streamwire-modules/examples/draco
    python3 -m venv .venv && .venv/bin/pip install -r requirements.txt
    .venv/bin/python compare.py /tmp/clouds

Prints one markdown row per cloud and setting: bytes, encode and decode ms (medians of 21
runs), the largest x/y/z error (measured with preserve_order, which keeps the points'
order so they compare one to one). Not run in CI: it measures, it does not check.
"""

import math
import pathlib
import sys
import time

import DracoPy
import numpy as np

RUNS = 21
RESOLUTION = 0.001


def median_ms(f):
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        f()
        times.append((time.perf_counter() - start) * 1000.0)
    return sorted(times)[RUNS // 2]


def main(folder):
    with open("/proc/loadavg") as f:
        print("load average at start:", f.read().strip())
    print("| cloud | points | setting | B | encode ms | decode ms | max xyz error |")
    print("|---|---|---|---|---|---|---|")
    for path in sorted(pathlib.Path(folder).glob("*.xyz.f32")):
        points = np.fromfile(path, dtype="<f4").reshape(-1, 3)
        extent = float((points.max(axis=0) - points.min(axis=0)).max())
        bits = math.ceil(math.log2(extent / RESOLUTION + 1))
        for level in (1, 7, 10):
            def encode(order=False):
                return DracoPy.encode(points, quantization_bits=bits, compression_level=level,
                                      preserve_order=order)
            data = encode()
            ordered = DracoPy.decode(encode(True)).points
            error = float(np.abs(np.asarray(ordered, dtype=np.float64) - points).max())
            enc = median_ms(encode)
            dec = median_ms(lambda: DracoPy.decode(data))
            print(f"| {path.stem.removesuffix('.xyz')} | {len(points)} | {bits} bits, level {level} "
                  f"| {len(data)} | {enc:.2f} | {dec:.2f} | {error:.6f} |")
    with open("/proc/loadavg") as f:
        print("load average at end:", f.read().strip())


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/clouds")
