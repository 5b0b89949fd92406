#!/usr/bin/python3
"""A network delay line for scripts/bench_hosts.sh on kernels without netem.

Opens two TAP devices, NAME_A and NAME_B, and carries every Ethernet frame that arrives on one out
of the other DELAY_MS milliseconds later, in order. The caller moves each device into a test host's
network namespace (the open descriptors stay attached) and gives it an address: the two hosts then
talk as if through a cable of that one-way delay. Runs until killed; prints "ready" once both
devices exist. Its own CPU time is the price: measure a 0 ms line beside the delayed ones.

    delay_line.py NAME_A NAME_B DELAY_MS
"""
import fcntl
import heapq
import os
import select
import struct
import sys
import time

TUNSETIFF = 0x400454CA
IFF_TAP = 0x0002
IFF_NO_PI = 0x1000
FRAME_MAX = 65536 + 14  # the hosts raise the MTU to 64 KiB: fewer, larger frames to carry


def open_tap(name):
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TAP | IFF_NO_PI))
    return fd


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__.strip().splitlines()[-1].strip())
    a, b = open_tap(sys.argv[1]), open_tap(sys.argv[2])
    delay = float(sys.argv[3]) / 1000.0
    other = {a: b, b: a}
    due = []  # (time due, arrival order, descriptor out, frame): a heap
    order = 0
    print("ready", flush=True)
    while True:
        wait = max(0.0, due[0][0] - time.monotonic()) if due else None
        readable, _, _ = select.select([a, b], [], [], wait)
        now = time.monotonic()
        for fd in readable:
            while True:
                try:
                    frame = os.read(fd, FRAME_MAX)
                except BlockingIOError:
                    break
                heapq.heappush(due, (now + delay, order, other[fd], frame))
                order += 1
        now = time.monotonic()
        while due and due[0][0] <= now:
            _, _, out, frame = heapq.heappop(due)
            try:
                os.write(out, frame)
            except OSError:
                pass  # the far end is down (EIO) or its queue full: dropped, as a link drops


if __name__ == "__main__":
    main()
