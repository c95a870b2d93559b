"""Claimed ports stay out of the kernel's ephemeral range: a loading server's own sockets
(bound to port 0) could otherwise take the HTTP port it will bind only after loading (seen in
CI: "address already in use", then a 12-minute hung launch)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_rocm_llm.serving.ports import HELPER_REACH, claim_port, release_port

RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")


@pytest.mark.skipif(not RANGE.exists(), reason="no Linux ephemeral port range to compare with")
def test_claimed_ports_are_below_the_ephemeral_range_with_room_for_helper_ports() -> None:
    ephemeral_low = int(RANGE.read_text().split()[0])
    ports = [claim_port() for _ in range(20)]
    try:
        # Red before: the kernel's pick for port 0 is always in the ephemeral range.
        assert all(p + HELPER_REACH <= ephemeral_low for p in ports), (ports, ephemeral_low)
        assert len(set(ports)) == len(ports)
    finally:
        for p in ports:
            release_port(p)
