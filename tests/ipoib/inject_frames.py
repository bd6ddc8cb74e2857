#!/usr/bin/python3
"""Writes hand-made bad Ethernet frames into an interface (AF_PACKET, root), as a host's
stack would hand them to the IPoIB driver's Ethernet face (label ipoib).
  inject_frames.py IFNAME OWN_MAC COUNT KIND...
KIND: runt (an IPv4 frame cut inside its header), ethertype (0x88B5, local experimental),
arp (an ARP request whose sender MAC is not the interface's: forged). Each sent COUNT times."""
import socket
import struct
import sys


def mac(text):
    return bytes(int(x, 16) for x in text.split(":"))


def main():
    ifname, own, count, kinds = sys.argv[1], mac(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
    broadcast = b"\xff" * 6
    forged = b"\x02\x66\x66\x66\x66\x66"
    frames = {
        # 14 + 10 bytes: an IPv4 header says 20 bytes at least.
        "runt": broadcast + own + b"\x08\x00" + bytes([0x45, 0, 0, 84]) + bytes(6),
        "ethertype": broadcast + own + b"\x88\xb5" + bytes(46),
        "arp": broadcast + own + b"\x08\x06"
        + struct.pack("!HHBBH", 1, 0x0800, 6, 4, 1)
        + forged + socket.inet_aton("198.18.0.1") + bytes(6) + socket.inet_aton("198.18.0.2")
        + bytes(18),
    }
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((ifname, 0))
    for kind in kinds:
        for _ in range(count):
            if s.send(frames[kind]) != len(frames[kind]):
                sys.exit("short send of " + kind)


main()
