#!/usr/bin/env python3
"""Writes the committed seed corpora of the packet, MAD and topology fuzz targets.

  tests/fuzz/make_seeds.py            # writes into tests/fuzz/corpus/{mad_decode,hca_local_mad,
                                      #   switch_route,topology_reader}_fuzzer/

The seeds come from material written or captured independently of the fuzzers:
  - tests/data/mad_vectors.txt: the byte vectors written by hand from the IBTA tables;
  - tests/data/captures/*.erf: packets captured on softib's fabric (an SM bring-up by
    directed route, SA queries with RMPP, CM connections, RC traffic; see the README beside
    them for how they were taken);
  - tests/data/topologies/*.net: ibnetdiscover files.
Each seed is framed the way its target reads its input (the comments of tests/fuzz/*.cc).
Files are named by the SHA-1 of their content, as libFuzzer names what it adds, so a
rerun writes the same files; inputs that `scripts/fuzz.sh --merge-seeds` added stay. The verb fuzzers' corpora are not written here: they are
libFuzzer's own minimised corpora (scripts/fuzz.sh --merge-seeds).
"""
import hashlib
import pathlib
import struct
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "fuzz" / "corpus"
VECTORS = ROOT / "tests" / "data" / "mad_vectors.txt"
CAPTURES = ROOT / "tests" / "data" / "captures"
TOPOLOGIES = ROOT / "tests" / "data" / "topologies"

MAD_SIZE = 256
ERF_TYPE_INFINIBAND = 21


def read_vectors(path):
    """Returns (name, layout, bytes) of every vector in the mad_vectors.txt format."""
    vectors = []
    name = layout = None
    data = bytearray()
    in_bytes = False
    for raw in path.read_text().splitlines():
        line = raw.split("#", 1)[0].rstrip()
        if not line.strip():
            continue
        if line[0].isspace():
            if in_bytes:
                data += bytes.fromhex("".join(line.split()))
            continue
        word, _, rest = line.partition(" ")
        in_bytes = False
        if word == "vector":
            name, layout, data = rest.strip(), None, bytearray()
        elif word == "layout":
            layout = rest.strip()
        elif word == "bytes":
            data += bytes.fromhex("".join(rest.split()))
            in_bytes = True
        elif word == "end":
            vectors.append((name, layout, bytes(data)))
    return vectors


def read_erf(path):
    """Returns the InfiniBand packets of an ERF file (type 21 records)."""
    blob = path.read_bytes()
    packets = []
    offset = 0
    while offset + 16 <= len(blob):
        erf_type = blob[offset + 8]
        rlen, wlen = struct.unpack_from(">H", blob, offset + 10)[0], struct.unpack_from(
            ">H", blob, offset + 14)[0]
        if rlen < 16 or offset + rlen > len(blob):
            raise ValueError(f"{path}: bad ERF record at {offset}")
        header = 16
        ext = erf_type
        while ext & 0x80:  # extension headers: 8 bytes each while bit 7 says another follows
            ext = blob[offset + header]
            header += 8
        if erf_type & 0x7F == ERF_TYPE_INFINIBAND:
            packets.append(blob[offset + header:offset + header + min(wlen, rlen - header)])
        offset += rlen
    return packets


def packet_mad(packet):
    """The MAD of a UD packet on QP0/QP1 (LRH, optional GRH, BTH, DETH, MAD), or None."""
    if len(packet) < 8 + 12 + 8 + MAD_SIZE:
        return None
    lnh = packet[1] & 0x3
    offset = 8 + (40 if lnh == 3 else 0)
    if lnh not in (2, 3) or packet[offset] != 0x64:  # BTH OpCode: UD SEND Only
        return None
    mad = packet[offset + 12 + 8:offset + 12 + 8 + MAD_SIZE]
    return mad if len(mad) == MAD_SIZE else None


def framed_switch(mode, ingress, body):
    """switch_route_fuzzer: [mode][ingress][length/2][body...] per packet."""
    body = body[:510]
    if len(body) % 2:
        body += b"\0"
    return bytes([mode, ingress, len(body) // 2]) + body


def write_corpus(target, seeds):
    folder = CORPUS / target
    folder.mkdir(parents=True, exist_ok=True)
    unique = {hashlib.sha1(seed).hexdigest(): seed for seed in seeds if seed}
    for name, seed in unique.items():
        (folder / name).write_bytes(seed)
    return len(unique)


def main():
    vectors = read_vectors(VECTORS)
    packets = [p for erf in sorted(CAPTURES.glob("*.erf")) for p in read_erf(erf)]
    mads = [m for m in (packet_mad(p) for p in packets) if m is not None]
    # Whole MADs from the vectors: the MAD-level layouts padded to 256 bytes.
    mads += [data.ljust(MAD_SIZE, b"\0") for _, layout, data in vectors
             if layout in ("MadHeader", "SmpDr", "SmpLid", "SaHeader", "RmppHeader")]
    # One of each distinct (class, method, attribute) keeps the MAD-fed corpora small.
    distinct = {}
    for mad in mads:
        distinct.setdefault((mad[1], mad[3], mad[16:18], mad[4:6]), mad)
    mads = list(distinct.values())
    # Packets: one of each (opcode, LNH, length) so the RC/UD traffic does not swamp it.
    distinct_packets = {}
    for packet in packets:
        lnh = packet[1] & 0x3
        opcode = packet[8 + (40 if lnh == 3 else 0)] if len(packet) > 48 else -1
        distinct_packets.setdefault((opcode, lnh, len(packet)), packet)
    packets = list(distinct_packets.values())

    counts = {}
    counts["mad_decode_fuzzer"] = write_corpus(
        "mad_decode_fuzzer", [data for _, _, data in vectors] + mads + packets)
    # hca_local_mad_fuzzer: [port][256-byte MAD] repeated; port 1 (preconfigured) for most,
    # a pair on port 2 (the SM's), and a few series of two.
    local = [bytes([1]) + mad for mad in mads]
    local += [bytes([2]) + a + bytes([1]) + b for a, b in zip(mads[::7], mads[1::7])]
    counts["hca_local_mad_fuzzer"] = write_corpus("hca_local_mad_fuzzer", local)
    # switch_route_fuzzer: mode 0 raw packets (CRCs as captured), mode 1/2 MADs wrapped as
    # directed-route / LID-routed SMPs, mode 3 data packets built around the payload.
    switch = [framed_switch(0, 1 + i % 4, p) for i, p in enumerate(packets)]
    switch += [framed_switch(1 if mad[1] == 0x81 else 2, 1 + i % 4, mad)
               for i, mad in enumerate(mads) if mad[1] in (0x01, 0x81)]
    counts["switch_route_fuzzer"] = write_corpus("switch_route_fuzzer", switch)
    counts["topology_reader_fuzzer"] = write_corpus(
        "topology_reader_fuzzer", [t.read_bytes() for t in sorted(TOPOLOGIES.glob("*.net"))])
    for target, count in counts.items():
        print(f"{target}: {count} seeds")
    return 0 if all(counts.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
