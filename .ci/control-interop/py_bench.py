"""The Python SDK's asyncio ControlClient, driven by examples/control_bench.rs.

usage: py_bench.py URL TOKEN SESSION SEQUENTIAL CONCURRENT

After 100 warm-up commands and SEQUENTIAL sequential round trips it prints
{"p50_us", "p99_us"}; then, for each "burst" line read from stdin, it sends CONCURRENT
commands at once and prints {"rate"} (commands/s), until stdin closes. The bench
interleaves these bursts with the Rust client's, so that a slow moment of the machine
falls on both clients alike, and computes every median itself.
"""
import asyncio
import json
import sys
import time

if len(sys.argv) != 6:
    sys.exit(__doc__)

from aep_sdk import aio  # noqa: E402 (after the usage check, which needs no SDK)
url, token, session = sys.argv[1:4]
sequential, concurrent = max(1, int(sys.argv[4])), max(1, int(sys.argv[5]))


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))]


def emit(obj):
    print(json.dumps(obj), flush=True)


async def burst(client):
    t = time.perf_counter()
    await asyncio.gather(*(client.send("control.pause", session) for _ in range(concurrent)))
    return concurrent / (time.perf_counter() - t)


async def main():
    client = aio.ControlClient(url, agent="py-bench", host="bench", token=token)
    await client.connect()
    for _ in range(100):
        await client.send("control.pause", session)
    lat = []
    for _ in range(sequential):
        t = time.perf_counter()
        await client.send("control.pause", session)
        lat.append(time.perf_counter() - t)
    emit({"p50_us": pct(lat, 0.5) * 1e6, "p99_us": pct(lat, 0.99) * 1e6})
    loop = asyncio.get_running_loop()
    # read off the loop, so the client's connection is served while it waits
    while (await loop.run_in_executor(None, sys.stdin.readline)).strip() == "burst":
        emit({"rate": await burst(client)})
    await client.close()


asyncio.run(main())
