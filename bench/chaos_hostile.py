#!/usr/bin/env python3
"""A hostile peer for bench/chaos.sh, run inside the chaos network namespace (root).

Sniffs the nodes' own traffic on lo and, until SIGTERM, keeps attacking every node:
  replay      an authentic datagram re-injected as it was (same source address and port), late
  foreign     an authentic datagram sent again from this process's own port
  flipped     an authentic datagram with one byte changed
  forged      magic and run id taken from real traffic, random rest
  garbage     random bytes, 1..1200
  tcp         connections to the nodes' TCP ports: idle ones (slowloris, one byte a second),
              replayed captured handshake bytes, header-only garbage; at most 16 open at once
Prints one JSON line of counts when it ends.  Usage: chaos_hostile.py PORT [PORT...]
"""
import json, os, random, select, signal, socket, struct, sys, time

ports = [int(p) for p in sys.argv[1:]]
rng = random.Random(int.from_bytes(os.urandom(8), "big"))
counts = {k: 0 for k in ("replay", "foreign", "flipped", "forged", "garbage", "tcp_opened", "tcp_bytes", "captured")}
stop = False


def on_term(*_):
    global stop
    stop = True


signal.signal(signal.SIGTERM, on_term)
signal.signal(signal.SIGINT, on_term)

sniff = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.ntohs(0x0003))
sniff.bind(("lo", 0))
sniff.setblocking(False)
raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)  # IP_HDRINCL
udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
udp.bind(("127.0.0.1", 0))
mine = udp.getsockname()[1]

packets = []     # whole IP packets of node-to-node datagrams, for exact replays
datagrams = []   # their UDP payloads
tcp_payloads = []  # data of node-to-node TCP segments (handshakes, frames)
conns = []       # (socket, kind, next time)


def capture():
    while True:
        try:
            frame = sniff.recv(65535)
        except BlockingIOError:
            return
        ip = frame[14:]
        if len(ip) < 20 or ip[0] >> 4 != 4:
            continue
        ihl = (ip[0] & 15) * 4
        proto = ip[9]
        if proto == 17 and len(ip) >= ihl + 8:
            sport, dport = struct.unpack("!HH", ip[ihl:ihl + 4])
            if sport in ports and dport in ports and sport != mine:
                counts["captured"] += 1
                keep(packets, bytes(ip))
                keep(datagrams, bytes(ip[ihl + 8:]))
        elif proto == 6 and len(ip) >= ihl + 20:
            sport, dport = struct.unpack("!HH", ip[ihl:ihl + 4])
            off = (ip[ihl + 12] >> 4) * 4
            data = ip[ihl + off:]
            if dport in ports and data:
                keep(tcp_payloads, bytes(data[:4096]))


def keep(buf, item, cap=512):
    if len(buf) < cap:
        buf.append(item)
    else:
        buf[rng.randrange(cap)] = item


def udp_attack():
    dest = ("127.0.0.1", rng.choice(ports))
    kind = rng.choice(["replay", "foreign", "flipped", "forged", "garbage"]) if datagrams else "garbage"
    try:
        if kind == "replay":
            p = rng.choice(packets)
            raw.sendto(p, ("127.0.0.1", 0))
        elif kind == "foreign":
            udp.sendto(rng.choice(datagrams), dest)
        elif kind == "flipped":
            d = bytearray(rng.choice(datagrams))
            d[rng.randrange(len(d))] ^= 1 << rng.randrange(8)
            udp.sendto(bytes(d), dest)
        elif kind == "forged":
            d = rng.choice(datagrams)
            udp.sendto(d[:16] + os.urandom(rng.randrange(0, 1184)), dest)
        else:
            udp.sendto(os.urandom(rng.randrange(1, 1201)), dest)
        counts[kind] += 1
    except OSError:
        pass


def tcp_attack(now):
    global conns
    alive = []
    for s, kind, due in conns:
        if now < due:
            alive.append((s, kind, due))
            continue
        try:
            if kind == "slowloris":
                s.send(os.urandom(1))
                counts["tcp_bytes"] += 1
                alive.append((s, kind, now + 1.0))
                continue
            s.close()
        except OSError:
            s.close()
    conns = alive
    if len(conns) < 16:
        kind = rng.choice(["slowloris", "replayed", "garbage", "idle"])
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.connect_ex(("127.0.0.1", rng.choice(ports)))
            select.select([], [s], [], 0.2)
            if kind == "replayed" and tcp_payloads:
                data = rng.choice(tcp_payloads)
            elif kind == "garbage":
                data = os.urandom(rng.choice([28, 64, 104, 512]))
            else:
                data = b""
            if data:
                s.send(data)
                counts["tcp_bytes"] += len(data)
            counts["tcp_opened"] += 1
            conns.append((s, kind, now + rng.uniform(1.0, 20.0)))
        except OSError:
            s.close()


next_tcp = 0.0
while not stop:
    capture()
    udp_attack()
    now = time.monotonic()
    if now >= next_tcp:
        tcp_attack(now)
        next_tcp = now + 0.25
    time.sleep(0.005)  # ~200 datagrams/s
print(json.dumps(counts), flush=True)
