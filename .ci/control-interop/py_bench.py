"""The Python SDK's asyncio ControlClient, measured the way examples/control_bench.rs
measures the Rust one: sequential round trips (p50/p99) and commands/s with N in flight
(the median burst, and the 10th and 90th percentile ones).

usage: py_bench.py URL TOKEN SESSION SEQUENTIAL CONCURRENT ROUNDS
Prints one JSON object.
"""
import asyncio
import json
import sys
import time

from aep_sdk import aio

url, token, session = sys.argv[1:4]
sequential, concurrent, rounds = (int(x) for x in sys.argv[4:7])


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))]


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
    rates = []
    # One burst first, not counted, as control_bench.rs does for the Rust client.
    for round in range(rounds + 1):
        t = time.perf_counter()
        await asyncio.gather(*(client.send("control.pause", session) for _ in range(concurrent)))
        if round > 0:
            rates.append(concurrent / (time.perf_counter() - t))
    await client.close()
    print(json.dumps({"p50_us": pct(lat, 0.5) * 1e6, "p99_us": pct(lat, 0.99) * 1e6,
                      "cmds_per_s": sorted(rates)[len(rates) // 2],
                      "p10": sorted(rates)[len(rates) // 10],
                      "p90": pct(rates, 0.9)}))


asyncio.run(main())
