#!/usr/bin/env python3
"""The disk's fdatasync latency at a paced rate, as a log of small records sees it.

Writes RECORD bytes at consecutive offsets of a 64 MiB file made the way
Spool's log segments are (fallocate) or zero-filled, each write followed by
fdatasync, RATE a second for SECONDS, and prints the latency's quantiles.
What an idle pickup costs at least: an enqueue and the claim's lease are
each one such sync (docs/BENCHMARKS.md, "What bounds idle pickup over RESP").

    python3 bench/fsync_pace.py fallocate|zero PATH [RATE=100] [SECONDS=20] [RECORD=300]
"""
import os
import sys
import time


def main() -> None:
    mode, path = sys.argv[1], sys.argv[2]
    rate = float(sys.argv[3]) if len(sys.argv) > 3 else 100.0
    secs = float(sys.argv[4]) if len(sys.argv) > 4 else 20.0
    record = int(sys.argv[5]) if len(sys.argv) > 5 else 300
    size = 64 << 20
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        if mode == "zero":
            os.write(fd, b"\0" * size)
        elif mode == "fallocate":
            os.posix_fallocate(fd, 0, size)
        else:
            sys.exit(f"mode must be fallocate or zero, not {mode}")
        os.fsync(fd)
        buf, lat, off = b"x" * record, [], 0
        due = time.perf_counter()
        end = due + secs
        while time.perf_counter() < end and off + record <= size:
            now = time.perf_counter()
            if now < due:
                time.sleep(due - now)
            due += 1.0 / rate
            start = time.perf_counter()
            os.pwrite(fd, buf, off)
            os.fdatasync(fd)
            lat.append(time.perf_counter() - start)
            off += record
    finally:
        os.close(fd)
        os.unlink(path)
    lat.sort()
    q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] * 1e6
    print(
        f"{mode} {rate:.0f}/s n={len(lat)} p50={q(.5):.0f}us p90={q(.9):.0f}us "
        f"p99={q(.99):.0f}us p99.9={q(.999):.0f}us max={lat[-1] * 1e6:.0f}us"
    )


if __name__ == "__main__":
    main()
